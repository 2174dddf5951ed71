/* data: the dataset formats in one place: IDX files (MNIST family), JPEG and PNG decoding and
 * resizing, image-folder datasets and the packed dataset file. Used by hone-train to load data, by
 * the controller to check datasets at create time, by hone-pack (and the convert job) to pack them.
 * Pure library: files and memory only; no HTTP, no SQLite, no kernels. Every function that can
 * fail returns 0 or a negative HONE_E* code and writes a one-line reason naming the file to err. */
#ifndef HONE_DATA_H
#define HONE_DATA_H

#include <stddef.h>
#include <stdint.h>

#include "hone.h"

/* ------------------------------------------------------------------ IDX files */

/* The bounds of an IDX file, the same for the controller's check at dataset create time and for
 * hone-train's loader, so a dataset the controller accepts is one the trainer can read:
 * - HONE_DATA_IDX_MAX_BYTES: the data bytes (the product of the dims) of one file, 2 GiB (the
 *   trainer holds a file whole in memory).
 * - HONE_DATA_IDX_MAX_RATIO: a gzip file may inflate at most this many times its compressed size
 *   (checked while inflating, so a decompression bomb stops after a few MiB, not gigabytes; no real
 *   image or label file comes near it: MNIST inflates about 5 times, all-zero data about 1030). */
#define HONE_DATA_IDX_MAX_BYTES ((uint64_t)1 << 31)
#define HONE_DATA_IDX_MAX_RATIO 1000

/* A parsed IDX file: a plain result (fields read-only), freed with hone_data_idx_free. */
typedef struct hone_data_idx {
    int type;      /* element type code: 0x08 = uint8 (the only one accepted) */
    int ndims;     /* 1..4 */
    int dims[4];   /* each > 0 */
    size_t count;  /* product of dims */
    uint8_t *data; /* count bytes, owned */
} hone_data_idx;

/* Parses an IDX image/label file held in memory (no gzip). HONE_EPARSE on a bad magic, dims or
 * size; err (may be NULL) receives a one-line reason. Safe on arbitrary bytes (fuzzed). */
int hone_data_idx_read_mem(const uint8_t *buf, size_t len, hone_data_idx **out, char *err,
                           size_t errlen);
/* Reads a file, gzip-compressed or not, within the bounds above. HONE_ENOENT when missing,
 * HONE_EIO, HONE_EPARSE (a bound passed included). */
int hone_data_idx_read_file(const char *path, hone_data_idx **out, char *err, size_t errlen);
void hone_data_idx_free(hone_data_idx *idx);

/* What an IDX file holds, without keeping it in memory (the controller's check at dataset create
 * time): streams the file (gzip or not) and checks it is uint8 with want_ndims dimensions (1 to 3,
 * each 1..100,000,000, at most HONE_DATA_IDX_MAX_BYTES of data) and exactly the bytes its header
 * announces; it stops as soon as the file inflates past its header or HONE_DATA_IDX_MAX_RATIO.
 * dims receives the dimensions; *max_value (may be NULL) the largest byte, e.g. the highest label.
 * HONE_ENOENT when missing, HONE_EPARSE otherwise (a bound passed included); err names the file. */
int hone_data_idx_stat_file(const char *path, int want_ndims, uint32_t dims[3], int *max_value,
                            char *err, size_t errlen);

/* ------------------------------------------------------------------ images (JPEG, PNG) */

/* Decoded pixels are uint8, rows top to bottom, HWC (interleaved), 1 channel (grey) or 3 (RGB).
 *
 * - What a file decodes to by default ("native" channels): 1 for grey PNGs (with or without
 *   alpha, any bit depth) and 1-component JPEGs; 3 for RGB, RGBA and palette PNGs and YCbCr or
 *   RGB JPEGs. Asking for the other count converts: grey to RGB repeats the value; RGB to grey is
 *   ITU-R 601-2 luma in Pillow's integer form, (19595 R + 38470 G + 7471 B + 32768) >> 16, so
 *   both match Pillow's convert("RGB") / convert("L") exactly.
 * - Alpha (an alpha channel or a tRNS chunk) is dropped, not composited: the colour samples are
 *   kept as stored (Pillow's convert("RGB") does the same). Gamma, sBIT, ICC profiles and EXIF
 *   orientation are not applied (neither Image.open nor torchvision's ImageFolder applies them).
 * - 16-bit PNG samples keep their high byte (v >> 8: what Pillow keeps for 16-bit RGB(A));
 *   1, 2 and 4-bit grey are scaled to 0..255 (v * 255 / (2^depth - 1)).
 * - JPEG: libjpeg-turbo's defaults (accurate integer IDCT, fancy upsampling), which is what
 *   Pillow uses, so with the same libjpeg the pixels are identical. Progressive JPEGs decode (at
 *   most 500 scans: more is a decoding-time bomb); CMYK and YCCK JPEGs are refused
 *   (HONE_ENOTSUP). Every libjpeg warning about corrupt data (a truncated file, a bad Huffman
 *   code, a premature marker) is an error: a half-grey image must not reach training.
 * - PNG: libspng; every chunk's CRC and the zlib checksum are checked, a bad one is an error.
 *   Interlaced (Adam7) PNGs decode.
 * - Any other format (GIF, BMP, TIFF, WebP, ...) is HONE_ENOTSUP naming what it is.
 * Errors: HONE_EPARSE (corrupt, truncated, wrong magic), HONE_ENOTSUP, HONE_ELIMIT (bigger than
 * the limits, checked from the header before any pixel memory is allocated), HONE_ENOENT and
 * HONE_EIO for files. err always starts with the file's name. */

typedef enum hone_data_format {
    HONE_DATA_FORMAT_UNKNOWN = 0,
    HONE_DATA_FORMAT_PNG = 1,
    HONE_DATA_FORMAT_JPEG = 2,
} hone_data_format;

/* "png", "jpeg" or "unknown". */
const char *hone_data_format_name(hone_data_format f);

/* Decompression-bomb limits, checked from the header. The defaults (HONE_DATA_LIMITS_DEFAULT):
 * 16384 px a side, 64 Mpx in all (a 192 MiB RGB buffer), files up to 256 MiB. */
typedef struct hone_data_limits {
    uint32_t max_side;
    uint64_t max_pixels;
    uint64_t max_file_bytes;
} hone_data_limits;

#define HONE_DATA_LIMITS_DEFAULT                                                                   \
    {                                                                                              \
        16384, 64ull << 20, 256ull << 20                                                           \
    }

/* What the header of an image file says. */
typedef struct hone_data_image_info {
    hone_data_format format;
    int width, height;
    int channels;    /* native channels of the decoded image: 1 or 3 */
    int alpha;       /* 1: the file has alpha (channel or tRNS), which decoding drops */
    int bit_depth;   /* per sample in the file: 1, 2, 4, 8 or 16 */
    int progressive; /* a progressive JPEG or an interlaced PNG */
    int palette;     /* a palette PNG */
} hone_data_image_info;

/* A decoded image: a plain result (fields read-only), freed with hone_data_image_free. */
typedef struct hone_data_image {
    int width, height, channels;
    uint8_t *pixels; /* height * width * channels bytes, owned */
} hone_data_image;

/* Reads the header only (PNG: signature and IHDR; JPEG: up to the first scan) and applies the
 * limits (NULL: the defaults). name prefixes err ("image" when NULL). Safe on arbitrary bytes. */
int hone_data_image_probe(const uint8_t *buf, size_t len, const char *name,
                          const hone_data_limits *lim, hone_data_image_info *info, char *err,
                          size_t errlen);
/* Decodes the whole image with channels = 0 (native), 1 or 3. Safe on arbitrary bytes (fuzzed):
 * a refusal never leaks and leaves *out NULL. */
int hone_data_image_decode(const uint8_t *buf, size_t len, const char *name, int channels,
                           const hone_data_limits *lim, hone_data_image **out, char *err,
                           size_t errlen);
/* The same on a file (read whole, at most lim->max_file_bytes; err names the path). */
int hone_data_image_probe_file(const char *path, const hone_data_limits *lim,
                               hone_data_image_info *info, char *err, size_t errlen);
int hone_data_image_read_file(const char *path, int channels, const hone_data_limits *lim,
                              hone_data_image **out, char *err, size_t errlen);
/* The same on an open file (fd borrowed, read from its offset; name for messages): for a caller
 * that opened it beneath its folder (common/path_beneath.h). */
int hone_data_image_read_fd(int fd, const char *name, int channels, const hone_data_limits *lim,
                            hone_data_image **out, char *err, size_t errlen);
void hone_data_image_free(hone_data_image *img);

/* Resizes src (sw x sh x c, HWC uint8) into dst (dw x dh x c), each axis on its own:
 * - shrinking an axis averages over the source area each output pixel covers (exact box /
 *   "area" filter, fractional coverage at the edges: OpenCV's INTER_AREA), so no source pixel
 *   is skipped and fine detail does not alias;
 * - enlarging an axis interpolates linearly (bilinear over both axes), edge pixels repeated;
 * - an axis of the same size is copied unchanged (a 28x28 image packed at 28x28 is bit-exact).
 * Pixel centres sit at half-integers (the "align_corners = false" convention of OpenCV, Pillow
 * and PyTorch): output pixel i covers source [i*s, (i+1)*s) with s = in/out, and its centre maps
 * to source coordinate (i + 0.5) * s - 0.5. Results are rounded to nearest. The aspect ratio is
 * not kept (the image is stretched to dw x dh). Sides must be >= 1. */
void hone_data_resize(const uint8_t *src, int sw, int sh, int c, uint8_t *dst, int dw, int dh);

/* ------------------------------------------------------------------ image folders */

/* An image-folder dataset, walked and checked by hone_data_folder_open. Layouts:
 *   <root>/<class>/<image>                  one split, "train"
 *   <root>/train/<class>/<image>            with <root>/val/<class>/... and/or
 *                                           <root>/test/<class>/... beside it (both optional)
 * Rules (the first broken one is the error, naming the file or folder):
 * - classes are the folders of a split, sorted by name (bytewise, as Python's sorted()): class i
 *   is the i-th name. val/ and test/ must hold exactly train/'s classes. No classes, an empty
 *   class, more than HONE_DATA_MAX_CLASSES, or a name that is not printable UTF-8 (or longer than
 *   255 bytes) is refused; so is a folder inside a class folder.
 * - images are files named *.png, *.jpg or *.jpeg (any case), decoded by their content; other
 *   image extensions (bmp gif tif tiff webp pgm ppm pbm pnm heic avif) are refused as
 *   unsupported; every other file (README, .csv, ...) is skipped and counted; names starting with
 *   '.' are ignored. In the split layout, plain files beside train/ are skipped and any other
 *   folder is refused.
 * - the header of every image is read (hone_data_image_probe: format, size, channels, the
 *   limits, CMYK); with opts.decode every image is decoded whole as well (slower; a file cut
 *   short after its header is only caught this way, or when it is packed).
 * - a symlink may point anywhere inside the root; one that resolves outside it, dangles or loops
 *   is refused. Anything but a regular file or folder (a fifo, a device) is refused.
 * Images are kept in order: split (train, val, test), class, file name (bytewise). */

#define HONE_DATA_MAX_CLASSES 65536

enum { HONE_DATA_TRAIN = 0, HONE_DATA_VAL = 1, HONE_DATA_TEST = 2, HONE_DATA_NSPLITS = 3 };

/* "train", "val", "test". */
const char *hone_data_split_name(int split);

/* The images training holds out for testing from a dataset's split counts (split[3]: train, val,
 * test): the test split when there is one, else a tenth of the training split (hone-train carves
 * them out of it, before the validation part). used[3] gets the split counts training works
 * from: train less that carve, val, test or the carve. One rule for hone-train's loading and the
 * controller's dataset stats, so a dataset reports the test images its jobs are tested on. */
void hone_data_split_used(const uint64_t split[HONE_DATA_NSPLITS],
                          uint64_t used[HONE_DATA_NSPLITS]);

typedef struct hone_data_folder hone_data_folder;

typedef struct hone_data_folder_opts {
    const hone_data_limits *limits; /* NULL: the defaults */
    int decode;                     /* 1: decode every image whole, not only its header */
} hone_data_folder_opts;

/* What the walk found. */
typedef struct hone_data_folder_stats {
    int split_layout; /* 1: <root>/train/... ; 0: <root>/<class>/... */
    int classes;      /* class count (the same in every split present) */
    size_t images;    /* in all splits */
    size_t split_images[HONE_DATA_NSPLITS];
    size_t png, jpeg;    /* images by format */
    size_t grey, colour; /* images by native channels (1 or 3) */
    int min_width, min_height, max_width, max_height;
    size_t skipped; /* files skipped as not images */
} hone_data_folder_stats;

/* Walks and checks root (opts may be NULL). HONE_ENOENT when root is missing, HONE_EPARSE,
 * HONE_ENOTSUP, HONE_ELIMIT with err naming the offending path. */
int hone_data_folder_open(const char *root, const hone_data_folder_opts *opts,
                          hone_data_folder **out, char *err, size_t errlen);
void hone_data_folder_free(hone_data_folder *f);
void hone_data_folder_get_stats(const hone_data_folder *f, hone_data_folder_stats *st);
/* Class i's name (0 <= i < classes); borrowed from f. */
const char *hone_data_folder_class_name(const hone_data_folder *f, int i);
/* Images of a class in a split. */
size_t hone_data_folder_class_images(const hone_data_folder *f, int split, int cls);
/* The first skipped file (NULL when none): a hint for the user; borrowed. */
const char *hone_data_folder_skipped_example(const hone_data_folder *f);
/* Image i in the order above: its path (borrowed), split and class. */
const char *hone_data_folder_image(const hone_data_folder *f, size_t i, int *split, int *cls);

/* ------------------------------------------------------------------ KITTI detection datasets */

/* A KITTI object-detection dataset as TAO reads it:
 *   <root>/images/<stem>.png|.jpg|.jpeg      one split, "train"
 *   <root>/labels/<stem>.txt                 one label file per image (empty: no objects)
 * or <root>/train/{images,labels}/ with val/ and/or test/ of the same form beside it.
 * A label file holds one object a line, fields separated by spaces or tabs:
 *   class truncation occlusion alpha x1 y1 x2 y2 h w l x y z ry [score]
 * 15 fields, or 16 with a detector's score. Every field after the class must be a finite number
 * (the 3-D ones and truncation, occlusion, alpha, score are parsed and ignored). Blank lines are
 * skipped; "\r\n" line ends are accepted. The box is in the image's pixel coordinates, edges at
 * 0 and the image's width/height: 0 <= x1 < x2 <= width and 0 <= y1 < y2 <= height.
 * Class names are printable UTF-8 of at most 255 bytes and are matched case-insensitively
 * against the dataset's class map; "DontCare" (any case) is kept as an ignore region with class
 * HONE_DATA_DONTCARE whether or not the map names it. Without a class map, the classes are the
 * names found, lowercased, sorted bytewise.
 * The check does not stop at the first problem: every problem (an image without a label file, a
 * label file without an image, an unparsable line, a box inverted or outside the image, an
 * unknown class, more than HONE_DATA_KITTI_MAX_BOXES objects in one image, an unreadable or
 * broken image) is counted and the first HONE_DATA_KITTI_MAX_PROBLEMS are kept, each naming the
 * file and, for a label, the line ("labels/000012.txt:3: ..."). Any problem refuses the dataset. */

#define HONE_DATA_DONTCARE (-1)
/* A crowd region of one class c (COCO's iscrowd): class HONE_DATA_CROWD(c) = -2 - c. Training
 * treats it as a DontCare region (ignore cells in every class); evaluation as a crowd region of
 * class c only (pycocotools: a detection of another class inside it is a false positive). */
#define HONE_DATA_CROWD(c) (-2 - (c))
#define HONE_DATA_IS_CROWD(cls) ((cls) <= -2)
#define HONE_DATA_CROWD_CLASS(cls) (-2 - (cls))
#define HONE_DATA_KITTI_MAX_BOXES 500
#define HONE_DATA_KITTI_MAX_PROBLEMS 100
#define HONE_DATA_KITTI_MAX_LABEL_BYTES (1 << 20) /* a bigger label file is a problem */

/* A box in an image's pixel coordinates; cls is a class index, HONE_DATA_DONTCARE, or
 * HONE_DATA_CROWD(class) for a COCO crowd region. */
typedef struct hone_data_box {
    int32_t cls;
    float x1, y1, x2, y2;
} hone_data_box;

/* Problems found by a check: all counted, the first HONE_DATA_KITTI_MAX_PROBLEMS kept (each a
 * malloc'd one-line message). Zero-initialise; release with hone_data_kitti_problems_clear. */
typedef struct hone_data_kitti_problems {
    size_t count;
    size_t kept;
    char *msg[HONE_DATA_KITTI_MAX_PROBLEMS];
} hone_data_kitti_problems;

void hone_data_kitti_problems_clear(hone_data_kitti_problems *p);
/* The first problems joined with "; " into buf (at most n bytes), "N problems: ..." first. */
void hone_data_kitti_problems_join(const hone_data_kitti_problems *p, char *buf, size_t n);

/* One object of a label file; name points into the parsed buffer (not NUL-terminated). */
typedef struct hone_data_kitti_obj {
    const char *name;
    size_t name_len;
    float x1, y1, x2, y2;
    int line; /* 1-based */
} hone_data_kitti_obj;

/* Parses a label file held in memory (name prefixes the problems). width, height > 0: boxes
 * must lie inside that image; 0: only x1 >= 0, y1 >= 0 and x1 < x2, y1 < y2 are checked. Every
 * broken line is added to probs (may be NULL). HONE_OK with *objs (malloc'd, free() it; NULL when
 * *n is 0) when the file has no problem; HONE_EPARSE with *objs NULL otherwise. Safe on
 * arbitrary bytes (fuzzed). */
int hone_data_kitti_parse(const uint8_t *buf, size_t len, const char *name, int width, int height,
                          hone_data_kitti_obj **objs, size_t *n, hone_data_kitti_problems *probs);

typedef struct hone_data_kitti hone_data_kitti;

typedef struct hone_data_kitti_opts {
    const hone_data_limits *limits; /* NULL: the defaults */
    const char *const *classes;     /* the class map (nclasses names); NULL: the classes found */
    int nclasses;
    hone_data_kitti_problems *problems; /* NULL: only err says the first problems */
} hone_data_kitti_opts;

typedef struct hone_data_kitti_stats {
    int split_layout; /* 1: <root>/train/... */
    int classes;
    size_t images, split_images[HONE_DATA_NSPLITS];
    size_t boxes, dontcare; /* boxes in all (DontCare included), DontCare regions */
    size_t png, jpeg, grey, colour;
    int min_width, min_height, max_width, max_height;
    size_t skipped; /* files skipped as neither images nor labels */
} hone_data_kitti_stats;

/* Walks and checks root (opts may be NULL). HONE_ENOENT when root is missing; HONE_EPARSE when
 * the layout is wrong or any problem was found: err names the first problems, opts->problems
 * receives them all (bounded), and *out is NULL. */
int hone_data_kitti_open(const char *root, const hone_data_kitti_opts *opts, hone_data_kitti **out,
                         char *err, size_t errlen);
void hone_data_kitti_free(hone_data_kitti *k);
void hone_data_kitti_get_stats(const hone_data_kitti *k, hone_data_kitti_stats *st);
const char *hone_data_kitti_class_name(const hone_data_kitti *k, int i); /* borrowed */
size_t hone_data_kitti_class_boxes(const hone_data_kitti *k, int i);
/* A COCO set's category id of class i (hone_data_coco_open); -1 for a KITTI set. */
int64_t hone_data_kitti_category_id(const hone_data_kitti *k, int i);
/* Image i (split order, then file name): its path (borrowed), split, size and boxes (borrowed). */
const char *hone_data_kitti_image(const hone_data_kitti *k, size_t i, int *split, int *width,
                                  int *height, const hone_data_box **boxes, size_t *nboxes);

/* ------------------------------------------------------------------ COCO detection datasets */

/* A COCO object-detection dataset (the instances JSON of cocodataset.org) in one of three layouts:
 *   <root>/annotations.json, <root>/images/<file_name>            one split, "train"
 *   <root>/train/annotations.json, <root>/train/images/...      with val/ and/or test/ beside it
 *   <root>/annotations/instances_<split><tag>.json, <root>/<split><tag>/<file_name> (or
 *   <root>/images/<split><tag>/...), split train (required), val, test: COCO's own download
 *   (instances_train2017.json with train2017/); a second file matching one split is a problem.
 * A JSON file is an object with arrays "images" ({id, file_name, width, height}), "annotations"
 * ({id, image_id, category_id, bbox [x, y, w, h], iscrowd}) and "categories" ({id, name}); other
 * keys (info, licenses, segmentation, area, supercategory...) are ignored. Rules:
 * - ids are integers, unique within their array; file_name a relative path of printable UTF-8
 *   (at most 1024 bytes, no "..", no leading '/'), unique; width and height integers 1..65535
 *   that must match the image file's own size; every image must exist (its header read: PNG or
 *   JPEG, within the limits), beneath the set's folder (no link out);
 * - an annotation's image_id and category_id must name an image and a category of its file;
 *   bbox holds 4 finite numbers, w > 0 and h > 0, inside the image: x >= 0, y >= 0, x + w <=
 *   width, y + h <= height, each within HONE_DATA_COCO_EDGE_SLACK pixels (COCO's boxes come from
 *   polygons and overshoot an edge by a fraction of a pixel), then clamped to the image;
 *   iscrowd is absent, 0 or 1; at most HONE_DATA_KITTI_MAX_BOXES annotations an image;
 * - categories: names printable UTF-8 of 1..255 bytes, unique regardless of case; class i is the
 *   category with the i-th smallest id (ids are sparse in COCO: 1..90 for 80 classes), so the
 *   order is stable and documented, and every split's file must list the same categories.
 * iscrowd 1 boxes are kept as ignore regions of their category, class HONE_DATA_CROWD(class): in
 * training they write no target (as KITTI's DontCare), and in evaluation a detection of that
 * class inside one is neither a true nor a false positive (one of another class is judged as
 * anywhere else, as pycocotools does). Images are kept in split order, then by file_name
 * (bytewise); an image's boxes in the file's order. Image files in the folders that the JSON does
 * not list are ignored. Every problem is counted and the first HONE_DATA_KITTI_MAX_PROBLEMS kept,
 * each naming the JSON file and the annotation, image or category by id ("annotations.json:
 * annotation 17: ..."), or by position where the id itself is bad ("annotations.json:
 * annotations[3]: ...").
 * Bounds (the JSON is hostile): a file of at most HONE_DATA_COCO_MAX_JSON_BYTES, whose parse
 * would take at most the process's COCO memory budget (hone_data_coco_memory_budget; bounded
 * from a scan of the text before jansson sees it: hone_data_coco_memory), nested at most
 * jansson's depth; at most HONE_DATA_COCO_MAX_IMAGES images and HONE_DATA_COCO_MAX_ANNOTATIONS
 * annotations a file; HONE_DATA_MAX_CLASSES categories. */

#define HONE_DATA_COCO_MAX_JSON_BYTES ((size_t)1 << 30) /* COCO's train2017 is 448 MiB */
/* The memory all COCO parses of a process may take at once unless it says otherwise (hone-pack,
 * hone-train: one parse at a time; COCO's train2017 is bounded at about 4.5 GiB). */
#define HONE_DATA_COCO_MEMORY_DEFAULT ((size_t)8 << 30)
#define HONE_DATA_COCO_MAX_IMAGES 10000000
#define HONE_DATA_COCO_MAX_ANNOTATIONS 50000000
#define HONE_DATA_COCO_MAX_FILE_NAME 1024
#define HONE_DATA_COCO_EDGE_SLACK 1.0

/* One parsed JSON file: images sorted by file_name, each with its boxes (boxes[box0, box0 +
 * nbox), classes dense, HONE_DATA_CROWD(class) for a crowd region) and the annotation ids beside
 * them (ann_ids[j] is boxes[j]'s); categories sorted by id (class i is cat_ids[i], named
 * cat_names[i]). A plain result, freed with hone_data_coco_file_free. */
typedef struct hone_data_coco_image {
    int64_t id;
    char *file_name;
    int width, height;
    size_t box0, nbox;
} hone_data_coco_image;

typedef struct hone_data_coco_file {
    hone_data_coco_image *images;
    size_t nimages;
    hone_data_box *boxes;
    int64_t *ann_ids;
    size_t nboxes, crowd;
    int64_t *cat_ids;
    char **cat_names;
    int ncats;
} hone_data_coco_file;

/* Parses and checks one JSON file held in memory (name prefixes every problem), everything above
 * but the image files themselves; its parse bounded by HONE_DATA_COCO_MEMORY_DEFAULT (not the
 * budget: the caller holds the text already). HONE_OK with *out when it has no problem; HONE_EPARSE
 * with *out NULL otherwise, every problem added to probs (may be NULL). Safe on arbitrary bytes
 * (fuzzed). */
int hone_data_coco_parse(const uint8_t *buf, size_t len, const char *name,
                         hone_data_coco_file **out, hone_data_kitti_problems *probs);
void hone_data_coco_file_free(hone_data_coco_file *f);

/* The most memory parsing and checking the JSON text buf[len] may take (bytes): an upper bound
 * for jansson 2.14 over glibc's malloc, the check's own arrays and the text itself, from one
 * scan of the text (data/coco_memory.c says how). *jansson (may be NULL): jansson's part. */
size_t hone_data_coco_memory(const uint8_t *buf, size_t len, size_t *jansson);
/* The memory all COCO parses of this process (hone_data_coco_open) may take at once, shared by
 * every thread (default HONE_DATA_COCO_MEMORY_DEFAULT): a JSON file whose bound is larger is a
 * problem naming both sizes and fix (how to raise it, e.g. a config key; NULL: none); one that
 * fits waits while other parses hold the rest. Thread-safe. */
void hone_data_coco_memory_budget(size_t bytes, const char *fix);
/* The bytes held by parses running now (hone_data_coco_open). */
size_t hone_data_coco_memory_in_use(void);

typedef struct hone_data_coco_opts {
    const hone_data_limits *limits;     /* NULL: the defaults */
    hone_data_kitti_problems *problems; /* NULL: only err says the first problems */
} hone_data_coco_opts;

/* Walks and checks a COCO set at root (opts may be NULL) into a detection set read, stat'ed and
 * packed through hone_data_kitti_* (stats.split_layout: 1 for the train/ and annotations/
 * layouts; stats.dontcare counts crowd regions; hone_data_kitti_category_id gives the COCO id of
 * a class). HONE_ENOENT when root is missing; HONE_EPARSE when no layout fits or any problem was
 * found: err names the first problems, opts->problems receives them all (bounded), *out NULL. */
int hone_data_coco_open(const char *root, const hone_data_coco_opts *opts, hone_data_kitti **out,
                        char *err, size_t errlen);

/* ------------------------------------------------------------------ the packed dataset file */

/* A packed dataset: every image decoded once, resized to one size and stored as uint8 pixels
 * that training maps into memory. Version 3 (a boxes section and a source sizes section; version
 * 2 is the same file without the sizes, and without crowd classes; version 1 is the file without
 * boxes, and is still what a file without boxes is written as, so that older readers keep reading
 * image-folder packs), little-endian, sections 64-byte aligned:
 *
 *   offset size  field
 *        0    8  magic "HONEPAK\0"
 *        8    4  version (1: no boxes; 2: boxes; 3: boxes and source sizes)
 *       12    4  header_bytes: the header with its class map, a multiple of 64 (pixels start here)
 *       16    8  n: images
 *       24    4  height      28  4  width      32  4  channels (1 or 3)      36  4  classes
 *       40   24  images per split: train, val, test (3 x u64, summing to n; the images are
 *                stored in that order, so the counts are the split markers)
 *       64    8  pixel_offset (= header_bytes)
 *       72    8  label_offset: pixel_offset + n*h*w*c rounded up to 64
 *       80    8  payload_bytes: file size - header_bytes
 *       88    4  payload_crc: CRC-32 (zlib's crc32, the PNG/gzip polynomial) of the payload,
 *                every byte from header_bytes to the end of the file
 *       92    4  header_crc: CRC-32 of bytes [0, header_bytes) with this field zero
 *       96    8  box_offset (version 2, 3): label_offset + 4n rounded up to 64; version 1: ignored
 *      104    8  total_boxes (version 2, 3); version 1: ignored
 *      112    8  size_offset (version 3): the end of the boxes rounded up to 64; else zero
 *      120    8  category_offset (version 3): where a COCO set's category ids start (the end of
 *                the sizes rounded up to 64); zero when the file has none
 *      128       class map: per class a u16 length and that many bytes of UTF-8 (class i is
 *                label i), then zeros up to header_bytes
 *   pixel_offset pixels: n images of h*w*c bytes, rows top to bottom, HWC
 *   label_offset labels: n int32 class indices (0 <= label < classes); a version 1 file ends here.
 *                For a detection set the label is the class of the image's largest box (0 when
 *                it has none): kept so that every reader of labels still works.
 *   box_offset   (version 2, 3) n+1 u64: image i's boxes are records [start[i], start[i+1]),
 *                start[0] = 0, start[n] = total_boxes; then total_boxes records of 20 bytes
 *                (hone_data_box): int32 class (HONE_DATA_DONTCARE = -1 for an ignore region of
 *                every class; version 3: HONE_DATA_CROWD(c) = -2 - c for a crowd region of class
 *                c), float32 x1, y1, x2, y2 in the packed (resized) image's pixel coordinates,
 *                0 <= x1 < x2 <= width, 0 <= y1 < y2 <= height. A version 2 file ends there.
 *   size_offset  (version 3) n pairs of u32: image i's width and height before packing (1..65535),
 *                so that evaluation can measure areas in the image's own pixels (COCO's small,
 *                medium and large). A reader takes the packed size for a file without them.
 *   category_offset (version 3, a COCO set) classes int64: class i's COCO category id, so that a
 *                model's results name the set's categories. The file ends there.
 *
 * The writer fills a temp file beside the target and renames it into place once complete, so a
 * packed file at its name is whole. The reader maps it and refuses a file that is truncated, or
 * whose header or payload checksum does not match, or whose boxes or sizes break the rules above,
 * with a message naming the file. */

typedef struct hone_data_pack_info {
    uint64_t n;
    int height, width, channels, classes;
    uint64_t split[HONE_DATA_NSPLITS]; /* images per split, stored in split order */
    int has_boxes;                     /* a boxes section (version 2; with source sizes, 3) */
    uint64_t boxes;                    /* reader: boxes in all */
    int has_sizes; /* reader: a source sizes section (version 3); the writer adds one to boxes */
    int has_category_ids; /* reader: a COCO set's category ids (version 3) */
} hone_data_pack_info;

typedef struct hone_data_pack_writer hone_data_pack_writer;

/* Creates a temp file beside path (its size fixed by info) for images to be put into.
 * class_names: info->classes printable UTF-8 names of at most 255 bytes (copied). */
int hone_data_pack_writer_new(const char *path, const hone_data_pack_info *info,
                              const char *const *class_names, hone_data_pack_writer **out,
                              char *err, size_t errlen);
/* Stores image i (h*w*c bytes) and its label. Thread-safe for distinct i (positioned writes). */
int hone_data_pack_writer_put(hone_data_pack_writer *w, uint64_t i, const uint8_t *pixels,
                              int32_t label, char *err, size_t errlen);
/* Stores image i's boxes (copied; only with info->has_boxes), already in the packed image's
 * coordinates: each must satisfy the rules above. Thread-safe for distinct i. An image whose
 * boxes are never put has none. */
int hone_data_pack_writer_put_boxes(hone_data_pack_writer *w, uint64_t i, const hone_data_box *b,
                                    size_t n, char *err, size_t errlen);
/* Stores image i's size before packing (only with info->has_boxes; 1..65535 a side). An image whose
 * size is never put has the packed size. Thread-safe for distinct i. */
int hone_data_pack_writer_put_source_size(hone_data_pack_writer *w, uint64_t i, int width,
                                          int height, char *err, size_t errlen);
/* Stores a COCO set's category ids (info->classes of them, copied; only with info->has_boxes). */
void hone_data_pack_writer_set_category_ids(hone_data_pack_writer *w, const int64_t *ids);
/* Once every image is in: the labels, the boxes, the checksums and the header; fsync; renamed into
 * place. HONE_ESTATE when an image is missing. */
int hone_data_pack_writer_finish(hone_data_pack_writer *w, char *err, size_t errlen);
/* Frees the writer; before a successful finish it removes the temp file. */
void hone_data_pack_writer_free(hone_data_pack_writer *w);

typedef struct hone_data_pack hone_data_pack;

#define HONE_DATA_PACK_NO_VERIFY 1 /* hone_data_pack_open: skip the payload checksum */

/* Maps path read-only and checks it (header, sizes, class map, labels, and unless flags say
 * HONE_DATA_PACK_NO_VERIFY the payload checksum). HONE_EPARSE naming the file when it is not
 * a packed dataset, truncated or corrupt; HONE_ENOTSUP for another version. */
int hone_data_pack_open(const char *path, int flags, hone_data_pack **out, char *err,
                        size_t errlen);
void hone_data_pack_free(hone_data_pack *p);
void hone_data_pack_get_info(const hone_data_pack *p, hone_data_pack_info *info);
/* n*h*w*c bytes and n labels, mapped (valid until hone_data_pack_free). */
const uint8_t *hone_data_pack_pixels(const hone_data_pack *p);
const int32_t *hone_data_pack_labels(const hone_data_pack *p);
const char *hone_data_pack_class_name(const hone_data_pack *p, int i); /* borrowed */
/* Image i's boxes (mapped; NULL and *n = 0 when it has none or the file has no boxes section). */
const hone_data_box *hone_data_pack_boxes(const hone_data_pack *p, uint64_t i, size_t *n);
/* Image i's width and height before packing: the source sizes section's (version 3), else (an
 * older file, or i out of range) the packed size. */
void hone_data_pack_source_size(const hone_data_pack *p, uint64_t i, int *width, int *height);
/* A COCO set's category ids ([classes], mapped), or NULL when the file has none. */
const int64_t *hone_data_pack_category_ids(const hone_data_pack *p);

/* Packing an image folder: every image decoded, converted to `channels` and resized to
 * width x height (hone_data_resize), on `threads` threads (0: every core). progress, when set,
 * is called from the calling thread about every 200 ms and at the end. The first image that
 * fails stops the packing with its error, and no file is left behind. */
typedef void (*hone_data_progress_cb)(uint64_t done, uint64_t total, void *user);

typedef struct hone_data_pack_opts {
    int width, height;
    int channels; /* 1 or 3; 0: 1 when every image is grey, else 3 */
    int threads;
    const hone_data_limits *limits; /* NULL: the defaults */
    hone_data_progress_cb progress;
    void *user;
} hone_data_pack_opts;

int hone_data_folder_pack(const hone_data_folder *f, const char *path, const hone_data_pack_opts *o,
                          char *err, size_t errlen);

/* Packing a KITTI dataset the same way, with its boxes and each image's own size (a version 3
 * file). Images are resized
 * plainly to width x height (stretched, as hone_data_resize does; no letterbox), so a box edge at
 * x maps to x * width / image_width (y likewise): the same mapping as the pixels', whose edges
 * sit at 0 and the side. Class indices are k's class map's. */
int hone_data_kitti_pack(const hone_data_kitti *k, const char *path, const hone_data_pack_opts *o,
                         char *err, size_t errlen);

#endif
