/* asha: asynchronous successive halving (Li et al. 2020) for the hone_search facade. Rungs at
 * R*mult/eta^k epochs (Hyperband's most aggressive bracket); a paused trial is promoted as soon as
 * it is in the top 1/eta of the trials that reached its rung; nobody waits for stragglers.
 *
 * Two variants. "promote" (default): every trial pauses at a rung and may be resumed later when
 * the rung has grown. "stop": a trial goes on only if it is in the top 1/eta (at least the best
 * one) of its rung when it arrives, else it stops for good. bench/search_mf measures both; the
 * promote variant reached a config within 1% of the optimum with fewer epochs (see its output). */
#include <math.h>
#include <stdlib.h>

#include "search_internal.h"

/* Members of rung k (trials that reported its boundary), best first. Caller frees. */
static int rung_members(const hone_search *s, int k, sr_ranked **out)
{
    int m = 0;
    sr_ranked *c = hone_xmalloc((size_t)(s->nt > 0 ? s->nt : 1) * sizeof(*c));
    for (int i = 0; i < s->nt; i++) {
        const sr_trial *t = &s->t[i];
        if (t->reached < k)
            continue;
        c[m].g = sr_goodness(s, t->rungm[k]);
        c[m].id = t->id;
        m++;
    }
    qsort(c, (size_t)m, sizeof(*c), sr_ranked_cmp);
    *out = c;
    return m;
}

/* The best trial paused at rung k that is in the rung's top 1/eta, or -1. */
static int promotable(const hone_search *s, int k)
{
    sr_ranked *c;
    int m = rung_members(s, k, &c);
    int top = m / s->o.eta, id = -1;
    for (int j = 0; j < top; j++) {
        const sr_trial *t = &s->t[c[j].id];
        if (t->state == SR_PAUSED && !t->promoted && t->rung == k) {
            id = t->id;
            break;
        }
    }
    free(c);
    return id;
}

/* Resumes first, highest rung first (they are closest to a full-budget result), then new trials
 * until max_trials; never waits for a rung to fill. */
void asha_plan(const hone_search *s, sr_plan *p)
{
    const hb_bracket *br = &s->hb.br[0];
    if (sr_plan_busy(s, p))
        return;
    if (!s->asha_stop) {
        for (int k = br->s - 1; k >= 0; k--) {
            int id = promotable(s, k);
            if (id >= 0) {
                p->kind = HONE_ASK_RESUME;
                p->trial = id;
                p->epochs = br->ep[k + 1];
                return;
            }
        }
    }
    if (s->nt < s->o.max_trials) {
        p->kind = HONE_ASK_NEW;
        p->trial = s->nt;
        p->epochs = br->ep[0];
        return;
    }
    p->kind = s->running > 0 ? HONE_ASK_WAIT : HONE_ASK_DONE;
}

hone_decision asha_boundary(hone_search *s, sr_trial *t)
{
    const hb_bracket *br = &s->hb.br[0];
    int k = t->rung;
    if (k >= br->s) {
        t->state = SR_DONE;
        return HONE_DECIDE_STOP;
    }
    t->state = SR_PAUSED;
    if (!s->asha_stop)
        return HONE_DECIDE_PAUSE;
    sr_ranked *c;
    int m = rung_members(s, k, &c), rank = m;
    for (int j = 0; j < m; j++)
        if (c[j].id == t->id)
            rank = j;
    free(c);
    int keep = m / s->o.eta > 1 ? m / s->o.eta : 1;
    if (rank < keep) {
        t->promoted = 1;
        t->promo_seq = s->promo_counter++;
        t->rung = k + 1;
        t->target = br->ep[k + 1];
        return HONE_DECIDE_PAUSE;
    }
    t->state = SR_DONE;
    t->stopped_early = 1;
    return HONE_DECIDE_STOP;
}

/* An estimate, not a bound: trials still to create at the expected cost of one ASHA trial (rung
 * k reached by 1/eta^k of them) plus what running and promoted trials still have to train. */
long asha_epochs_remaining(const hone_search *s)
{
    const hb_bracket *br = &s->hb.br[0];
    double per = 0, frac = 1;
    for (int k = 0; k <= br->s; k++) {
        per += frac * (br->ep[k] - (k > 0 ? br->ep[k - 1] : 0));
        frac /= s->o.eta;
    }
    double rem = per * (s->o.max_trials - s->nt);
    for (int i = 0; i < s->nt; i++) {
        const sr_trial *t = &s->t[i];
        if (t->state == SR_RUNNING || (t->state == SR_PAUSED && t->promoted))
            rem += t->target - t->last_epoch;
    }
    return (long)ceil(rem);
}
