/* Pins search spaces: parsing, printing and re-parsing, the unit mapping, configs to and from
 * JSON, and that every bad space is rejected with a message naming the parameter. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "space_internal.h"
#include "check.h"

static const char *GOOD =
    "{\"lr\": {\"type\": \"float\", \"min\": 1e-4, \"max\": 0.3, \"log\": true},"
    " \"batch_size\": {\"type\": \"int\", \"min\": 32, \"max\": 512, \"log\": true},"
    " \"layers\": {\"type\": \"int\", \"min\": 1, \"max\": 4, \"default\": 2},"
    " \"momentum\": {\"type\": \"float\", \"min\": 0, \"max\": 1, \"default\": 0.9},"
    " \"optimizer\": {\"type\": \"categorical\", \"values\": [\"sgd\", \"adamw\", 3, false]},"
    " \"nesterov\": {\"type\": \"bool\", \"default\": true}}";

static void test_parse_print_roundtrip(void)
{
    char err[256];
    hone_space *s, *s2;
    REQUIRE(hone_space_parse(GOOD, &s, err, sizeof err) == 0);
    REQUIRE(hone_space_nparams(s) == 6);
    REQUIRE(strcmp(hone_space_param_name(s, 0), "lr") == 0);
    REQUIRE(strcmp(hone_space_param_name(s, 5), "nesterov") == 0);
    REQUIRE(hone_space_param_type(s, 1) == HONE_PARAM_INT);
    REQUIRE(hone_space_param_type(s, 4) == HONE_PARAM_CATEGORICAL);
    REQUIRE(space__ncat(s, 4) == 4 && space__ncat(s, 5) == 2);
    REQUIRE(space__nfeat(s) == 4 + 4 + 1);
    char *txt = hone_space_to_json(s);
    printf("%s\n", txt);
    REQUIRE(hone_space_parse(txt, &s2, err, sizeof err) == 0);
    char *txt2 = hone_space_to_json(s2);
    REQUIRE(strcmp(txt, txt2) == 0);
    free(txt);
    free(txt2);

    double def[6];
    hone_space_default(s, def);
    REQUIRE(def[2] == 2 && def[3] == 0.9 && def[4] == 0 && def[5] == 1);
    REQUIRE(def[0] > 1e-4 && def[0] < 0.3);

    hone_rng r;
    hone_rng_seed(&r, 1);
    double v[6], u[6], v2[6], back[6];
    int seen_bs_lo = 0, seen_bs_hi = 0, layer_counts[5] = {0};
    for (int t = 0; t < 4000; t++) {
        hone_space_sample(s, &r, v);
        REQUIRE(v[0] >= 1e-4 && v[0] <= 0.3);
        REQUIRE(v[1] >= 32 && v[1] <= 512 && v[1] == floor(v[1]));
        seen_bs_lo |= v[1] == 32;
        seen_bs_hi |= v[1] == 512;
        layer_counts[(int)v[2]]++;
        REQUIRE(v[4] >= 0 && v[4] <= 3 && v[5] >= 0 && v[5] <= 1);
        hone_space_to_unit(s, v, u);
        for (int i = 0; i < 6; i++)
            REQUIRE(u[i] >= 0 && u[i] <= 1);
        hone_space_from_unit(s, u, v2);
        REQUIRE(space__same(s, v, v2));
        REQUIRE(fabs(v2[0] - v[0]) < 1e-12 * v[0]);
        /* config JSON round trip is exact */
        char *c = hone_space_config_to_json(s, v);
        REQUIRE(hone_space_config_from_json(s, c, back, err, sizeof err) == 0);
        for (int i = 0; i < 6; i++)
            REQUIRE(back[i] == v[i]);
        free(c);
    }
    REQUIRE(seen_bs_lo && seen_bs_hi);
    for (int k = 1; k <= 4; k++) /* uniform int bins */
        REQUIRE(layer_counts[k] > 800 && layer_counts[k] < 1200);

    double cfg[6] = {0.01, 128, 3, 0.5, 1, 0};
    char *c = hone_space_config_to_json(s, cfg);
    printf("%s\n", c);
    REQUIRE(strcmp(c, "{\"lr\": 0.01, \"batch_size\": 128, \"layers\": 3, \"momentum\": 0.5, "
                      "\"optimizer\": \"adamw\", \"nesterov\": false}") == 0);
    free(c);
    hone_space_free(s);
    hone_space_free(s2);
}

/* Each bad space must fail and its message must contain `want`. */
static void expect_bad(const char *json, const char *want)
{
    char err[256] = "";
    hone_space *s = (hone_space *)1;
    int rc = hone_space_parse(json, &s, err, sizeof err);
    printf("%-24s -> %s\n", want, err);
    REQUIRE(rc < 0);
    REQUIRE(s == NULL);
    REQUIRE(strstr(err, want) != NULL);
}

static void test_bad_spaces(void)
{
    expect_bad("{\"lr\": {\"type\": \"float\", \"min\": 0.1, \"max\": 0.1}}", "'lr': empty range");
    expect_bad("{\"lr\": {\"type\": \"float\", \"min\": 1, \"max\": 0.1}}", "'lr': min (1) > max");
    expect_bad("{\"n\": {\"type\": \"int\", \"min\": 5, \"max\": 2}}", "'n': min");
    expect_bad("{\"lr\": {\"type\": \"float\", \"min\": 0, \"max\": 1, \"log\": true}}",
               "'lr': log scale needs min > 0");
    expect_bad("{\"n\": {\"type\": \"int\", \"min\": -3, \"max\": 8, \"log\": true}}",
               "'n': log scale");
    expect_bad("{\"x\": {\"type\": \"double\", \"min\": 0, \"max\": 1}}", "'x': unknown type");
    expect_bad("{\"x\": {\"min\": 0, \"max\": 1}}", "'x': missing \"type\"");
    expect_bad("{\"x\": {\"type\": \"float\", \"min\": 0, \"maxx\": 1}}",
               "'x': unknown key 'maxx'");
    expect_bad("{\"b\": {\"type\": \"bool\", \"min\": 0}}", "'b': unknown key 'min'");
    expect_bad("{\"opt\": {\"type\": \"categorical\", \"values\": []}}", "'opt': categorical");
    expect_bad("{\"opt\": {\"type\": \"categorical\"}}", "'opt': categorical");
    expect_bad("{\"opt\": {\"type\": \"categorical\", \"values\": [\"a\", \"a\"]}}",
               "'opt': value #1 repeats");
    expect_bad("{\"lr\": {\"type\": \"float\", \"min\": 0, \"max\": 1},"
               " \"lr\": {\"type\": \"bool\"}}",
               "duplicate parameter or key name: duplicate object key near '\"lr\"'");
    expect_bad("{\"n\": {\"type\": \"int\", \"min\": 0.5, \"max\": 3}}", "'n': \"min\" and");
    expect_bad("{\"x\": {\"type\": \"float\", \"min\": 0}}", "'x': needs \"min\" and \"max\"");
    expect_bad("{\"x\": {\"type\": \"float\", \"min\": 0, \"max\": 1, \"default\": 2}}",
               "'x': default 2 is outside");
    expect_bad("{\"o\": {\"type\": \"categorical\", \"values\": [1], \"default\": 2}}",
               "'o': default is not one of");
    expect_bad("{\"x\": 3}", "'x': must be an object");
    /* an empty name after a valid parameter (whose success set rc to 0) must still fail */
    expect_bad("{\"\": {\"type\": \"bool\"}}", "parameter #1: names must not be empty");
    expect_bad(
        "{\"lr\": {\"type\": \"float\", \"min\": 0, \"max\": 1}, \"\": {\"type\": \"bool\"}}",
        "parameter #2 (after 'lr'): names must not be empty");
    expect_bad("{\"a\": {\"type\": \"bool\"}, \"b\": {\"type\": \"bool\"}, \"\": 1}",
               "parameter #3 (after 'b'): names must not be empty");
    /* a bad parameter after valid ones */
    expect_bad("{\"a\": {\"type\": \"bool\"}, \"b\": {\"type\": \"int\"}}",
               "'b': needs \"min\" and \"max\"");
    expect_bad("{}", "no parameters");
    expect_bad("[1]", "must be a JSON object");
    expect_bad("{\"x\": ", "not valid JSON");
}

static void test_bad_configs(void)
{
    char err[256];
    hone_space *s;
    double v[6];
    REQUIRE(hone_space_parse(GOOD, &s, err, sizeof err) == 0);
    const char *base = "\"batch_size\": 64, \"layers\": 2, \"momentum\": 0.5, "
                       "\"optimizer\": 3, \"nesterov\": true";
    char buf[512];
    snprintf(buf, sizeof buf, "{\"lr\": 0.01, %s}", base);
    REQUIRE(hone_space_config_from_json(s, buf, v, err, sizeof err) == 0);
    REQUIRE(v[4] == 2);
    snprintf(buf, sizeof buf, "{\"lr\": 1.5, %s}", base);
    REQUIRE(hone_space_config_from_json(s, buf, v, err, sizeof err) < 0 && strstr(err, "'lr'"));
    snprintf(buf, sizeof buf, "{%s}", base);
    REQUIRE(hone_space_config_from_json(s, buf, v, err, sizeof err) < 0 &&
            strstr(err, "'lr': missing"));
    /* a parameter missing after ones that parsed (their success must not leak into the result) */
    REQUIRE(hone_space_config_from_json(s,
                                        "{\"lr\": 0.01, \"batch_size\": 64, \"momentum\": 0.5, "
                                        "\"optimizer\": 3, \"nesterov\": true}",
                                        v, err, sizeof err) < 0 &&
            strstr(err, "'layers': missing"));
    REQUIRE(hone_space_config_from_json(s,
                                        "{\"lr\": 0.01, \"batch_size\": 64, \"layers\": 2, "
                                        "\"momentum\": 0.5, \"optimizer\": 3}",
                                        v, err, sizeof err) < 0 &&
            strstr(err, "'nesterov': missing"));
    snprintf(buf, sizeof buf, "{\"lr\": 0.01, \"extra\": 1, %s}", base);
    REQUIRE(hone_space_config_from_json(s, buf, v, err, sizeof err) < 0 && strstr(err, "'extra'"));
    snprintf(buf, sizeof buf, "{\"lr\": 0.01, %s, \"layers\": 2.5}", base);
    REQUIRE(hone_space_config_from_json(s, buf, v, err, sizeof err) < 0);
    REQUIRE(hone_space_config_from_json(s,
                                        "{\"lr\": 0.01, \"batch_size\": 64, \"layers\": 2.5, "
                                        "\"momentum\": 0.5, \"optimizer\": 3, \"nesterov\": true}",
                                        v, err, sizeof err) < 0 &&
            strstr(err, "'layers': value must be an integer"));
    REQUIRE(hone_space_config_from_json(s,
                                        "{\"lr\": 0.01, \"batch_size\": 64, \"layers\": 2, "
                                        "\"momentum\": 0.5, \"optimizer\": \"adam\", "
                                        "\"nesterov\": true}",
                                        v, err, sizeof err) < 0 &&
            strstr(err, "'optimizer'"));
    hone_space_free(s);
}

/* An int's "step": samples and the unit mapping stay on min + k * step, max is lowered onto the
 * grid, the step is printed back, and a default off the grid or a bad step is refused. */
static void test_int_step(void)
{
    char err[256];
    hone_space *s;
    REQUIRE(hone_space_parse("{\"w\": {\"type\": \"int\", \"min\": 16, \"max\": 100,"
                             " \"log\": true, \"step\": 8, \"default\": 64}}",
                             &s, err, sizeof err) == 0);
    REQUIRE(space__nint(s, 0) == 11); /* 16, 24, ..., 96 */
    hone_rng r;
    hone_rng_seed(&r, 3);
    int seen[11] = {0};
    for (int i = 0; i < 4000; i++) {
        double v;
        hone_space_sample(s, &r, &v);
        REQUIRE(v >= 16 && v <= 96 && fmod(v - 16, 8) == 0);
        seen[(int)(v - 16) / 8]++;
    }
    for (int k = 0; k < 11; k++)
        REQUIRE(seen[k] > 0); /* every grid value drawn */
    /* log bins of width step about each value: 16's [12, 20] is wider than 24's [20, 28], and 96's
     * [92, 100] nearly as wide as 88's [84, 92] (rounding onto the grid after the unit step gave
     * the ends half a share) */
    REQUIRE(seen[0] > seen[1] && seen[10] > 0.75 * seen[9]);
    for (int k = 0; k <= 20; k++) {
        double u = k / 20.0, v, u2, v2;
        hone_space_from_unit(s, &u, &v);
        hone_space_to_unit(s, &v, &u2);
        hone_space_from_unit(s, &u2, &v2);
        REQUIRE(fmod(v - 16, 8) == 0 && v2 == v);
    }
    char *txt = hone_space_to_json(s);
    REQUIRE(strstr(txt, "\"step\": 8") && strstr(txt, "\"max\": 96"));
    free(txt);
    hone_space_free(s);
    /* linear: every value of the grid, the ends too, about a fifth of the draws */
    REQUIRE(hone_space_parse("{\"k\": {\"type\": \"int\", \"min\": 0, \"max\": 45, \"step\": 10}}",
                             &s, err, sizeof err) == 0);
    int lin[5] = {0};
    for (int i = 0; i < 10000; i++) {
        double v;
        hone_space_sample(s, &r, &v);
        REQUIRE(v >= 0 && v <= 40 && fmod(v, 10) == 0);
        lin[(int)v / 10]++;
    }
    for (int k = 0; k < 5; k++)
        REQUIRE(lin[k] > 1700 && lin[k] < 2300);
    hone_space_free(s);
    expect_bad("{\"w\": {\"type\": \"int\", \"min\": 16, \"max\": 64, \"step\": 8,"
               " \"default\": 60}}",
               "'w': default 60 is not min + a multiple of step 8");
    expect_bad("{\"w\": {\"type\": \"int\", \"min\": 16, \"max\": 64, \"step\": 0}}",
               "'w': \"step\" must be an integer >= 1");
    expect_bad("{\"w\": {\"type\": \"float\", \"min\": 1, \"max\": 64, \"step\": 2}}",
               "'w': unknown key 'step' for type float");
}

int main(void)
{
    test_int_step();
    test_parse_print_roundtrip();
    test_bad_spaces();
    test_bad_configs();
    printf("ok\n");
    return 0;
}
