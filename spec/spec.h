/* spec: the one schema of the trainer spec (hone-train's YAML, the controller's "specs"): every
 * dotted key with its type, range, default, the networks that use it and how AutoML sweeps it;
 * parsing a value from text (YAML scalar, --set) or JSON through the same checks; the cross-key
 * checks and the size limits below. The controller validates with it at create time, hone-train
 * parses with it, `automl-defaults` and schemas/spec.schema.json are generated from it.
 * Pure: libc, libm and jansson only; no files, no HTTP, no SQLite, no kernels.
 *
 * Limits (hone_spec_check), for the networks that exist today (mlp, cnn):
 *
 * - HONE_SPEC_MAX_PARAMS = 100,000,000 trainable parameters. The widest layer the key ranges allow
 *   (mlp, model.hidden 65536 on 28x28 inputs: 52 M parameters) stays trainable, and so does a
 *   two-layer mlp up to ~9,600 wide. Beyond it the per-epoch checkpoint (weights plus optimiser
 *   state: 1.2 GB at 100 M with AdamW, written every epoch and copied per trial) and the host-side
 *   He initialisation dominate an epoch on these small images, and nothing is gained: such
 *   networks only memorise a 60,000-image training set.
 * - HONE_SPEC_MAX_BYTES = 12 GiB of device memory as estimated by hone_spec_estimate: weights,
 *   gradients, optimiser state (SGD 1, AdamW 2 copies), batch-norm statistics, every layer's output
 *   and output gradient at the batch size (plus pool indices, dropout masks, the CUDA im2col
 *   workspace of the largest convolution, the batch buffers) and, when the data is known, the
 *   dataset hone-train copies to the device. A worker's smallest accelerator is taken to be a
 *   16 GB GPU (T4, V100-16GB, a 2g.20gb MIG slice); 12 GiB leaves it room for the CUDA context,
 *   cuBLAS workspaces and allocator slack. A CPU worker needs the same in RAM.
 *
 * Other cross-key rules: train.min_lr <= train.lr; train.warmup_epochs <= train.epochs; a key the
 * network does not use keeps its default (model.depth is mlp only; augment.crop_padding and
 * cutout are the classifiers', augment.translate, zoom_min and zoom_max detectnet_v2's: it moves
 * the boxes with the image); data.val_size below the
 * images in the training file (when the data is known); data.path set; network detectnet_v2 if and
 * only if data.format kitti or coco (blamed on `network`); detectnet_v2's input side a multiple of
 * detect.stride, at least 64 (model.input_size; 0 for kitti and coco is 128). */
#ifndef HONE_SPEC_H
#define HONE_SPEC_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <jansson.h>

#include "hone.h"

#define HONE_SPEC_MAX_PARAMS 100000000ULL
#define HONE_SPEC_MAX_BYTES (12ULL << 30)

/* The networks, in a fixed order (a key's `networks` bit i is hone_spec_networks[i]). */
#define HONE_SPEC_NNETS 5
extern const char *const hone_spec_networks[HONE_SPEC_NNETS + 1]; /* NULL-terminated */
/* Index of a network in hone_spec_networks, or -1. */
int hone_spec_network_index(const char *network);

/* ------------------------------------------------------------------ the resolved spec */

typedef struct hone_spec {
    char network[16]; /* mlp | cnn | resnet18 | resnet34 | detectnet_v2 */
    struct {
        char format[16];   /* idx | image_folder | kitti | coco (the last two detectnet_v2 only) */
        char path[1024];   /* idx: folder with {train,t10k}-{images-idx3,labels-idx1}-ubyte[.gz];
                              image_folder: <root>/[train|val|test/]<class>/<image> */
        char packed[1024]; /* image_folder: its packed file ("": hone-train packs it) */
        int channels;      /* 0: the data's own, 1 or 3 */
        int train_limit;   /* 0 = all remaining after the validation split */
        int val_size;      /* validation images taken from the end of the training file */
        int test_limit;    /* 0 = the whole test file */
    } data;
    struct {
        int epochs, batch_size;
        char optimizer[16]; /* sgd | adamw */
        double lr, momentum, weight_decay, beta1, beta2, eps;
        double label_smoothing; /* classifiers: the training target's eps (0: none) */
        int nesterov;
        char lr_schedule[16]; /* cosine | step | constant */
        double warmup_epochs, step_gamma, min_lr;
        int step_epochs;
        uint64_t seed;
        char math[8]; /* fp32 | tf32 | bf16 (CUDA GEMM/conv precision) */
    } train;
    struct {
        int hidden, depth;     /* mlp: hidden width and number of hidden layers; cnn: fc width */
        int width;             /* resnet, detectnet_v2: channels of the first stage */
        char backbone[16];     /* detectnet_v2: resnet18 | resnet34 */
        char pretrained[1024]; /* a model folder whose weights start training ("": none) */
        int input_size;        /* 0: the data's own */
        double dropout;        /* before the last dense layer(s) */
        int batchnorm;         /* mlp, cnn */
    } model;
    struct {
        int flip;                 /* every network (detectnet_v2: its boxes flipped too) */
        int crop_padding, cutout; /* classifiers only */
        double jitter;
        double translate, zoom_min, zoom_max; /* detectnet_v2 only: its affine warp */
    } augment;
    struct {                  /* detectnet_v2 (train/detect.h) */
        int stride;           /* 16 */
        double bbox_norm;     /* box offsets divided by it */
        double cov_threshold; /* cells below it give no candidate */
        char cluster[16];     /* dbscan | nms */
        char confidence[16];  /* dbscan: aggregate_cov | max_cov */
        double eps, min_samples, nms_iou;
    } detect;
    struct {
        double bbox_weight, cov_weight; /* detectnet_v2 */
        double cov_background_weight;   /* uncovered cells' coverage loss, relative */
        char cov_loss[8];               /* l2 | bce | focal */
        double focal_gamma;
    } loss;
    /* Keys whose default depends on the network (train.lr, model.hidden) that were set
     * explicitly: bit i for key i. The others follow `network` when it changes. */
    uint64_t given;
} hone_spec;

/* ------------------------------------------------------------------ the key table */

typedef enum {
    HONE_SPEC_INT,  /* JSON integer; text: decimal */
    HONE_SPEC_NUM,  /* JSON number; text: what strtod reads, finite */
    HONE_SPEC_BOOL, /* JSON true/false; text: true/false/yes/no/on/off */
    HONE_SPEC_ENUM, /* one of `choices` */
    HONE_SPEC_STR,  /* any UTF-8 text without control characters */
} hone_spec_type;

/* How AutoML sweeps a key (the "all_hyperparameters" space of automl-defaults). */
typedef struct hone_spec_sweep {
    const char *type;           /* "float" | "int" | "categorical" | "bool"; NULL: not swept */
    double lo[HONE_SPEC_NNETS]; /* float/int range per network */
    double hi[HONE_SPEC_NNETS];
    int log;        /* log scale */
    unsigned swept; /* bit i: in the default swept set of hone_spec_networks[i] */
    int step;       /* int: values lo + k * step (0: 1) */
    /* "parent=v1|v2": swept only while the parent key (an enum or bool) holds one of those values;
     * a space that sweeps the parent too gives the parameter that "condition"
     * (hone_spec_space_conditions); NULL: always */
    const char *when;
    unsigned values; /* categorical: bit i keeps choices[i] (0: every choice); a key users do not
                        set (network) may be swept to no other */
    unsigned nets;   /* networks it may be swept for (0: the key's own networks) */
} hone_spec_sweep;

typedef struct hone_spec_key {
    const char *name; /* dotted: "train.lr" */
    hone_spec_type type;
    long long imin, imax;       /* HONE_SPEC_INT, inclusive */
    double min, max;            /* HONE_SPEC_NUM, inclusive */
    const char *const *choices; /* HONE_SPEC_ENUM, NULL-terminated */
    /* the default as text, and per network where it differs (NULL: `def`) */
    const char *def;
    const char *def_net[HONE_SPEC_NNETS];
    unsigned networks; /* bit i: hone_spec_networks[i] uses the key */
    int user;          /* 1: set in experiment/job specs; 0: the controller sets it */
    int combo;         /* takes part in the cross-key checks (size, memory, order) */
    hone_spec_sweep sweep;
    const char *doc;
    size_t off, size; /* where the value lives in hone_spec (private to spec/) */
} hone_spec_key;

size_t hone_spec_nkeys(void);
const hone_spec_key *hone_spec_key_at(size_t i);
const hone_spec_key *hone_spec_key_find(const char *name); /* NULL when unknown */
/* The user key closest to name (a slip: "train.lrr" gives "train.lr"), or NULL (hone_suggest). */
const char *hone_spec_key_suggest(const char *name);
/* Whether a network (by name) uses the key. */
int hone_spec_key_used_by(const hone_spec_key *k, const char *network);

/* ------------------------------------------------------------------ values */

/* All keys at their defaults for the network (NULL: "mlp"). */
void hone_spec_defaults(hone_spec *s, const char *network);
/* Sets one key from text: a YAML scalar (quoted: it was written in quotes, so it is a string and
 * refused for a key that is not one) or a --set value. HONE_EPARSE with err naming the key, e.g.
 * "train.lr: expected a number, got 'fast'"; a refused value leaves s unchanged. */
int hone_spec_set_text(hone_spec *s, const char *key, const char *text, int quoted, char *err,
                       size_t errlen);
/* The same checks for a JSON value (the controller's input): HONE_EINVAL with err naming the key.
 * set_json also stores it. */
int hone_spec_check_json(const char *key, const json_t *v, char *err, size_t errlen);
int hone_spec_set_json(hone_spec *s, const char *key, const json_t *v, char *err, size_t errlen);
/* One key's current value as JSON (new reference; NULL for an unknown key). */
json_t *hone_spec_get_json(const hone_spec *s, const char *key);
/* Every key as a flat JSON object of dotted keys, in table order (new reference). */
json_t *hone_spec_to_json(const hone_spec *s);
/* Writes s as YAML that hone_spec_set_text reads back to the same values (%.17g numbers, quoted
 * strings). HONE_EINVAL when a string is not valid UTF-8 (it has no YAML form). */
int hone_spec_write_yaml(const hone_spec *s, FILE *f);

/* ------------------------------------------------------------------ cross-key checks */

/* What is known of the data a spec trains on. */
typedef struct hone_spec_data {
    long long
        train_images; /* images in the training file (validation comes from its end); <0: unknown */
    long long test_images; /* <0: unknown */
    int c, h, w;           /* image shape; 0: unknown (1x28x28 assumed) */
    int classes;           /* 0: unknown (10 assumed) */
} hone_spec_data;

#define HONE_SPEC_DATA_UNKNOWN                                                                     \
    {                                                                                              \
        -1, -1, 0, 0, 0, 0                                                                         \
    }

/* What training the spec costs (hone_spec_estimate). */
typedef struct hone_spec_cost {
    uint64_t params;      /* trainable parameters (exactly what train/net.c builds) */
    uint64_t model_bytes; /* weights, gradients, optimiser state, batch-norm statistics */
    uint64_t act_bytes;   /* activations and their gradients at the batch, with the buffers above */
    uint64_t data_bytes;  /* the dataset on the device (0 when the data is unknown) */
    long long batch;      /* the batch trained on: batch_size, or fewer when the data is smaller */
    /* parts of act_bytes: the network's per-layer buffers (exactly what train/net.c allocates for
     * them in fp32) and the largest convolution workspace (the CUDA backend's; the CPU's is less)
     */
    uint64_t layer_bytes;
    uint64_t ws_bytes;
} hone_spec_cost;

/* The [c, h, w] of what the network sees: data.channels and model.input_size where set, else the
 * data's own (d may be NULL; unknown: 1x28x28 for idx, 3x32x32 for an image folder); kitti and
 * coco images vary in size: 128x128 unless model.input_size says, 3 channels unless known. */
void hone_spec_input_shape(const hone_spec *s, const hone_spec_data *d, int *c, int *h, int *w);
/* 1 for a detection set's data.format (kitti, coco): boxes, trained by detectnet_v2 only. */
int hone_spec_format_detect(const char *format);
/* Estimates without checking; the counts saturate instead of overflowing. d may be NULL. */
void hone_spec_estimate(const hone_spec *s, const hone_spec_data *d, hone_spec_cost *out);
/* Every per-key rule again on the stored values (a spec filled in by code, or a controller
 * override such as an AutoML horizon), then the cross-key rules and limits above against d (may be
 * NULL: unknown). HONE_EINVAL with field = the key to blame ("model.hidden") and err naming it. */
int hone_spec_check(const hone_spec *s, const hone_spec_data *d, char *field, size_t fieldlen,
                    char *err, size_t errlen);

/* ------------------------------------------------------------------ defaults sized to the data
 *
 * A spec that does not set them gets, from the dataset's image counts (hone_spec_size):
 * - data.val_size: HONE_SPEC_VAL_PERCENT % of the training file, at least HONE_SPEC_VAL_FLOOR
 *   images (but never more than a fifth of them), at most HONE_SPEC_VAL_CAP (Fashion-MNIST's
 *   60,000 keep 5000); a dataset with its own val/ split validates on it (val_images).
 * - train.batch_size: the largest power of two that gives at least HONE_SPEC_EPOCH_STEPS
 *   optimiser steps an epoch on the images left for training, within [HONE_SPEC_MIN_BATCH, the
 *   network's default] (no more than the images themselves). data.train_limit is a cap the user
 *   set, not the dataset's size: it is not counted.
 * - train.lr, when the batch was sized below the default (and the user set neither): the
 *   network's default times sqrt(batch / default batch) (hone_spec_sized_lr_factor; cnn's 0.05
 *   at batch 128 diverges at batch 8, 0.0125 trains), at least a train.min_lr the user set.
 * - train.epochs: raised, when even that batch leaves the default run fewer than
 *   HONE_SPEC_RUN_STEPS steps, to that many steps (at most HONE_SPEC_MAX_SIZED_EPOCHS epochs);
 *   train.warmup_epochs and train.step_epochs keep their fraction of the run.
 * A key the user set (bit i of given: key i, as hone_spec.given) is never changed, and the sizes
 * that follow use it (a set data.val_size sizes the batch from what it leaves). AutoML's range of
 * train.batch_size (hone_spec_batch_range) is sized the same way: its top gives ~25 steps an
 * epoch, its bottom ~100, within the network's range; train.lr's range is scaled as the default
 * (hone_spec_space_sized). */
#define HONE_SPEC_VAL_PERCENT 10
#define HONE_SPEC_VAL_FLOOR 50
#define HONE_SPEC_VAL_CAP 5000
#define HONE_SPEC_EPOCH_STEPS 50
#define HONE_SPEC_MIN_BATCH 8
#define HONE_SPEC_RUN_STEPS 500
#define HONE_SPEC_MAX_SIZED_EPOCHS 50

/* Bit of key name in a given mask (0 for an unknown key). */
uint64_t hone_spec_key_bit(const char *name);
/* The sized data.val_size for a training file of n images. */
long long hone_spec_sized_val(long long n);
/* The sized train.batch_size of a network for ntrain training images. */
int hone_spec_sized_batch(const char *network, long long ntrain);
/* Sizes the keys of s that given does not name to d (train_images as hone_spec_data: for a folder
 * with val/, including its val_images, which then are the validation split; 0: none). Unknown
 * data (train_images < 0): s is left as it is. */
void hone_spec_size(hone_spec *s, const hone_spec_data *d, long long val_images, uint64_t given);
/* What a sized batch takes the network's default learning rate down by: sqrt(batch / the default
 * batch), 1 at or above the default batch. */
double hone_spec_sized_lr_factor(const char *network, int batch);
/* AutoML's range of train.batch_size for ntrain training images (< 0: unknown, the table's range):
 * 1 with [lo, hi], lo < hi; 0 when there is nothing to sweep. */
int hone_spec_batch_range(const char *network, long long ntrain, int *lo, int *hi);
/* hone_spec_space with train.batch_size's range sized to ntrain (dropped when nothing is left to
 * sweep; ntrain < 0: unchanged) and train.lr's range times lr_factor (what the spec's default
 * learning rate was sized by; 1 where the user set the batch or the rate). New reference; NULL
 * for an unknown network. */
json_t *hone_spec_space_sized(const char *network, int all, long long ntrain, double lr_factor);

/* ------------------------------------------------------------------ JSON Schema, AutoML spaces */

/* The JSON Schema (draft 2020-12) of a specs object, generated from the table: dotted keys and
 * their nested form, types, ranges, defaults, networks, sweeps and the limits (new reference).
 * schemas/spec.schema.json is this, written by hone-spec-schema. */
json_t *hone_spec_json_schema(void);
/* Serialises it the way schemas/spec.schema.json is written (malloc'd, ends in a newline). */
char *hone_spec_json_schema_text(void);
/* AutoML spaces (search/search.h JSON shape) for a network: every sweepable key (all = 1) or the
 * default swept set (all = 0), with the conditions of hone_spec_space_conditions. New reference;
 * NULL for an unknown network. */
json_t *hone_spec_space(const char *network, int all);
/* Gives each parameter of a space built from the table the "condition" of its key's sweep.when
 * where the space sweeps that parent too, and takes it away where it does not (a set edited by
 * adding or removing keys). Parameters of keys without one are left as they are. */
void hone_spec_space_conditions(json_t *space);
/* Whether AutoML may sweep the key for the network: a key users set, or one the table sweeps for
 * it (network itself, within the resnet family). */
int hone_spec_key_sweepable(const hone_spec_key *k, const char *network);
/* A swept parameter's values the key allows a search to set for the network (a categorical of a
 * key users do not set whose sweep keeps only some choices: network's resnet18 and resnet34):
 * HONE_EINVAL with a message naming the key and the values it may take. */
int hone_spec_sweep_check(const hone_spec_key *k, const json_t *param, const char *network,
                          char *err, size_t errlen);

#endif
