/* The job-kind table (kind.h): one row per hone_kind, in enum order. Adding a kind is its own
 * file and one line here. Nothing else in the controller maps a kind name to what it does. */
#include <string.h>

#include "ctl.h"
#include "kind.h"
#include "store.h"
#include "util.h"

static const ctl_kind *const table[HONE_KIND_COUNT] = {
    [HONE_KIND_TRAIN] = &ctl_kind_train,         [HONE_KIND_AUTOML] = &ctl_kind_automl,
    [HONE_KIND_CONVERT] = &ctl_kind_convert,     [HONE_KIND_EVALUATE] = &ctl_kind_evaluate,
    [HONE_KIND_INFERENCE] = &ctl_kind_inference, [HONE_KIND_EXPORT] = &ctl_kind_export,
};

/* A row of an unknown action: no hooks, so the lifecycle refuses what it would do. */
static const ctl_kind unknown = {.id = HONE_KIND_COUNT};

const ctl_kind *ctl_kind_get(hone_kind k)
{
    return (unsigned)k < HONE_KIND_COUNT ? table[k] : NULL;
}

const ctl_kind *ctl_kind_of(const json_t *job)
{
    hone_kind k;
    if (hone_kind_parse(jstr(job, "action"), &k) || !table[k])
        return &unknown;
    return table[k];
}

const char *const *ctl_kind_create_names(void)
{
    static const char *names[HONE_KIND_COUNT + 1];
    if (!names[0]) { /* filled once, on the loop */
        size_t n = 0;
        for (int k = 0; k < HONE_KIND_COUNT; k++)
            if (table[k] && table[k]->user_creates)
                names[n++] = hone_kind_name((hone_kind)k);
        names[n] = NULL;
    }
    return names;
}

int ctl_kind_cancel_plain(hone_controller *c, const json_t *job, int *ended)
{
    hone_status st = HONE_STATUS_COUNT;
    *ended = 0;
    hone_status_parse(jstr(job, "status"), &st);
    if (st == HONE_STATUS_RUNNING)
        return store_job_request_cancel(c->db, jstr(job, "id"));
    if (store_job_cancel(c->db, jstr(job, "id"), ctl_now()))
        return HONE_ESQL;
    *ended = 1;
    return HONE_OK;
}
