/* Private to search/: a Gaussian process with a Matern-5/2 ARD kernel over features in [0,1]^d,
 * used by bo.c. Targets are expected already standardised by the caller. Pure maths, no I/O. */
#ifndef HONE_GP_H
#define HONE_GP_H

#include "search.h"

/* Hyperparameters: theta = [log l_1 .. log l_d, log signal variance, log noise variance]. */
typedef struct gp {
    int d, n, cap;
    double *X;     /* cap * d features */
    double *y;     /* cap targets */
    double *theta; /* d + 2 */
    double jitter; /* added to the diagonal when plain noise was not positive definite */
    double *L;     /* cap * cap, lower Cholesky factor of K + (noise + jitter) I, row-major */
    double *alpha; /* (K + noise I)^-1 y */
} gp;

/* Allocates room for up to cap points of d features. */
void gp_init(gp *g, int d, int cap);
void gp_free(gp *g);

/* Copies n points in and sets the hyperparameters (d + 2 values); then factors. */
int gp_set(gp *g, const double *X, const double *y, int n, const double *theta);
/* (Re)factors K with the current data and theta; tries growing jitter before giving up. */
int gp_factor(gp *g);
/* Adds one point to a factored GP in O(n^2) (kriging believer / pending points). */
int gp_append(gp *g, const double *x, double y);

/* Posterior mean and latent variance (without noise) at m points (m * d features). */
void gp_predict(const gp *g, const double *Xs, int m, double *mu, double *var);

/* Log marginal likelihood of (X, y) under theta and its gradient (grad may be NULL). */
int gp_lml(const double *X, const double *y, int n, int d, const double *theta, double *lml,
           double *grad);

/* Log prior of theta (and its gradient added into grad if not NULL) used by the MAP fit. */
double gp_log_prior(int d, const double *theta, double *grad);

typedef struct gp_fit_opts {
    int restarts; /* random starts screened besides the deterministic one */
    int max_iter; /* L-BFGS iterations from the best start */
} gp_fit_opts;

/* Fits theta by maximising LML + log prior (MAP) with L-BFGS from the best of a deterministic
 * start, `start` (may be NULL) and random starts drawn from r. Leaves the GP factored. */
int gp_fit(gp *g, const double *X, const double *y, int n, const double *start,
           const gp_fit_opts *o, hone_rng *r);

/* log(phi(z) + z Phi(z)), computed safely for very negative z. Log expected improvement
 * (minimisation) at mean mu and sd s is log s + gp_log_h((best - mu) / s). */
double gp_log_h(double z);

#endif
