/* budget: an AutoML search under a wall-clock budget, as pure arithmetic. Sizing a search (R, eta,
 * epoch multiplier, a trial's epochs) from an epoch time, the budget and the worker slots; an
 * estimate of epoch and launch times learned from reports; and the clock-driven decisions of a
 * budgeted search (may this launch finish in time? must this running trial stop?). No clock and
 * no I/O here: every time is an argument, so a controller stores each decision it makes from them
 * and a replay after a crash repeats it. The two hooks a governor needs into hone_search (peek,
 * drop) are declared here too. */
#ifndef HONE_SEARCH_BUDGET_H
#define HONE_SEARCH_BUDGET_H

#include "search.h"

/* ------------------------------------------------------------------- sizing (budget.c) */

/* The most trials a budgeted search may create (its count caps are lifted to this: with a budget
 * the clock ends the search, not a count). */
#define HONE_BUDGET_MAX_TRIALS 100000

typedef struct hone_budget_in {
    hone_algo algo;
    double budget_s; /* the whole search, launch to the best model */
    int slots;       /* trials training at once (workers, or max_parallel when lower) */
    double epoch_s;  /* one epoch of one trial on one slot */
    double launch_s; /* what each launch costs besides its epochs (start-up, test pass) */
    int max_full;    /* the longest trial allowed, in epochs (R * epoch_multiplier, train.epochs) */
    int eta;         /* hyperband, bohb, asha: the reduction factor; 0 lets the planner pick 2..3 */
} hone_budget_in;

typedef struct hone_budget_plan {
    int R, eta, epoch_multiplier; /* TAO's automl_R, automl_nu, epoch_multiplier */
    int full_epochs; /* a trial's whole schedule: R * epoch_multiplier, or max_epochs */
    int trials;      /* trials the budget is expected to buy */
    double score;    /* hone_budget_score of the plan */
} hone_budget_plan;

/* Picks, among the plans whose critical path (the best trial's epochs one after another) and work
 * fit the budget, the one of highest hone_budget_score. Random and Bayesian: full-schedule trials
 * of 1..max_full epochs, at least two rounds over the slots; ASHA: rungs m, m*eta, m*eta^2;
 * Hyperband and BOHB: one pass of the brackets must fit (more passes run while time is left). When
 * nothing fits, the smallest search (trials of one epoch). HONE_EINVAL on non-positive budget,
 * slots, epoch time or max_full. */
int hone_budget_plan_make(const hone_budget_in *in, hone_budget_plan *out);
/* What a plan whose best trial trains full_epochs, over `trials` configurations, is worth: the
 * best trial's epochs count most (a convnet needs several), then how many configurations get
 * tried; past 6 epochs and 24 trials more of each is still worth a little. */
double hone_budget_score(int full_epochs, int trials);
/* The search options of a budgeted search: the plan's R, eta, multiplier (or max_epochs) when
 * plan is not NULL, and the count caps lifted (max_trials, Hyperband's passes) so that only the
 * budget ends the search. */
void hone_budget_search_opts(const hone_budget_plan *plan, hone_search_opts *o);

/* ------------------------------------------------------------ the estimate (budget.c) */

/* Seconds per epoch and per launch, from a hint and then from measurements. The first report of
 * each launch is a start-up sample (it carries the trainer's start, data load, warm-up), the
 * later ones epoch samples (the time between a trial's consecutive reports), the time from a
 * trial's last report to its end a tail sample (test pass, model save). */
typedef struct hone_budget_est {
    double epoch_s; /* NAN until hinted or measured */
    double start_s; /* beyond one epoch: launch to first report */
    double tail_s;  /* last report to the trial's end */
    double ewma;    /* recent epochs (drift: batch sizes, widths) */
    double sum;     /* all epoch samples */
    long n_epoch, n_start, n_tail;
} hone_budget_est;

/* epoch_hint <= 0 or NAN: unknown until measured. launch_hint: the start-up prior (seconds). */
void hone_budget_est_init(hone_budget_est *e, double epoch_hint, double launch_hint);
void hone_budget_est_epoch(hone_budget_est *e, double seconds);
/* seconds from a launch to its first report (while no epoch is timed, it stands for an epoch) */
void hone_budget_est_start(hone_budget_est *e, double seconds);
void hone_budget_est_tail(hone_budget_est *e, double seconds);
/* Seconds per epoch to plan with: the larger of the mean and the recent average (NAN unknown). */
double hone_budget_est_epoch_s(const hone_budget_est *e);

/* ---------------------------------------------------------- the decisions (budget.c) */

/* The safety factor on epoch times when deciding a launch: a launch is made only when it ends
 * before `end` with its epochs this much slower than estimated. */
#define HONE_BUDGET_SAFETY 1.1

/* The time the search's trials must end by: start + budget - the finish reserve (the best-model
 * copy and the job's end: 1% of the budget, at least 1 s, at most 15 s). */
double hone_budget_end(double start, double budget_s);
/* 1 when a launch at `now` that trains `epochs` epochs (a new trial's first rung, or a resume's
 * missing epochs) ends before `end`, estimated; also 1 while the epoch time is unknown (the first
 * wave measures it). */
int hone_budget_can_launch(const hone_budget_est *e, double now, double end, int epochs);
/* 1 when a running trial that reported at `now` with `left` epochs still to train towards its
 * target must stop now: it cannot reach its target before `end` (by the estimate, unsafetied), or
 * `now` is past `end` already. */
int hone_budget_must_stop(const hone_budget_est *e, double now, double end, int left);

/* What a governor does with the search's next answer (hone_budget_gate). */
typedef enum {
    HONE_GATE_ASK = 0, /* ask: a launch that fits, or a WAIT / DONE (nothing to launch) */
    HONE_GATE_DROP =
        1, /* a resume that cannot finish: hone_search_drop(peeked trial), gate again */
    HONE_GATE_HOLD = 2, /* a new trial that cannot finish: launch nothing more */
} hone_budget_gate_verdict;

/* The governor's rule before each ask, at `now` with trials to end by `end`: a NEW is launched
 * when its first target fits, a RESUME when its missing epochs fit; *peeked is the search's next
 * answer. Shared by the controller and the tests' simulator so both decide alike. */
int hone_budget_gate(const hone_search *s, const hone_budget_est *e, double now, double end,
                     hone_ask *peeked, hone_budget_gate_verdict *verdict);
/* Epochs a running trial still has to train towards its target (0 when it is not running). */
int hone_budget_trial_left(const hone_search *s, int trial, int epoch);

/* ----------------------------------------------- hooks into the search (search.c) */

/* What hone_search_ask would answer now, without doing it (values is NULL for a NEW). */
int hone_search_peek(const hone_search *s, hone_ask *out);
/* Gives up a paused trial that the search means to resume (a promotion the budget cannot
 * afford): it is finished, stopped early, and never resumed. A governor stores this as an event
 * and replays it in order. HONE_ESTATE when the trial is not paused. */
int hone_search_drop(hone_search *s, int trial);

#endif
