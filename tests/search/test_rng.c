/* Pins the seeded RNG: same seed, same stream; streams differ; ranges and moments are right. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "search.h"
#include "check.h"

int main(void)
{
    hone_rng a, b;
    hone_rng_seed(&a, 42);
    hone_rng_seed(&b, 42);
    for (int i = 0; i < 1000; i++)
        REQUIRE(hone_rng_u64(&a) == hone_rng_u64(&b));
    /* a known value pins the algorithm across platforms and refactors */
    hone_rng_seed(&a, 0);
    uint64_t first = hone_rng_u64(&a);
    printf("first u64 for seed 0: %llu\n", (unsigned long long)first);
    REQUIRE(first == 11091344671253066420ULL);

    hone_rng_seed2(&a, 7, 0);
    hone_rng_seed2(&b, 7, 1);
    int same = 0;
    for (int i = 0; i < 100; i++)
        same += hone_rng_u64(&a) == hone_rng_u64(&b);
    REQUIRE(same == 0);

    hone_rng_seed(&a, 3);
    double sum = 0, sum2 = 0, nsum = 0, nsum2 = 0;
    int counts[7] = {0};
    const int N = 200000;
    for (int i = 0; i < N; i++) {
        double u = hone_rng_uniform(&a);
        REQUIRE(u >= 0.0 && u < 1.0);
        sum += u;
        sum2 += u * u;
        double z = hone_rng_normal(&a);
        REQUIRE(isfinite(z));
        nsum += z;
        nsum2 += z * z;
        uint64_t k = hone_rng_below(&a, 7);
        REQUIRE(k < 7);
        counts[k]++;
    }
    REQUIRE(fabs(sum / N - 0.5) < 0.005);
    REQUIRE(fabs(sum2 / N - 1.0 / 3.0) < 0.005);
    REQUIRE(fabs(nsum / N) < 0.01);
    REQUIRE(fabs(nsum2 / N - 1.0) < 0.02);
    for (int k = 0; k < 7; k++)
        REQUIRE(abs(counts[k] - N / 7) < N / 70);
    REQUIRE(hone_rng_below(&a, 1) == 0);
    printf("ok\n");
    return 0;
}
