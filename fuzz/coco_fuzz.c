/* libFuzzer target for the COCO instances JSON parser (data/coco.c, hone_data_coco_parse):
 * arbitrary bytes must parse into a file that satisfies data.h's rules (images sorted by name,
 * boxes inside their image and non-empty, classes dense or the ignore region, categories sorted
 * by id), or be refused with problems counted; never read or allocate out of bounds, never leak. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "data.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    hone_data_coco_file *f = NULL;
    hone_data_kitti_problems pr = {0};
    int rc = hone_data_coco_parse(data, size, "f.json", &f, &pr);
    if (rc == HONE_OK) {
        if (!f || pr.count || f->ncats < 1 || f->ncats > HONE_DATA_MAX_CLASSES)
            __builtin_trap();
        for (int c = 1; c < f->ncats; c++)
            if (f->cat_ids[c] <= f->cat_ids[c - 1])
                __builtin_trap();
        size_t total = 0;
        for (size_t i = 0; i < f->nimages; i++) {
            const hone_data_coco_image *m = &f->images[i];
            if ((i && strcmp(f->images[i - 1].file_name, m->file_name) >= 0) || m->width < 1 ||
                m->height < 1 || m->box0 != total || m->nbox > HONE_DATA_KITTI_MAX_BOXES)
                __builtin_trap();
            for (size_t j = m->box0; j < m->box0 + m->nbox; j++) {
                const hone_data_box *b = &f->boxes[j];
                if (!(b->x1 >= 0 && b->x1 < b->x2 && b->x2 <= m->width && b->y1 >= 0 &&
                      b->y1 < b->y2 && b->y2 <= m->height) ||
                    b->cls < HONE_DATA_CROWD(f->ncats - 1) || b->cls == HONE_DATA_DONTCARE ||
                    b->cls >= f->ncats)
                    __builtin_trap();
            }
            total += m->nbox;
        }
        if (total != f->nboxes)
            __builtin_trap();
        hone_data_coco_file_free(f);
    } else if (f || pr.count == 0 || pr.kept > HONE_DATA_KITTI_MAX_PROBLEMS) {
        __builtin_trap();
    }
    char buf[256];
    hone_data_kitti_problems_join(&pr, buf, sizeof buf);
    if (strlen(buf) >= sizeof buf)
        __builtin_trap();
    hone_data_kitti_problems_clear(&pr);
    return 0;
}
