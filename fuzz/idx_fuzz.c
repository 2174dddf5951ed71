/* libFuzzer target for the IDX reader (data/idx.c, hone_data_idx_read_mem): arbitrary
 * bytes must parse or be refused with a message, never read or allocate out of bounds. */
#include <stdint.h>
#include <string.h>

#include "data.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    hone_data_idx *idx = NULL;
    char err[256];
    if (hone_data_idx_read_mem(data, size, &idx, err, sizeof err) == HONE_OK) {
        size_t count = 1;
        if (idx->ndims < 1 || idx->ndims > 4)
            __builtin_trap();
        for (int i = 0; i < idx->ndims; i++) {
            if (idx->dims[i] <= 0)
                __builtin_trap();
            count *= (size_t)idx->dims[i];
        }
        if (count != idx->count || count > size)
            __builtin_trap();
        volatile uint8_t sink = idx->data[count - 1]; /* whole payload readable */
        (void)sink;
        hone_data_idx_free(idx);
    } else if (idx) {
        __builtin_trap(); /* no result on failure */
    }
    return 0;
}
