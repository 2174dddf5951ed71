/* search: the AutoML brain as a pure library. Search spaces, a seeded RNG, Gaussian-process
 * Bayesian optimisation, Hyperband / ASHA / BOHB, and one facade (hone_search) that the controller
 * drives. No I/O, no clock, no globals: every decision is a function of the seed and the events fed
 * in, so a search is rebuilt after a crash by replaying the stored events.
 * JSON (spaces, configs) goes through jansson, a pure data library. */
#ifndef HONE_SEARCH_H
#define HONE_SEARCH_H

#include <stddef.h>
#include <stdint.h>

#include "hone.h"

/* ---------------------------------------------------------------- RNG (rng.c) */

/* xoshiro256** seeded through splitmix64. A plain struct so callers may keep it on the stack. */
typedef struct hone_rng {
    uint64_t s[4];
} hone_rng;

void hone_rng_seed(hone_rng *r, uint64_t seed);
/* Seeds from (seed, stream): independent streams for e.g. suggestion number `stream`. */
void hone_rng_seed2(hone_rng *r, uint64_t seed, uint64_t stream);
uint64_t hone_rng_u64(hone_rng *r);
double hone_rng_uniform(hone_rng *r);             /* [0, 1) */
double hone_rng_normal(hone_rng *r);              /* standard normal */
uint64_t hone_rng_below(hone_rng *r, uint64_t n); /* uniform in [0, n), n > 0 */

/* ---------------------------------------------------------------- spaces (space.c) */

typedef enum {
    HONE_PARAM_FLOAT = 0,
    HONE_PARAM_INT = 1,
    HONE_PARAM_CATEGORICAL = 2,
    HONE_PARAM_BOOL = 3,
} hone_param_type;

typedef struct hone_space hone_space;

/* Parses a space from JSON:
 *   {"lr": {"type": "float", "min": 1e-4, "max": 0.3, "log": true},
 *    "batch_size": {"type": "int", "min": 32, "max": 512, "log": true},
 *    "optimizer": {"type": "categorical", "values": ["sgd", "adamw"]},
 *    "nesterov": {"type": "bool"}}
 * Optional per parameter: "default" (a value of the parameter's type); for an int, "step" (values
 * are min + k * step, max lowered onto that grid; e.g. channel counts in multiples of 8);
 * "condition": {"optimizer": ["sgd"]}, the parameter is active only when each named parent (a
 * categorical or bool parameter of the space) is active and holds one of the listed values. An
 * inactive parameter holds its fixed value (its "default", else as hone_space_default) in every
 * config made here, is left out of a config's JSON, and the models see a constant for it.
 * On error (among them a condition on an unknown parameter, on itself, on a float or int, a value
 * not among the parent's, conditions that form a cycle) returns HONE_EINVAL/HONE_EPARSE and writes
 * a message naming the parameter into err. */
int hone_space_parse(const char *json, hone_space **out, char *err, size_t errlen);
/* Prints the space as JSON in the same shape (caller frees with free()). */
char *hone_space_to_json(const hone_space *s);
void hone_space_free(hone_space *s);

int hone_space_nparams(const hone_space *s);
const char *hone_space_param_name(const hone_space *s, int i);
hone_param_type hone_space_param_type(const hone_space *s, int i);

/* A config is a vector of nparams doubles in "value" form: float value, int value, categorical
 * index, bool 0/1. The unit form maps each parameter to [0,1] (log scale where asked, ints and
 * categories by bins) and is what the models see. */
void hone_space_sample(const hone_space *s, hone_rng *r, double *values);
void hone_space_to_unit(const hone_space *s, const double *values, double *unit);
void hone_space_from_unit(const hone_space *s, const double *unit, double *values);
/* The default config (each parameter's "default", else the middle of its range / first value). */
void hone_space_default(const hone_space *s, double *values);
/* 1 when every parameter has its own "default" (hone_space_default then owes nothing to ranges). */
int hone_space_has_defaults(const hone_space *s);
/* Whether parameter i is active in the config (1 for a parameter without a condition). */
int hone_space_active(const hone_space *s, const double *values, int i);
/* Sets every inactive parameter of the config to its fixed value (a no-op without conditions). */
void hone_space_fix_inactive(const hone_space *s, double *values);
/* 1 when some parameter has a condition. */
int hone_space_has_conditions(const hone_space *s);
/* {"lr": 0.01, "batch_size": 128, "optimizer": "adamw", "nesterov": true}, inactive parameters
 * left out; caller frees. */
char *hone_space_config_to_json(const hone_space *s, const double *values);
/* Inverse of the above; every active parameter must be present, and every parameter given in
 * range, of the right type (an inactive one given still holds its fixed value). */
int hone_space_config_from_json(const hone_space *s, const char *json, double *values, char *err,
                                size_t errlen);

/* ---------------------------------------------------- Bayesian optimisation (gp.c, bo.c) */

typedef struct hone_bo_opts {
    int n_init;       /* random points before the model is used (default 10) */
    int n_candidates; /* random candidates for the acquisition (default 2000) */
    int n_restarts;   /* multi-start count for the kernel hyperparameter fit (default 3) */
} hone_bo_opts;

void hone_bo_opts_default(hone_bo_opts *o);

/* Suggests k distinct configs (values form, k * nparams doubles into out) given n finished
 * observations (values form, n * nparams; y[n], always MINIMISED here: callers negate for max)
 * and m pending configs still being evaluated (constant liar / kriging believer). Deterministic in
 * the rng state. Non-finite y (failed trials) are allowed and treated as bad, not fed raw. */
int hone_bo_suggest(const hone_space *s, const hone_bo_opts *o, const double *X, const double *y,
                    int n, const double *pending, int m, int k, hone_rng *r, double *out);

/* ------------------------------- the facade (search.c, hyperband.c, asha.c, dehb.c) */

typedef enum {
    HONE_ALGO_RANDOM = 0,
    HONE_ALGO_BAYESIAN = 1,  /* full-budget trials, GP-BO */
    HONE_ALGO_HYPERBAND = 2, /* TAO-style pause-and-resume brackets of successive halving */
    HONE_ALGO_ASHA = 3,      /* asynchronous successive halving */
    HONE_ALGO_BOHB = 4,      /* Hyperband with model-based proposals */
    HONE_ALGO_DEHB = 5,      /* Hyperband with differential evolution (dehb.c) */
    /* Hyperband whose trials the learning-curve rule also stops between rungs (TAO's name;
     * curve_stop forced on). Stored searches keep the algorithm's name, never this number. */
    HONE_ALGO_HYPERBAND_ES = 6,
} hone_algo;

/* Parses "random", "bayesian", "hyperband", "asha", "bohb", "dehb", "hyperband_es" (TAO's "b"/"h"
 * too). */
int hone_algo_parse(const char *name, hone_algo *out);
/* The algorithms' names, NULL-terminated, in the order help and messages list them (the parser
 * also takes TAO's aliases "b" and "h", which no list shows). */
extern const char *const hone_algo_names[];
const char *hone_algo_name(hone_algo a);
/* 1 for the algorithms whose trials run R x epoch_multiplier epochs at most, paused and resumed at
 * rungs (hyperband, asha, bohb, dehb, hyperband_es); 0 for the full-budget ones (random, bayesian:
 * max_epochs). */
int hone_algo_multifidelity(hone_algo a);

typedef struct hone_search_opts {
    hone_algo algo;
    uint64_t seed;
    int maximize;         /* 1: higher metric is better */
    int max_trials;       /* TAO automl_max_recommendations (random/bayesian/asha) */
    int max_epochs;       /* full budget in epochs for random/bayesian trials */
    int R;                /* TAO automl_R: max resource in units of epoch_multiplier epochs */
    int eta;              /* TAO automl_nu: reduction factor */
    int epoch_multiplier; /* TAO epoch_multiplier */
    int max_parallel;     /* trials that may run at once (>= 1) */
    int hb_iterations;    /* hyperband/bohb: passes over all brackets (default 1); max_trials is
                             not used by them (TAO ignores it too) */
    int start_default;    /* 1: one trial is the space's default config (every parameter has a
                             "default"; the controller's: the experiment's own spec), so the best
                             found is never worse than that start by more than noise. Random and
                             bayesian: trial 0; hyperband and bohb: the first trial of the first
                             pass's s = 0 bracket (full budget); asha: trial 0, promoted on its
                             merit like any other */
    /* 1: stop a running trial between its reports when its learning curve, extrapolated to the
     * full budget (curve.c), reaches the best of the other trials with probability below
     * 1 - curve_confidence. Any algorithm; hyperband_es forces it on. Default 0 */
    int curve_stop;
    /* in [0.5, 1): default 0.95 (bench/README.md says why) */
    double curve_confidence;
    int default_first; /* with start_default, hyperband/bohb/dehb/hyperband_es launch that
                          full-budget trial first, before the brackets' short ones: a search cut by
                          a time budget has trained the default spec whole (random, bayesian and
                          asha start with it anyway) */
} hone_search_opts;

void hone_search_opts_default(hone_search_opts *o);

typedef struct hone_search hone_search;

/* Takes a copy of nothing: the space is borrowed and must outlive the search. Rejects bad opts
 * with HONE_EINVAL (max_parallel < 1; random/bayesian: max_trials or max_epochs < 1; hyperband,
 * bohb, asha, dehb: R < 1, eta < 2, epoch_multiplier < 1, asha max_trials < 1, hb_iterations < 1,
 * start_default on a space where some parameter has no "default") and HONE_ERANGE (more than 100000
 * epochs per trial). Hyperband follows Li et al.: smax = floor(log_eta R), brackets s = smax..0
 * (the s=0 bracket, which TAO drops, is kept), n = ceil((smax+1) eta^s / (s+1)), rung i: floor(n
 * eta^-i) trials to round(R eta^(i-s) * epoch_multiplier) epochs. ASHA's rungs are the s = smax
 * bracket's epochs. DEHB runs the same brackets and passes, and takes start_default as Hyperband
 * does (see dehb.c for which of its evaluations resume a trial and which start new ones). */
int hone_search_new(const hone_space *space, const hone_search_opts *o, hone_search **out);
void hone_search_free(hone_search *s);

typedef enum {
    HONE_ASK_NEW = 0,    /* start trial `trial` with `values`, train until epoch `epochs` */
    HONE_ASK_RESUME = 1, /* resume paused trial `trial` from its checkpoint until epoch `epochs` */
    HONE_ASK_WAIT = 2,   /* nothing to start now: wait for running trials to report */
    HONE_ASK_DONE = 3,   /* the search is finished */
} hone_ask_kind;

typedef struct hone_ask {
    hone_ask_kind kind;
    int trial;      /* trial number, 0, 1, 2 ... in creation order */
    int epochs;     /* train until this epoch (absolute, 1-based count) */
    double *values; /* NEW only: nparams doubles, owned by the search, valid until the next call */
} hone_ask;

/* Asks for the next thing to run. Call repeatedly while it returns NEW/RESUME to fill idle
 * workers; each NEW/RESUME counts as running (against max_parallel) until its report at `epochs`
 * answers PAUSE/STOP or hone_search_end is called for it. A WAIT or DONE changes nothing, so a
 * controller need not store it. The trainer may be configured for the full budget (for its LR
 * schedule) but must stop at `epochs`: the report of that epoch always answers PAUSE or STOP. */
int hone_search_ask(hone_search *s, hone_ask *out);

typedef enum {
    HONE_DECIDE_CONTINUE = 0,
    HONE_DECIDE_STOP = 1,  /* stop for good: the trial is finished (early stopped or done) */
    HONE_DECIDE_PAUSE = 2, /* stop now, keep the checkpoint: it may be resumed by a later ask */
} hone_decision;

/* A running trial reports the metric after `epoch` (1-based). Reports are idempotent by epoch:
 * a repeated (trial, epoch) returns the same decision and changes nothing (so a resumed trial
 * must not report its pause epoch again). A report on a trial no longer running repeats its
 * last answer (PAUSE or STOP) and is ignored. HONE_ENOENT: no such trial; HONE_ERANGE: epoch
 * outside 1 .. the full budget. Ranking: Hyperband/ASHA compare the metric at the rung's epoch;
 * the best trial is the best value over all epochs; a NaN/inf metric ranks worst. */
int hone_search_report(hone_search *s, int trial, int epoch, double metric, hone_decision *out);

/* The trial's process ended (after STOP/PAUSE or on its own). failed=1 for a crash: the search
 * treats it as the worst result (never feeds inf into a model). After a PAUSE/STOP answer this is
 * bookkeeping only (a no-op); for a running trial it frees its slot, and a trial that ended on
 * its own before `epochs` (failed=0) is finished but never promoted. */
int hone_search_end(hone_search *s, int trial, int failed);

/* Progress for status pages. finished counts trials done with a result (full budget, stopped
 * early, or ended on their own), failed the crashed ones; stopped_early is a subset of finished
 * (a paused trial that is never resumed counts there once the search is done). */
typedef struct hone_search_progress {
    int trials_created, trials_running, trials_finished, trials_stopped_early, trials_failed;
    long epochs_done;      /* epochs trained so far, summed over trials */
    long epochs_remaining; /* upper estimate of epochs still to run */
    int best_trial;        /* -1 if none */
    double best_metric;
    int best_epoch;
} hone_search_progress;

void hone_search_progress_get(const hone_search *s, hone_search_progress *out);

/* Rebuilding after a crash: create a new search with the same space/opts and replay, in the
 * stored order, the events of the old one through hone_search_ask / report / end. The search is
 * deterministic, so the replayed asks return the same trials; hone_search_replay_new lets the
 * caller assert a stored (trial, values, epochs) instead of trusting recomputation, and skips the
 * model fit: it stands for the ask that returned that NEW (HONE_ESTATE if the search would not
 * start trial `trial` with `epochs` now). Each new config draws from its own RNG stream
 * (seed, trial), so skipping proposals leaves every later draw unchanged. RESUMEs are replayed
 * with hone_search_ask (it returns the stored one); stored WAITs may be skipped. */
int hone_search_replay_new(hone_search *s, int trial, const double *values, int epochs);

/* 1 when the learning-curve rule stopped `trial` (curve_stop), with what it predicted for the
 * trial's metric at the full budget and the probability it gave of reaching the bar (the best of
 * the other trials); 0 otherwise (no such trial, not stopped by the rule). For logs. */
int hone_search_curve_stopped(const hone_search *s, int trial, double *predicted, double *prob,
                              double *bar);

/* ------------------------------------------- learning-curve extrapolation (curve.c) */

/* A prediction of a metric series at epoch T from its first t epochs: a mixture of Student-t
 * components, one per fitted curve (see curve.c for the model). */
typedef struct hone_curve_pred {
    double mean; /* mixture mean at T, in the metric's own units */
    double sd;   /* mixture standard deviation (extrapolation and noise) */
    int points;  /* finite points the fit used */
} hone_curve_pred;

/* m[0 .. t-1] are the metric after epochs 1 .. t (NaN/inf allowed: skipped). maximize: 1 when a
 * higher metric is better. HONE_EINVAL on bad arguments, HONE_ENOENT with fewer than 4 finite
 * points (no prediction). */
int hone_curve_predict(const double *m, int t, int T, int maximize, hone_curve_pred *out);
/* Probability that the metric at T is at least as good as `bar` (>= when maximising, <= when
 * minimising); NAN when there is no prediction (as above). */
double hone_curve_prob_reach(const double *m, int t, int T, int maximize, double bar);
/* The rule's minimum: no trial is judged before this many finite reports (max(4, ceil(T/10))). */
int hone_curve_min_epochs(int T);

#endif
