/* curve: learning-curve extrapolation, and the stopping rule built on it (Domhan et al. 2015 in
 * spirit, closed-form instead of MCMC). Pure: a prediction is a function of the series alone, a
 * decision a function of the series reported so far, so a replayed search decides the same.
 *
 * The model. Work in "goodness" (the metric, negated when minimised) at x = epoch 1..t, finite
 * points only. Three families of curves y = c + a * g(x):
 *   pow  g = -(x + d)^-alpha  alpha on a log grid 0.1 .. 4,   (saturating, slow: power laws;
 *                             d in {0, 1, 4}                   a hyperbola is one of them)
 *   exp  g = -exp(-x / tau)   tau on a log grid 0.2 .. 2T     (saturating; large tau: near linear)
 *   log  g = log x                                            (never saturates: the optimist)
 * For each grid value the linear part (c, a) is fitted by least squares; a is free in sign, so a
 * falling (diverging) curve extrapolates downwards. With a flat prior on (c, a) (g standardised
 * over the observed x, so the prior means the same in every family), Jeffreys' on the noise and
 * i.i.d. Gaussian noise, the prediction of y(T) given one grid value is a Student-t with n - 2
 * degrees of freedom, location c + a g(T) and scale s * sqrt(1 + (1 + z_T^2) / n) (s^2 the
 * residual variance, z_T the standardised g(T)): parameter uncertainty grows with the distance
 * extrapolated, and the noise of the final epoch itself is included. The grid values are
 * weighted by their marginal likelihood, RSS^-(n-2)/2, under a prior of 0.45 for each saturating
 * family (spread evenly over its grid: 72 power laws, 32 exponentials) and 0.1 for the log curve,
 * a hedge rather than a belief; the mixture of all 105 is the prediction. RSS has a floor of 0.2%
 * of the curve's range per point (a noise-free curve would otherwise let one grid point's tiny
 * misfit decide alone). Series past 256 points are thinned evenly. No iterations, no random
 * draws: nothing can fail to converge, and few points, noise or non-monotone curves only widen it.
 *
 * Assumptions, and what breaks them: the metric's noise is independent between epochs (correlated
 * noise, e.g. a plateau, makes the mixture overconfident); the curve's shape after t is one of the
 * families (a schedule that saves its gain for the end, a cosine decay, breaks it for every
 * trial alike, which the rule's bar below corrects for); the metric is what training optimises.
 *
 * The rule (sr_curve_judge). A running trial below its target is judged after each report once it
 * has at least max(4, ceil(T/10)) finite points (4: two for the line, two for the noise; T/10: the
 * first tenth of a budget, warmup included, says little of its end). The bar is the best metric
 * any *other* trial has reported (a trial never races itself), lowered to what the same
 * extrapolation predicts for that best trial from the same number of epochs and from all of
 * them, so that a shape shared by all trials (a late gain under a cosine schedule) does not read
 * as a shortfall, nor a lucky epoch's noise as the level to beat. The trial stops when P(its
 * metric at T reaches the bar) < 1 - confidence. A trial that reported a non-finite metric twice
 * running has diverged and stops whenever a bar exists. A trial that has already reached the bar
 * is never judged. A stopped trial is finished, stopped early; the
 * Bayesian model learns its predicted final (when above its best so far), not its short curve's
 * best. Confidence 0.95 by default: bench/README.md has the measurement. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "search_internal.h"

enum {
    CURVE_NALPHA = 24,
    CURVE_NOFF = 3,
    CURVE_NPOW = CURVE_NALPHA * CURVE_NOFF,
    CURVE_NEXP = 32,
    CURVE_K = CURVE_NPOW + CURVE_NEXP + 1,
    CURVE_MIN = 4,
    CURVE_MAXPTS = 256 /* longer series are thinned evenly (the last point kept) */
};
/* the power law's offsets d in (x + d)^-alpha: 0, a pure power law; 1 and 4, curves that bend
 * later (a hyperbola c - a / (1 + x / k) is one) */
static const double curve_off[CURVE_NOFF] = {0, 1, 4};

typedef struct comp {
    double lw; /* log weight (unnormalised) */
    double mu; /* location of y(T) */
    double sc; /* scale of the Student-t */
} comp;

typedef struct mixture {
    comp c[CURVE_K];
    int k;
    int nu; /* degrees of freedom, shared */
    int n;
} mixture;

int hone_curve_min_epochs(int T)
{
    int m = (T + 9) / 10;
    return m > CURVE_MIN ? m : CURVE_MIN;
}

/* P(X <= x) for Student's t with nu degrees of freedom (Abramowitz & Stegun 26.7.3-4; exact for
 * integer nu, normal beyond 60). */
static double t_cdf(double x, int nu)
{
    if (nu > 60)
        return 0.5 * erfc(-x / sqrt(2.0));
    double th = atan(x / sqrt((double)nu)), c = cos(th), c2 = c * c, sn = sin(th);
    double sum = 1, term = 1, a;
    if (nu % 2) {
        for (int k = 3; k <= nu - 2; k += 2) {
            term *= (k - 1.0) / k * c2;
            sum += term;
        }
        a = nu == 1 ? 2.0 / M_PI * th : 2.0 / M_PI * (th + sn * c * sum);
    } else {
        for (int k = 2; k <= nu - 2; k += 2) {
            term *= (k - 1.0) / k * c2;
            sum += term;
        }
        a = sn * sum;
    }
    return 0.5 + 0.5 * a;
}

/* One component: y = c + a g over the n points (g[i], y[i]), predicted at gT. */
static int fit_one(const double *g, const double *y, int n, double gT, double floor2, double lprior,
                   comp *out)
{
    double gm = 0, ym = 0, gs = 0, syy = 0, sgy = 0;
    for (int i = 0; i < n; i++) {
        gm += g[i];
        ym += y[i];
    }
    gm /= n;
    ym /= n;
    for (int i = 0; i < n; i++)
        gs += (g[i] - gm) * (g[i] - gm);
    gs = sqrt(gs / n);
    if (!(gs > 1e-12 * (fabs(gm) + 1e-300)) || !isfinite(gT))
        return 0; /* a constant column: no curve to fit */
    for (int i = 0; i < n; i++) {
        double z = (g[i] - gm) / gs, dy = y[i] - ym;
        sgy += z * dy;
        syy += dy * dy;
    }
    double a = sgy / n, zT = (gT - gm) / gs;
    double rss = syy - n * a * a;
    if (rss < 0)
        rss = 0;
    rss += floor2;
    int nu = n - 2;
    out->mu = ym + a * zT;
    out->sc = sqrt(rss / nu * (1.0 + (1.0 + zT * zT) / n));
    out->lw = lprior - 0.5 * nu * log(rss);
    return isfinite(out->mu) && isfinite(out->sc) && isfinite(out->lw);
}

/* Fits the mixture to the finite points of m[0..t-1] (goodness: sign applied). */
static int mix_fit(const double *m, int t, int T, int maximize, mixture *mx)
{
    double *x = hone_xmalloc((size_t)t * 4 * sizeof(double)), *y = x + t, *g = x + 2 * t,
           *lx = x + 3 * t;
    int n = 0, rc = HONE_OK;
    double ylo = INFINITY, yhi = -INFINITY;
    memset(mx, 0, sizeof(*mx));
    for (int i = 0; i < t; i++) {
        if (!isfinite(m[i]))
            continue;
        x[n] = i + 1;
        y[n] = maximize ? m[i] : -m[i];
        ylo = y[n] < ylo ? y[n] : ylo;
        yhi = y[n] > yhi ? y[n] : yhi;
        n++;
    }
    if (n > CURVE_MAXPTS) {
        /* a bounded cost per report whatever the budget (the controller decides on its loop) */
        for (int k = 0; k < CURVE_MAXPTS; k++) {
            int i = (int)((long)k * (n - 1) / (CURVE_MAXPTS - 1));
            x[k] = x[i];
            y[k] = y[i];
        }
        n = CURVE_MAXPTS;
    }
    if (n < CURVE_MIN) {
        rc = HONE_ENOENT;
        goto out;
    }
    mx->nu = n - 2;
    mx->n = n;
    /* a noise floor, 0.2% of the curve's range (shift-invariant: a loss and 1 - loss fit alike),
     * so that an exact fit keeps a finite weight and a grid point's small misfit on a noise-free
     * curve does not decide alone */
    double fl = 2e-3 * (yhi - ylo) + 1e-12, floor2 = n * fl * fl;
    /* priors: 0.45 for each saturating family, spread evenly over its grid; 0.1 for the log */
    const double lp_pow = log(0.45 / CURVE_NPOW), lp_exp = log(0.45 / CURVE_NEXP),
                 lp_log = log(0.1);
    double tmax = T > 5 ? 2.0 * T : 10.0;
    for (int o = 0; o < CURVE_NOFF; o++) {
        double d = curve_off[o];
        for (int i = 0; i < n; i++)
            lx[i] = log(x[i] + d);
        for (int j = 0; j < CURVE_NALPHA; j++) {
            double al = 0.1 * pow(40.0, (double)j / (CURVE_NALPHA - 1));
            for (int i = 0; i < n; i++)
                g[i] = -exp(-al * lx[i]);
            if (fit_one(g, y, n, -exp(-al * log(T + d)), floor2, lp_pow, &mx->c[mx->k]))
                mx->k++;
        }
    }
    for (int j = 0; j < CURVE_NEXP; j++) {
        double tau = 0.2 * pow(tmax / 0.2, (double)j / (CURVE_NEXP - 1));
        for (int i = 0; i < n; i++)
            g[i] = -exp(-x[i] / tau);
        if (fit_one(g, y, n, -exp(-T / tau), floor2, lp_exp, &mx->c[mx->k]))
            mx->k++;
    }
    for (int i = 0; i < n; i++)
        g[i] = log(x[i]);
    if (fit_one(g, y, n, log((double)T), floor2, lp_log, &mx->c[mx->k]))
        mx->k++;
    if (mx->k == 0) {
        rc = HONE_ENOENT;
        goto out;
    }
    double top = -INFINITY, sum = 0;
    for (int k = 0; k < mx->k; k++)
        if (mx->c[k].lw > top)
            top = mx->c[k].lw;
    for (int k = 0; k < mx->k; k++) {
        mx->c[k].lw = exp(mx->c[k].lw - top);
        sum += mx->c[k].lw;
    }
    for (int k = 0; k < mx->k; k++)
        mx->c[k].lw /= sum; /* now the normalised weight */
out:
    free(x);
    return rc;
}

/* P(y(T) >= bar) in goodness. */
static double mix_prob(const mixture *mx, double bar)
{
    double p = 0;
    for (int k = 0; k < mx->k; k++)
        p += mx->c[k].lw * (1.0 - t_cdf((bar - mx->c[k].mu) / mx->c[k].sc, mx->nu));
    return p < 0 ? 0 : p > 1 ? 1 : p;
}

static void mix_moments(const mixture *mx, double *mean, double *sd)
{
    double m = 0, v = 0;
    /* a Student-t's variance is sc^2 nu / (nu - 2); with nu <= 2 it has none: use 3 sc^2 */
    double f = mx->nu > 2 ? (double)mx->nu / (mx->nu - 2) : 3.0;
    for (int k = 0; k < mx->k; k++)
        m += mx->c[k].lw * mx->c[k].mu;
    for (int k = 0; k < mx->k; k++) {
        double d = mx->c[k].mu - m;
        v += mx->c[k].lw * (d * d + f * mx->c[k].sc * mx->c[k].sc);
    }
    *mean = m;
    *sd = sqrt(v);
}

int hone_curve_predict(const double *m, int t, int T, int maximize, hone_curve_pred *out)
{
    mixture mx;
    if (!m || !out || t < 1 || T < 1)
        return HONE_EINVAL;
    memset(out, 0, sizeof(*out));
    int rc = mix_fit(m, t, T, maximize, &mx);
    if (rc)
        return rc;
    double mean, sd;
    mix_moments(&mx, &mean, &sd);
    out->mean = maximize ? mean : -mean;
    out->sd = sd;
    out->points = mx.n;
    return HONE_OK;
}

double hone_curve_prob_reach(const double *m, int t, int T, int maximize, double bar)
{
    mixture mx;
    if (!m || t < 1 || T < 1 || mix_fit(m, t, T, maximize, &mx))
        return NAN;
    return mix_prob(&mx, maximize ? bar : -bar);
}

/* ---------------------------------------------------------------- the rule in the facade */

int sr_curve_on(const hone_search *s)
{
    return s->o.curve_stop || s->o.algo == HONE_ALGO_HYPERBAND_ES;
}

static void top_offer(hone_search *s, int id)
{
    const sr_trial *t = &s->t[id];
    if (s->top[0] == id)
        return;
    if (s->top[0] < 0 || t->bestg > s->t[s->top[0]].bestg) {
        s->top[1] = s->top[0];
        s->top[0] = id;
    } else if (s->top[1] == id || s->top[1] < 0 || t->bestg > s->t[s->top[1]].bestg) {
        s->top[1] = id;
    }
}

void sr_best_note(hone_search *s, sr_trial *t, int epoch)
{
    double g = sr_goodness(s, t->metric[epoch]);
    if (g > t->bestg) {
        t->bestg = g;
        top_offer(s, t->id);
    }
}

void sr_best_rebuild(hone_search *s)
{
    s->top[0] = s->top[1] = -1;
    for (int i = 0; i < s->nt; i++)
        if (s->t[i].state != SR_FAILED && s->t[i].bestg > -INFINITY)
            top_offer(s, i);
}

/* The full budget that a prediction aims at. */
static int full_budget(const hone_search *s)
{
    return s->cap;
}

int sr_curve_judge(hone_search *s, sr_trial *t, int epoch)
{
    int T = full_budget(s);
    int other = s->top[0] == t->id ? s->top[1] : s->top[0];
    if (epoch >= T || other < 0)
        return 0;
    const sr_trial *ref = &s->t[other];
    double bar = ref->bestg;
    if (!isfinite(bar) || t->bestg >= bar)
        return 0;
    if (epoch >= 2 && !isfinite(t->metric[epoch]) && !isfinite(t->metric[epoch - 1])) {
        t->curve_pred = -INFINITY; /* diverged */
        t->curve_prob = 0;
        t->curve_bar = bar;
        return 1;
    }
    int fin = 0;
    for (int e = 1; e <= epoch; e++)
        fin += isfinite(t->metric[e]);
    if (fin < hone_curve_min_epochs(T))
        return 0;
    mixture mx;
    /* goodness is what mix_fit sees with maximize = 1; convert the series on the fly */
    double *gs = hone_xmalloc((size_t)epoch * sizeof(double));
    for (int e = 1; e <= epoch; e++)
        gs[e - 1] = isfinite(t->metric[e]) ? sr_goodness(s, t->metric[e]) : NAN;
    int stop = 0;
    if (mix_fit(gs, epoch, T, 1, &mx))
        goto out;
    double alpha = 1.0 - s->o.curve_confidence;
    double p = mix_prob(&mx, bar);
    if (p >= alpha)
        goto out;
    /* the bar, lowered to the best trial's own extrapolation from as many epochs and from all of
     * them: a level, not a lucky epoch's noise, and a shape shared by all trials */
    int ns[2] = {epoch < ref->last_epoch ? epoch : ref->last_epoch, ref->last_epoch};
    double *rs = hone_xmalloc((size_t)(ref->last_epoch > 0 ? ref->last_epoch : 1) * sizeof(double));
    for (int e = 1; e <= ref->last_epoch; e++)
        rs[e - 1] = isfinite(ref->metric[e]) ? sr_goodness(s, ref->metric[e]) : NAN;
    for (int k = 0; k < 2 && p < alpha; k++) {
        mixture rm;
        double rmean, rsd;
        if ((k == 1 && ns[1] == ns[0]) || mix_fit(rs, ns[k], T, 1, &rm))
            continue;
        mix_moments(&rm, &rmean, &rsd);
        if (rmean < bar) {
            bar = rmean;
            p = mix_prob(&mx, bar);
        }
    }
    free(rs);
    if (p < alpha) {
        double sd;
        mix_moments(&mx, &t->curve_pred, &sd);
        t->curve_prob = p;
        t->curve_bar = bar;
        stop = 1;
    }
out:
    free(gs);
    return stop;
}

int hone_search_curve_stopped(const hone_search *s, int trial, double *predicted, double *prob,
                              double *bar)
{
    if (!s || trial < 0 || trial >= s->nt || !s->t[trial].curve)
        return 0;
    const sr_trial *t = &s->t[trial];
    double sign = s->o.maximize ? 1.0 : -1.0;
    if (predicted)
        *predicted = sign * t->curve_pred;
    if (prob)
        *prob = t->curve_prob;
    if (bar)
        *bar = sign * t->curve_bar;
    return 1;
}
