/* train: the training program behind hone-train as a library: the spec (YAML + dotted overrides),
 * IDX datasets (MNIST, Fashion-MNIST) and image folders (packed; the files are read by data/),
 * MLP and CNN networks on the kernels API, checkpoints, and hone_train_run, which trains with a
 * per-epoch callback so tests and benches need no subprocess. hone_trainer_* drive the same
 * training an epoch at a time (backend comparisons, timings).
 */
#ifndef HONE_TRAIN_H
#define HONE_TRAIN_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "data.h"
#include "detect.h"
#include "hone.h"
#include "kernels.h"
#include "spec.h"

/* ------------------------------------------------------------------ the spec */

/* The spec is spec/'s hone_spec: its keys, types, ranges and defaults live there (spec/spec.c),
 * shared with the controller. hone-train adds YAML loading and the data-dependent checks. */
typedef hone_spec hone_train_spec;

/* The mlp defaults of spec/spec.c (train.lr and model.hidden follow `network` unless given). */
void hone_train_spec_defaults(hone_train_spec *s);
/* Apply a YAML document (file or string) over s; a file may instead hold the flat dotted JSON
 * object a lease carries ({"network": "cnn", "train.lr": 0.01}). Unknown keys, wrong types (a
 * quoted scalar is a string) and out-of-range values are HONE_EPARSE with err naming the key, e.g.
 * "train.lr: expected a number, got 'fast'". */
int hone_train_spec_load_file(hone_train_spec *s, const char *path, char *err, size_t errlen);
int hone_train_spec_load_string(hone_train_spec *s, const char *yaml, size_t len, char *err,
                                size_t errlen);
/* One "dotted.key=value" override (the worker passes each trial's hyperparameters this way). */
int hone_train_spec_set(hone_train_spec *s, const char *assignment, char *err, size_t errlen);
/* The data-independent rules of hone_spec_check after all overrides (HONE_EPARSE); the size
 * limits and data.val_size are checked against the data when hone_train_run loads it. */
int hone_train_spec_validate(const hone_train_spec *s, char *err, size_t errlen);
/* Writes the resolved spec as YAML that load_file reads back to the same values. */
int hone_train_spec_write(const hone_train_spec *s, FILE *f);

/* ------------------------------------------------------------------ training */

/* detectnet_v2: the accuracy fields (val_accuracy, test_accuracy, best_val_accuracy) hold the
 * mAP at IoU 0.5, train_accuracy is 0, and the JSON lines name them val_map, test_map and
 * best_val_map (no train_accuracy). */
typedef struct hone_train_epoch {
    int epoch, epochs; /* 1-based epoch just finished, total planned */
    double train_loss, train_accuracy, val_loss, val_accuracy;
    double lr;      /* learning rate at the epoch's last step */
    double seconds; /* wall time of the epoch's training steps */
    double images_per_second;
} hone_train_epoch;

typedef struct hone_train_result {
    int epochs_trained;
    int finished; /* 1 when all epochs ran (test metrics valid), 0 when paused by epochs_until */
    double test_accuracy, test_loss, best_val_accuracy;
} hone_train_result;

/* What a resident trainer (hone-train --serve) keeps between the jobs it runs and shares between
 * the jobs it runs at once (--listen): kernel contexts (one lent to each running job) and the last
 * max_datasets datasets on its device, read by every job on that data (train/cache.h says how they
 * are keyed). A job borrows them through hone_train_opts.cache and gives them back as it found
 * them; nothing of a job's own state (weights, optimiser, RNG counters, batch-norm statistics)
 * outlives it. Thread safe: concurrent jobs may share one cache. */
typedef struct hone_train_cache hone_train_cache;
int hone_train_cache_new(int max_datasets, hone_train_cache **out);
void hone_train_cache_free(hone_train_cache *c);
/* Drops the context and the datasets (after a job failed: its device may be in an error state). */
void hone_train_cache_clear(hone_train_cache *c);
/* 1 when the cache holds a CUDA context. */
int hone_train_cache_cuda(hone_train_cache *c);
/* Datasets found in the cache and loaded, over the cache's life. */
void hone_train_cache_stats(hone_train_cache *c, long *hits, long *misses);

/* Return nonzero to stop training after this epoch (the checkpoint is still written). */
typedef int (*hone_train_epoch_cb)(const hone_train_epoch *e, void *user);

typedef struct hone_train_opts {
    const hone_train_spec *spec; /* borrowed */
    const char *device;          /* "cpu" | "cuda" | "auto" (NULL = auto) */
    int threads;                 /* CPU threads, 0 = all cores */
    const char *out_dir;     /* checkpoint.bin, model.bin, spec.yaml, metrics.jsonl; NULL = none */
    const char *resume_path; /* checkpoint to continue from; NULL = fresh start */
    int epochs_until;        /* stop after this epoch (pause), 0 = run all epochs */
    int print_json;          /* 1: one JSON line per epoch (and at the end) on stdout */
    int eager; /* 1: launch each step's ops directly instead of replaying the captured step */
    hone_train_epoch_cb on_epoch;
    void *user;
    hone_train_cache *cache; /* NULL: context and data are the job's own (hone_trainer_new) */
    /* When not NULL and it becomes nonzero (a signal handler sets it), training stops before the
     * next step and hone_train_run returns HONE_ESTATE ("cancelled") without writing the epoch's
     * checkpoint: the job ends as a killed hone-train would, from its last checkpoint. */
    volatile sig_atomic_t *cancel;
    /* Where the job writes: its JSON lines (print_json) to out, its messages to log; NULL: stdout
     * and stderr. Concurrent jobs of one resident trainer each have their own. */
    FILE *out, *log;
    /* hone_train_run_pack only: called once as this trial leaves the pack (done, paused, stopped,
     * cancelled or failed; its files and lines all written), with its rc and err, on the thread
     * that runs the pack, before the others finish. After it returns the pack no longer touches
     * these options or their spec. NULL: none. */
    void (*on_end)(int rc, const char *err, void *user);
} hone_train_opts;

/* Trains as the options say. err receives a one-line reason on failure. */
int hone_train_run(const hone_train_opts *o, hone_train_result *res, char *err, size_t errlen);

/* Packed trials (HFTA): trains n trials, o[i] each, as n hone_train_run calls would (each with
 * its own hyperparameters, seed, augmentation, out_dir, resume_path, epochs_until, callback,
 * cancel flag, out and log), on ONE copy of the data in one fused step per batch
 * (train/run_pack.c). A trial's outputs (JSON lines, metrics.jsonl, checkpoints, model) and its
 * numbers are its solo run's (bit for bit on the CPU; on CUDA the batched GEMMs may differ from the
 * solo convolution's cuDNN path in the last bits). Trial i's outcome goes to rc[i] (0 or
 * hone_train_run's code), err[i] and res[i]; a trial that ends leaves the others' numbers
 * unchanged. All o[i] must share trial 0's hone_train_pack_key, else every trial is refused
 * (HONE_EINVAL, err naming the first key that differs). Returns 0 when every trial's rc is 0, else
 * the first failing code. */
int hone_train_run_pack(const hone_train_opts *const *o, int n, hone_train_result *res, int *rc,
                        char (*err)[256]);
/* A key equal for two specs (on devices named `device`) exactly when they can share a pack:
 * network, every model.* key (model.dropout as whether there is dropout: its probability is a
 * trial's own), train.batch_size, the data.* keys, train.math, train.optimizer and the device.
 * HONE_EINVAL when the spec cannot be packed at all (resnet18/34 and detectnet_v2 for now, and
 * model.pretrained),
 * HONE_ERANGE when len is too short. */
int hone_train_pack_key(const hone_train_spec *s, const char *device, char *key, size_t len);

/* ------------------------------------------------------------------ an epoch at a time */

/* What hone_train_run trains with: the spec's data on the device (o->device, o->threads), the
 * network, the optimiser state and the captured step (unless o->eager). hone_train_run is a loop
 * of hone_trainer_epoch plus reporting and checkpoints; tests and benches call the pieces. */
typedef struct hone_trainer hone_trainer;

/* Validates o->spec and builds the trainer; o->spec is borrowed and must outlive it (the other
 * options are read here or not at all: out_dir, resume_path, epochs_until, print_json and
 * on_epoch are hone_train_run's). err receives a one-line reason on failure. */
int hone_trainer_new(const hone_train_opts *o, hone_trainer **out, char *err, size_t errlen);
void hone_trainer_free(hone_trainer *t);
/* Trains epoch `epoch` (0-based: it picks the shuffle and the learning rates) for its full
 * floor(train images / batch) steps, or the first max_steps of them if max_steps > 0, then
 * evaluates the validation part; fills *e (val fields NaN without validation images). */
int hone_trainer_epoch(hone_trainer *t, int epoch, int max_steps, hone_train_epoch *e);
/* Mean loss and accuracy on the test part, inference mode (detectnet_v2: accuracy is the mAP). */
int hone_trainer_test(hone_trainer *t, double *loss, double *accuracy);
/* detectnet_v2: the test part's images, mean loss, mAP at IoU 0.5 and, when not NULL, per-class
 * AP (ap[classes], -1 for a class without ground truth), ground-truth counts (n_gt[classes]) and
 * COCO's metrics of the same boxes (detect.h; -1 where undefined). HONE_EINVAL for a classifier. */
int hone_trainer_test_map(hone_trainer *t, int *images, double *loss, double *map, double *ap,
                          int *n_gt, hone_det_coco_stats *coco);
/* Host copy of the parameters, in the network's flat order (*n floats; caller frees *out). */
int hone_trainer_params(hone_trainer *t, float **out, size_t *n);

/* ------------------------------------------------------------------ a trained model */

/* hone_train_run, when all epochs ran and out_dir is set, writes beside model.bin and spec.yaml
 * model.json: {"channels", "height", "width", "classes", "mean": [per channel], "std": [...],
 * "class_names": [...]}: the input shape, the training part's normalisation and the class names
 * (an image folder's class folders; "0".."n-1" for idx), all that evaluation and inference need
 * beside the weights. */

/* A trainer for o->spec holding model_dir's model.bin (weights, norm statistics) and model.json.
 * with_data 1: o->spec's data is loaded as hone_trainer_new does (its shape, classes and class
 * names must be the model's) and normalised with the model's statistics: evaluation; 2: the same
 * with only a test part (dataset_load's test_only: a dataset the model was not trained on); 0: no
 * data, images come through hone_trainer_predict: inference. Refused, naming the file, when the
 * model is not one of this spec (network, model, optimizer). */
int hone_trainer_open_model(const hone_train_opts *o, const char *model_dir, int with_data,
                            hone_trainer **out, char *err, size_t errlen);
/* The network's input (channels, height, width) and its number of classes. */
void hone_trainer_shape(const hone_trainer *t, int *c, int *h, int *w, int *classes);
/* Class i's name (borrowed), NULL when unknown. */
const char *hone_trainer_class_name(const hone_trainer *t, int i);
/* The test part's predicted classes (argmax of the logits, the first on a tie, as the accuracy
 * of hone_trainer_test counts) and labels, *n of each (caller frees both). */
int hone_trainer_test_predictions(hone_trainer *t, int32_t **pred, int32_t **label, int *n);
/* Class probabilities (softmax) of n images x (uint8 HWC at hone_trainer_shape), into probs
 * [n, classes]. */
int hone_trainer_predict(hone_trainer *t, const uint8_t *x, int n, float *probs);

/* detectnet_v2: the boxes of n images x (uint8 HWC at hone_trainer_shape), in their pixels,
 * decoded and clustered as the spec says: boxes[i] (malloc'd; the caller frees each) holds
 * counts[i] boxes by descending score. HONE_EINVAL for a classifier. */
int hone_trainer_detect(hone_trainer *t, const uint8_t *x, int n, hone_det_cand **boxes,
                        int *counts);

/* hone-train --evaluate: model_dir's model on o->spec's test part: writes one JSON line to out
 * (detectnet_v2: {"event":"evaluate", "images", "loss", "map", "classes": [names], "ap": [per
 * class, null without ground truth], "gt_boxes": [per class]}, mAP at IoU 0.5; otherwise)
 * {"event":"evaluate", "images", "loss", "accuracy", "classes": [names], "per_class_accuracy":
 * [null when the class has no test image], "confusion_matrix": [[count of label i predicted
 * j]]}. loss and accuracy are hone_trainer_test's (the train job's own test numbers on the same
 * data). When o->spec's data.format or data.path is not that of model_dir/spec.yaml, the data is
 * another dataset: only its test part is loaded (with_data 2), and an image folder is read at
 * the model's size and channels where the spec leaves them to the data (0). */
int hone_train_evaluate(const hone_train_opts *o, const char *model_dir, FILE *out, char *err,
                        size_t errlen);
/* hone-train --infer (detectnet_v2: each line is {"file", "boxes": [{"class", "class_index",
 * "score", "x1", "y1", "x2", "y2"}], "kitti": the same as KITTI label lines}, boxes in the image's
 * own pixels, clipped to it): every image file under folder (walked in name order, sub-folders
 * too), decoded and resized through data/ to the model's input as packing does, one JSON line each
 * on out: {"file": path relative to folder, "class": name, "class_index", "score": probability}. A
 * file that is not an image is skipped with a line on stderr; no image at all is an error. *images
 * (when not NULL): the number labelled. */
int hone_train_infer(const hone_train_opts *o, const char *model_dir, const char *folder, FILE *out,
                     int *images, char *err, size_t errlen);
/* hone_train_infer, and for a detectnet_v2 model, when coco is not NULL, the same boxes as COCO
 * results JSON on coco: one array [{"image_id", "category_id", "bbox": [x, y, w, h], "score"}],
 * the boxes in the image's own pixels. image_id: the image's place in out's lines (0, 1, ...: the
 * folder's images in name order); category_id: model.json's "coco_category_ids"[class] when it
 * has one id per class (a model trained on a COCO dataset: the annotations' own category ids),
 * else the class index. A classifier's model writes nothing there. */
int hone_train_infer_coco(const hone_train_opts *o, const char *model_dir, const char *folder,
                          FILE *out, FILE *coco, int *images, char *err, size_t errlen);
/* hone-train --export: model_dir's model as an ONNX file at path (written to path.tmp, then
 * renamed): IR version 8, opset 17, float32 pixels NCHW in 0..255 in ("pixels", [N, c, h, w]),
 * the normalisation as its first nodes, logits out ("logits", [N, classes]); model.json's class
 * names, mean and std in its metadata_props (train/export.c says how each layer maps). *bytes
 * (when not NULL): the file's size. */
int hone_train_export(const hone_train_opts *o, const char *model_dir, const char *path,
                      size_t *bytes, char *err, size_t errlen);

#endif
