/* Pins search/lbfgs.c: an unconstrained valley (Rosenbrock) is followed to its minimum, a bound
 * that cuts the minimum off stops the search on the bound, and a start where the objective is not
 * finite is returned untouched. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "lbfgs.h"
#include "check.h"

static int calls;

/* (1 - a)^2 + 100 (b - a^2)^2, minimum 0 at (1, 1). */
static double rosenbrock(const double *x, double *g, void *ctx)
{
    (void)ctx;
    calls++;
    double a = x[0], b = x[1], r = b - a * a;
    g[0] = -2.0 * (1.0 - a) - 400.0 * a * r;
    g[1] = 200.0 * r;
    return (1.0 - a) * (1.0 - a) + 100.0 * r * r;
}

/* sum (x_i - 3)^2: the minimum at 3 lies outside a box ending at 1. */
static double bowl(const double *x, double *g, void *ctx)
{
    int p = *(const int *)ctx;
    double f = 0;
    for (int i = 0; i < p; i++) {
        g[i] = 2.0 * (x[i] - 3.0);
        f += (x[i] - 3.0) * (x[i] - 3.0);
    }
    return f;
}

static double nowhere(const double *x, double *g, void *ctx)
{
    (void)x, (void)g, (void)ctx;
    return NAN;
}

int main(void)
{
    double x[2] = {-1.2, 1.0}, lo[2] = {-5, -5}, hi[2] = {5, 5};
    double f = lbfgs_minimize(2, x, lo, hi, 500, rosenbrock, NULL);
    printf("rosenbrock: f %.3g at (%.6f, %.6f) after %d evaluations\n", f, x[0], x[1], calls);
    REQUIRE(f < 1e-8);
    REQUIRE(fabs(x[0] - 1.0) < 1e-3 && fabs(x[1] - 1.0) < 1e-3);

    int p = 3;
    double y[3] = {0.0, -0.5, 0.5}, ylo[3] = {-1, -1, -1}, yhi[3] = {1, 1, 1};
    f = lbfgs_minimize(p, y, ylo, yhi, 100, bowl, &p);
    printf("bowl in [-1, 1]^3: f %.6g at (%g, %g, %g)\n", f, y[0], y[1], y[2]);
    for (int i = 0; i < p; i++)
        REQUIRE(y[i] <= 1.0 && fabs(y[i] - 1.0) < 1e-9);
    REQUIRE(fabs(f - 12.0) < 1e-6);

    double z[2] = {0.25, 0.5};
    REQUIRE(!isfinite(lbfgs_minimize(2, z, lo, hi, 10, nowhere, NULL)));
    REQUIRE(z[0] == 0.25 && z[1] == 0.5);
    printf("test_lbfgs: ok\n");
    return 0;
}
