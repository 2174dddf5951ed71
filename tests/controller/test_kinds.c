/* tests/controller/test_kinds.c: the job-kind table (controller/kinds/kind.h) without a server:
 * every hone_kind has its row, in enum order; the names a job create takes come from the rows;
 * a row of an unknown action has no hooks, so the lifecycle refuses it rather than guessing; and
 * the lifecycle's view and finish go through a row (a convert row's progress, an unknown row's
 * HONE_ESTATE). The check that nothing outside kinds/ names a kind is test_kind_names.py. */
#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "ctl.h"
#include "jobs.h"
#include "kind.h"
#include "util.h"

static int failures;
#define CHECK(x)                                                                                   \
    do {                                                                                           \
        if (!(x)) {                                                                                \
            fprintf(stderr, "%s:%d: CHECK(%s) failed\n", __FILE__, __LINE__, #x);                  \
            failures++;                                                                            \
        }                                                                                          \
    } while (0)

int main(void)
{
    for (int k = 0; k < HONE_KIND_COUNT; k++) {
        const ctl_kind *row = ctl_kind_get((hone_kind)k);
        CHECK(row && row->id == (hone_kind)k);
        /* a kind a worker runs is leased and ends; one a user creates has its create */
        CHECK(row && (!row->lease_job || row->finish));
        CHECK(row && (!row->user_creates || row->create));
        CHECK(row && row->cancel && row->view);
        CHECK(row && (!row->pause) == (!row->resume));
        json_t *job = json_pack("{s:s}", "action", hone_kind_name((hone_kind)k));
        CHECK(ctl_kind_of(job) == row);
        json_decref(job);
    }
    CHECK(ctl_kind_get(HONE_KIND_COUNT) == NULL);

    const char *const *names = ctl_kind_create_names();
    static const char *const want[] = {"train", "automl", "evaluate", "inference", "export", NULL};
    for (size_t i = 0; i < sizeof want / sizeof *want; i++)
        CHECK(want[i] ? names[i] && !strcmp(names[i], want[i]) : names[i] == NULL);

    json_t *odd = json_pack("{s:s,s:s}", "id", "job-x", "action", "dummy");
    const ctl_kind *u = ctl_kind_of(odd);
    CHECK(u && u->id == HONE_KIND_COUNT && !u->create && !u->lease_job && !u->finish &&
          !u->cancel && !u->view);
    hone_controller c;
    memset(&c, 0, sizeof c);
    CHECK(ctl_job_finish(&c, odd, "done", "", NULL) == HONE_ESTATE);
    json_t *v = ctl_job_json(&c, odd);
    CHECK(v && !json_object_get(v, "progress") && !json_object_get(v, "automl"));
    json_decref(v);
    json_decref(odd);

    json_t *cv = json_pack("{s:s,s:s,s:s,s:s}", "id", "job-c", "action", "convert", "dataset_id",
                           "ds-1", "result", "{\"progress\":{\"images_done\":3}}");
    v = ctl_job_json(&c, cv);
    CHECK(jint(json_object_get(v, "progress"), "images_done") == 3);
    CHECK(json_is_string(json_object_get(v, "dataset_id")));
    json_decref(v);
    json_decref(cv);
    if (failures)
        return 1;
    printf("ok: %d kinds, each with its row\n", (int)HONE_KIND_COUNT);
    return 0;
}
