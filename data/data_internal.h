/* data/data_internal.h (private): what data/'s files share and the header does not promise: the
 * per-format decoders behind hone_data_image_*, and small helpers. Never included outside data/. */
#ifndef HONE_DATA_INTERNAL_H
#define HONE_DATA_INTERNAL_H

#include <stdarg.h>

#include "data.h"

/* Formats a one-line reason into err (NULL or 0 bytes: nothing) and returns code. */
int data__fail(char *err, size_t errlen, int code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* The per-format decoders: no name in `why` (hone_data_image_* prefix it). info may be NULL in
 * decode; out is NULL for a probe. want: 0 (native), 1 or 3 channels. The limits are checked
 * from the header before pixel memory is allocated. */
int data__png_decode(const uint8_t *buf, size_t len, const hone_data_limits *lim, int want,
                     hone_data_image_info *info, hone_data_image **out, char *why, size_t n);
int data__jpeg_decode(const uint8_t *buf, size_t len, const hone_data_limits *lim, int want,
                      hone_data_image_info *info, hone_data_image **out, char *why, size_t n);

/* Checks width x height against the limits (HONE_ELIMIT with why). */
int data__check_limits(const hone_data_limits *lim, uint64_t w, uint64_t h, char *why, size_t n);
/* A new image of w x h x c, pixels uninitialised. */
hone_data_image *data__image_new(int w, int h, int c);
/* Counts a KITTI check problem and keeps its message while there is room (kitti.c). */
void data__kitti_problem(hone_data_kitti_problems *p, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* 1 when s[0..n) is well-formed UTF-8 of 1..max bytes with no control character (kitti.c). */
int data__printable_utf8(const unsigned char *s, size_t n, size_t max);
/* Opens path (root as the walk was given it, then the rest) beneath the folder root (opened as
 * given: a pinned /proc/self/fd/N stays the folder it was), no link out of it followed
 * (common/path_beneath.h; one that stays inside is, where openat2 checks it): a file replaced by
 * such a link since the walk is refused (HONE_EPARSE naming it), none of its bytes read. The walks'
 * files are read through these, their folders' checks through the walk. */
int data__open_in(const char *root, const char *path, int *fd, char *err, size_t errlen);
/* hone_data_image_probe_file / _read_file through data__open_in. */
int data__image_probe_in(const char *root, const char *path, const hone_data_limits *lim,
                         hone_data_image_info *info, char *err, size_t errlen);
int data__image_read_in(const char *root, const char *path, int channels,
                        const hone_data_limits *lim, hone_data_image **out, char *err,
                        size_t errlen);
/* An image folder's root as given (folder.c), and a KITTI set's (kitti_folder.c). */
const char *data__folder_root(const hone_data_folder *f);
const char *data__kitti_root(const hone_data_kitti *k);
/* Building a detection set (kitti_folder.c) from another format's parser (coco_folder.c):
 * data__kitti_new makes an empty one at root (*out set even on failure: free it); images are
 * added in their final order with their boxes (copied, classes already numbered); set_classes
 * takes ownership of names[n] (malloc'd strings in a malloc'd array) and ids (may be NULL);
 * finish counts boxes per class and fills the stats (HONE_EPARSE: no images, or no classes). */
int data__kitti_new(const char *root, hone_data_kitti **out, char *err, size_t errlen);
void data__kitti_add_image(hone_data_kitti *k, const char *path, int split,
                           const hone_data_image_info *in, const hone_data_box *b, size_t n);
void data__kitti_set_classes(hone_data_kitti *k, char **names, int64_t *ids, int n);
void data__kitti_set_layout(hone_data_kitti *k, int split_layout);
int data__kitti_finish(hone_data_kitti *k, char *err, size_t errlen);
/* hone_data_coco_parse; partial: *out also when the file has problems, with what passed its
 * checks (images, annotations, categories), so a folder's check goes on to the image files. */
int data__coco_parse(const uint8_t *buf, size_t len, const char *name, int partial,
                     size_t max_memory, hone_data_coco_file **out, hone_data_kitti_problems *probs);
/* hone_data_coco_memory over a text fed in pieces (coco_memory.c): new, feed..., end (which
 * returns the bound, *jansson its part when not NULL), then free(). */
typedef struct data__json_scan data__json_scan;
data__json_scan *data__json_scan_new(void);
void data__json_scan_feed(data__json_scan *s, const uint8_t *b, size_t n);
size_t data__json_scan_end(data__json_scan *s, size_t *jansson);
/* The process's COCO memory budget (coco_memory.c): reserve waits while other parses hold too
 * much of it; HONE_EINVAL with why (the sizes, the fix) when bytes exceed it whole. */
int data__coco_memory_reserve(size_t bytes, char *why, size_t n);
void data__coco_memory_release(size_t bytes);
size_t data__coco_memory_waiting(void); /* parses waiting their turn (tests) */
/* Converts img in place to `want` channels (0: keep). RGB to grey is Pillow's L24 luma. */
void data__image_convert(hone_data_image *img, int want);

#endif
