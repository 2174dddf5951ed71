/* train/dataset.h (private): an image-classification dataset in host memory as uint8 pixels
 * (HWC, the packed file's layout), split into train, validation and test parts, with the
 * per-channel mean and deviation of the training part that the trainer normalises with on the
 * device.
 *
 * Where the parts come from:
 * - data.format idx: train = the training file's first images (data.train_limit of them when set),
 *   val = its last data.val_size images, test = the t10k file's first (data.test_limit) images.
 * - data.format image_folder: the folder packed at the spec's input shape (hone_spec_input_shape):
 *   data.packed when set (opened with both checksums verified, refused naming data.packed when its
 *   size or channels are not the spec's), else hone-train packs data.path itself on every core
 *   into a private temp file that is unlinked as soon as it is mapped. Then:
 *   - test: the folder's test/ split when it has one; otherwise 10% of train/ (rounded down),
 *     picked at random, so that a flat folder, or one with only train/ and val/, still has test
 *     images the model never trained on nor was selected on;
 *   - val: the folder's val/ split when it has one (data.val_size is then not used); otherwise
 *     data.val_size images of train/ picked at random after the test pick;
 *   - train: the rest of train/, in a random order, of which data.train_limit are kept when set;
 *     data.test_limit keeps the first images of the test part, which is in a random order too.
 *   Every random pick comes from one fixed seed (DATASET_SPLIT_SEED), never from train.seed: each
 *   trial of a search trains and validates on the same images, whatever its seed.
 * - data.format kitti or coco (detectnet_v2): as an image folder, packed with its boxes (a COCO
 *   set read by hone_data_coco_open into the same detection set as a KITTI folder)
 *   (hone_data_kitti_pack, plain resize to the spec's input shape) or data.packed when it has a
 *   boxes section; each part keeps its images' boxes, and their grid targets are encoded once
 *   (detect_data.c); with spatial augmentation the training targets are encoded each step
 *   from the boxes instead (detect_train.c). The spec keeps crop and cutout off.
 * The mean and deviation are those of pixel/255 over the training part, per channel. */
#ifndef HONE_TRAIN_DATASET_H
#define HONE_TRAIN_DATASET_H

#include "train.h"

#define DATASET_SPLIT_SEED 0x5EED5B117ULL

typedef struct {
    uint8_t *x; /* [n, h*w*c], HWC; owned */
    int32_t *y; /* [n]; owned */
    int n;
    /* kitti only (NULL otherwise), owned: image i's boxes are boxes[box_start[i] ..
     * box_start[i + 1]) in the packed image's pixels (DontCare regions included); targets
     * [n, 6 * classes * grid_h * grid_w] its grid targets as hone_k_detect_loss reads them
     * (coverage, box offsets, weights: train/detect.h), encoded once at load time */
    hone_data_box *boxes;
    uint32_t *box_start;
    float *targets;
    /* kitti only: crowd[j] the class of boxes[j] when it is a COCO crowd region (boxes[j].cls is
     * then HONE_DATA_DONTCARE, so that training ignores it as any DontCare region), else -1;
     * src_wh[2i], src_wh[2i + 1] image i's size before packing (COCO's areas are in it) */
    int32_t *crowd;
    int32_t *src_wh;
} data_part;

typedef struct {
    int c, h, w, classes;
    int detect;            /* kitti: the parts carry boxes and grid targets */
    int grid_h, grid_w;    /* kitti: h / detect.stride, w / detect.stride */
    float mean[3], std[3]; /* per channel, of pixel/255 over the training part */
    char **names;          /* [classes] class names of an image folder (owned); NULL for idx */
    int64_t *category_ids; /* [classes] a COCO set's category ids (owned); NULL otherwise */
    data_part train, val, test;
} dataset;

/* Loads the spec's data (data.format idx or image_folder, as above), checks the spec against it
 * (spec/'s size limits, data.val_size) and fills *out. err names the file or the key.
 * test_only (evaluating a trained model on a dataset it was not trained on): an image folder's
 * test part is its test/ split, or else every image (in the packed order; data.test_limit keeps
 * the first), train and val are empty and no training limit is checked; idx loads as usual. */
int dataset_load(const hone_train_spec *spec, int test_only, dataset *out, char *err,
                 size_t errlen);
/* dataset_load with its one message (packing a folder) on log instead of stderr. */
int dataset_load_log(const hone_train_spec *spec, int test_only, FILE *log, dataset *out, char *err,
                     size_t errlen);
void dataset_free(dataset *d);

/* detect_data.c: a kitti part's boxes, copied from the packed file for its images (rows[i], or
 * from + i when rows is NULL), then its grid targets (the spec's detect.stride and
 * detect.bbox_norm, detect.h's other defaults). HONE_EINVAL (err says) for a box whose class is
 * out of range. */
void detect_part_boxes(const hone_data_pack *pk, const uint32_t *rows, size_t from, data_part *p);
int detect_part_targets(const hone_train_spec *spec, int classes, int h, int w, data_part *p,
                        char *err, size_t errlen);
void detect_part_free(data_part *p);

#endif
