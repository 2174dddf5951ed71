/* The wire contract both ends share: job kinds and job statuses as enums, each with the one name
 * it has on the wire, in the store and in the CLI. Nothing else compares these names as strings:
 * parse at the edge, switch on the enum inside. Pure: no I/O, no allocation. */
#ifndef HONE_API_WIRE_H
#define HONE_API_WIRE_H

/* What a job does (the jobs table's `action` column, a lease's `action`, TAO's action names). */
typedef enum hone_kind {
    HONE_KIND_TRAIN = 0, /* one training run (an AutoML trial is one too) */
    HONE_KIND_AUTOML,    /* a search: trials are train jobs with this job as parent */
    HONE_KIND_CONVERT,   /* a dataset packed for training (TAO's dataset convert) */
    HONE_KIND_EVALUATE,  /* a trained model on a test set */
    HONE_KIND_INFERENCE, /* a trained model labels a folder */
    HONE_KIND_EXPORT,    /* a trained model as ONNX */
    HONE_KIND_COUNT
} hone_kind;

/* Where a job stands (the jobs table's `status` column). */
typedef enum hone_status {
    HONE_STATUS_QUEUED = 0,
    HONE_STATUS_RUNNING,
    HONE_STATUS_PAUSED,
    HONE_STATUS_DONE,
    HONE_STATUS_FAILED,
    HONE_STATUS_CANCELED,
    HONE_STATUS_STOPPED, /* ended early by its search (early stopping), or released at a budget */
    HONE_STATUS_COUNT
} hone_status;

/* The wire name ("train", "queued"); "?" for a value out of range. */
const char *hone_kind_name(hone_kind k);
const char *hone_status_name(hone_status s);
/* 0 and *out set for a known name (exact, lower case), HONE_EINVAL otherwise (*out untouched).
 * name may be NULL (HONE_EINVAL). */
int hone_kind_parse(const char *name, hone_kind *out);
int hone_status_parse(const char *name, hone_status *out);
/* Whether a job of this status has ended for good (done, failed, canceled, stopped). */
int hone_status_is_final(hone_status s);
/* The kinds that act on a trained model (evaluate, inference, export): they need a parent job. */
int hone_kind_is_model_action(hone_kind k);

#endif
