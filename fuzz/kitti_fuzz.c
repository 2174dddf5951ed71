/* libFuzzer target for the KITTI label parser (data/kitti.c, hone_data_kitti_parse): arbitrary
 * bytes must parse into objects that satisfy the rules, or be refused with problems counted;
 * never read or allocate out of bounds. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "data.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    hone_data_kitti_obj *o = NULL;
    size_t n = 0;
    hone_data_kitti_problems pr = {0};
    int w = size > 0 ? data[0] : 0, h = size > 1 ? data[1] : 0; /* 0: bounds unchecked */
    int rc = hone_data_kitti_parse(data, size, "f.txt", w, h, &o, &n, &pr);
    if (rc == HONE_OK) {
        if (pr.count || n > HONE_DATA_KITTI_MAX_BOXES || (n == 0) != (o == NULL))
            __builtin_trap();
        for (size_t i = 0; i < n; i++) {
            const uint8_t *name = (const uint8_t *)o[i].name;
            if (name < data || name + o[i].name_len > data + size || o[i].name_len == 0 ||
                !(o[i].x1 < o[i].x2) || !(o[i].y1 < o[i].y2) || o[i].x1 < 0 || o[i].y1 < 0 ||
                (w && o[i].x2 > w) || (h && o[i].y2 > h) || o[i].line < 1)
                __builtin_trap();
        }
        free(o);
    } else if (o || n || pr.count == 0 || pr.kept > HONE_DATA_KITTI_MAX_PROBLEMS) {
        __builtin_trap();
    }
    char buf[256];
    hone_data_kitti_problems_join(&pr, buf, sizeof buf);
    if (strlen(buf) >= sizeof buf)
        __builtin_trap();
    hone_data_kitti_problems_clear(&pr);
    return 0;
}
