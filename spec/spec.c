/* spec/spec.c: the key table (the one list of spec keys with type, range, default, networks and
 * sweep), and setting a value from text or JSON through one checker, so hone-train and the
 * controller refuse exactly the same values with the same words. Holds no other spec table. */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "spec_internal.h"

const char *const hone_spec_networks[HONE_SPEC_NNETS + 1] = {"mlp",      "cnn",          "resnet18",
                                                             "resnet34", "detectnet_v2", NULL};

static const char *const networks[] = {"mlp", "cnn", "resnet18", "resnet34", "detectnet_v2", NULL};
/* what hone-train loads; kitti and coco (detection sets) only with detectnet_v2 */
static const char *const formats[] = {"idx", "image_folder", "kitti", "coco", NULL};

int hone_spec_format_detect(const char *format)
{
    return format && (!strcmp(format, "kitti") || !strcmp(format, "coco"));
}
static const char *const backbones[] = {"resnet18", "resnet34", NULL};
static const char *const clusters[] = {"dbscan", "nms", NULL};
static const char *const confidences[] = {"aggregate_cov", "max_cov", NULL};
static const char *const cov_losses[] = {"l2", "bce", "focal", NULL}; /* hone_kcov_loss order */
static const char *const optimizers[] = {"sgd", "adamw", NULL};
static const char *const schedules[] = {"cosine", "step", "constant", NULL};
static const char *const maths[] = {"fp32", "tf32", "bf16", NULL};

#define ALL 31u /* every network */
#define CLS 15u /* the classifiers: mlp, cnn, resnet18, resnet34 */
#define MLP 1u
#define MLP_CNN 3u
#define RESNET 12u /* resnet18, resnet34 */
#define DET 16u    /* detectnet_v2 */
#define F(field) .off = offsetof(hone_spec, field), .size = sizeof(((hone_spec *)0)->field)
#define INT(lo, hi) .type = HONE_SPEC_INT, .imin = (lo), .imax = (hi)
#define NUM(lo, hi) .type = HONE_SPEC_NUM, .min = (lo), .max = (hi)
#define ENUM(c) .type = HONE_SPEC_ENUM, .choices = (c)
/* sweep ranges per network: mlp, cnn, one for both resnets and one for detectnet_v2 (SWEEP: the
 * resnets' range, whose backbone it is); SWEEP_DS: an int's grid step too; SWEEP_X: a condition
 * (hone_spec_sweep.when), the choices kept and the networks too */
#define SWEEP_X(t, lo_mlp, hi_mlp, lo_cnn, hi_cnn, lo_res, hi_res, lo_det, hi_det, lg, sw, st, wh, \
                vals, nets)                                                                        \
    .sweep = {(t),                                                                                 \
              {(lo_mlp), (lo_cnn), (lo_res), (lo_res), (lo_det)},                                  \
              {(hi_mlp), (hi_cnn), (hi_res), (hi_res), (hi_det)},                                  \
              (lg),                                                                                \
              (sw),                                                                                \
              (st),                                                                                \
              (wh),                                                                                \
              (vals),                                                                              \
              (nets)}
#define SWEEP_DS(t, lo_mlp, hi_mlp, lo_cnn, hi_cnn, lo_res, hi_res, lo_det, hi_det, lg, sw, st)    \
    SWEEP_X(t, lo_mlp, hi_mlp, lo_cnn, hi_cnn, lo_res, hi_res, lo_det, hi_det, lg, sw, st, NULL,   \
            0, 0)
/* SWEEP with a condition */
#define SWEEP_IF(t, lo_mlp, hi_mlp, lo_cnn, hi_cnn, lo_res, hi_res, lg, sw, st, wh)                \
    SWEEP_X(t, lo_mlp, hi_mlp, lo_cnn, hi_cnn, lo_res, hi_res, lo_res, hi_res, lg, sw, st, wh, 0, 0)
#define SWEEP_D(t, lo_mlp, hi_mlp, lo_cnn, hi_cnn, lo_res, hi_res, lo_det, hi_det, lg, sw)         \
    SWEEP_DS(t, lo_mlp, hi_mlp, lo_cnn, hi_cnn, lo_res, hi_res, lo_det, hi_det, lg, sw, 0)
#define SWEEP(t, lo_mlp, hi_mlp, lo_cnn, hi_cnn, lo_res, hi_res, lg, sw)                           \
    SWEEP_D(t, lo_mlp, hi_mlp, lo_cnn, hi_cnn, lo_res, hi_res, lo_res, hi_res, lg, sw)

/* Ranges are what hone-train can really train with: beyond them it diverges (lr > 10, momentum 1
 * never decays), does nothing useful (weight_decay > 1 dominates every gradient) or cannot load
 * the data (formats other than idx). Order: the order spec.yaml is written in. */
static const hone_spec_key keys[] = {
    /* depth: a resnet's trials may be resnet18 or resnet34 (the family's one depth knob); the
     * trial's network replaces the experiment's in its spec */
    {"network", ENUM(networks), .def = "mlp", .networks = ALL, .combo = 1,
     SWEEP_X("categorical", 0, 0, 0, 0, 0, 0, 0, 0, 0, RESNET, 0, NULL, RESNET, RESNET),
     .doc = "the network to train", F(network)},
    {"data.format", ENUM(formats), .def = "idx", .networks = ALL,
     .doc = "dataset format (from the dataset)", F(data.format)},
    {"data.path", .type = HONE_SPEC_STR, .def = "/usr/share/datasets/fashion-mnist",
     .networks = ALL, .doc = "dataset folder (from the dataset)", F(data.path)},
    {"data.channels", INT(0, 3), .def = "0", .networks = ALL, .user = 1, .combo = 1,
     .doc = "image channels trained on: 1 (grey) or 3 (RGB); 0: the data's own (an image folder "
            "is grey when every image is)",
     F(data.channels)},
    {"data.packed", .type = HONE_SPEC_STR, .def = "", .networks = ALL,
     .doc = "image folder: the packed file of its convert job (set by the controller); empty: "
            "hone-train packs the folder itself",
     F(data.packed)},
    {"data.train_limit", INT(0, 1000000000), .def = "0", .networks = ALL, .user = 1, .combo = 1,
     .doc = "training images used, 0 = all after the validation split", F(data.train_limit)},
    {"data.val_size", INT(0, 1000000000), .def = "5000", .networks = ALL, .user = 1, .combo = 1,
     .doc = "validation images: idx, the end of the training file; an image folder without "
            "val/, a fixed random pick of train/ (with val/, not used). Unset: sized to the "
            "dataset, 10% of its training images, at least 50 (at most a fifth), at most 5000",
     F(data.val_size)},
    {"data.test_limit", INT(0, 1000000000), .def = "0", .networks = ALL, .user = 1, .combo = 1,
     .doc = "test images used, 0 = all", F(data.test_limit)},
    {"train.epochs", INT(1, 100000), .def = "10", .networks = ALL, .user = 1, .combo = 1,
     .doc = "epochs (the learning-rate schedule's horizon). Unset on a dataset so small that "
            "the run would take fewer than 500 steps: raised to 500 steps (at most 50 epochs), "
            "warm-up and step_epochs in proportion",
     F(train.epochs)},
    /* detectnet_v2 sweeps smaller batches: on the generated set (40 epochs) 32 scored 6 points of
     * mAP above the default 128, and 256 and up fewer; and lr 2e-3..0.05 (0.04 at batch 128 lost
     * 12 points, the trials under 2e-3 learnt little in a short rung) (bench/README.md) */
    {"train.batch_size", INT(1, 65536), .def = "128", .networks = ALL, .user = 1, .combo = 1,
     SWEEP_D("int", 64, 512, 64, 512, 64, 512, 16, 128, 1, ALL),
     .doc = "images per step. Unset: sized to the dataset, the largest power of two giving at "
            "least 50 steps an epoch, from 8 up to this default (AutoML's range likewise)",
     F(train.batch_size)},
    {"train.optimizer", ENUM(optimizers), .def = "sgd", .networks = ALL, .user = 1, .combo = 1,
     SWEEP("categorical", 0, 0, 0, 0, 0, 0, 0, MLP_CNN), .doc = "sgd (momentum) or adamw",
     F(train.optimizer)},
    {"train.lr", NUM(0, 10), .def = "0.1", .def_net = {NULL, "0.05", NULL, NULL, "0.02"},
     .networks = ALL, .user = 1, .combo = 1,
     SWEEP_D("float", 1e-3, 0.3, 1e-3, 0.3, 5e-3, 0.4, 2e-3, 0.05, 1, ALL),
     .doc = "peak learning rate. Unset, with train.batch_size unset and sized below the "
            "default: the default times sqrt(batch / default batch)",
     F(train.lr)},
    {"train.momentum", NUM(0, 0.9999), .def = "0.9", .networks = ALL, .user = 1,
     SWEEP_IF("float", 0.5, 0.99, 0.5, 0.99, 0.8, 0.95, 0, MLP_CNN | DET, 0, "train.optimizer=sgd"),
     .doc = "SGD momentum", F(train.momentum)},
    {"train.nesterov", .type = HONE_SPEC_BOOL, .def = "true", .networks = ALL, .user = 1,
     SWEEP_IF("bool", 0, 0, 0, 0, 0, 0, 0, 0, 0, "train.optimizer=sgd"), .doc = "Nesterov momentum",
     F(train.nesterov)},
    {"train.weight_decay", NUM(0, 1), .def = "5e-4", .networks = ALL, .user = 1,
     SWEEP_D("float", 1e-6, 1e-2, 1e-6, 1e-2, 1e-5, 5e-3, 1e-6, 1e-3, 1, ALL),
     .doc = "L2 (sgd) or decoupled (adamw) decay", F(train.weight_decay)},
    {"train.beta1", NUM(0, 0.9999), .def = "0.9", .networks = ALL, .user = 1,
     SWEEP_IF("float", 0.8, 0.95, 0.8, 0.95, 0.8, 0.95, 0, MLP_CNN, 0, "train.optimizer=adamw"),
     .doc = "AdamW first-moment decay", F(train.beta1)},
    {"train.beta2", NUM(0, 0.999999), .def = "0.999", .networks = ALL, .user = 1,
     SWEEP_IF("float", 0.99, 0.9999, 0.99, 0.9999, 0.99, 0.9999, 0, MLP_CNN, 0,
              "train.optimizer=adamw"),
     .doc = "AdamW second-moment decay", F(train.beta2)},
    {"train.eps", NUM(1e-12, 1), .def = "1e-8", .networks = ALL, .user = 1, .doc = "AdamW epsilon",
     F(train.eps)},
    {"train.lr_schedule", ENUM(schedules), .def = "cosine", .networks = ALL, .user = 1,
     /* swept between cosine and step: a constant rate loses to both in a short run, so a search
      * would spend a third of its first trials on it (a space of one's own may still sweep it) */
     SWEEP_X("categorical", 0, 0, 0, 0, 0, 0, 0, 0, 0, RESNET, 0, NULL, 3u, 0),
     .doc = "after warmup: cosine, step or constant", F(train.lr_schedule)},
    {"train.warmup_epochs", NUM(0, 100000), .def = "0", .networks = ALL, .user = 1, .combo = 1,
     SWEEP("int", 0, 5, 0, 5, 0, 5, 0, 0), .doc = "linear warmup, in epochs (fractions allowed)",
     F(train.warmup_epochs)},
    /* step_epochs' range holds every sized default (10 epochs of 10 raised to at most 50: 50) */
    {"train.step_epochs", INT(1, 100000), .def = "10", .networks = ALL, .user = 1,
     SWEEP_IF("int", 1, 50, 1, 50, 1, 50, 1, RESNET, 0, "train.lr_schedule=step"),
     .doc = "step schedule: epochs between decays", F(train.step_epochs)},
    {"train.step_gamma", NUM(0, 1), .def = "0.1", .networks = ALL, .user = 1,
     SWEEP_IF("float", 0.05, 0.5, 0.05, 0.5, 0.05, 0.5, 1, RESNET, 0, "train.lr_schedule=step"),
     .doc = "step schedule: decay factor", F(train.step_gamma)},
    {"train.min_lr", NUM(0, 10), .def = "0", .networks = ALL, .user = 1, .combo = 1,
     .doc = "cosine schedule: final learning rate", F(train.min_lr)},
    {"train.seed", INT(0, INT64_MAX), .def = "1", .networks = ALL, .user = 1,
     .doc = "initialisation, shuffling, dropout and augmentation seed", F(train.seed)},
    /* label smoothing: at most 0.5 (beyond it the label's own target nears the others' and
     * teaches little: with 2 classes eps 1 makes them equal); swept over [0, 0.2] (0.1 is the
     * usual choice), whose 0, the default, keeps the default spec a point of the space */
    {"train.label_smoothing", NUM(0, 0.5), .def = "0", .networks = CLS, .user = 1,
     SWEEP("float", 0, 0.2, 0, 0.2, 0, 0.2, 0, CLS),
     .doc = "classifiers: label smoothing eps, the training target (1 - eps) on the label plus "
            "eps / classes on every class; 0: plain cross-entropy. The training loss reported is "
            "the smoothed one; validation and test loss and accuracy stay plain cross-entropy, so "
            "runs with different values compare",
     F(train.label_smoothing)},
    {"train.math", ENUM(maths), .def = "fp32", .networks = ALL, .user = 1,
     .doc = "CUDA GEMM/conv precision; bf16 on resnet18/34 and detectnet_v2 (model.width a "
            "multiple of 8) also keeps their activations as bf16 NHWC (cuDNN tensor cores)",
     F(train.math)},
    {"model.hidden", INT(1, 65536), .def = "256", .def_net = {NULL, "128"}, .networks = MLP_CNN,
     .user = 1, .combo = 1, SWEEP("int", 64, 1024, 32, 512, 0, 0, 1, 0),
     .doc = "mlp: hidden width; cnn: fully-connected width", F(model.hidden)},
    {"model.depth", INT(1, 64), .def = "1", .networks = MLP, .user = 1, .combo = 1,
     SWEEP("int", 1, 4, 0, 0, 0, 0, 0, 0), .doc = "mlp: hidden layers", F(model.depth)},
    {"model.width", INT(8, 256), .def = "64", .networks = RESNET | DET, .user = 1, .combo = 1,
     SWEEP_DS("int", 0, 0, 0, 0, 16, 64, 32, 96, 1, RESNET | DET, 8),
     .doc = "resnet, detectnet_v2's backbone: channels of the first stage (doubled at each next "
            "one)",
     F(model.width)},
    {"model.backbone", ENUM(backbones), .def = "resnet18", .networks = DET, .user = 1, .combo = 1,
     SWEEP("categorical", 0, 0, 0, 0, 0, 0, 0, 0),
     .doc = "detectnet_v2: its ResNet backbone, truncated after the third stage (stride 16)",
     F(model.backbone)},
    {"model.pretrained", .type = HONE_SPEC_STR, .def = "", .networks = ALL,
     .doc = "a model folder (model.bin, model.json, spec.yaml) whose weights start a fresh run: "
            "each layer from the first that matches in kind and shape; empty: random "
            "initialisation. hone-train's own for now: a job's spec cannot name a path on a "
            "worker",
     F(model.pretrained)},
    {"model.input_size", INT(0, 512), .def = "0", .networks = ALL, .user = 1, .combo = 1,
     .doc = "side of the square images trained on; 0: the data's own (28 for idx, 32 for an "
            "image folder). Image folders are resized to it when packed; idx data is not resized",
     F(model.input_size)},
    {"model.dropout", NUM(0, 0.95), .def = "0", .networks = CLS, .user = 1, .combo = 1,
     SWEEP("float", 0, 0.5, 0, 0.5, 0, 0.5, 0, 0), .doc = "dropout before the last dense layer(s)",
     F(model.dropout)},
    {"model.batchnorm", .type = HONE_SPEC_BOOL, .def = "false", .networks = MLP_CNN, .user = 1,
     .combo = 1, SWEEP("bool", 0, 0, 0, 0, 0, 0, 0, 0),
     .doc = "mlp, cnn: batch normalisation after each layer (resnets always have it)",
     F(model.batchnorm)},
    {"augment.flip", .type = HONE_SPEC_BOOL, .def = "false",
     .def_net = {NULL, NULL, "true", "true", "true"}, .networks = ALL, .user = 1,
     SWEEP_D("bool", 0, 0, 0, 0, 0, 0, 0, 0, 0, CLS - MLP),
     .doc = "random horizontal flips (half the images; detectnet_v2: their boxes too)",
     F(augment.flip)},
    {"augment.crop_padding", INT(0, 32), .def = "0", .def_net = {NULL, NULL, "4", "4", "0"},
     .networks = CLS, .user = 1, SWEEP("int", 0, 4, 0, 4, 0, 6, 0, CLS - MLP),
     .doc = "random crops of the image size from the image zero-padded by this many pixels",
     F(augment.crop_padding)},
    {"augment.jitter", NUM(0, 1), .def = "0", .networks = ALL, .user = 1,
     SWEEP("float", 0, 0.4, 0, 0.4, 0, 0.4, 0, 0),
     .doc = "colour jitter strength j: brightness, contrast and saturation scaled by factors "
            "drawn from [1-j, 1+j]",
     F(augment.jitter)},
    {"augment.cutout", INT(0, 512), .def = "0", .networks = CLS, .user = 1,
     SWEEP_DS("int", 0, 16, 0, 16, 0, 16, 0, 0, 0, CLS - MLP, 4),
     .doc = "side of a square, at a random centre, set to the mean (0 after normalisation); 0: off",
     F(augment.cutout)},
    {"augment.translate", NUM(0, 0.5), .def = "0", .def_net = {NULL, NULL, NULL, NULL, "0.1"},
     .networks = DET, .user = 1, SWEEP_D("float", 0, 0, 0, 0, 0, 0, 0, 0.3, 0, DET),
     .doc = "detectnet_v2: random shift of the image and its boxes, at most this fraction of the "
            "side in each direction (out-of-image pixels are the mean)",
     F(augment.translate)},
    {"augment.zoom_min", NUM(0.25, 1), .def = "1", .def_net = {NULL, NULL, NULL, NULL, "0.8"},
     .networks = DET, .user = 1, SWEEP_D("float", 0, 0, 0, 0, 0, 0, 0.5, 1, 0, DET),
     .doc = "detectnet_v2: smallest random scale of the image and its boxes about the centre "
            "(1 with zoom_max 1: no zoom)",
     F(augment.zoom_min)},
    {"augment.zoom_max", NUM(1, 4), .def = "1", .def_net = {NULL, NULL, NULL, NULL, "1.2"},
     .networks = DET, .user = 1, SWEEP_D("float", 0, 0, 0, 0, 0, 0, 1, 1.6, 0, DET),
     .doc = "detectnet_v2: largest random scale of the image and its boxes about the centre; a "
            "box less than 30% inside the image, or under 2 pixels, is dropped",
     F(augment.zoom_max)},
    /* detectnet_v2 (train/detect.h has the meaning of each; defaults are its TAO-like ones) */
    {"detect.stride", INT(16, 16), .def = "16", .networks = DET, .user = 1, .combo = 1,
     .doc = "detectnet_v2: pixels per output grid cell (the backbone's stride)", F(detect.stride)},
    {"detect.bbox_norm", NUM(1, 1000), .def = "35", .networks = DET, .user = 1,
     .doc = "detectnet_v2: box offsets from a cell's centre are divided by it",
     F(detect.bbox_norm)},
    /* swept to 0.05 at most: a higher threshold only drops low-ranked boxes, recall that mAP
     * never pays back */
    {"detect.cov_threshold", NUM(0, 1), .def = "0.005", .networks = DET, .user = 1,
     SWEEP_D("float", 0, 0, 0, 0, 0, 0, 0.001, 0.05, 1, DET),
     .doc = "detectnet_v2: cells whose coverage is at least this give candidate boxes",
     F(detect.cov_threshold)},
    {"detect.cluster", ENUM(clusters), .def = "dbscan", .networks = DET, .user = 1,
     SWEEP("categorical", 0, 0, 0, 0, 0, 0, 0, 0),
     .doc = "detectnet_v2: candidates merged by DBSCAN clustering (TAO) or per-class NMS",
     F(detect.cluster)},
    {"detect.confidence", ENUM(confidences), .def = "aggregate_cov", .networks = DET, .user = 1,
     .doc = "detectnet_v2, dbscan: a cluster's confidence, its summed coverage (aggregate_cov, "
            "TAO's) or its largest (max_cov)",
     F(detect.confidence)},
    {"detect.eps", NUM(0.01, 1), .def = "0.3", .networks = DET, .user = 1,
     SWEEP_D("float", 0, 0, 0, 0, 0, 0, 0.1, 0.6, 0, DET),
     .doc = "detectnet_v2, dbscan: 1 - IoU within which candidates are neighbours", F(detect.eps)},
    {"detect.min_samples", NUM(0, 100), .def = "0.05", .networks = DET, .user = 1,
     .doc = "detectnet_v2, dbscan: summed coverage a core candidate needs", F(detect.min_samples)},
    {"detect.nms_iou", NUM(0, 1), .def = "0.5", .networks = DET, .user = 1,
     .doc = "detectnet_v2, nms: IoU above which a lower-scored box of the class is dropped",
     F(detect.nms_iou)},
    {"loss.bbox_weight", NUM(0, 1000), .def = "10", .networks = DET, .user = 1,
     SWEEP_D("float", 0, 0, 0, 0, 0, 0, 1, 50, 1, DET),
     .doc = "detectnet_v2: weight of the coverage-weighted L1 loss on box offsets",
     F(loss.bbox_weight)},
    {"loss.cov_weight", NUM(0, 1000), .def = "1", .networks = DET, .user = 1,
     .doc = "detectnet_v2: weight of the loss on coverage", F(loss.cov_weight)},
    {"loss.cov_loss", ENUM(cov_losses), .def = "bce", .networks = DET, .user = 1, .combo = 1,
     .doc = "detectnet_v2: the loss on coverage: bce (binary cross-entropy), l2 (sigmoid + L2, "
            "TAO's: it learns the classes slower, 0.38 against bce's 0.45 mAP on the generated "
            "set) or focal (BCE scaled by (1 - p)^loss.focal_gamma)",
     F(loss.cov_loss)},
    {"loss.focal_gamma", NUM(0, 5), .def = "2", .networks = DET, .user = 1, .combo = 1,
     .doc = "detectnet_v2, focal: how much a well-classified cell's loss is scaled down",
     F(loss.focal_gamma)},
    {"loss.cov_background_weight", NUM(0, 1), .def = "0.1", .networks = DET, .user = 1,
     .doc = "detectnet_v2: weight of an uncovered cell's coverage loss relative to a covered "
            "one's (the many background cells would drown the few objects)",
     F(loss.cov_background_weight)},
};

_Static_assert(HONE_ARRAY_LEN(keys) <= 64, "hone_spec.given has one bit per key");

int hone_spec_network_index(const char *network)
{
    for (int i = 0; network && hone_spec_networks[i]; i++)
        if (!strcmp(network, hone_spec_networks[i]))
            return i;
    return -1;
}

size_t hone_spec_nkeys(void)
{
    return HONE_ARRAY_LEN(keys);
}

const hone_spec_key *hone_spec_key_at(size_t i)
{
    return i < HONE_ARRAY_LEN(keys) ? &keys[i] : NULL;
}

const hone_spec_key *hone_spec_key_find(const char *name)
{
    for (size_t i = 0; name && i < HONE_ARRAY_LEN(keys); i++)
        if (!strcmp(keys[i].name, name))
            return &keys[i];
    return NULL;
}

const char *hone_spec_key_suggest(const char *name)
{
    const char *names[HONE_ARRAY_LEN(keys)];
    size_t n = 0;
    for (size_t i = 0; i < HONE_ARRAY_LEN(keys); i++)
        if (keys[i].user) /* the keys a user may set, never the controller's own */
            names[n++] = keys[i].name;
    return hone_suggest(name, names, n);
}

int hone_spec_key_used_by(const hone_spec_key *k, const char *network)
{
    int i = hone_spec_network_index(network);
    return i >= 0 && (k->networks >> i & 1u);
}

static int fail(char *err, size_t errlen, int rc, const char *fmt, ...)
{
    if (err && errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
    }
    return rc;
}

/* "train.lrr: unknown key (did you mean train.lr?)" */
static int unknown_key(char *err, size_t errlen, int rc, const char *key)
{
    const char *near = hone_spec_key_suggest(key);
    return fail(err, errlen, rc, "%s: unknown key%s%s%s", key, near ? " (did you mean " : "",
                near ? near : "", near ? "?)" : "");
}

/* Decodes one UTF-8 sequence at s (shortest form, no surrogates, at most U+10FFFF): its length
 * and code point, or 0 when the bytes are not valid UTF-8. */
static int utf8_next(const unsigned char *s, unsigned *cp)
{
    unsigned c = s[0], min;
    int n;
    if (c < 0x80) {
        *cp = c;
        return 1;
    }
    if (c >= 0xC2 && c <= 0xDF)
        n = 2, c &= 0x1F, min = 0x80;
    else if (c >= 0xE0 && c <= 0xEF)
        n = 3, c &= 0x0F, min = 0x800;
    else if (c >= 0xF0 && c <= 0xF4)
        n = 4, c &= 0x07, min = 0x10000;
    else
        return 0;
    for (int i = 1; i < n; i++) {
        if ((s[i] & 0xC0) != 0x80)
            return 0;
        c = (c << 6) | (s[i] & 0x3F);
    }
    if (c < min || c > 0x10FFFF || (c >= 0xD800 && c <= 0xDFFF))
        return 0;
    *cp = c;
    return n;
}

/* Control characters (C0, DEL, C1) and the non-characters U+FFFE/U+FFFF: never in a name or path,
 * and not printable in YAML. */
static int is_control(unsigned cp)
{
    return cp < 0x20 || (cp >= 0x7F && cp <= 0x9F) || cp == 0xFFFE || cp == 0xFFFF;
}

/* A parsed value of the key's own type: what both the text and the JSON paths produce. */
typedef struct {
    long long i; /* INT, BOOL */
    double d;    /* NUM */
    const char *s;
} value;

/* The one checker: ranges, choices, string form. rc is the caller's error code. */
static int check_value(const hone_spec_key *k, const value *v, int rc, char *err, size_t errlen)
{
    switch (k->type) {
    case HONE_SPEC_INT:
        if (v->i < k->imin && k->imin == 0)
            return fail(err, errlen, rc, "%s: expected a non-negative integer, got '%lld'", k->name,
                        v->i);
        if (v->i < k->imin || v->i > k->imax)
            return fail(err, errlen, rc, "%s: %lld out of range [%lld, %lld]", k->name, v->i,
                        k->imin, k->imax);
        return HONE_OK;
    case HONE_SPEC_NUM:
        if (!(v->d >= k->min && v->d <= k->max))
            return fail(err, errlen, rc, "%s: %g out of range [%g, %g]", k->name, v->d, k->min,
                        k->max);
        return HONE_OK;
    case HONE_SPEC_BOOL:
        return HONE_OK;
    case HONE_SPEC_ENUM:
    case HONE_SPEC_STR: {
        size_t n = strlen(v->s);
        if (n >= k->size)
            return fail(err, errlen, rc, "%s: value longer than %zu characters", k->name,
                        k->size - 1);
        const unsigned char *u = (const unsigned char *)v->s;
        for (size_t i = 0; u[i];) {
            unsigned cp;
            int len = utf8_next(u + i, &cp);
            if (len == 0)
                return fail(err, errlen, rc, "%s: invalid UTF-8 at byte %zu", k->name, i);
            if (is_control(cp))
                return fail(err, errlen, rc, "%s: control character U+%04X at byte %zu", k->name,
                            cp, i);
            i += (size_t)len;
        }
        if (k->type == HONE_SPEC_STR)
            return HONE_OK;
        for (int i = 0; k->choices[i]; i++)
            if (!strcmp(k->choices[i], v->s))
                return HONE_OK;
        char list[128] = "";
        for (int i = 0; k->choices[i]; i++) {
            size_t l = strlen(list);
            snprintf(list + l, sizeof list - l, "%s%s", i ? ", " : "", k->choices[i]);
        }
        return fail(err, errlen, rc, "%s: '%s' is not one of: %s", k->name, v->s, list);
    }
    }
    return fail(err, errlen, rc, "%s: unknown type", k->name);
}

static void store(hone_spec *s, const hone_spec_key *k, const value *v)
{
    char *base = (char *)s + k->off;
    switch (k->type) {
    case HONE_SPEC_INT:
        if (k->size == sizeof(uint64_t))
            *(uint64_t *)base = (uint64_t)v->i;
        else
            *(int *)base = (int)v->i;
        break;
    case HONE_SPEC_BOOL:
        *(int *)base = (int)v->i;
        break;
    case HONE_SPEC_NUM:
        *(double *)base = v->d;
        break;
    case HONE_SPEC_ENUM:
    case HONE_SPEC_STR:
        memcpy(base, v->s, strlen(v->s) + 1);
        break;
    }
}

/* Reads text as the key's type. Text in quotes is a string whatever it spells. */
static int parse_text(const hone_spec_key *k, const char *t, int quoted, value *v, char *err,
                      size_t errlen)
{
    char *end = NULL;
    const char *what = k->type == HONE_SPEC_INT    ? "an integer"
                       : k->type == HONE_SPEC_NUM  ? "a number"
                       : k->type == HONE_SPEC_BOOL ? "true or false"
                                                   : NULL;
    if (what && quoted)
        return fail(err, errlen, HONE_EPARSE, "%s: expected %s, got the string '%s'", k->name, what,
                    t);
    errno = 0;
    switch (k->type) {
    case HONE_SPEC_INT:
        v->i = strtoll(t, &end, 10);
        if (!*t || *end || errno)
            return fail(err, errlen, HONE_EPARSE, "%s: expected an integer, got '%s'", k->name, t);
        return HONE_OK;
    case HONE_SPEC_NUM:
        v->d = strtod(t, &end);
        if (!*t || *end || errno || !isfinite(v->d))
            return fail(err, errlen, HONE_EPARSE, "%s: expected a number, got '%s'", k->name, t);
        return HONE_OK;
    case HONE_SPEC_BOOL:
        /* YAML 1.1 booleans; not 1/0, which JSON (the controller's side) calls integers */
        if (!strcasecmp(t, "true") || !strcasecmp(t, "yes") || !strcasecmp(t, "on"))
            v->i = 1;
        else if (!strcasecmp(t, "false") || !strcasecmp(t, "no") || !strcasecmp(t, "off"))
            v->i = 0;
        else
            return fail(err, errlen, HONE_EPARSE, "%s: expected true or false, got '%s'", k->name,
                        t);
        return HONE_OK;
    default:
        v->s = t;
        return HONE_OK;
    }
}

/* A short printable form of a JSON value for messages. */
static void json_text(const json_t *v, char *buf, size_t n)
{
    if (json_is_string(v)) {
        snprintf(buf, n, "the string '%.60s'", json_string_value(v));
        return;
    }
    char *t = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
    snprintf(buf, n, "%.60s", t ? t : "?");
    free(t);
}

static int parse_json(const hone_spec_key *k, const json_t *j, value *v, char *err, size_t errlen)
{
    char got[96];
    const char *what = NULL;
    switch (k->type) {
    case HONE_SPEC_INT:
        if (json_is_integer(j))
            v->i = (long long)json_integer_value(j);
        else
            what = "an integer";
        break;
    case HONE_SPEC_NUM:
        if (json_is_number(j))
            v->d = json_number_value(j);
        else
            what = "a number";
        break;
    case HONE_SPEC_BOOL:
        if (json_is_boolean(j))
            v->i = json_is_true(j);
        else
            what = "true or false";
        break;
    default:
        /* a string with an escaped NUL would be cut short when stored: refused */
        if (json_is_string(j) && strlen(json_string_value(j)) == json_string_length(j))
            v->s = json_string_value(j);
        else
            what = "a string";
        break;
    }
    if (!what)
        return HONE_OK;
    json_text(j, got, sizeof got);
    return fail(err, errlen, HONE_EINVAL, "%s: expected %s, got %s", k->name, what, got);
}

/* Keys whose default depends on the network follow it unless they were given. */
static void follow_network(hone_spec *s)
{
    int net = hone_spec_network_index(s->network);
    for (size_t i = 0; net >= 0 && i < HONE_ARRAY_LEN(keys); i++) {
        const hone_spec_key *k = &keys[i];
        int per_net = 0;
        for (int n = 0; n < HONE_SPEC_NNETS; n++)
            per_net |= k->def_net[n] != NULL;
        if (!per_net || (s->given >> i & 1u))
            continue;
        value v = {0};
        const char *t = k->def_net[net] ? k->def_net[net] : k->def;
        if (parse_text(k, t, 0, &v, NULL, 0) == HONE_OK)
            store(s, k, &v);
    }
}

/* Stores an accepted value: marks it given, and a new network moves the defaults that follow it. */
static void set_checked(hone_spec *s, const hone_spec_key *k, const value *v)
{
    store(s, k, v);
    size_t i = (size_t)(k - keys);
    int per_net = 0;
    for (int n = 0; n < HONE_SPEC_NNETS; n++)
        per_net |= k->def_net[n] != NULL;
    if (per_net)
        s->given |= 1ull << i;
    if (!strcmp(k->name, "network"))
        follow_network(s);
}

void hone_spec_defaults(hone_spec *s, const char *network)
{
    memset(s, 0, sizeof(*s));
    int net = hone_spec_network_index(network);
    if (net < 0)
        net = 0;
    for (size_t i = 0; i < HONE_ARRAY_LEN(keys); i++) {
        const hone_spec_key *k = &keys[i];
        const char *t = k->def_net[net] ? k->def_net[net] : k->def;
        value v = {0};
        if (!strcmp(k->name, "network"))
            t = hone_spec_networks[net];
        /* the table's defaults pass their own checks (tests/spec checks every one) */
        if (parse_text(k, t, 0, &v, NULL, 0) == HONE_OK &&
            check_value(k, &v, HONE_EINVAL, NULL, 0) == HONE_OK)
            store(s, k, &v);
    }
}

int hone_spec_set_text(hone_spec *s, const char *key, const char *text, int quoted, char *err,
                       size_t errlen)
{
    const hone_spec_key *k = hone_spec_key_find(key);
    value v = {0};
    if (!k)
        return unknown_key(err, errlen, HONE_EPARSE, key);
    int rc = parse_text(k, text, quoted, &v, err, errlen);
    if (rc == HONE_OK)
        rc = check_value(k, &v, HONE_EPARSE, err, errlen);
    if (rc == HONE_OK)
        set_checked(s, k, &v);
    return rc;
}

int hone_spec_check_json(const char *key, const json_t *j, char *err, size_t errlen)
{
    const hone_spec_key *k = hone_spec_key_find(key);
    value v = {0};
    if (!k)
        return unknown_key(err, errlen, HONE_EINVAL, key);
    int rc = parse_json(k, j, &v, err, errlen);
    return rc ? rc : check_value(k, &v, HONE_EINVAL, err, errlen);
}

int hone_spec_set_json(hone_spec *s, const char *key, const json_t *j, char *err, size_t errlen)
{
    const hone_spec_key *k = hone_spec_key_find(key);
    value v = {0};
    if (!k)
        return unknown_key(err, errlen, HONE_EINVAL, key);
    int rc = parse_json(k, j, &v, err, errlen);
    if (rc == HONE_OK)
        rc = check_value(k, &v, HONE_EINVAL, err, errlen);
    if (rc == HONE_OK)
        set_checked(s, k, &v);
    return rc;
}

json_t *hone_spec_get_json(const hone_spec *s, const char *key)
{
    const hone_spec_key *k = hone_spec_key_find(key);
    if (!k)
        return NULL;
    const char *base = (const char *)s + k->off;
    switch (k->type) {
    case HONE_SPEC_INT:
        if (k->size == sizeof(uint64_t))
            return json_integer((json_int_t) * (const uint64_t *)base);
        return json_integer(*(const int *)base);
    case HONE_SPEC_NUM:
        return json_real(*(const double *)base);
    case HONE_SPEC_BOOL:
        return json_boolean(*(const int *)base);
    default:
        return json_string(base); /* NULL for invalid UTF-8 (a spec filled in by code) */
    }
}

json_t *hone_spec_to_json(const hone_spec *s)
{
    json_t *o = json_object();
    for (size_t i = 0; i < HONE_ARRAY_LEN(keys); i++) {
        json_t *v = hone_spec_get_json(s, keys[i].name);
        json_object_set_new(o, keys[i].name, v ? v : json_null());
    }
    return o;
}

/* A YAML double-quoted scalar: '"' and '\\' escaped, control characters as \\xNN / \\uNNNN (the
 * setter refuses them, but a spec filled in by code may hold them). Invalid UTF-8 has no YAML
 * form: HONE_EINVAL. */
static int write_quoted(FILE *f, const char *v)
{
    const unsigned char *u = (const unsigned char *)v;
    fputc('"', f);
    for (size_t i = 0; u[i];) {
        unsigned cp;
        int n = utf8_next(u + i, &cp);
        if (n == 0)
            return HONE_EINVAL;
        if (cp == '"' || cp == '\\')
            fprintf(f, "\\%c", (char)cp);
        else if (cp <= 0xFF && is_control(cp))
            fprintf(f, "\\x%02X", cp);
        else if (is_control(cp))
            fprintf(f, "\\u%04X", cp);
        else
            fwrite(u + i, 1, (size_t)n, f);
        i += (size_t)n;
    }
    fputc('"', f);
    return HONE_OK;
}

/* Values are written with %.17g / quoted strings so a reload gives identical numbers. */
int hone_spec_write_yaml(const hone_spec *s, FILE *f)
{
    const char *section = "";
    for (size_t i = 0; i < HONE_ARRAY_LEN(keys); i++) {
        const hone_spec_key *k = &keys[i];
        const char *dot = strchr(k->name, '.');
        const char *name = k->name;
        if (dot) {
            size_t n = (size_t)(dot - k->name);
            if (strncmp(section, k->name, n) != 0 || section[n] != '.') {
                fprintf(f, "%.*s:\n", (int)n, k->name);
                section = k->name;
            }
            name = dot + 1;
            fputs("  ", f);
        }
        const char *base = (const char *)s + k->off;
        switch (k->type) {
        case HONE_SPEC_INT:
            if (k->size == sizeof(uint64_t))
                fprintf(f, "%s: %llu\n", name, (unsigned long long)*(const uint64_t *)base);
            else
                fprintf(f, "%s: %d\n", name, *(const int *)base);
            break;
        case HONE_SPEC_NUM:
            fprintf(f, "%s: %.17g\n", name, *(const double *)base);
            break;
        case HONE_SPEC_BOOL:
            fprintf(f, "%s: %s\n", name, *(const int *)base ? "true" : "false");
            break;
        default:
            fputs(name, f);
            fputs(": ", f);
            if (write_quoted(f, base) != HONE_OK)
                return HONE_EINVAL;
            fputc('\n', f);
            break;
        }
    }
    return ferror(f) ? HONE_EIO : HONE_OK;
}

int spec__check_stored(const hone_spec *s, char *field, size_t fieldlen, char *err, size_t errlen)
{
    for (size_t i = 0; i < HONE_ARRAY_LEN(keys); i++) {
        const hone_spec_key *k = &keys[i];
        const char *base = (const char *)s + k->off;
        value v = {0};
        if (k->type == HONE_SPEC_INT && k->size == sizeof(uint64_t)) {
            uint64_t u = *(const uint64_t *)base;
            v.i = u > (uint64_t)INT64_MAX ? -1 : (long long)u;
        } else if (k->type == HONE_SPEC_INT || k->type == HONE_SPEC_BOOL) {
            v.i = *(const int *)base;
        } else if (k->type == HONE_SPEC_NUM) {
            v.d = *(const double *)base;
        } else {
            if (!memchr(base, 0, k->size)) {
                snprintf(field, fieldlen, "%s", k->name);
                return fail(err, errlen, HONE_EINVAL, "%s: not terminated", k->name);
            }
            v.s = base;
        }
        if (check_value(k, &v, HONE_EINVAL, err, errlen) != HONE_OK) {
            snprintf(field, fieldlen, "%s", k->name);
            return HONE_EINVAL;
        }
    }
    return HONE_OK;
}

int spec__same_value(const hone_spec *a, const hone_spec *b, const hone_spec_key *k)
{
    const char *x = (const char *)a + k->off, *y = (const char *)b + k->off;
    if (k->type == HONE_SPEC_ENUM || k->type == HONE_SPEC_STR)
        return strncmp(x, y, k->size) == 0;
    if (k->type == HONE_SPEC_NUM)
        return *(const double *)x == *(const double *)y;
    return memcmp(x, y, k->size) == 0;
}
