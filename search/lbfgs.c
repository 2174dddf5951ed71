/* search/lbfgs.c: box-constrained L-BFGS (two-loop recursion over the last LBFGS_M pairs, steps
 * projected onto the box, Armijo backtracking), used by gp.c's hyperparameter fit. Pure maths: no
 * allocation beyond the stack, no I/O, deterministic. */
#include <math.h>
#include <string.h>

#include "lbfgs.h"

static void clamp(int p, double *x, const double *lo, const double *hi)
{
    for (int i = 0; i < p; i++)
        x[i] = x[i] < lo[i] ? lo[i] : (x[i] > hi[i] ? hi[i] : x[i]);
}

double lbfgs_minimize(int p, double *x, const double *lo, const double *hi, int max_iter,
                      lbfgs_fn fun, void *ctx)
{
    double g[p], gn[p], dir[p], tn[p], S[LBFGS_M][p], Y[LBFGS_M][p], rho[LBFGS_M], al[LBFGS_M];
    int hist = 0, head = 0;
    double f = fun(x, g, ctx);
    if (!isfinite(f))
        return f;
    for (int it = 0; it < max_iter; it++) {
        /* two-loop recursion */
        for (int i = 0; i < p; i++)
            dir[i] = -g[i];
        for (int h = 0; h < hist; h++) {
            int k = (head - 1 - h + LBFGS_M) % LBFGS_M;
            double s = 0;
            for (int i = 0; i < p; i++)
                s += S[k][i] * dir[i];
            al[k] = rho[k] * s;
            for (int i = 0; i < p; i++)
                dir[i] -= al[k] * Y[k][i];
        }
        if (hist > 0) {
            int k = (head - 1 + LBFGS_M) % LBFGS_M;
            double sy = 0, yy = 0;
            for (int i = 0; i < p; i++) {
                sy += S[k][i] * Y[k][i];
                yy += Y[k][i] * Y[k][i];
            }
            for (int i = 0; i < p; i++)
                dir[i] *= sy / yy;
        } else {
            double gnorm = 0;
            for (int i = 0; i < p; i++)
                gnorm += g[i] * g[i];
            gnorm = sqrt(gnorm);
            double sc = gnorm > 1.0 ? 1.0 / gnorm : 1.0;
            for (int i = 0; i < p; i++)
                dir[i] *= sc;
        }
        for (int h = hist - 1; h >= 0; h--) {
            int k = (head - 1 - h + LBFGS_M) % LBFGS_M;
            double s = 0;
            for (int i = 0; i < p; i++)
                s += Y[k][i] * dir[i];
            double b = rho[k] * s;
            for (int i = 0; i < p; i++)
                dir[i] += S[k][i] * (al[k] - b);
        }
        double slope = 0;
        for (int i = 0; i < p; i++)
            slope += g[i] * dir[i];
        if (!(slope < 0)) { /* not a descent direction: restart from steepest descent */
            hist = 0;
            for (int i = 0; i < p; i++)
                dir[i] = -g[i];
        }
        double step = 1.0, fn = INFINITY;
        int ok = 0;
        for (int ls = 0; ls < 20; ls++) {
            for (int i = 0; i < p; i++)
                tn[i] = x[i] + step * dir[i];
            clamp(p, tn, lo, hi);
            double dec = 0;
            for (int i = 0; i < p; i++)
                dec += g[i] * (tn[i] - x[i]);
            if (dec >= 0) {
                step *= 0.5;
                continue;
            }
            fn = fun(tn, gn, ctx);
            if (isfinite(fn) && fn <= f + 1e-4 * dec) {
                ok = 1;
                break;
            }
            step *= 0.5;
        }
        if (!ok)
            break;
        double sy = 0;
        for (int i = 0; i < p; i++) {
            S[head][i] = tn[i] - x[i];
            Y[head][i] = gn[i] - g[i];
            sy += S[head][i] * Y[head][i];
        }
        double fold = f;
        memcpy(x, tn, sizeof(double) * (size_t)p);
        memcpy(g, gn, sizeof(double) * (size_t)p);
        f = fn;
        if (sy > 1e-10) {
            rho[head] = 1.0 / sy;
            head = (head + 1) % LBFGS_M;
            if (hist < LBFGS_M)
                hist++;
        }
        if (fold - f < 1e-6 * (1.0 + fabs(f)))
            break;
    }
    return f;
}
