/* dehb: DEHB (Awad, Mallik, Hutter, IJCAI 2021) for the hone_search facade: differential
 * evolution (rand/1 mutation, binomial crossover, selection) over the unit-cube encoding of the
 * space, run inside Hyperband's bracket schedule (hyperband.c's tables: R, eta, epoch_multiplier,
 * hb_iterations passes). Pure: no I/O, no clock; every decision follows from the seed and events.
 *
 * Fidelities and subpopulations. Level j (0..smax) is the j-th rung of the s = smax bracket
 * (epochs round(R eta^(j-smax) mult)); bracket b's rung i sits at level b + i. Each level keeps a
 * subpopulation of as many slots as the most evaluations any bracket makes there. Every evaluation
 * at level j takes the level's next slot in turn as its DE target; when its result at the level's
 * epochs arrives, selection puts it in that slot if it is at least as good as the member there (an
 * empty slot takes any finite result; a failed or NaN result never enters). Selection happens on
 * arrival, as the paper's asynchronous DE ("immediate").
 *
 * Proposals. A new config at bracket b's rung i is an offspring: mutant = r1 + F (r2 - r3),
 * F = 0.5, with r1..r3 distinct members of the parent pool, a coordinate leaving [0, 1] redrawn
 * uniformly; then binomial crossover with the target (CR = 0.5, one coordinate always from the
 * mutant); ints, categories and bools come back from the unit cube rounded (space.c). The parent
 * pool is the top n_i members of the lower level's subpopulation (rung i > 0: the lower fidelity
 * seeds the next, as the paper's parent pool), or of its own level's for a bracket's first rung;
 * filled up to three from the other levels (nearest lower level first), and with uniform vectors
 * while the search has fewer than three results; an empty target slot is a uniform vector (the
 * paper's random initial population); with no result anywhere and an empty target, a plain random
 * sample. The first bracket's first rung is random sampling, drawn exactly as Hyperband draws it
 * (the same configs for the same seed); with start_default the first trial of the first pass's
 * s = 0 bracket is the default config (search.c). Each proposal draws from its own stream
 * (seed, trial), so a rebuild that replays stored configs leaves every later draw unchanged.
 *
 * Trials: which evaluations resume and which are new.
 *  - Every bracket's first rung: new trials, trained from scratch to the rung's epochs.
 *  - The first pass (the first smax + 1 brackets): as the paper's first iteration, vanilla
 *    successive halving above the first rung: when a rung is complete its top n_{i+1} by the
 *    metric at the rung's epochs are RESUMED from their checkpoints to the next rung's epochs
 *    (the same trial, as hyperband.c; the resumed config also competes for a slot of the higher
 *    level); the rest stop.
 *  - Later passes (hb_iterations > 1), the paper's DEHB: every rung above the first evaluates
 *    n_i offspring of the lower level's top n_i, and an offspring is a different config, so each
 *    is a NEW trial trained from scratch to its rung's epochs (Hone cannot resume a checkpoint
 *    into another config); a trial whose rung is below the bracket's last stops at its rung's
 *    epochs (never resumed). A rung's new trials start once the rung below it in the same
 *    bracket is complete; meanwhile idle workers take the next bracket's first rung, so workers
 *    never wait for a rung while any bracket has work (the paper's asynchronous scheduling).
 *    hone_search__dehb_set_variant(s, 1) makes later passes promote by resuming too (the bench
 *    compares both). Without a time budget the controller makes one pass (hb_iterations 1, as for
 *    Hyperband and BOHB): there DE shapes the first rung of every bracket after the first, and
 *    promotions resume; a budget lifts the passes (budget.h), so later passes run offspring as
 *    new trials at every rung.
 * Resumes go out first, in promotion order; a trial that failed or ended early counts as done
 * in its rung and as the worst result (never promoted, never a member). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "search_internal.h"

/* The paper's defaults; bench/search_mf was run with others through -DHONE_DEHB_F=... */
#ifndef HONE_DEHB_F
#define HONE_DEHB_F 0.5 /* mutation factor */
#endif
#ifndef HONE_DEHB_CR
#define HONE_DEHB_CR 0.5 /* crossover probability */
#endif

typedef struct dehb_state {
    int nlev;     /* smax + 1 fidelity levels */
    int *psize;   /* [nlev] slots of each level's subpopulation */
    int **pop;    /* [nlev][psize]: trial holding the slot, -1 empty */
    double **fit; /* [nlev][psize]: its goodness at the level's epochs */
    int *next;    /* [nlev]: slot the next evaluation at that level competes for */
    int *issued;  /* [total * nlev]: evaluations handed out in bracket g's rung i */
    int *slot;    /* per trial: slot of its current evaluation */
    int capt;
    int resume_all; /* variant: every pass promotes by resuming */
} dehb_state;

#define ISSUED(de, g, i) ((de)->issued[(size_t)(g) * (size_t)(de)->nlev + (size_t)(i)])

int dehb_new(hone_search *s)
{
    const hb_state *hb = &s->hb;
    dehb_state *de = hone_xcalloc(1, sizeof(*de));
    de->nlev = hb->smax + 1;
    de->psize = hone_xcalloc((size_t)de->nlev, sizeof(int));
    de->pop = hone_xcalloc((size_t)de->nlev, sizeof(int *));
    de->fit = hone_xcalloc((size_t)de->nlev, sizeof(double *));
    de->next = hone_xcalloc((size_t)de->nlev, sizeof(int));
    de->issued = hone_xcalloc((size_t)hb->total * (size_t)de->nlev, sizeof(int));
    for (int b = 0; b < hb->nb; b++)
        for (int i = 0; i <= hb->br[b].s; i++)
            if (hb->br[b].n[i] > de->psize[b + i])
                de->psize[b + i] = hb->br[b].n[i];
    for (int j = 0; j < de->nlev; j++) {
        de->pop[j] = hone_xmalloc((size_t)de->psize[j] * sizeof(int));
        de->fit[j] = hone_xcalloc((size_t)de->psize[j], sizeof(double));
        for (int k = 0; k < de->psize[j]; k++)
            de->pop[j][k] = -1;
    }
    s->dehb = de;
    return HONE_OK;
}

void dehb_free(hone_search *s)
{
    dehb_state *de = s->dehb;
    if (!de)
        return;
    for (int j = 0; j < de->nlev; j++) {
        free(de->pop[j]);
        free(de->fit[j]);
    }
    free(de->pop);
    free(de->fit);
    free(de->psize);
    free(de->next);
    free(de->issued);
    free(de->slot);
    free(de);
    s->dehb = NULL;
}

void hone_search__dehb_set_variant(hone_search *s, int resume_all)
{
    if (s->dehb)
        s->dehb->resume_all = resume_all ? 1 : 0;
}

int dehb_member(const hone_search *s, int lev, int k, int *size)
{
    const dehb_state *de = s->dehb;
    if (!de || lev < 0 || lev >= de->nlev) {
        if (size)
            *size = 0;
        return -1;
    }
    if (size)
        *size = de->psize[lev];
    return k >= 0 && k < de->psize[lev] ? de->pop[lev][k] : -1;
}

/* Rung i of global bracket g gets new trials (DE offspring, or random), not promotions. */
static int de_rung(const hone_search *s, int g, int i)
{
    return i == 0 || (!s->dehb->resume_all && g >= s->hb.nb);
}

static const hb_bracket *bracket_of(const hone_search *s, int g)
{
    return &s->hb.br[g % s->hb.nb];
}

static int level_of(const hone_search *s, const sr_trial *t)
{
    return t->bracket % s->hb.nb + t->rung;
}

/* The trial's current evaluation takes its level's next slot as its target. */
static void assign_slot(hone_search *s, sr_trial *t)
{
    dehb_state *de = s->dehb;
    int lev = level_of(s, t);
    if (t->id >= de->capt) {
        int cap = de->capt ? de->capt : 16;
        while (cap <= t->id)
            cap *= 2;
        de->slot = hone_xrealloc(de->slot, (size_t)cap * sizeof(int));
        de->capt = cap;
    }
    de->slot[t->id] = de->next[lev];
    de->next[lev] = (de->next[lev] + 1) % de->psize[lev];
}

/* DE selection on arrival: the result enters its slot if at least as good as the member. */
static void select_into(hone_search *s, const sr_trial *t)
{
    dehb_state *de = s->dehb;
    int lev = level_of(s, t), k = de->slot[t->id];
    double g = sr_goodness(s, t->rungm[t->rung]);
    if (!isfinite(g))
        return;
    if (de->pop[lev][k] < 0 || g >= de->fit[lev][k]) {
        de->pop[lev][k] = t->id;
        de->fit[lev][k] = g;
    }
}

void dehb_plan(const hone_search *s, sr_plan *p)
{
    const hb_state *hb = &s->hb;
    const dehb_state *de = s->dehb;
    if (sr_plan_busy(s, p))
        return;
    int all_done = 1, z = hb->nb - 1; /* the default spec first (hone_search_opts.default_first) */
    if (s->o.default_first && s->o.start_default && !hb->done[z] && hb->rung[z] == 0 &&
        ISSUED(de, z, 0) == 0 && de_rung(s, z, 0)) {
        p->kind = HONE_ASK_NEW;
        p->trial = s->nt;
        p->epochs = bracket_of(s, z)->ep[0];
        p->bracket = z;
        return;
    }
    for (int g = 0; g < hb->total; g++) {
        if (hb->done[g])
            continue;
        all_done = 0;
        const hb_bracket *br = bracket_of(s, g);
        int i = hb->rung[g];
        if (de_rung(s, g, i) && ISSUED(de, g, i) < br->n[i]) {
            p->kind = HONE_ASK_NEW;
            p->trial = s->nt;
            p->epochs = br->ep[i];
            p->bracket = g;
            return;
        }
    }
    p->kind = all_done ? HONE_ASK_DONE : HONE_ASK_WAIT;
}

void dehb_commit_new(hone_search *s, sr_trial *t, const sr_plan *p)
{
    int g = p->bracket, i = s->hb.rung[g];
    t->bracket = g;
    t->rung = i;
    ISSUED(s->dehb, g, i)++;
    if (i == 0)
        s->hb.created[g]++;
    assign_slot(s, t);
}

/* When bracket g's current rung is complete (all handed out and reported or ended): the last
 * rung ends the bracket; before a promotion rung its top n_{i+1} are promoted (resumed by later
 * asks) and the rest stop; before a DE rung the bracket simply moves on to it. */
static void check_rung(hone_search *s, int g)
{
    hb_state *hb = &s->hb;
    dehb_state *de = s->dehb;
    const hb_bracket *br = bracket_of(s, g);
    int i = hb->rung[g];
    if (hb->done[g] || (de_rung(s, g, i) && ISSUED(de, g, i) < br->n[i]))
        return;
    int nc = 0;
    sr_ranked *c = hone_xmalloc((size_t)(s->nt > 0 ? s->nt : 1) * sizeof(*c));
    for (int k = 0; k < s->nt; k++) {
        const sr_trial *t = &s->t[k];
        if (t->bracket != g || t->rung != i)
            continue;
        if (t->state == SR_RUNNING || (t->state == SR_PAUSED && t->promoted)) {
            free(c);
            return;
        }
        if (t->state == SR_PAUSED) {
            c[nc].g = sr_goodness(s, t->rungm[i]);
            c[nc].id = t->id;
            nc++;
        }
    }
    if (i == br->s) {
        hb->done[g] = 1;
        free(c);
        return;
    }
    int keep = 0;
    if (!de_rung(s, g, i + 1)) {
        qsort(c, (size_t)nc, sizeof(*c), sr_ranked_cmp);
        keep = br->n[i + 1] < nc ? br->n[i + 1] : nc;
    }
    for (int k = 0; k < nc; k++) {
        sr_trial *t = &s->t[c[k].id];
        if (k < keep) {
            t->promoted = 1;
            t->promo_seq = s->promo_counter++;
            t->rung = i + 1;
            t->target = br->ep[i + 1];
            ISSUED(de, g, i + 1)++;
            assign_slot(s, t);
        } else {
            t->state = SR_DONE;
            t->stopped_early = 1;
        }
    }
    hb->rung[g] = i + 1;
    if (keep == 0 && !de_rung(s, g, i + 1))
        hb->done[g] = 1; /* nothing left to promote: every member failed */
    free(c);
}

hone_decision dehb_boundary(hone_search *s, sr_trial *t)
{
    const hb_bracket *br = bracket_of(s, t->bracket);
    select_into(s, t);
    if (t->rung >= br->s || de_rung(s, t->bracket, t->rung + 1)) {
        t->state = SR_DONE; /* the full budget, or a rung nobody resumes from */
        t->stopped_early = t->rung < br->s;
        check_rung(s, t->bracket);
        return HONE_DECIDE_STOP;
    }
    t->state = SR_PAUSED;
    check_rung(s, t->bracket);
    return t->state == SR_PAUSED ? HONE_DECIDE_PAUSE : HONE_DECIDE_STOP;
}

void dehb_after_end(hone_search *s, sr_trial *t)
{
    check_rung(s, t->bracket);
}

/* Upper estimate: each unfinished bracket's planned epochs (a promotion trains on from the rung
 * below, a new trial from scratch) less what its trials have trained. */
long dehb_epochs_remaining(const hone_search *s)
{
    return sr_brackets_remaining(s, de_rung);
}

void dehb_mutate(int d, const double *a, const double *b, const double *c, double F, hone_rng *r,
                 double *mutant)
{
    for (int k = 0; k < d; k++) {
        double m = a[k] + F * (b[k] - c[k]);
        mutant[k] = m >= 0.0 && m <= 1.0 ? m : hone_rng_uniform(r);
    }
}

void dehb_crossover(int d, const double *target, const double *mutant, double cr, hone_rng *r,
                    double *child)
{
    if (d < 1)
        return;
    int forced = (int)hone_rng_below(r, (uint64_t)d);
    for (int k = 0; k < d; k++)
        child[k] = k == forced || hone_rng_uniform(r) < cr ? mutant[k] : target[k];
}

/* Members of level lev, best first (ties to the older trial); returns the count. */
static int level_ranked(const hone_search *s, int lev, sr_ranked *out)
{
    const dehb_state *de = s->dehb;
    int m = 0;
    for (int k = 0; k < de->psize[lev]; k++) {
        if (de->pop[lev][k] < 0)
            continue;
        out[m].g = de->fit[lev][k];
        out[m].id = de->pop[lev][k];
        m++;
    }
    qsort(out, (size_t)m, sizeof(*out), sr_ranked_cmp);
    return m;
}

/* The parent pool for an evaluation at level lev whose source level is src (lev - 1 above a
 * bracket's first rung, else lev): src's top `top` members, then other levels' best (src - 1
 * down to 0, then above src) until there are three. Returns trial ids in pool. */
static int parent_pool(const hone_search *s, int src, int top, int *pool)
{
    const dehb_state *de = s->dehb;
    int maxp = 0;
    for (int j = 0; j < de->nlev; j++)
        maxp = de->psize[j] > maxp ? de->psize[j] : maxp;
    sr_ranked *c = hone_xmalloc((size_t)maxp * sizeof(*c));
    int m = level_ranked(s, src, c), n = 0;
    for (int k = 0; k < m && k < top; k++)
        pool[n++] = c[k].id;
    for (int step = 1; n < 3 && step < 2 * de->nlev; step++) {
        /* src-1, src-2, ..., 0, then src+1, src+2, ... */
        int j = step <= src ? src - step : step;
        if (j == src || j < 0 || j >= de->nlev)
            continue;
        m = level_ranked(s, j, c);
        for (int k = 0; k < m && n < 3; k++) {
            int dup = 0;
            for (int q = 0; q < n; q++)
                dup |= pool[q] == c[k].id;
            if (!dup)
                pool[n++] = c[k].id;
        }
    }
    free(c);
    return n;
}

void dehb_propose(hone_search *s, const sr_plan *p, double *values)
{
    const dehb_state *de = s->dehb;
    int d = s->np, g = p->bracket, i = s->hb.rung[g];
    int lev = g % s->hb.nb + i;
    hone_rng r;
    hone_rng_seed2(&r, s->o.seed, (uint64_t)p->trial);
    if (d < 1)
        return;
    if (g == 0 && i == 0) { /* the first bracket's first rung: random, as Hyperband's */
        hone_space_sample(s->space, &r, values);
        return;
    }
    const hb_bracket *br = bracket_of(s, g);
    int src = i > 0 ? lev - 1 : lev;
    int *pool = hone_xmalloc((size_t)(br->n[i] + 3) * sizeof(int));
    int n = parent_pool(s, src, br->n[i], pool);
    int tid = de->pop[lev][de->next[lev]];
    if (n == 0 && tid < 0) { /* nothing to evolve from yet */
        free(pool);
        hone_space_sample(s->space, &r, values);
        return;
    }
    double *buf = hone_xmalloc((size_t)d * 6 * sizeof(double));
    double *target = buf, *par[3] = {buf + d, buf + 2 * d, buf + 3 * d}, *mutant = buf + 4 * d;
    double *child = buf + 5 * d;
    if (tid >= 0) {
        hone_space_to_unit(s->space, s->t[tid].values, target);
    } else {
        for (int k = 0; k < d; k++)
            target[k] = hone_rng_uniform(&r);
    }
    /* three distinct parents from the pool (partial shuffle); missing ones uniform */
    for (int q = 0; q < 3; q++) {
        if (q < n) {
            int pick = q + (int)hone_rng_below(&r, (uint64_t)(n - q));
            int tmp = pool[q];
            pool[q] = pool[pick];
            pool[pick] = tmp;
            hone_space_to_unit(s->space, s->t[pool[q]].values, par[q]);
        } else {
            for (int k = 0; k < d; k++)
                par[q][k] = hone_rng_uniform(&r);
        }
    }
    dehb_mutate(d, par[0], par[1], par[2], HONE_DEHB_F, &r, mutant);
    dehb_crossover(d, target, mutant, HONE_DEHB_CR, &r, child);
    hone_space_from_unit(s->space, child, values);
    free(buf);
    free(pool);
}
