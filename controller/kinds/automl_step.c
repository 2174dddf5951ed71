/* The AutoML driver, part 2: asking a search for work (new trials become queued train jobs,
 * resumed ones are requeued from their checkpoint), finishing the AutoML job when the search is
 * done (best trial, its artifacts copied to best_model/), and the status block of an AutoML job.
 * Model-based asks (GP fits) run on the thread pool: automl_async.c. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "automl.h"
#include "budget.h"
#include "ctl.h"
#include "ctl_spec.h"
#include "job_rows.h"
#include "joblog.h"
#include "store.h"
#include "train.h"
#include "util.h"

static int step_new(hone_controller *c, ctl_search *s, const json_t *job, const hone_ask *a)
{
    char id[64];
    char *cfg = hone_space_config_to_json(s->space, a->values);
    double now = ctl_now();
    ctl_new_id(c, "job", id, sizeof id);
    char name[64];
    snprintf(name, sizeof name, "trial-%d", a->trial);
    int rc = HONE_ESQL;
    if (db_begin(c->db))
        goto fail;
    if (store_trial_insert(c->db, id, jstr(job, "experiment_id"), s->job_id, name, a->trial, cfg,
                           a->epochs, now) ||
        ctl_automl_log_new(c, s->job_id, a->trial, a->epochs, a->values,
                           hone_space_nparams(s->space)) ||
        ctl_joblog(c, s->job_id, "trial %d launched (job %s) for %d epoch%s: %s", a->trial, id,
                   a->epochs, a->epochs == 1 ? "" : "s", cfg) ||
        db_commit(c->db))
        goto fail;
    rc = HONE_OK;
    ctl_budget_launched(s, a->trial, now);
    ctl_log(c, "info", "trial_new",
            json_pack("{s:s,s:s,s:i,s:i,s:s}", "automl", s->job_id, "job", id, "trial", a->trial,
                      "epochs", a->epochs, "config", cfg));
fail:
    if (rc)
        db_rollback(c->db);
    free(cfg);
    return rc;
}

static int step_resume(hone_controller *c, ctl_search *s, const hone_ask *a)
{
    int rc = HONE_ESQL;
    if (db_begin(c->db))
        return rc;
    int n = store_trial_requeue(c->db, s->job_id, a->trial, a->epochs, ctl_now());
    if (n != 1 || ctl_automl_log_resume(c, s->job_id, a->trial, a->epochs) ||
        ctl_joblog(c, s->job_id,
                   "trial %d promoted: resumes from its checkpoint to train until epoch %d",
                   a->trial, a->epochs) ||
        db_commit(c->db)) {
        db_rollback(c->db);
        return rc;
    }
    ctl_budget_launched(s, a->trial, ctl_now());
    ctl_log(
        c, "info", "trial_resume",
        json_pack("{s:s,s:i,s:i}", "automl", s->job_id, "trial", a->trial, "epochs", a->epochs));
    return HONE_OK;
}

static int copy_file(const char *from, const char *to)
{
    int in = open(from, O_RDONLY | O_CLOEXEC), out = -1, rc = HONE_EIO;
    char buf[1 << 15];
    ssize_t r;
    if (in < 0)
        return HONE_EIO;
    out = open(to, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (out < 0)
        goto fail;
    while ((r = read(in, buf, sizeof buf)) > 0)
        if (write(out, buf, (size_t)r) != r)
            goto fail;
    rc = r == 0 && fsync(out) == 0 ? HONE_OK : HONE_EIO;
fail:
    close(in);
    if (out >= 0)
        close(out);
    return rc;
}

static void write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    if (f) {
        fputs(text ? text : "", f);
        fclose(f);
    }
}

/* Copies the best trial's files (one level) into <automl>/best_model/ with its spec (spec.yaml, and
 * recommendation_<trial>.yaml as TAO names it) and metrics. */
static void copy_best(hone_controller *c, const char *automl_id, const json_t *best)
{
    char *src = ctl_job_dir(c, jstr(best, "id")), *dst0 = ctl_job_dir(c, automl_id);
    char dst[4096], p1[4096], p2[4096];
    snprintf(dst, sizeof dst, "%s/best_model", dst0);
    mkdir(dst0, 0755);
    mkdir(dst, 0755);
    DIR *d = opendir(src);
    struct dirent *e;
    while (d && (e = readdir(d))) {
        struct stat st;
        if (snprintf(p1, sizeof p1, "%s/%s", src, e->d_name) >= (int)sizeof p1 ||
            e->d_name[0] == '.' || lstat(p1, &st) || !S_ISREG(st.st_mode))
            continue;
        if (snprintf(p2, sizeof p2, "%s/%s", dst, e->d_name) < (int)sizeof p2)
            copy_file(p1, p2);
    }
    if (d)
        closedir(d);
    json_t *flat = NULL;
    char err[256];
    char *y =
        ctl_train_spec(c, best, &flat) == HONE_OK ? ctl_spec_to_yaml(flat, err, sizeof err) : NULL;
    if (flat && !y)
        ctl_log(c, "warn", "best_model_spec",
                json_pack("{s:s,s:s}", "job", automl_id, "error", err));
    if (y) {
        if (snprintf(p2, sizeof p2, "%s/spec.yaml", dst) < (int)sizeof p2)
            write_text(p2, y);
        /* and under TAO's name for the winning spec, which says which recommendation won */
        if (snprintf(p2, sizeof p2, "%s/recommendation_%lld.yaml", dst,
                     (long long)jint(best, "trial")) < (int)sizeof p2)
            write_text(p2, y);
        free(y);
    }
    json_decref(flat);
    json_t *rows = NULL, *r;
    size_t i;
    FILE *f =
        snprintf(p2, sizeof p2, "%s/metrics.jsonl", dst) < (int)sizeof p2 ? fopen(p2, "w") : NULL;
    if (f && store_metrics_data_list(c->db, jstr(best, "id"), &rows) == HONE_OK)
        json_array_foreach(rows, i, r) fprintf(f, "%s\n", jstr(r, "data"));
    if (f)
        fclose(f);
    json_decref(rows);
    free(src);
    free(dst0);
}

/* Removes checkpoints of the trials that did not win (TAO automl_delete_intermediate_ckpt). */
static void delete_ckpts(hone_controller *c, const char *automl_id, const char *best_id)
{
    json_t *rows = NULL, *r;
    size_t i;
    if (store_trials_ids(c->db, automl_id, &rows))
        return;
    json_array_foreach(rows, i, r)
    {
        if (best_id && !strcmp(jstr(r, "id"), best_id))
            continue;
        char *dir = ctl_job_dir(c, jstr(r, "id"));
        DIR *d = opendir(dir);
        struct dirent *e;
        while (d && (e = readdir(d)))
            if (strstr(e->d_name, "ckpt") || strstr(e->d_name, "checkpoint")) {
                char p[4096];
                snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
                unlink(p);
            }
        if (d)
            closedir(d);
        free(dir);
    }
    json_decref(rows);
}

/* "N of M trials failed: CAUSE", the most common cause of the failed trials first, with its
 * count and that of the others when they differ. *tail: the last lines of the newest trial that
 * failed of that cause (the caller frees it). Returns the number failed, or < 0 on a store
 * error. */
static int failed_summary(hone_controller *c, ctl_search *s, char *msg, size_t len, char **tail)
{
    json_t *rows = NULL, *r;
    size_t i, j, n;
    *tail = NULL;
    msg[0] = '\0';
    if (store_trials_failed_errors(c->db, s->job_id, &rows))
        return HONE_ESQL;
    n = json_array_size(rows);
    if (n == 0) {
        json_decref(rows);
        return 0;
    }
    char(*causes)[512] = hone_xcalloc(n, sizeof *causes);
    json_array_foreach(rows, i, r) ctl_failure_cause(jstr(r, "error"), causes[i], sizeof causes[i]);
    size_t best = 0, best_n = 0;
    for (i = 0; i < n; i++) {
        size_t k = 0;
        for (j = 0; j < n; j++)
            k += !strcmp(causes[i], causes[j]);
        if (k > best_n || (k == best_n && i > best)) { /* ties: the newest */
            best = i;
            best_n = k;
        }
    }
    long total = 0;
    json_t *counts = NULL, *cr;
    if (store_trials_count_by_status(c->db, s->job_id, &counts) == HONE_OK)
        json_array_foreach(counts, j, cr) total += (long)jint(cr, "n");
    json_decref(counts);
    if (best_n == n)
        snprintf(msg, len, "%zu of %ld trials failed: %s", n, total, causes[best]);
    else
        snprintf(msg, len, "%zu of %ld trials failed: %s (%zu trials; %zu others failed otherwise)",
                 n, total, causes[best], best_n, n - best_n);
    for (i = n; i-- > 0;)
        if (!strcmp(causes[i], causes[best]) && jstr(json_array_get(rows, i), "log_tail")) {
            *tail = hone_xstrdup(jstr(json_array_get(rows, i), "log_tail"));
            break;
        }
    free(causes);
    json_decref(rows);
    return (int)n;
}

/* Ends the search. fail_msg: it ends failed so (too many trials failed), its trials still queued
 * or running canceled; else done with the best trial, or failed when none reported a metric. */
static int finish(hone_controller *c, ctl_search *s, const char *fail_msg, const char *fail_tail)
{
    json_t *best = NULL, *result;
    /* with a budget, the best trial that finished its whole schedule (it has its test pass and
     * model.bin); the best by metric only when none finished */
    int have = s->budget && store_trial_best(c->db, s->job_id, s->maximize, 1, &best) == HONE_OK;
    int unfinished = 0;
    if (!have) {
        json_decref(best);
        best = NULL;
        have = store_trial_best(c->db, s->job_id, s->maximize, 0, &best) == HONE_OK;
        unfinished = have && s->budget;
    }
    json_t *automl = NULL, *job = NULL;
    if (ctl_job_row(c, s->job_id, &job) == HONE_OK)
        automl = jparse(jstr(job, "automl"));
    if (have) {
        copy_best(c, s->job_id, best);
        json_t *cfg = jparse(jstr(best, "config"));
        json_t *bres = jparse(jstr(best, "result"));
        result = json_pack("{s:f,s:I,s:s,s:o,s:I,s:o}", "best_metric", jnum(best, "best_metric"),
                           "best_trial", (json_int_t)jint(best, "trial"), "best_job_id",
                           jstr(best, "id"), "best_config", cfg ? cfg : json_object(), "best_epoch",
                           (json_int_t)jint(best, "best_epoch"), "best_test_accuracy",
                           json_is_number(json_object_get(bres, "test_accuracy"))
                               ? json_incref(json_object_get(bres, "test_accuracy"))
                               : json_null());
        /* a detector's best trial reports test_map (TAO's best_map names the val side) */
        if (json_is_number(json_object_get(bres, "test_map")))
            json_object_set(result, "best_test_map", json_object_get(bres, "test_map"));
        if (json_is_number(json_object_get(bres, "test_coco_ap"))) /* and COCO's AP@[.5:.95] */
            json_object_set(result, "best_test_coco_ap", json_object_get(bres, "test_coco_ap"));
        json_decref(bres);
    } else {
        result = json_object();
    }
    hone_ask next;
    hone_search_peek(s->search, &next);
    json_t *budget = ctl_budget_result(s, ctl_now(), next.kind == HONE_ASK_DONE);
    if (budget) {
        json_object_set_new(budget, "best_finished", json_boolean(have && !unfinished));
        json_object_set_new(result, "budget", budget);
    }
    if (s->gpu_util_n) /* kept in the result: the search (and its samples) ends here */
        json_object_set_new(result, "gpu_util_mean",
                            json_real(s->gpu_util_sum / (double)s->gpu_util_n));
    char *rs = jdump(result);
    json_decref(result);
    int rc = HONE_ESQL;
    double now = ctl_now();
    char why[1024] = "";
    char *tail = NULL;
    if (fail_msg) {
        snprintf(why, sizeof why, "%s", fail_msg);
        tail = fail_tail ? hone_xstrdup(fail_tail) : NULL;
    } else if (!have && failed_summary(c, s, why, sizeof why, &tail) <= 0) {
        char cut[512];
        ctl_budget_note(s, now, next.kind == HONE_ASK_DONE, cut, sizeof cut);
        if (cut[0]) /* the budget left no time: say so */
            snprintf(why, sizeof why, "no trial reported a metric within the budget (%s)", cut);
        else
            snprintf(why, sizeof why, "no trial reported a metric");
    }
    int failed = fail_msg || !have;
    long waiting = 0; /* halted at a rung and never promoted: stopped now */
    json_t *counts = NULL, *cr;
    size_t ci;
    if (!fail_msg && store_trials_count_by_status(c->db, s->job_id, &counts) == HONE_OK) {
        json_array_foreach(counts, ci, cr)
        {
            const char *st = jstr(cr, "status");
            if (!strcmp(st, "paused") || !strcmp(st, "queued"))
                waiting += (long)jint(cr, "n");
        }
    }
    json_decref(counts);
    char note[512];
    ctl_budget_note(s, now, next.kind == HONE_ASK_DONE, note, sizeof note);
    if (db_begin(c->db))
        goto fail;
    /* ended by its failures: what still waits or runs is canceled, not counted stopped */
    if ((fail_msg && (store_leases_cancel_trials(c->db, s->job_id, now) ||
                      store_trials_cancel(c->db, s->job_id, now))) ||
        store_trials_stop_waiting(c->db, s->job_id, now) ||
        store_automl_finish(c->db, s->job_id, failed ? "failed" : "done", now, rs,
                            have ? jnum(best, "best_metric") : NAN,
                            have ? (int)jint(best, "best_epoch") : 0, failed ? why : NULL) ||
        (tail && store_job_set_error(c->db, s->job_id, why, tail)) ||
        (waiting > 0 &&
         ctl_joblog(c, s->job_id, "%ld trial%s halted at a rung and not promoted: stopped", waiting,
                    waiting == 1 ? "" : "s")) ||
        (failed ? ctl_joblog(c, s->job_id, "search failed: %s", why)
                : ctl_joblog(c, s->job_id,
                             "search done: best trial %lld (job %s) %s %.4f at epoch %lld",
                             (long long)jint(best, "trial"), jstr(best, "id"), s->metric,
                             jnum(best, "best_metric"), (long long)jint(best, "best_epoch"))) ||
        (note[0] && ctl_joblog(c, s->job_id, "%s%s", note,
                               unfinished ? "; no trial finished its whole schedule in time, so "
                                            "the best is one cut short (no test accuracy)"
                                          : "")) ||
        db_commit(c->db)) {
        db_rollback(c->db);
        goto fail;
    }
    rc = HONE_OK;
    ctl_log(c, "info", "automl_done", json_pack("{s:s,s:s}", "job", s->job_id, "result", rs));
    if (json_is_true(json_object_get(automl, "delete_intermediate_ckpt")))
        delete_ckpts(c, s->job_id, have ? jstr(best, "id") : NULL);
fail:
    free(tail);
    free(rs);
    json_decref(best);
    json_decref(automl);
    json_decref(job);
    return rc;
}

/* Applies one answer of the search: a new trial is stored and queued, a paused one requeued, DONE
 * finishes the job once no trial is active. Returns 1 when the search should be asked again, 0
 * when it waits or is done (*dropped: the search was freed), < 0 on a store error (the search
 * was rebuilt from what was stored). */
int ctl_automl_apply(hone_controller *c, ctl_search *s, const json_t *job, const hone_ask *a,
                     int *dropped)
{
    char job_id[64];
    snprintf(job_id, sizeof job_id, "%s", s->job_id);
    *dropped = 0;
    if (a->kind == HONE_ASK_WAIT)
        return 0;
    if (a->kind == HONE_ASK_DONE) {
        /* The search has every result it wants, but a trial may still be running (its
         * worker's complete, with the test accuracy, has not arrived: e.g. right after a
         * restart) or queued again. Finish only when none is; a complete or an expired lease
         * steps the search again. */
        int active = 0, rc = HONE_OK;
        if (store_trials_count_active(c->db, job_id, &active))
            return HONE_ESQL;
        if (active == 0) {
            rc = finish(c, s, NULL, NULL);
            ctl_automl_drop(c, job_id);
            *dropped = 1;
        }
        return rc;
    }
    int rc = a->kind == HONE_ASK_NEW ? step_new(c, s, job, a) : step_resume(c, s, a);
    if (rc) {
        /* The search moved on but the store did not: rebuild it from what was stored. */
        ctl_automl_rebuild(c, job_id);
        *dropped = 1;
        return rc;
    }
    return 1;
}

/* Ends the search when its failed trials reached the limit (ctl_automl_failed_limit): 1 when it
 * ended (the search is dropped), 0 when it goes on, < 0 on a store error. */
static int failed_out(hone_controller *c, ctl_search *s)
{
    hone_search_progress p;
    hone_search_progress_get(s->search, &p);
    /* failed or canceled, as the search counts them: read the store only when one more ended so
     * (a trial reporting a metric only raises auto's limit) */
    if (p.trials_failed == s->failed_seen)
        return 0;
    s->failed_seen = p.trials_failed;
    char msg[1024], *tail = NULL;
    int n = failed_summary(c, s, msg, sizeof msg, &tail);
    json_t *best = NULL;
    int any = store_trial_best(c->db, s->job_id, s->maximize, 0, &best) == HONE_OK;
    json_decref(best);
    int limit = ctl_automl_failed_limit(s->max_failed, s->max_trials, any);
    if (n < limit) {
        free(tail);
        return n < 0 ? n : 0;
    }
    char why[1200];
    snprintf(why, sizeof why, "%s (the search ends at %d failed trial%s: max_failed_trials%s)", msg,
             limit, limit == 1 ? "" : "s", s->max_failed > 0 ? "" : " auto");
    char job_id[64];
    snprintf(job_id, sizeof job_id, "%s", s->job_id);
    int rc = finish(c, s, why, tail);
    free(tail);
    ctl_automl_drop(c, job_id);
    return rc ? rc : 1;
}

int ctl_automl_step(hone_controller *c, const char *job_id)
{
    json_t *job = NULL;
    int rc = ctl_job_row(c, job_id, &job), made = 0;
    if (rc)
        return rc;
    if (strcmp(jstr(job, "status"), "running") != 0)
        goto fail;
    ctl_search *s = ctl_automl_find(c, job_id);
    if (!s && (rc = ctl_automl_rebuild(c, job_id)) == HONE_OK)
        s = ctl_automl_find(c, job_id);
    if (!s)
        goto fail;
    if (!s->busy && (rc = failed_out(c, s)) != 0) {
        if (rc > 0) { /* ended: too many trials failed */
            rc = HONE_OK;
            made = 1; /* the scheduler drops the canceled trials' leases */
        }
        goto fail;
    }
    for (int guard = 0; guard < 1024; guard++) {
        if (s->busy) { /* an ask runs on the thread pool: it steps again when it is back */
            s->step_again = 1;
            break;
        }
        int hold = 0;
        if ((rc = ctl_budget_gate(c, s, &hold)))
            break;
        if (hold) { /* nothing more launches: the search ends once no trial is active */
            hone_ask done = {.kind = HONE_ASK_DONE};
            int dropped = 0;
            rc = ctl_automl_apply(c, s, job, &done, &dropped);
            break;
        }
        if (ctl_automl_offload(c, s)) {
            ctl_automl_ask_async(c, s);
            break;
        }
        hone_ask a;
        int dropped = 0;
        if ((rc = hone_search_ask(s->search, &a)))
            break;
        rc = ctl_automl_apply(c, s, job, &a, &dropped);
        if (rc <= 0)
            break;
        rc = HONE_OK;
        made++;
    }
    if (made)
        c->kind_up.kick(c);
fail:
    json_decref(job);
    return rc;
}

/* TAO's AutoML status fields beside Hone's own, with TAO's names (automl_metadata.json, TAO 5.5):
 * best_<metric>, the current recommendation, epochs yet to start, seconds per epoch, and the ETA
 * as H:MM:SS. Unknown values (no trial yet, no epoch timed yet) are null. */
static void tao_fields(json_t *o, const char *metric, long newest, long remaining, double spe,
                       const json_t *eta)
{
    char key[128];
    /* TAO names a detector's best_map (its metric is "map"), a classifier's best_val_accuracy */
    snprintf(key, sizeof key, "best_%s",
             metric && !strcmp(metric, "val_map") ? "map"
             : metric && *metric                  ? metric
                                                  : "metric");
    json_object_set(o, key, json_object_get(o, "best_metric"));
    json_object_set_new(o, "Current experiment number",
                        newest >= 0 ? json_integer(newest) : json_null());
    json_object_set_new(o, "Number of epochs yet to start", json_integer(remaining));
    json_object_set_new(o, "Time per epoch in seconds",
                        isnan(spe) ? json_null() : json_real(round(spe * 100) / 100));
    if (json_is_number(eta)) {
        long s = lround(json_number_value(eta));
        char hms[48];
        snprintf(hms, sizeof hms, "%ld:%02ld:%02ld", s / 3600, s / 60 % 60, s % 60);
        json_object_set_new(o, "Estimated time for automl completion", json_string(hms));
    } else {
        json_object_set_new(o, "Estimated time for automl completion", json_null());
    }
}

/* The ETA comes from measured throughput: the trials' epochs stored per second of wall time, which
 * counts everything a trial pays besides training (starting the trainer, loading data, waiting for
 * a lease, checkpoints), not from the trainers' own seconds per epoch. Over the last ETA_WINDOW_S
 * once the job has run twice that long and a few epochs landed in the window (so the ETA follows a
 * change of pace), else since the job started. NAN before the first epoch. */
enum { ETA_WINDOW_S = 60, ETA_MIN_RECENT = 4 };

static double measured_rate(const json_t *job, double now, long done, long recent, double first)
{
    double t0 = jnum(job, "started");
    if (isnan(t0) || (!isnan(first) && first < t0))
        t0 = first;
    if (done < 1 || isnan(t0) || now <= t0)
        return NAN;
    if (now - t0 >= 2 * ETA_WINDOW_S && recent >= ETA_MIN_RECENT)
        return (double)recent / ETA_WINDOW_S;
    return (double)done / (now - t0);
}

json_t *ctl_automl_status(hone_controller *c, const json_t *job)
{
    json_t *automl = jparse(jstr(job, "automl")), *rows = NULL, *r, *agg = NULL;
    json_t *opts = json_object_get(automl, "opts");
    json_t *o = json_object();
    const char *id = jstr(job, "id");
    int maximize = json_is_true(json_object_get(opts, "maximize"));
    json_object_set_new(o, "algorithm",
                        json_string(jstr(opts, "algorithm") ? jstr(opts, "algorithm") : ""));
    json_object_set_new(o, "metric",
                        json_string(jstr(automl, "metric") ? jstr(automl, "metric") : ""));
    json_object_set_new(o, "maximize", json_boolean(maximize));
    json_object_set(o, "max_parallel", json_object_get(opts, "max_parallel"));
    json_object_set(o, "search_space", json_object_get(automl, "space"));
    long n_done = 0, n_run = 0, n_queued = 0, n_stopped = 0, n_failed = 0, n_paused = 0;
    long n_canceled = 0;
    long newest = -1; /* the highest trial number: TAO's current recommendation */
    if (store_trials_count_by_status(c->db, id, &rows) == HONE_OK) {
        size_t i;
        json_array_foreach(rows, i, r)
        {
            const char *st = jstr(r, "status");
            long n = (long)jint(r, "n");
            n_stopped += (long)jint(r, "se");
            if (json_is_integer(json_object_get(r, "last")) && jint(r, "last") > newest)
                newest = (long)jint(r, "last");
            if (!strcmp(st, "running"))
                n_run += n;
            else if (!strcmp(st, "queued"))
                n_queued += n;
            else if (!strcmp(st, "paused"))
                n_paused += n;
            else if (!strcmp(st, "failed"))
                n_failed += n;
            else if (!strcmp(st, "canceled"))
                n_canceled += n;
            else
                n_done += n;
        }
    }
    json_decref(rows);
    json_object_set_new(o, "trials_done", json_integer(n_done));
    json_object_set_new(o, "trials_running", json_integer(n_run));
    json_object_set_new(o, "trials_queued", json_integer(n_queued));
    json_object_set_new(o, "trials_paused", json_integer(n_paused));
    json_object_set_new(o, "trials_stopped_early", json_integer(n_stopped));
    json_object_set_new(o, "trials_failed", json_integer(n_failed));
    json_object_set_new(o, "trials_canceled", json_integer(n_canceled));
    double spe = NAN, now = ctl_now();
    long epochs_done = 0, recent = 0;
    double first = NAN;
    if (store_metrics_trials_summary(c->db, id, now - ETA_WINDOW_S, &agg) == HONE_OK) {
        epochs_done = (long)jint(agg, "n");
        spe = jnum(agg, "spe");
        recent = (long)jint(agg, "recent");
        first = jnum(agg, "first");
    }
    json_decref(agg);
    json_object_set_new(o, "epochs_done", json_integer(epochs_done));
    ctl_search *s = ctl_automl_find(c, id);
    long remaining = s ? ctl_automl_remaining(s) : 0;
    json_object_set_new(o, "epochs_remaining", json_integer(remaining));
    json_object_set_new(o, "seconds_per_epoch", isnan(spe) ? json_null() : json_real(spe));
    int par = (int)jint(opts, "max_parallel"), live = ctl_live_workers(c);
    if (live > 0 && live < par)
        par = live;
    if (par < 1)
        par = 1;
    double rate = measured_rate(job, now, epochs_done, recent, first);
    json_object_set_new(o, "epochs_per_second", isnan(rate) ? json_null() : json_real(rate));
    double eta = !isnan(rate) ? (double)remaining / rate
                 : isnan(spe) ? NAN
                              : (double)remaining * spe / par;
    if (remaining == 0)
        eta = 0;
    ctl_budget_status(s, job, opts, o);
    if (json_is_number(json_object_get(o, "budget_left_seconds"))) {
        /* a budget ends it: no later than that, whatever a lifted count cap would say */
        double left = jnum(o, "budget_left_seconds"), ep = jnum(o, "budget_epoch_seconds");
        if (!s)
            left = 0;
        if (isnan(eta) || eta > left)
            eta = left;
        if (ep > 0 && remaining > (long)(left * par / ep)) {
            remaining = (long)(left * par / ep);
            json_object_set_new(o, "epochs_remaining", json_integer(remaining));
        }
    }
    json_object_set_new(o, "eta_seconds", isnan(eta) ? json_null() : json_real(eta));
    json_t *ended = s ? NULL : jparse(jstr(job, "result")); /* an ended search's, kept there */
    json_object_set_new(o, "gpu_util_mean",
                        s && s->gpu_util_n ? json_real(s->gpu_util_sum / (double)s->gpu_util_n)
                        : json_is_number(json_object_get(ended, "gpu_util_mean"))
                            ? json_incref(json_object_get(ended, "gpu_util_mean"))
                            : json_null());
    json_decref(ended);
    json_t *best = NULL;
    int any = store_trial_best(c->db, id, maximize, 0, &best) == HONE_OK;
    /* the failed trials that end it, as it stands now: auto's depends on whether one has a metric
     */
    int max_failed = (int)jint(opts, "max_failed_trials");
    json_object_set_new(
        o, "max_failed_trials",
        json_integer(ctl_automl_failed_limit(max_failed, (int)jint(opts, "max_trials"), any)));
    json_object_set_new(o, "max_failed_trials_auto", json_boolean(max_failed <= 0));
    if (any) {
        json_object_set(o, "best_metric", json_object_get(best, "best_metric"));
        json_object_set(o, "best_trial", json_object_get(best, "trial"));
        json_object_set(o, "best_job_id", json_object_get(best, "id"));
        json_object_set_new(o, "best_config", jparse(jstr(best, "config")));
    } else {
        json_object_set_new(o, "best_metric", json_null());
        json_object_set_new(o, "best_trial", json_null());
        json_object_set_new(o, "best_job_id", json_null());
        json_object_set_new(o, "best_config", json_null());
    }
    json_decref(best);
    tao_fields(o, jstr(automl, "metric"), newest, remaining, spe,
               json_object_get(o, "eta_seconds"));
    json_decref(automl);
    return o;
}
