/* hyperband: pause-and-resume Hyperband (Li et al. 2018) and BOHB (Falkner et al. 2018) for the
 * hone_search facade. Brackets of successive halving; a trial trains to its rung's epochs, pauses,
 * and the top n_{i+1} of a finished rung are resumed from their checkpoints. Never does I/O.
 *
 * Unlike TAO we keep the s=0 bracket (n = smax+1 full-budget configs): it protects against
 * problems where early rungs rank badly, which is the point of Hyperband's hedging; and we use the
 * paper's n = ceil((smax+1) * eta^s / (s+1)) (TAO divides first, e.g. 9 instead of 12 configs). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "search_internal.h"

int hb_build(hb_state *hb, int R, int eta, int mult, int iterations)
{
    long pw = 1;
    int smax = 0;
    memset(hb, 0, sizeof(*hb));
    if (R < 1 || eta < 2 || mult < 1 || iterations < 1)
        return HONE_EINVAL;
    /* smax = floor(log_eta R), in integers so 81 = 3^4 is not 3.9999 */
    while (pw * eta <= R) {
        pw *= eta;
        smax++;
    }
    if (smax >= 63)
        return HONE_ERANGE;
    hb->smax = smax;
    hb->nb = smax + 1;
    hb->br = hone_xcalloc((size_t)hb->nb, sizeof(*hb->br));
    long trials = 0;
    for (int b = 0; b < hb->nb; b++) {
        hb_bracket *br = &hb->br[b];
        int s = smax - b;
        long es = 1;
        for (int i = 0; i < s; i++)
            es *= eta;
        long n = ((long)(smax + 1) * es + s) / (s + 1); /* ceil((smax+1) eta^s / (s+1)) */
        double r = (double)R / (double)es;
        br->s = s;
        long div = 1;
        for (int i = 0; i <= s; i++) {
            br->n[i] = (int)(n / div);
            br->r[i] = r * (double)div;
            int ep = (int)llround(br->r[i] * mult);
            if (ep < 1)
                ep = 1;
            if (i > 0 && ep <= br->ep[i - 1])
                ep = br->ep[i - 1] + 1; /* keep rungs strictly increasing */
            br->ep[i] = ep;
            div *= eta;
        }
        br->ep[s] = R * mult; /* the last rung is the full budget exactly */
        br->r[s] = R;
        trials += n;
    }
    if (trials * iterations > 1000000)
        goto range;
    hb->total = hb->nb * iterations;
    hb->created = hone_xcalloc((size_t)hb->total, sizeof(int));
    hb->rung = hone_xcalloc((size_t)hb->total, sizeof(int));
    hb->done = hone_xcalloc((size_t)hb->total, sizeof(int));
    return HONE_OK;
range:
    hb_free(hb);
    return HONE_ERANGE;
}

void hb_free(hb_state *hb)
{
    free(hb->br);
    free(hb->created);
    free(hb->rung);
    free(hb->done);
    memset(hb, 0, sizeof(*hb));
}

static const hb_bracket *bracket_of(const hone_search *s, int g)
{
    return &s->hb.br[g % s->hb.nb];
}

const sr_trial *sr_next_resume(const hone_search *s)
{
    const sr_trial *best = NULL;
    for (int i = 0; i < s->nt; i++) {
        const sr_trial *t = &s->t[i];
        if (t->state == SR_PAUSED && t->promoted && (!best || t->promo_seq < best->promo_seq))
            best = t;
    }
    return best;
}

int sr_plan_busy(const hone_search *s, sr_plan *p)
{
    if (s->running >= s->o.max_parallel) {
        p->kind = HONE_ASK_WAIT;
        return 1;
    }
    const sr_trial *r = sr_next_resume(s);
    if (!r)
        return 0;
    p->kind = HONE_ASK_RESUME;
    p->trial = r->id;
    p->epochs = r->target;
    return 1;
}

/* Resumes go first (they finish brackets and free checkpoints); then new configs for the first
 * bracket still filling its first rung, so a bracket waiting on stragglers never idles workers. */
void hb_plan(const hone_search *s, sr_plan *p)
{
    const hb_state *hb = &s->hb;
    if (sr_plan_busy(s, p))
        return;
    int all_done = 1, z = hb->nb - 1; /* the first pass's s = 0 bracket */
    if (s->o.default_first && s->o.start_default && !hb->done[z] && hb->created[z] == 0) {
        p->kind = HONE_ASK_NEW;
        p->trial = s->nt;
        p->epochs = bracket_of(s, z)->ep[0];
        p->bracket = z;
        return;
    }
    for (int g = 0; g < hb->total; g++) {
        const hb_bracket *br = bracket_of(s, g);
        if (!hb->done[g] && hb->created[g] < br->n[0]) {
            p->kind = HONE_ASK_NEW;
            p->trial = s->nt;
            p->epochs = br->ep[0];
            p->bracket = g;
            return;
        }
        if (!hb->done[g])
            all_done = 0;
    }
    p->kind = all_done ? HONE_ASK_DONE : HONE_ASK_WAIT;
}

void hb_commit_new(hone_search *s, sr_trial *t, const sr_plan *p)
{
    t->bracket = p->bracket;
    t->rung = 0;
    s->hb.created[p->bracket]++;
}

int sr_ranked_cmp(const void *a, const void *b)
{
    const sr_ranked *x = a, *y = b;
    if (x->g != y->g)
        return x->g > y->g ? -1 : 1;
    return x->id < y->id ? -1 : x->id > y->id;
}

/* When every member of bracket g's current rung has reported (or ended), keep the top n_{i+1}
 * by the metric at the rung's epoch and stop the rest. Paused losers simply count as stopped. */
static void check_rung(hone_search *s, int g)
{
    hb_state *hb = &s->hb;
    const hb_bracket *br = bracket_of(s, g);
    int i = hb->rung[g];
    if (hb->done[g] || (i == 0 && hb->created[g] < br->n[0]))
        return;
    int nc = 0;
    int capc = br->n[i] > 0 ? br->n[i] : 1;
    sr_ranked *c = hone_xmalloc((size_t)capc * sizeof(*c));
    for (int k = 0; k < s->nt; k++) {
        const sr_trial *t = &s->t[k];
        if (t->bracket != g || t->rung != i)
            continue;
        if (t->state == SR_RUNNING || (t->state == SR_PAUSED && t->promoted)) {
            free(c);
            return; /* rung not complete: running, or promoted into it and not yet resumed */
        }
        if (t->state == SR_PAUSED && !t->promoted) {
            if (nc == capc) {
                capc *= 2;
                c = hone_xrealloc(c, (size_t)capc * sizeof(*c));
            }
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
    qsort(c, (size_t)nc, sizeof(*c), sr_ranked_cmp);
    int keep = br->n[i + 1] < nc ? br->n[i + 1] : nc;
    for (int k = 0; k < nc; k++) {
        sr_trial *t = &s->t[c[k].id];
        if (k < keep) {
            t->promoted = 1;
            t->promo_seq = s->promo_counter++;
            t->rung = i + 1;
            t->target = br->ep[i + 1];
        } else {
            t->state = SR_DONE;
            t->stopped_early = 1;
        }
    }
    hb->rung[g] = i + 1;
    if (keep == 0)
        hb->done[g] = 1;
    free(c);
}

hone_decision hb_boundary(hone_search *s, sr_trial *t)
{
    const hb_bracket *br = bracket_of(s, t->bracket);
    if (t->rung >= br->s) {
        t->state = SR_DONE;
        check_rung(s, t->bracket);
        return HONE_DECIDE_STOP;
    }
    t->state = SR_PAUSED;
    check_rung(s, t->bracket);
    /* the last of its rung learns its fate at once: a loser is simply stopped */
    return t->state == SR_PAUSED ? HONE_DECIDE_PAUSE : HONE_DECIDE_STOP;
}

void hb_after_end(hone_search *s, sr_trial *t)
{
    check_rung(s, t->bracket);
}

long sr_brackets_remaining(const hone_search *s, int (*fresh)(const hone_search *s, int g, int i))
{
    const hb_state *hb = &s->hb;
    long *done = hone_xcalloc((size_t)hb->total, sizeof(long));
    long rem = 0;
    for (int i = 0; i < s->nt; i++)
        if (s->t[i].bracket >= 0)
            done[s->t[i].bracket] += s->t[i].last_epoch;
    for (int g = 0; g < hb->total; g++) {
        if (hb->done[g])
            continue;
        const hb_bracket *br = bracket_of(s, g);
        long plan = 0;
        for (int i = 0; i <= br->s; i++)
            plan += (long)br->n[i] * (br->ep[i] - (fresh(s, g, i) ? 0 : br->ep[i - 1]));
        if (plan > done[g])
            rem += plan - done[g];
    }
    free(done);
    return rem;
}

static int hb_fresh(const hone_search *s, int g, int i)
{
    (void)s;
    (void)g;
    return i == 0; /* later rungs resume the rung below */
}

/* Upper estimate: n_i trials of each unfinished bracket, each training from the previous rung's
 * epoch to its own, less what they have trained. */
long hb_epochs_remaining(const hone_search *s)
{
    return sr_brackets_remaining(s, hb_fresh);
}

/* BOHB proposal: with probability 1/3 (and until some budget has n_init+2 results) a random
 * config; otherwise the GP's suggestion fitted on the largest budget with enough results. */
int hb_propose_bohb(hone_search *s, int trial, double *values)
{
    hone_rng r;
    hone_rng_seed2(&r, s->o.seed, (uint64_t)trial);
    double u = hone_rng_uniform(&r);
    if (u >= 1.0 / 3.0) {
        int need = s->bo.n_init + 2;
        int budget = 0;
        /* budgets are the rung epochs; bracket 0 has them all except the later brackets' first
         * rungs, which coincide with its rungs when R is a power of eta; scan every bracket */
        for (int b = 0; b < s->hb.nb; b++) {
            const hb_bracket *br = &s->hb.br[b];
            for (int i = 0; i <= br->s; i++) {
                int e = br->ep[i];
                if (e <= budget)
                    continue;
                int n = 0;
                for (int k = 0; k < s->nt && n < need; k++)
                    if (!isnan(s->t[k].metric[e]))
                        n++;
                if (n >= need)
                    budget = e;
            }
        }
        if (budget > 0) {
            double *X, *y, *P;
            int n = sr_collect(s, budget, &X, &y);
            int m = sr_collect_pending(s, &P);
            int rc = hone_bo_suggest(s->space, &s->bo, X, y, n, P, m, 1, &r, values);
            free(X);
            free(y);
            free(P);
            if (rc == HONE_OK)
                return 1;
        }
    }
    hone_space_sample(s->space, &r, values);
    return 0;
}
