/* check.h: the assertion macros of the C unit tests, in one place. CHECK counts a failure and goes
 * on (main returns non-zero when `failures` is), REQUIRE stops the test at once (for checks whose
 * failure would make the next steps meaningless or unsafe). Both print file:line and the condition.
 * Header-only; each test program includes it once. */
#ifndef HONE_TESTS_CHECK_H
#define HONE_TESTS_CHECK_H

#include <stdio.h>
#include <stdlib.h>

static int failures __attribute__((unused)); /* not every test counts */

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond);               \
            failures++;                                                                            \
        }                                                                                          \
    } while (0)

#define REQUIRE(cond)                                                                              \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "%s:%d: REQUIRE failed: %s\n", __FILE__, __LINE__, #cond);             \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

#endif
