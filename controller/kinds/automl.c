/* The AutoML driver, part 1: the search space and options of an AutoML job (fixed once at start and
 * stored in jobs.automl), the live searches kept in memory, rebuilding them by replaying the
 * job's automl_events in order, and feeding reports and trial ends to them with their events
 * logged in the caller's transaction; and the AutoML kind's row (kind.h). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "automl.h"
#include "budget.h"
#include "finetune.h"
#include "ctl.h"
#include "job_rows.h"
#include "joblog.h"
#include "kind.h"
#include "convert.h"
#include "ctl_spec.h"
#include "store.h"
#include "train.h"
#include "util.h"

int ctl_automl_space_json(const char *network, const ctl_sizing *z, const json_t *settings,
                          json_t **space, char *field, size_t fieldlen, char *msg, size_t msglen)
{
    json_t *sp = NULL, *all = ctl_space_all(network, z), *v;
    json_t *given = json_object_get(settings, "automl_hyperparameters");
    size_t i;
    const char *k;
    *space = NULL;
    if (json_is_object(given)) {
        /* the whole space: adding to or removing from the default set beside it would be
         * silently ignored, so it is refused */
        static const char *const beside[] = {"automl_add_hyperparameters",
                                             "automl_remove_hyperparameters"};
        for (i = 0; i < HONE_ARRAY_LEN(beside); i++)
            if (json_array_size(json_object_get(settings, beside[i]))) {
                snprintf(field, fieldlen, "automl_settings.%s", beside[i]);
                snprintf(msg, msglen,
                         "%s: automl_hyperparameters is the whole space (the default set does not "
                         "apply); name every swept parameter there instead",
                         field);
                goto fail;
            }
        snprintf(field, fieldlen, "automl_settings.automl_hyperparameters");
        sp = json_deep_copy(given);
    } else {
        sp = ctl_space_default(network, z);
        snprintf(field, fieldlen, "automl_settings.automl_add_hyperparameters");
        json_array_foreach(json_object_get(settings, "automl_add_hyperparameters"), i, v)
        {
            if (!json_is_string(v) || !json_object_get(all, json_string_value(v))) {
                snprintf(msg, msglen, "%s[%zu]: not a sweepable hyperparameter of %s", field, i,
                         network);
                goto fail;
            }
            json_object_set(sp, json_string_value(v), json_object_get(all, json_string_value(v)));
        }
        snprintf(field, fieldlen, "automl_settings.automl_remove_hyperparameters");
        json_array_foreach(json_object_get(settings, "automl_remove_hyperparameters"), i, v)
        {
            if (!json_is_string(v) || json_object_del(sp, json_string_value(v))) {
                snprintf(msg, msglen, "%s[%zu]: not in the swept set", field, i);
                goto fail;
            }
        }
        hone_spec_space_conditions(sp); /* a parent added or removed: its children follow */
    }
    json_object_foreach(sp, k, v)
    {
        char why[256];
        if (!ctl_spec_key_sweepable(k, network)) {
            snprintf(msg, msglen, "%s: '%s' is not a spec key hone-train understands for %s", field,
                     k, network);
            goto fail;
        }
        if (hone_spec_sweep_check(hone_spec_key_find(k), v, network, why, sizeof why)) {
            snprintf(msg, msglen, "%s: %s", field, why);
            goto fail;
        }
    }
    if (json_object_size(sp) == 0) {
        snprintf(msg, msglen, "%s: the search space is empty", field);
        goto fail;
    }
    char *txt = jdump(sp), err[256];
    hone_space *parsed = NULL;
    int rc = hone_space_parse(txt, &parsed, err, sizeof err);
    free(txt);
    hone_space_free(parsed);
    if (rc) {
        snprintf(msg, msglen, "%s: %s", field, err);
        goto fail;
    }
    json_decref(all);
    *space = sp;
    return HONE_OK;
fail:
    json_decref(all);
    json_decref(sp);
    return HONE_EINVAL;
}

ctl_search *ctl_automl_find(hone_controller *c, const char *job_id)
{
    for (ctl_search *s = c->searches; s; s = s->next)
        if (!strcmp(s->job_id, job_id))
            return s;
    return NULL;
}

void ctl_automl_gpu_sample(hone_controller *c, double util)
{
    for (ctl_search *s = c->searches; s; s = s->next) {
        s->gpu_util_sum += util;
        s->gpu_util_n++;
    }
}

void ctl_automl_search_free(ctl_search *s)
{
    hone_search_free(s->search);
    hone_space_free(s->space);
    ctl_budget_free(s->budget);
    free(s);
}

/* Unlinked searches are freed now, or by the ask's completion when one is in flight. */
static void search_release(ctl_search *s)
{
    if (s->busy) {
        s->orphan = 1;
        s->next = NULL;
    } else {
        ctl_automl_search_free(s);
    }
}

void ctl_automl_drop(hone_controller *c, const char *job_id)
{
    for (ctl_search **pp = &c->searches; *pp; pp = &(*pp)->next)
        if (!strcmp((*pp)->job_id, job_id)) {
            ctl_search *s = *pp;
            *pp = s->next;
            search_release(s);
            return;
        }
}

void ctl_automl_free_all(hone_controller *c)
{
    while (c->searches) {
        ctl_search *s = c->searches;
        c->searches = s->next;
        search_release(s);
    }
}

long ctl_automl_remaining(ctl_search *s)
{
    if (!s->busy) {
        hone_search_progress p;
        hone_search_progress_get(s->search, &p);
        s->remaining = p.epochs_remaining;
    }
    return s->remaining;
}

/* automl_start_from_spec: each swept key's "default" in the space becomes the job's own resolved
 * spec value, so one trial trains exactly the spec (hone_search_opts.start_default). Returns 1 when
 * the space took them, 0 when some value is outside its swept range or choices (the space is then
 * left as it was: that spec is not a point of this search, and why goes into why). */
static int space_start_from_spec(json_t *space, const json_t *flat, char *why, size_t whylen)
{
    json_t *withdef = json_deep_copy(space), *v;
    const char *k;
    json_object_foreach(withdef, k, v)
    {
        json_t *val = json_object_get(flat, k);
        if (!val || !json_is_object(v)) {
            snprintf(why, whylen, "%s: the spec has no value the search could start from", k);
            json_decref(withdef);
            return 0;
        }
        json_object_set(v, "default", val);
    }
    char *txt = jdump(withdef), err[256];
    hone_space *parsed = NULL;
    int ok = hone_space_parse(txt, &parsed, err, sizeof err) == 0;
    if (!ok)
        snprintf(why, whylen, "%s", err);
    free(txt);
    hone_space_free(parsed);
    if (ok)
        json_object_update(space, withdef);
    json_decref(withdef);
    return ok;
}

/* A trial's whole budget in epochs (Hyperband's R units, else train.epochs). */
static int s_full_epochs(const hone_search_opts *o)
{
    return hone_algo_multifidelity(o->algo) ? o->R * o->epoch_multiplier : o->max_epochs;
}

static int opts_from_json(const json_t *o, hone_search_opts *opts)
{
    hone_search_opts_default(opts);
    if (hone_algo_parse(jstr(o, "algorithm"), &opts->algo))
        return HONE_EINVAL;
    opts->seed = (uint64_t)jint(o, "seed");
    opts->maximize = json_is_true(json_object_get(o, "maximize"));
    opts->max_trials = (int)jint(o, "max_trials");
    opts->max_epochs = (int)jint(o, "max_epochs");
    opts->R = (int)jint(o, "R");
    opts->eta = (int)jint(o, "eta");
    opts->epoch_multiplier = (int)jint(o, "epoch_multiplier");
    opts->max_parallel = (int)jint(o, "max_parallel");
    opts->start_default = json_is_true(json_object_get(o, "start_from_spec"));
    /* absent (a search stored before the rule existed): off, so its replay decides as it did */
    opts->curve_stop = json_is_true(json_object_get(o, "curve_stop"));
    if (json_is_number(json_object_get(o, "curve_confidence")))
        opts->curve_confidence = json_number_value(json_object_get(o, "curve_confidence"));
    opts->default_first = json_is_true(json_object_get(o, "default_first"));
    if (jnum(o, "budget_seconds") > 0) { /* the budget ends it, not a count (budget.h) */
        hone_budget_search_opts(NULL, opts);
        /* as the search started with them: a rebuild never recomputes what a later release's
         * formula might size differently */
        if (json_is_integer(json_object_get(o, "budget_max_trials")))
            opts->max_trials = (int)jint(o, "budget_max_trials");
        if (json_is_integer(json_object_get(o, "budget_hb_iterations")))
            opts->hb_iterations = (int)jint(o, "budget_hb_iterations");
    }
    return HONE_OK;
}

/* automl_early_stop into the search's opts: "curve" or "none", absent the algorithm's default
 * (curve for bayesian and random: the bench/search_mf measurement in bench/README.md). */
static void early_stop_opts(const json_t *settings, json_t *opts)
{
    const char *es = jstr(settings, "automl_early_stop");
    hone_algo a = HONE_ALGO_BAYESIAN;
    hone_algo_parse(jstr(settings, "automl_algorithm"), &a);
    int on = es ? !strcmp(es, "curve") : !hone_algo_multifidelity(a);
    json_object_set_new(opts, "curve_stop", json_boolean(on));
    if (json_is_number(json_object_get(settings, "automl_early_stop_confidence")))
        json_object_set_new(opts, "curve_confidence",
                            json_real(json_number_value(
                                json_object_get(settings, "automl_early_stop_confidence"))));
}

int ctl_automl_failed_limit(int max_failed, int max_trials, int any_metric)
{
    if (max_failed > 0)
        return max_failed;
    if (!any_metric)
        return 3;
    return max_trials / 2 > 3 ? max_trials / 2 : 3;
}

/* "max_failed_trials 3" or "max_failed_trials auto (3 ...)" for the search's log. */
static void failed_limit_text(int max_failed, int max_trials, char *buf, size_t len)
{
    if (max_failed > 0)
        snprintf(buf, len, "max_failed_trials %d", max_failed);
    else
        snprintf(buf, len, "max_failed_trials auto (3 while no trial has a metric, then %d)",
                 ctl_automl_failed_limit(0, max_trials, 1));
}

int ctl_automl_start(hone_controller *c, const char *job_id, char *msg, size_t msglen)
{
    json_t *job = NULL, *exp = NULL, *settings = NULL, *space = NULL, *flat = NULL;
    char field[128];
    int rc = ctl_job_row(c, job_id, &job);
    if (rc || (rc = store_experiment_get(c->db, jstr(job, "experiment_id"), NULL, &exp)))
        goto fail;
    settings = jparse(jstr(exp, "automl_settings"));
    if ((rc = ctl_train_spec(c, job, &flat)))
        goto fail;
    ctl_sizing z = ctl_train_sizing(c, exp, flat);
    rc = ctl_automl_space_json(jstr(exp, "network"), &z, settings, &space, field, sizeof field, msg,
                               msglen);
    if (rc)
        goto fail;
    const char *metric = jstr(exp, "metric");
    int maximize = strstr(metric, "loss") == NULL;
    int par = (int)jint(settings, "automl_max_parallel");
    if (par <= 0) /* workers may still be registering when a demo starts its job: at least 2 */
        par = ctl_live_workers(c) > 2 ? ctl_live_workers(c) : 2;
    json_t *opts = json_pack(
        "{s:s,s:I,s:b,s:I,s:I,s:I,s:I,s:I,s:i}", "algorithm", jstr(settings, "automl_algorithm"),
        "seed", (json_int_t)jint(settings, "seed"), "maximize", maximize, "max_trials",
        (json_int_t)jint(settings, "automl_max_recommendations"), "max_epochs",
        (json_int_t)jint(flat, "train.epochs"), "R", (json_int_t)jint(settings, "automl_R"), "eta",
        (json_int_t)jint(settings, "automl_nu"), "epoch_multiplier",
        (json_int_t)jint(settings, "epoch_multiplier"), "max_parallel", par);
    /* absent (auto) or a count: the failed trials that end the search */
    json_object_set_new(opts, "max_failed_trials",
                        json_integer(jint(settings, "automl_max_failed_trials")));
    /* absent (an experiment stored before the setting existed): the default, true */
    char no_start[320] = "";
    if (!json_is_false(json_object_get(settings, "automl_start_from_spec")))
        json_object_set_new(
            opts, "start_from_spec",
            json_boolean(space_start_from_spec(space, flat, no_start, sizeof no_start)));
    char budget_msg[512];
    json_t *hist = NULL;
    double history_s = 0; /* a budget's first estimate when none is given: earlier epochs */
    if (jnum(settings, "automl_budget_minutes") > 0 &&
        store_metrics_experiment_spe(c->db, jstr(job, "experiment_id"), &hist) == HONE_OK &&
        jnum(hist, "spe") > 0)
        history_s = jnum(hist, "spe");
    json_decref(hist);
    /* a search the clock may cut trains the default spec whole first */
    if (jnum(settings, "automl_budget_minutes") > 0)
        json_object_set_new(opts, "default_first", json_true());
    ctl_budget_plan_opts(settings, history_s, opts, budget_msg, sizeof budget_msg);
    early_stop_opts(settings, opts);
    hone_search_opts o;
    if (opts_from_json(opts, &o)) {
        snprintf(msg, msglen, "automl_settings.automl_algorithm: unknown algorithm");
        json_decref(opts);
        rc = HONE_EINVAL;
        goto fail;
    }
    if (jnum(opts, "budget_seconds") > 0) { /* the counts the budget lifted, stored as used */
        json_object_set_new(opts, "budget_max_trials", json_integer(o.max_trials));
        json_object_set_new(opts, "budget_hb_iterations", json_integer(o.hb_iterations));
    }
    json_t *automl =
        json_pack("{s:o,s:o,s:s,s:b}", "space", space, "opts", opts, "metric", metric,
                  "delete_intermediate_ckpt",
                  json_is_true(json_object_get(settings, "automl_delete_intermediate_ckpt")));
    space = NULL;
    char *txt = jdump(automl);
    json_decref(automl);
    rc = store_automl_start(c->db, job_id, txt, ctl_now());
    free(txt);
    if (rc == HONE_OK) {
        char lim[128];
        failed_limit_text((int)jint(settings, "automl_max_failed_trials"), o.max_trials, lim,
                          sizeof lim);
        rc = ctl_joblog(c, job_id,
                        "search started: %s, %d trials at most, %d at once, %s %s, %d epochs a "
                        "trial at most, %s%s",
                        hone_algo_name(o.algo), o.max_trials, o.max_parallel,
                        o.maximize ? "maximizing" : "minimizing", metric, s_full_epochs(&o), lim,
                        o.curve_stop || o.algo == HONE_ALGO_HYPERBAND_ES
                            ? ", trials stopped early by their learning curves"
                            : "");
        if (rc == HONE_OK && budget_msg[0])
            rc = ctl_joblog(c, job_id, "%s", budget_msg);
        if (rc == HONE_OK && no_start[0]) /* e.g. a batch above what the swept corners fit */
            rc = ctl_joblog(c, job_id,
                            "no trial trains the experiment's own spec: it is not a point of "
                            "this search (%s)",
                            no_start);
    }
fail:
    json_decref(job);
    json_decref(exp);
    json_decref(settings);
    json_decref(space);
    json_decref(flat);
    return rc;
}

/* Replays one stored event into a fresh search. */
static int replay_event(hone_controller *c, ctl_search *s, const json_t *ev)
{
    const char *kind = jstr(ev, "kind");
    int trial = (int)jint(ev, "trial"), epoch = (int)jint(ev, "epoch");
    if (!strcmp(kind, "new")) {
        int np = hone_space_nparams(s->space);
        json_t *vals = jparse(jstr(ev, "data"));
        double *v = hone_xcalloc((size_t)np + 1, sizeof(double));
        for (int i = 0; i < np; i++)
            v[i] = json_number_value(json_array_get(vals, (size_t)i));
        int rc = hone_search_replay_new(s->search, trial, v, epoch);
        free(v);
        json_decref(vals);
        return rc;
    }
    if (!strcmp(kind, "resume")) {
        hone_ask a;
        int rc = hone_search_ask(s->search, &a);
        if (rc || a.kind != HONE_ASK_RESUME || a.trial != trial || a.epochs != epoch) {
            ctl_log(c, "error", "replay_mismatch",
                    json_pack("{s:s,s:i,s:i,s:i}", "job", s->job_id, "trial", trial, "got_kind",
                              (int)a.kind, "got_trial", a.trial));
            return rc ? rc : HONE_ESTATE;
        }
        return HONE_OK;
    }
    if (!strcmp(kind, "report")) {
        hone_decision d;
        double m = jnum(ev, "metric");
        return hone_search_report(s->search, trial, epoch, m, &d);
    }
    json_t *data = jparse(jstr(ev, "data"));
    int failed = json_is_true(json_object_get(data, "failed"));
    int drop = json_is_true(json_object_get(data, "budget_drop"));
    json_decref(data);
    return drop ? hone_search_drop(s->search, trial) : hone_search_end(s->search, trial, failed);
}

int ctl_automl_rebuild(hone_controller *c, const char *job_id)
{
    json_t *job = NULL, *automl = NULL, *events = NULL;
    ctl_search *s = NULL;
    char err[256];
    ctl_automl_drop(c, job_id);
    int rc = ctl_job_row(c, job_id, &job);
    if (rc)
        return rc;
    automl = jparse(jstr(job, "automl"));
    if (!automl) {
        rc = HONE_EPARSE;
        goto fail;
    }
    s = hone_xcalloc(1, sizeof *s);
    s->c = c;
    snprintf(s->job_id, sizeof s->job_id, "%s", job_id);
    snprintf(s->metric, sizeof s->metric, "%s", jstr(automl, "metric"));
    char *sp = jdump(json_object_get(automl, "space"));
    rc = hone_space_parse(sp, &s->space, err, sizeof err);
    free(sp);
    hone_search_opts o;
    if (rc || (rc = opts_from_json(json_object_get(automl, "opts"), &o)) ||
        (rc = hone_search_new(s->space, &o, &s->search)))
        goto fail;
    s->maximize = o.maximize;
    s->max_epochs = o.max_epochs;
    s->model_based = o.algo == HONE_ALGO_BAYESIAN || o.algo == HONE_ALGO_BOHB;
    s->full_epochs = s_full_epochs(&o);
    /* the setting's count (a budget lifts the search's cap): what auto's failed limit halves */
    s->max_trials = (int)jint(json_object_get(automl, "opts"), "max_trials");
    s->max_failed = (int)jint(json_object_get(automl, "opts"), "max_failed_trials");
    s->budget = ctl_budget_new(json_object_get(automl, "opts"), jnum(job, "started"));
    if ((rc = store_automl_events(c->db, job_id, &events)))
        goto fail;
    json_t *ev;
    size_t i;
    json_array_foreach(events, i, ev)
    {
        int erc = replay_event(c, s, ev);
        ctl_budget_replay(s->budget, ev);
        if (erc)
            ctl_log(c, "error", "replay_failed",
                    json_pack("{s:s,s:I,s:s,s:s}", "job", job_id, "seq",
                              (json_int_t)jint(ev, "seq"), "kind", jstr(ev, "kind"), "error",
                              hone_strerror(erc)));
    }
    ctl_automl_remaining(s);
    s->next = c->searches;
    c->searches = s;
    ctl_log(c, "info", "automl_rebuilt",
            json_pack("{s:s,s:I}", "job", job_id, "events", (json_int_t)json_array_size(events)));
    s = NULL;
fail:
    if (s)
        ctl_automl_search_free(s);
    if (rc)
        ctl_log(c, "error", "automl_rebuild_failed",
                json_pack("{s:s,s:s}", "job", job_id, "error", hone_strerror(rc)));
    json_decref(job);
    json_decref(automl);
    json_decref(events);
    return rc;
}

int ctl_automl_rebuild_all(hone_controller *c)
{
    json_t *rows = NULL, *r;
    size_t i;
    if (store_automl_list_live(c->db, &rows))
        return HONE_ESQL;
    json_array_foreach(rows, i, r) ctl_automl_rebuild(c, jstr(r, "id"));
    json_decref(rows);
    return HONE_OK;
}

static int ev_append(hone_controller *c, const char *job_id, const char *kind, int trial, int epoch,
                     double metric, const char *data)
{
    return store_automl_event_append(c->db, job_id, kind, trial, epoch, metric, data, ctl_now());
}

int ctl_automl_log_new(hone_controller *c, const char *job_id, int trial, int epochs,
                       const double *values, int np)
{
    json_t *a = json_array();
    for (int i = 0; i < np; i++)
        json_array_append_new(a, json_real(values[i]));
    char *d = jdump(a);
    json_decref(a);
    int rc = ev_append(c, job_id, "new", trial, epochs, NAN, d);
    free(d);
    return rc;
}

int ctl_automl_log_resume(hone_controller *c, const char *job_id, int trial, int epochs)
{
    return ev_append(c, job_id, "resume", trial, epochs, NAN, NULL);
}

static ctl_search *parent_search(hone_controller *c, const json_t *trial)
{
    const char *pid = jstr(trial, "parent_id");
    if (!pid)
        return NULL;
    return ctl_automl_find(c, pid);
}

int ctl_automl_report(hone_controller *c, const json_t *trial, int epoch, double metric, int fresh,
                      hone_decision *dec)
{
    ctl_search *s = parent_search(c, trial);
    *dec = HONE_DECIDE_STOP; /* no live search (canceled, finished): the trial has no purpose */
    if (!s)
        return HONE_OK;
    if (s->busy) /* callers hold their request while the search asks (ctl_defer) */
        return HONE_ESTATE;
    int t = (int)jint(trial, "trial");
    int rc = hone_search_report(s->search, t, epoch, metric, dec);
    if (rc == HONE_ERANGE || rc == HONE_ENOENT) {
        /* An epoch past every budget (or a trial the search never made): nothing to learn from
         * it; tell the trainer to stop rather than fail the request. */
        *dec = HONE_DECIDE_STOP;
        return HONE_OK;
    }
    int target = 0;
    int cut = rc == HONE_OK && ctl_budget_report(s, t, epoch, fresh, ctl_now(), dec, &target);
    if (rc || !fresh)
        return rc;
    hone_search_progress after;
    double pred, prob, bar;
    hone_search_progress_get(s->search, &after);
    char cut_data[96];
    snprintf(cut_data, sizeof cut_data, "{\"budget_stop\":{\"target\":%d}}", target);
    rc = ev_append(c, s->job_id, "report", t, epoch, metric, cut ? cut_data : NULL);
    if (rc)
        return rc;
    if (cut)
        return ctl_joblog(c, s->job_id,
                          "trial %d stopped by the budget at epoch %d of %d (%s %.4f): it could "
                          "not reach epoch %d in time",
                          t, epoch, target, s->metric, metric, target);
    /* the search's log: a new best, a halt at a rung, an early stop */
    if (after.best_trial == t && after.best_epoch == epoch && !isnan(after.best_metric))
        rc = ctl_joblog(c, s->job_id, "new best: trial %d %s %.4f at epoch %d", t, s->metric,
                        metric, epoch);
    if (!rc && *dec == HONE_DECIDE_PAUSE)
        rc = ctl_joblog(c, s->job_id,
                        "trial %d halted at the rung of epoch %d (%s %.4f): it waits for the rest "
                        "of its rung, whose best are promoted",
                        t, epoch, s->metric, metric);
    else if (!rc && *dec == HONE_DECIDE_STOP &&
             hone_search_curve_stopped(s->search, t, &pred, &prob, &bar))
        rc = ctl_joblog(c, s->job_id,
                        "trial %d stopped early at epoch %d of a budget of %d (%s %.4f): its "
                        "learning curve predicts %.4f at the end, P(reaching the best, %.4f) = "
                        "%.3f",
                        t, epoch, s->full_epochs, s->metric, metric, pred, bar, prob);
    else if (!rc && *dec == HONE_DECIDE_STOP && epoch < s->full_epochs)
        rc = ctl_joblog(c, s->job_id,
                        "trial %d stopped early at epoch %d of a budget of %d (%s %.4f): not among "
                        "the best of its rung",
                        t, epoch, s->full_epochs, s->metric, metric);
    return rc;
}

int ctl_automl_end(hone_controller *c, const json_t *trial, int failed)
{
    ctl_search *s = parent_search(c, trial);
    if (!s)
        return HONE_OK;
    if (s->busy)
        return HONE_ESTATE;
    int t = (int)jint(trial, "trial");
    ctl_budget_ended(s, t, ctl_now());
    int rc = hone_search_end(s->search, t, failed);
    if (rc)
        return rc;
    rc = ev_append(c, s->job_id, "end", t, 0, NAN, failed ? "{\"failed\":true}" : "{}");
    if (rc)
        return rc;
    /* the trial's row as it ended (its kind stored the status and the error first) */
    json_t *row = NULL;
    if (ctl_job_row(c, jstr(trial, "id"), &row) != HONE_OK)
        return HONE_OK;
    const char *st = jstr(row, "status") ? jstr(row, "status") : "?";
    if (!strcmp(st, "paused")) { /* halted at a rung: logged with its report */
    } else if (!strcmp(st, "failed")) {
        char cause[1024];
        ctl_failure_cause(jstr(row, "error"), cause, sizeof cause);
        rc = ctl_joblog(c, s->job_id, "trial %d failed (job %s): %s", t, jstr(row, "id"), cause);
    } else if (json_is_number(json_object_get(row, "best_metric"))) {
        rc = ctl_joblog(c, s->job_id, "trial %d %s after epoch %lld: best %s %.4f at epoch %lld", t,
                        st, (long long)jint(row, "epoch"), s->metric, jnum(row, "best_metric"),
                        (long long)jint(row, "best_epoch"));
    } else {
        rc = ctl_joblog(c, s->job_id, "trial %d %s after epoch %lld, with no metric", t, st,
                        (long long)jint(row, "epoch"));
    }
    json_decref(row);
    return rc;
}

/* ---- the AutoML kind's row (kind.h) ---- */

static int automl_create(hone_controller *c, const json_t *exp, const json_t *body,
                         const char *owner, char *id_out, size_t idlen, int *http, char *field,
                         size_t fieldlen, char *msg, size_t msglen)
{
    static const ctl_train_search search = {ctl_automl_space_json, ctl_automl_start};
    return ctl_train_create_as(c, exp, HONE_KIND_AUTOML, &search, body, owner, id_out, idlen, http,
                               field, fieldlen, msg, msglen);
}

static void automl_created(hone_controller *c, const char *id)
{
    ctl_automl_step(c, id);
}

/* An AutoML job ends with all its trials at once, running ones included: their leases end, so
 * their workers get 409 on report and the job under `cancel` on heartbeat. */
static int automl_cancel(hone_controller *c, const json_t *job)
{
    const char *id = jstr(job, "id");
    double now = ctl_now();
    if (store_job_cancel(c->db, id, now) || store_leases_cancel_trials(c->db, id, now) ||
        store_trials_cancel(c->db, id, now))
        return HONE_ESQL;
    return ctl_joblog(c, id, "search canceled: its queued, halted and running trials with it");
}

static int automl_pause(hone_controller *c, const json_t *job)
{
    int rc = store_job_pause(c->db, jstr(job, "id"));
    return rc ? rc
              : ctl_joblog(c, jstr(job, "id"),
                           "search paused: no trial starts or resumes until it is resumed");
}

static int automl_resume(hone_controller *c, const json_t *job)
{
    int rc = store_automl_resume(c->db, jstr(job, "id"));
    return rc ? rc : ctl_joblog(c, jstr(job, "id"), "search resumed");
}

static void automl_controlled(hone_controller *c, const json_t *job, const char *verb)
{
    if (!strcmp(verb, "cancel"))
        ctl_automl_drop(c, jstr(job, "id"));
    else if (!strcmp(verb, "resume"))
        ctl_automl_step(c, jstr(job, "id"));
}

static void automl_view(hone_controller *c, json_t *o, const json_t *row)
{
    json_object_set_new(o, "automl", ctl_automl_status(c, row));
    ctl_convert_json(o, row);
    ctl_finetune_json(o, row);
}

static int automl_trial_budget(hone_controller *c, const char *parent_id)
{
    ctl_search *s = ctl_automl_find(c, parent_id);
    return s ? s->full_epochs : 0;
}

static void automl_trial_step(hone_controller *c, const char *parent_id)
{
    ctl_automl_step(c, parent_id);
}

static void automl_forget(hone_controller *c, const char *id)
{
    ctl_automl_drop(c, id);
}

const ctl_kind ctl_kind_automl = {
    .id = HONE_KIND_AUTOML,
    .user_creates = 1,
    .has_trials = 1,
    .report = CTL_REPORT_EPOCHS,
    .create = automl_create,
    .created = automl_created,
    .finish = ctl_train_finish,
    .resolved_spec = ctl_train_spec,
    .cancel = automl_cancel,
    .pause = automl_pause,
    .resume = automl_resume,
    .controlled = automl_controlled,
    .view = automl_view,
    .forget = automl_forget,
    .trial_budget = automl_trial_budget,
    .trial_end = ctl_automl_end,
    .trial_step = automl_trial_step,
};
