/* libFuzzer target for the search-space parser and configs (search/space.c): the input is a space
 * in JSON (conditions included), optionally followed by a NUL byte and a config in JSON. Checks
 * that a parsed space prints back to JSON that parses to the same number of parameters and that
 * configs round-trip (a sampled one, its inactive parameters left out, prints back the same). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "search.h"

#define CHECK(x)                                                                                   \
    do {                                                                                           \
        if (!(x))                                                                                  \
            __builtin_trap();                                                                      \
    } while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char err[256];
    hone_space *s = NULL, *s2 = NULL;
    char *text = malloc(size + 1);
    memcpy(text, data, size);
    text[size] = '\0';
    const char *cfg = NULL;
    size_t first = strlen(text);
    if (first < size)
        cfg = text + first + 1;
    if (hone_space_parse(text, &s, err, sizeof err) != HONE_OK) {
        CHECK(s == NULL);
        goto fail;
    }
    int n = hone_space_nparams(s);
    CHECK(n >= 0);
    char *j = hone_space_to_json(s);
    CHECK(j != NULL);
    CHECK(hone_space_parse(j, &s2, err, sizeof err) == HONE_OK);
    CHECK(hone_space_nparams(s2) == n);
    free(j);
    double *v = calloc((size_t)n + 1, sizeof(double));
    double *u = calloc((size_t)n + 1, sizeof(double));
    double *v2 = calloc((size_t)n + 1, sizeof(double));
    hone_space_default(s, v);
    char *cj = hone_space_config_to_json(s, v);
    CHECK(cj != NULL);
    CHECK(hone_space_config_from_json(s, cj, v2, err, sizeof err) == HONE_OK);
    free(cj);
    hone_rng r;
    hone_rng_seed(&r, size);
    hone_space_sample(s, &r, v);
    hone_space_to_unit(s, v, u);
    for (int i = 0; i < n; i++)
        CHECK(u[i] >= -1e-9 && u[i] <= 1 + 1e-9);
    hone_space_from_unit(s, u, v2);
    cj = hone_space_config_to_json(s, v2);
    CHECK(cj != NULL);
    CHECK(hone_space_config_from_json(s, cj, v, err, sizeof err) == HONE_OK);
    char *cj2 = hone_space_config_to_json(s, v);
    CHECK(cj2 != NULL && strcmp(cj, cj2) == 0);
    free(cj2);
    free(cj);
    if (cfg)
        hone_space_config_from_json(s, cfg, v, err, sizeof err);
    free(v);
    free(u);
    free(v2);
fail:
    hone_space_free(s);
    hone_space_free(s2);
    free(text);
    return 0;
}
