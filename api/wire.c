/* The wire names of job kinds and statuses (wire.h): one table each, the only place they are
 * spelled. */
#include <string.h>

#include "hone.h"
#include "wire.h"

static const char *const kind_names[HONE_KIND_COUNT] = {
    [HONE_KIND_TRAIN] = "train",         [HONE_KIND_AUTOML] = "automl",
    [HONE_KIND_CONVERT] = "convert",     [HONE_KIND_EVALUATE] = "evaluate",
    [HONE_KIND_INFERENCE] = "inference", [HONE_KIND_EXPORT] = "export",
};

static const char *const status_names[HONE_STATUS_COUNT] = {
    [HONE_STATUS_QUEUED] = "queued",   [HONE_STATUS_RUNNING] = "running",
    [HONE_STATUS_PAUSED] = "paused",   [HONE_STATUS_DONE] = "done",
    [HONE_STATUS_FAILED] = "failed",   [HONE_STATUS_CANCELED] = "canceled",
    [HONE_STATUS_STOPPED] = "stopped",
};

const char *hone_kind_name(hone_kind k)
{
    return (unsigned)k < HONE_KIND_COUNT ? kind_names[k] : "?";
}

const char *hone_status_name(hone_status s)
{
    return (unsigned)s < HONE_STATUS_COUNT ? status_names[s] : "?";
}

static int parse(const char *const *names, int n, const char *name, int *out)
{
    for (int i = 0; name && i < n; i++)
        if (!strcmp(names[i], name)) {
            *out = i;
            return HONE_OK;
        }
    return HONE_EINVAL;
}

int hone_kind_parse(const char *name, hone_kind *out)
{
    int i, rc = parse(kind_names, HONE_KIND_COUNT, name, &i);
    if (!rc)
        *out = (hone_kind)i;
    return rc;
}

int hone_status_parse(const char *name, hone_status *out)
{
    int i, rc = parse(status_names, HONE_STATUS_COUNT, name, &i);
    if (!rc)
        *out = (hone_status)i;
    return rc;
}

int hone_status_is_final(hone_status s)
{
    return s == HONE_STATUS_DONE || s == HONE_STATUS_FAILED || s == HONE_STATUS_CANCELED ||
           s == HONE_STATUS_STOPPED;
}

int hone_kind_is_model_action(hone_kind k)
{
    return k == HONE_KIND_EVALUATE || k == HONE_KIND_INFERENCE || k == HONE_KIND_EXPORT;
}
