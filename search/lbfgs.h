/* search/lbfgs.h (private to search/): box-constrained L-BFGS for smooth objectives of a few
 * dozen variables (gp.c's MAP fit of the kernel hyperparameters). Pure maths, no I/O. */
#ifndef HONE_LBFGS_H
#define HONE_LBFGS_H

/* History length: the last LBFGS_M (step, gradient change) pairs shape the search direction. */
#define LBFGS_M 6

/* The objective: returns f(x) and writes its p-vector gradient into grad. A non-finite value
 * marks x as unusable: the line search backs off from it. */
typedef double (*lbfgs_fn)(const double *x, double *grad, void *ctx);

/* Minimises fun over the box [lo, hi] (p variables each) from x, which is updated in place and
 * must lie in the box. Each iteration takes the two-loop L-BFGS direction (steepest descent when
 * it does not descend), projects the step onto the box and backtracks (halving, at most 20 times)
 * until the Armijo condition holds. Stops after max_iter iterations, when no step is accepted, or
 * when f improves by less than 1e-6 (1 + |f|). Returns f at the final x (non-finite, x untouched,
 * when f is not finite at the start). Deterministic; no allocation (arrays on the stack). */
double lbfgs_minimize(int p, double *x, const double *lo, const double *hi, int max_iter,
                      lbfgs_fn fun, void *ctx);

#endif
