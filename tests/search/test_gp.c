/* Pins the GP against hand-computed numbers: posterior mean/variance of a 2-point 1-D case, the
 * LML gradient against finite differences, O(n^2) append against a full refactor, and log-EI. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "gp.h"
#include "check.h"

static void test_hand_case(void)
{
    /* x = {0, 1}, y = {1, 2}, lengthscale 1, signal 1, noise 0.01. With m(r) the Matern-5/2
     * correlation, K = [[1.01, m(1)], [m(1), 1.01]]; the numbers below come from the 2x2
     * inverse written out by hand (Python, double precision). */
    gp g;
    gp_init(&g, 1, 4);
    double X[2] = {0.0, 1.0}, y[2] = {1.0, 2.0}, theta[3] = {0.0, 0.0, log(0.01)};
    REQUIRE(gp_set(&g, X, y, 2, theta) == 0);
    REQUIRE(g.jitter == 0);
    double xs = 0.25, mu, var;
    gp_predict(&g, &xs, 1, &mu, &var);
    printf("mu %.15g var %.15g\n", mu, var);
    REQUIRE(fabs(mu - 1.3073217567809137) < 1e-12);
    REQUIRE(fabs(var - 0.0596143329893698) < 1e-12);
    /* L[1][0] * L[0][0] = m(1) */
    REQUIRE(fabs(g.L[1 * g.cap + 0] * g.L[0] - 0.5239941088318203) < 1e-14);
    gp_free(&g);
}

static void test_lml_gradient(void)
{
    enum { N = 9, D = 3 };
    hone_rng r;
    hone_rng_seed(&r, 5);
    double X[N * D], y[N];
    for (int i = 0; i < N; i++) {
        for (int l = 0; l < D; l++)
            X[i * D + l] = hone_rng_uniform(&r);
        y[i] = sin(3 * X[i * D]) + X[i * D + 1] * X[i * D + 2] + 0.1 * hone_rng_normal(&r);
    }
    double theta[D + 2] = {log(0.4), log(0.9), log(2.0), log(1.3), log(0.05)};
    double lml, grad[D + 2];
    REQUIRE(gp_lml(X, y, N, D, theta, &lml, grad) == 0);
    for (int i = 0; i < D + 2; i++) {
        double h = 1e-5, tp[D + 2], tm[D + 2], lp, lm;
        for (int j = 0; j < D + 2; j++)
            tp[j] = tm[j] = theta[j];
        tp[i] += h;
        tm[i] -= h;
        REQUIRE(gp_lml(X, y, N, D, tp, &lp, NULL) == 0);
        REQUIRE(gp_lml(X, y, N, D, tm, &lm, NULL) == 0);
        double fd = (lp - lm) / (2 * h);
        printf("theta[%d]: analytic %.9g finite-diff %.9g\n", i, grad[i], fd);
        REQUIRE(fabs(fd - grad[i]) < 1e-5 * (1 + fabs(fd)));
    }
    /* the prior's gradient too */
    double pg[D + 2] = {0};
    double p0 = gp_log_prior(D, theta, pg);
    for (int i = 0; i < D + 2; i++) {
        double t2[D + 2];
        for (int j = 0; j < D + 2; j++)
            t2[j] = theta[j];
        t2[i] += 1e-6;
        double fd = (gp_log_prior(D, t2, NULL) - p0) / 1e-6;
        REQUIRE(fabs(fd - pg[i]) < 1e-4);
    }
    /* the MAP fit never ends worse than its deterministic start */
    gp g;
    gp_init(&g, D, N);
    gp_fit_opts o = {.restarts = 2, .max_iter = 30};
    REQUIRE(gp_fit(&g, X, y, N, theta, &o, &r) == 0);
    double lfit;
    REQUIRE(gp_lml(X, y, N, D, g.theta, &lfit, NULL) == 0);
    REQUIRE(lfit + gp_log_prior(D, g.theta, NULL) >= lml + gp_log_prior(D, theta, NULL) - 1e-9);
    gp_free(&g);
}

static void test_append(void)
{
    enum { N = 12, D = 2 };
    hone_rng r;
    hone_rng_seed(&r, 9);
    double X[N * D], y[N], theta[D + 2] = {log(0.3), log(0.6), 0.0, log(1e-4)};
    for (int i = 0; i < N * D; i++)
        X[i] = hone_rng_uniform(&r);
    for (int i = 0; i < N; i++)
        y[i] = X[i * D] - X[i * D + 1] * X[i * D + 1];
    gp a, b;
    gp_init(&a, D, N);
    gp_init(&b, D, N);
    REQUIRE(gp_set(&a, X, y, N, theta) == 0);
    REQUIRE(gp_set(&b, X, y, N - 3, theta) == 0);
    for (int i = N - 3; i < N; i++)
        REQUIRE(gp_append(&b, X + i * D, y[i]) == 0);
    double xs[4] = {0.1, 0.2, 0.7, 0.9}, m1[2], v1[2], m2[2], v2[2];
    gp_predict(&a, xs, 2, m1, v1);
    gp_predict(&b, xs, 2, m2, v2);
    for (int i = 0; i < 2; i++) {
        REQUIRE(fabs(m1[i] - m2[i]) < 1e-8);
        REQUIRE(fabs(v1[i] - v2[i]) < 1e-8);
    }
    REQUIRE(gp_append(&a, xs, 0.0) == HONE_ELIMIT);
    gp_free(&a);
    gp_free(&b);
}

static void test_duplicates_jitter(void)
{
    /* identical inputs with the smallest noise: must still factor (jitter) */
    double X[3] = {0.5, 0.5, 0.5}, y[3] = {1, 1.1, 0.9}, theta[3] = {0, 0, log(1e-6)};
    gp g;
    gp_init(&g, 1, 3);
    REQUIRE(gp_set(&g, X, y, 3, theta) == 0);
    double mu, var, xs = 0.5;
    gp_predict(&g, &xs, 1, &mu, &var);
    REQUIRE(isfinite(mu) && isfinite(var) && var >= 0);
    gp_free(&g);
}

static void test_log_h(void)
{
    /* against the direct formula where it is accurate, and continuity at the switch point */
    for (double z = -5.5; z < 4; z += 0.37) {
        double Phi = 0.5 * erfc(-z / sqrt(2)), phi = exp(-0.5 * z * z) / sqrt(2 * M_PI);
        REQUIRE(fabs(gp_log_h(z) - log(phi + z * Phi)) < 1e-9);
    }
    /* both sides of the switch at z = -20 (slope ~20, so 1e-9 away moves it ~2e-8) */
    REQUIRE(fabs(gp_log_h(-20.0 - 1e-9) - -206.91783852942) < 1e-8);
    REQUIRE(fabs(gp_log_h(-20.0 + 1e-9) - -206.91783848942) < 1e-8);
    /* reference values from mpmath at 50 digits */
    REQUIRE(fabs(gp_log_h(-6.0) - -22.578879392169797) < 1e-9);
    REQUIRE(fabs(gp_log_h(-10.0) - -55.553122036122356) < 1e-9);
    REQUIRE(fabs(gp_log_h(-30.0) - -457.72465376059800) < 1e-9);
    double prev = gp_log_h(-1e3);
    REQUIRE(isfinite(prev));
    for (double z = -900; z < 5; z += 7.3) { /* monotone increasing */
        double v = gp_log_h(z);
        REQUIRE(isfinite(v) && v > prev);
        prev = v;
    }
}

int main(void)
{
    test_hand_case();
    test_lml_gradient();
    test_append();
    test_duplicates_jitter();
    test_log_h();
    printf("ok\n");
    return 0;
}
