/* Seeded random numbers for the search: xoshiro256** seeded through splitmix64.
 * Pure and reproducible: the same seed gives the same stream on every platform; no global state. */
#include <math.h>

#include "search.h"

static uint64_t splitmix64(uint64_t *x)
{
    uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static uint64_t rotl(uint64_t x, int k)
{
    return (x << k) | (x >> (64 - k));
}

void hone_rng_seed(hone_rng *r, uint64_t seed)
{
    uint64_t x = seed;
    for (int i = 0; i < 4; i++)
        r->s[i] = splitmix64(&x);
}

void hone_rng_seed2(hone_rng *r, uint64_t seed, uint64_t stream)
{
    /* Mix the stream through splitmix first so (seed, stream) pairs do not collide as seed+stream
     * would. */
    uint64_t x = stream ^ 0x2545f4914f6cdd1dULL;
    uint64_t h = splitmix64(&x);
    hone_rng_seed(r, seed ^ h);
}

uint64_t hone_rng_u64(hone_rng *r)
{
    uint64_t *s = r->s;
    uint64_t result = rotl(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return result;
}

double hone_rng_uniform(hone_rng *r)
{
    return (double)(hone_rng_u64(r) >> 11) * 0x1.0p-53;
}

double hone_rng_normal(hone_rng *r)
{
    /* Box-Muller without caching the second value, so the stream position is easy to reason about.
     */
    double u1 = 1.0 - hone_rng_uniform(r); /* (0, 1] */
    double u2 = hone_rng_uniform(r);
    return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

uint64_t hone_rng_below(hone_rng *r, uint64_t n)
{
    /* Lemire-free rejection: unbiased and simple. */
    uint64_t lim = UINT64_MAX - UINT64_MAX % n;
    uint64_t x;
    do {
        x = hone_rng_u64(r);
    } while (x >= lim);
    return x % n;
}
