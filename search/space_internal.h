/* Private view of a search space for the models in search/ (bo.c, and the facade). Not part of the
 * public API: the controller sees only search.h. */
#ifndef HONE_SPACE_INTERNAL_H
#define HONE_SPACE_INTERNAL_H

#include "search.h"

/* Number of categories (categorical: len(values), bool: 2, others: 0). */
int space__ncat(const hone_space *s, int i);
/* Number of values an int parameter may take (max - min + 1), 0 for others. */
double space__nint(const hone_space *s, int i);

/* Model features: continuous, int and bool parameters take one dimension (their unit value);
 * categoricals with c >= 3 values take c one-hot dimensions. */
int space__nfeat(const hone_space *s);
void space__features(const hone_space *s, const double *values, double *feat);
/* 1 when two configs give the same trial (ints and categories compared exactly, floats within
 * 1e-12 of the unit range). */
int space__same(const hone_space *s, const double *a, const double *b);

#endif
