/* Job rows (job_rows.h): the row by id, its artifact folder, the dataset it reads. Used by the
 * lifecycle and by the kinds alike; calls nothing above the store. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "ctl.h"
#include "job_rows.h"
#include "store.h"
#include "util.h"

int ctl_job_row(hone_controller *c, const char *id, json_t **row)
{
    return store_job_get(c->db, id, row);
}

char *ctl_job_dir(hone_controller *c, const char *job_id)
{
    size_t n = strlen(c->artifacts_dir) + strlen(job_id) + 2;
    char *p = hone_xmalloc(n);
    snprintf(p, n, "%s/%s", c->artifacts_dir, job_id);
    return p;
}

char *ctl_job_model_dir(hone_controller *c, const char *job_id, int search)
{
    char *jd = ctl_job_dir(c, job_id);
    if (!search)
        return jd;
    size_t n = strlen(jd) + sizeof "/best_model";
    char *p = hone_xmalloc(n);
    snprintf(p, n, "%s/best_model", jd);
    free(jd);
    return p;
}

int ctl_dir_has_file(const char *dir, const char *name)
{
    char p[4400];
    struct stat st;
    return snprintf(p, sizeof p, "%s/%s", dir, name) < (int)sizeof p && stat(p, &st) == 0 &&
           S_ISREG(st.st_mode);
}

json_t *ctl_job_dataset_id(hone_controller *c, const json_t *job)
{
    json_t *exp = NULL, *tds = NULL, *id = NULL;
    if (store_experiment_get(c->db, jstr(job, "experiment_id"), NULL, &exp) == HONE_OK &&
        (tds = jparse(jstr(exp, "train_datasets"))) && json_is_string(json_array_get(tds, 0)))
        id = json_incref(json_array_get(tds, 0));
    json_decref(tds);
    json_decref(exp);
    return id;
}

int ctl_live_workers(hone_controller *c)
{
    int n = 0;
    if (store_workers_count_live(c->db, ctl_now() - c->cfg.lease_seconds, &n))
        return 0;
    return n;
}
