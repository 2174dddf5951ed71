/* bench_search: random search against our GP-BO on standard black-box functions (Branin,
 * Hartmann-6, Rosenbrock-4, Ackley-5, a mixed categorical/int problem), and suggestion latency.
 * Prints one JSON line per (function, method, evals) with the quartiles of simple regret. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "search.h"

typedef struct problem {
    const char *name;
    const char *space;
    double optimum;
    double (*f)(const double *v);
} problem;

static double branin(const double *v)
{
    double x = v[0], y = v[1], b = 5.1 / (4 * M_PI * M_PI), c = 5 / M_PI, t = 1 / (8 * M_PI);
    double a = y - b * x * x + c * x - 6;
    return a * a + 10 * (1 - t) * cos(x) + 10;
}

static double hartmann6(const double *v)
{
    static const double alpha[4] = {1.0, 1.2, 3.0, 3.2};
    static const double A[4][6] = {{10, 3, 17, 3.5, 1.7, 8},
                                   {0.05, 10, 17, 0.1, 8, 14},
                                   {3, 3.5, 1.7, 10, 17, 8},
                                   {17, 8, 0.05, 10, 0.1, 14}};
    static const double P[4][6] = {{0.1312, 0.1696, 0.5569, 0.0124, 0.8283, 0.5886},
                                   {0.2329, 0.4135, 0.8307, 0.3736, 0.1004, 0.9991},
                                   {0.2348, 0.1451, 0.3522, 0.2883, 0.3047, 0.6650},
                                   {0.4047, 0.8828, 0.8732, 0.5743, 0.1091, 0.0381}};
    double s = 0;
    for (int i = 0; i < 4; i++) {
        double e = 0;
        for (int j = 0; j < 6; j++)
            e += A[i][j] * (v[j] - P[i][j]) * (v[j] - P[i][j]);
        s += alpha[i] * exp(-e);
    }
    return -s;
}

static double rosenbrock4(const double *v)
{
    double s = 0;
    for (int i = 0; i < 3; i++)
        s += 100 * (v[i + 1] - v[i] * v[i]) * (v[i + 1] - v[i] * v[i]) + (1 - v[i]) * (1 - v[i]);
    return s;
}

static double ackley5(const double *v)
{
    double s1 = 0, s2 = 0;
    for (int i = 0; i < 5; i++) {
        s1 += v[i] * v[i];
        s2 += cos(2 * M_PI * v[i]);
    }
    return -20 * exp(-0.2 * sqrt(s1 / 5)) - exp(s2 / 5) + 20 + M_E;
}

/* Mixed: a shifted quadratic whose optimum (x, y, k) depends on the category, plus an offset per
 * category; the global optimum 0 is at c = "b", x = -3, y = 2.5, k = 2. */
static double mixed(const double *v)
{
    static const double sx[3] = {2, -3, 0.5}, sy[3] = {-1, 2.5, 3}, sk[3] = {7, 2, 5};
    static const double off[3] = {0.3, 0, 0.6};
    int c = (int)v[3];
    double dx = v[0] - sx[c], dy = v[1] - sy[c], dk = v[2] - sk[c];
    return dx * dx + dy * dy + 0.5 * dk * dk + off[c];
}

#define F(n, lo, hi) "\"" n "\": {\"type\": \"float\", \"min\": " #lo ", \"max\": " #hi "}"

static const problem problems[] = {
    {"branin", "{" F("x1", -5, 10) ", " F("x2", 0, 15) "}", 0.397887357729739, branin},
    {"hartmann6",
     "{" F("x1", 0, 1) ", " F("x2", 0, 1) ", " F("x3", 0, 1) ", " F("x4", 0, 1) ", " F(
         "x5", 0, 1) ", " F("x6", 0, 1) "}",
     -3.32236801141551, hartmann6},
    {"rosenbrock4",
     "{" F("x1", -5, 10) ", " F("x2", -5, 10) ", " F("x3", -5, 10) ", " F("x4", -5, 10) "}", 0.0,
     rosenbrock4},
    {"ackley5",
     "{" F("x1", -32.768, 32.768) ", " F("x2", -32.768, 32.768) ", " F(
         "x3", -32.768, 32.768) ", " F("x4", -32.768, 32.768) ", " F("x5", -32.768, 32.768) "}",
     0.0, ackley5},
    {"mixed",
     "{" F("x", -5, 5) ", " F("y", -5, 5) ", \"k\": {\"type\": \"int\", \"min\": 0, \"max\": 10}, "
                                          "\"c\": {\"type\": \"categorical\", \"values\": "
                                          "[\"a\", \"b\", \"c\"]}}",
     0.0, mixed},
};

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Quantile q of sorted v[0..n) by linear interpolation (numpy's default). */
static double quantile(const double *v, int n, double q)
{
    double pos = q * (n - 1);
    int i = (int)floor(pos);
    if (i >= n - 1)
        return v[n - 1];
    return v[i] + (pos - i) * (v[i + 1] - v[i]);
}

/* Runs one seed; writes best-so-far regret after every evaluation into regret[evals]. */
static void run_one(const problem *p, const hone_space *s, int bo, uint64_t seed, int evals,
                    double *regret)
{
    int np = hone_space_nparams(s);
    double *X = malloc(sizeof(double) * (size_t)evals * np), *y = malloc(sizeof(double) * evals);
    hone_rng r;
    hone_rng_seed(&r, seed);
    double best = INFINITY;
    for (int n = 0; n < evals; n++) {
        if (bo) {
            if (hone_bo_suggest(s, NULL, X, y, n, NULL, 0, 1, &r, X + (size_t)n * np) != 0) {
                fprintf(stderr, "bo_suggest failed\n");
                exit(1);
            }
        } else {
            hone_space_sample(s, &r, X + (size_t)n * np);
        }
        y[n] = p->f(X + (size_t)n * np);
        best = y[n] < best ? y[n] : best;
        regret[n] = best - p->optimum;
    }
    free(X);
    free(y);
}

static void bench_problem(const problem *p, const char *method, int seeds, int evals)
{
    char err[256];
    hone_space *s;
    if (hone_space_parse(p->space, &s, err, sizeof err) != 0) {
        fprintf(stderr, "%s: %s\n", p->name, err);
        exit(1);
    }
    int bo = strcmp(method, "bo") == 0;
    double *reg = malloc(sizeof(double) * (size_t)seeds * evals);
    double t0 = now_s();
    for (int sd = 0; sd < seeds; sd++)
        run_one(p, s, bo, 1000 + (uint64_t)sd, evals, reg + (size_t)sd * evals);
    double secs = now_s() - t0;
    static const int marks[] = {10, 25, 50, 100};
    double *col = malloc(sizeof(double) * seeds);
    for (int k = 0; k < (int)HONE_ARRAY_LEN(marks); k++) {
        int e = marks[k];
        if (e > evals)
            break;
        for (int sd = 0; sd < seeds; sd++)
            col[sd] = reg[(size_t)sd * evals + e - 1];
        qsort(col, seeds, sizeof(double), cmp_double);
        printf("{\"function\": \"%s\", \"method\": \"%s\", \"evals\": %d, \"seeds\": %d, "
               "\"median\": %.6g, \"q25\": %.6g, \"q75\": %.6g, \"seconds\": %.2f}\n",
               p->name, method, e, seeds, quantile(col, seeds, 0.5), quantile(col, seeds, 0.25),
               quantile(col, seeds, 0.75), secs);
    }
    fflush(stdout);
    free(col);
    free(reg);
    hone_space_free(s);
}

/* Median wall time of one suggestion with n observations of a smooth 10-D function. */
static void bench_latency(int n, int reps)
{
    char json[2048] = "{";
    for (int i = 0; i < 10; i++) {
        char t[128];
        snprintf(t, sizeof t, "%s\"x%d\": {\"type\": \"float\", \"min\": 0, \"max\": 1}",
                 i ? ", " : "", i);
        strcat(json, t);
    }
    strcat(json, "}");
    char err[256];
    hone_space *s;
    if (hone_space_parse(json, &s, err, sizeof err) != 0)
        exit(1);
    hone_rng r;
    hone_rng_seed(&r, 7);
    double *X = malloc(sizeof(double) * (size_t)n * 10), *y = malloc(sizeof(double) * n);
    for (int i = 0; i < n; i++) {
        hone_space_sample(s, &r, X + (size_t)i * 10);
        double a = 0;
        for (int l = 0; l < 10; l++)
            a += (l + 1) * (X[i * 10 + l] - 0.3) * (X[i * 10 + l] - 0.3);
        y[i] = a + sin(5 * X[i * 10]);
    }
    double out[10 * 4], *t = malloc(sizeof(double) * reps);
    for (int k = 0; k < reps; k++) {
        double t0 = now_s();
        hone_bo_suggest(s, NULL, X, y, n, NULL, 0, 1, &r, out);
        t[k] = (now_s() - t0) * 1e3;
    }
    qsort(t, reps, sizeof(double), cmp_double);
    double t0 = now_s();
    hone_bo_suggest(s, NULL, X, y, n, NULL, 0, 4, &r, out);
    double batch4 = (now_s() - t0) * 1e3;
    printf("{\"latency\": \"bo_suggest\", \"observations\": %d, \"dims\": 10, \"reps\": %d, "
           "\"median_ms\": %.2f, \"min_ms\": %.2f, \"max_ms\": %.2f, \"batch4_ms\": %.2f}\n",
           n, reps, quantile(t, reps, 0.5), t[0], t[reps - 1], batch4);
    free(t);
    free(X);
    free(y);
    hone_space_free(s);
}

static void usage(void)
{
    fprintf(stderr, "usage: bench_search [--seeds N] [--evals N] [--functions a,b,..] "
                    "[--methods random,bo] [--latency] [--latency-only]\n"
                    "  functions: branin hartmann6 rosenbrock4 ackley5 mixed (default all)\n"
                    "  defaults: 20 seeds, 100 evaluations; --quick = 5 seeds, 50 evaluations\n");
    exit(2);
}

int main(int argc, char **argv)
{
    int seeds = 20, evals = 100, latency = 0, run_funcs = 1;
    const char *funcs = NULL, *methods = "random,bo";
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--seeds") == 0 && i + 1 < argc)
            seeds = atoi(argv[++i]);
        else if (strcmp(argv[i], "--evals") == 0 && i + 1 < argc)
            evals = atoi(argv[++i]);
        else if (strcmp(argv[i], "--functions") == 0 && i + 1 < argc)
            funcs = argv[++i];
        else if (strcmp(argv[i], "--methods") == 0 && i + 1 < argc)
            methods = argv[++i];
        else if (strcmp(argv[i], "--quick") == 0) {
            seeds = 5;
            evals = 50;
        } else if (strcmp(argv[i], "--latency") == 0)
            latency = 1;
        else if (strcmp(argv[i], "--latency-only") == 0) {
            latency = 1;
            run_funcs = 0;
        } else
            usage();
    }
    if (seeds < 1 || evals < 1)
        usage();
    if (latency)
        bench_latency(200, 15);
    if (!run_funcs)
        return 0;
    for (int k = 0; k < (int)HONE_ARRAY_LEN(problems); k++) {
        const problem *p = &problems[k];
        if (funcs) { /* comma-separated exact names */
            char pat[64];
            snprintf(pat, sizeof pat, ",%s,", p->name);
            char list[512];
            snprintf(list, sizeof list, ",%s,", funcs);
            if (!strstr(list, pat))
                continue;
        }
        char mlist[128];
        snprintf(mlist, sizeof mlist, "%s", methods);
        for (char *m = strtok(mlist, ","); m; m = strtok(NULL, ","))
            bench_problem(p, m, seeds, evals);
    }
    return 0;
}
