/* search_internal: the facade's private state, shared by search.c (trials, reports, random and
 * Bayesian drivers), hyperband.c (Hyperband, BOHB) and asha.c. Everything here is derived from
 * the seed and the events fed in; nothing else may be kept (a rebuild replays the events). */
#ifndef HONE_SEARCH_INTERNAL_H
#define HONE_SEARCH_INTERNAL_H

#include "search.h"

typedef enum {
    SR_RUNNING = 0, /* handed out by ask (NEW or RESUME), training towards `target` */
    SR_PAUSED = 1,  /* at a rung boundary, checkpoint kept; may be resumed */
    SR_DONE = 2,    /* finished: full budget reached, stopped early, or ended on its own */
    SR_FAILED = 3,  /* crashed: ranks worst everywhere */
} sr_state;

typedef struct sr_trial {
    int id;
    sr_state state;
    int target;     /* epoch the trial trains to now (absolute) */
    int last_epoch; /* highest epoch reported (the epochs it has trained) */
    int bracket;    /* hyperband/bohb: global bracket index; -1 otherwise */
    int rung;       /* hyperband/bohb/asha: rung it is in (training towards or paused at) */
    int reached;    /* asha/hyperband: highest rung whose boundary it reported, -1 none */
    int promoted;   /* paused and chosen to go on: the next ask resumes it */
    long promo_seq; /* order of promotion: resumes go out oldest first */
    int stopped_early;
    double *values;   /* nparams */
    double *metric;   /* [cap + 1], NAN where not reported */
    signed char *dec; /* [cap + 1], decision given for that epoch, -1 none */
    double *rungm;    /* [nrungs], metric at each rung boundary reached, NAN otherwise */
    double bestg;     /* best goodness reported so far, -inf none (curve.c's bar) */
    int curve;        /* stopped by the learning-curve rule (curve.c) */
    double curve_pred, curve_prob, curve_bar; /* its prediction (goodness at the full budget),
                                                 probability and bar when it stopped */
} sr_trial;

/* What ask would hand out next; computed without side effects so replay_new can check it. */
typedef struct sr_plan {
    hone_ask_kind kind;
    int trial;   /* RESUME: the trial; NEW: the id it will get */
    int epochs;  /* target epoch */
    int bracket; /* NEW under hyperband/bohb */
} sr_plan;

/* One Hyperband bracket (Li et al.): rung i has n[i] configs trained to ep[i] epochs. */
typedef struct hb_bracket {
    int s;        /* the paper's s: rungs 0..s */
    int n[64];    /* n_i */
    double r[64]; /* r_i in resource units (may be fractional) */
    int ep[64];   /* epochs for rung i: round(r_i * epoch_multiplier), strictly increasing */
} hb_bracket;

typedef struct hb_state {
    int smax;
    int nb;         /* brackets per iteration: smax + 1 */
    hb_bracket *br; /* nb brackets, s = smax down to 0 */
    int total;      /* nb * iterations: global bracket g runs br[g % nb] */
    int *created;   /* per global bracket: rung-0 trials created */
    int *rung;      /* per global bracket: rung being filled */
    int *done;      /* per global bracket: all its trials finished */
} hb_state;

struct hone_search {
    const hone_space *space;
    hone_search_opts o;
    hone_bo_opts bo;
    int np;
    int cap;    /* largest epoch any trial may reach */
    int nrungs; /* rungs per trial record (1 for random/bayesian) */
    sr_trial *t;
    int nt, capt;
    int running;
    long promo_counter;
    double *ask_values;
    hb_state hb;    /* hyperband, bohb, and asha (asha uses bracket 0's rungs) */
    int asha_stop;  /* asha variant: 1 = stop at a rung unless in the top 1/eta on arrival */
    int bo_max_obs; /* cap on observations fed to the GP (most recent) */
    int top[2];     /* the two trials with the highest bestg (-1 none), for curve.c's bar */
    struct dehb_state *dehb; /* dehb: subpopulations and per-rung counts (dehb.c) */
};

/* Hyperband's family: brackets, pause and resume (hyperband.c). */
static inline int sr_is_hb(hone_algo a)
{
    return a == HONE_ALGO_HYPERBAND || a == HONE_ALGO_BOHB || a == HONE_ALGO_HYPERBAND_ES;
}

/* Hyperband's brackets and passes (hyperband.c's tables): Hyperband's family and DEHB. */
static inline int sr_is_bracketed(hone_algo a)
{
    return sr_is_hb(a) || a == HONE_ALGO_DEHB;
}

/* search.c */
double sr_goodness(const hone_search *s, double metric); /* higher is better; failed = -inf */
sr_trial *sr_trial_add(hone_search *s, const double *values);
/* Trial t (bracketed or not) finished short of its rung: its bracket's rung goes on without it. */
void sr_after_end(hone_search *s, sr_trial *t);
/* Observations for the model: trials with a metric at epoch `epoch` (or, epoch 0, each finished
 * trial's best); returns n and fills X (n*np) and y (minimised). Caller frees X and y. */
int sr_collect(const hone_search *s, int epoch, double **X, double **y);
int sr_collect_pending(const hone_search *s, double **P);

/* hyperband.c */
/* The promoted trial that has waited longest (resumes go out in promotion order), or NULL. */
const sr_trial *sr_next_resume(const hone_search *s);
/* A trial's rank key: sorted best first, ties to the older trial. */
typedef struct sr_ranked {
    double g;
    int id;
} sr_ranked;
int sr_ranked_cmp(const void *a, const void *b);
int hb_build(hb_state *hb, int R, int eta, int mult, int iterations);
void hb_free(hb_state *hb);
void hb_plan(const hone_search *s, sr_plan *p);
void hb_commit_new(hone_search *s, sr_trial *t, const sr_plan *p);
hone_decision hb_boundary(hone_search *s, sr_trial *t);
void hb_after_end(hone_search *s, sr_trial *t);
long hb_epochs_remaining(const hone_search *s);
/* The bracketed searches' shared pieces (hyperband.c). sr_plan_busy: WAIT at max_parallel, else
 * the next promotion as a RESUME; 1 when it decided p. sr_brackets_remaining: each unfinished
 * bracket's planned epochs less what its trials trained, where rung i of bracket g trains from
 * scratch when fresh(s, g, i), else on from rung i - 1. */
int sr_plan_busy(const hone_search *s, sr_plan *p);
long sr_brackets_remaining(const hone_search *s, int (*fresh)(const hone_search *s, int g, int i));
int hb_propose_bohb(hone_search *s, int trial, double *values);

/* asha.c */
void asha_plan(const hone_search *s, sr_plan *p);
hone_decision asha_boundary(hone_search *s, sr_trial *t);
long asha_epochs_remaining(const hone_search *s);

/* curve.c: the learning-curve stopping rule inside the facade */
int sr_curve_on(const hone_search *s);
/* After trial t's report of `epoch` was stored: keeps bestg and the top two up to date. */
void sr_best_note(hone_search *s, sr_trial *t, int epoch);
/* Recomputes the top two (a trial failed: its results no longer count). */
void sr_best_rebuild(hone_search *s);
/* 1 when trial t (running, below its target) should stop after its report of `epoch`; fills the
 * trial's curve_* fields then. */
int sr_curve_judge(hone_search *s, sr_trial *t, int epoch);
/* dehb.c: DEHB on Hyperband's brackets (s->hb holds the bracket tables and rung-0 counts) */
int dehb_new(hone_search *s);
void dehb_free(hone_search *s);
void dehb_plan(const hone_search *s, sr_plan *p);
void dehb_propose(hone_search *s, const sr_plan *p, double *values);
void dehb_commit_new(hone_search *s, sr_trial *t, const sr_plan *p);
hone_decision dehb_boundary(hone_search *s, sr_trial *t);
void dehb_after_end(hone_search *s, sr_trial *t);
long dehb_epochs_remaining(const hone_search *s);
/* The DE operators, on unit vectors of d dimensions (exposed for the tests). rand/1 mutation
 * m = a + F (b - c), each coordinate that leaves [0, 1] redrawn uniformly (DEHB's boundary fix);
 * binomial crossover: child_k = mutant_k with probability cr, else target_k, and one coordinate
 * (drawn) always from the mutant. */
void dehb_mutate(int d, const double *a, const double *b, const double *c, double F, hone_rng *r,
                 double *mutant);
void dehb_crossover(int d, const double *target, const double *mutant, double cr, hone_rng *r,
                    double *child);
/* Which trial holds slot k of the subpopulation at level (rung epochs of bracket 0) lev, or -1;
 * the subpopulation's size through *size. For the tests. */
int dehb_member(const hone_search *s, int lev, int k, int *size);

/* For the benchmark: choose the ASHA variant (0 promote-with-pause, 1 stop). Call before any ask.
 */
void hone_search__asha_set_stop(hone_search *s, int stop);
/* For the benchmark: DEHB's variant (0: the paper's, later passes evaluate offspring at every rung
 * as new trials; 1: every pass promotes by resuming, DE proposes the first rungs). Before any ask.
 */
void hone_search__dehb_set_variant(hone_search *s, int resume_all);

#endif
