/* tests/train/test_train_spec.c: spec loading from YAML (block and flow style), dotted --set
 * overrides, and errors that name the offending key for unknown keys, wrong types, bad choices and
 * ranges; the resolved spec written out reads back identical. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>
#include <unistd.h>

#include "train.h"
#include "check.h"

static void expect_yaml_error(const char *yaml, const char *needle)
{
    hone_train_spec s;
    hone_train_spec_defaults(&s);
    char err[256] = "";
    int rc = hone_train_spec_load_string(&s, yaml, strlen(yaml), err, sizeof(err));
    if (rc != HONE_EPARSE || !strstr(err, needle)) {
        fprintf(stderr, "yaml '%s': rc %d, err '%s' (wanted '%s')\n", yaml, rc, err, needle);
        failures++;
    }
}

static void expect_set_error(const char *assignment, const char *needle)
{
    hone_train_spec s;
    hone_train_spec_defaults(&s);
    char err[256] = "";
    int rc = hone_train_spec_set(&s, assignment, err, sizeof(err));
    if (rc != HONE_EPARSE || !strstr(err, needle)) {
        fprintf(stderr, "--set '%s': rc %d, err '%s' (wanted '%s')\n", assignment, rc, err, needle);
        failures++;
    }
}

int main(void)
{
    hone_train_spec s;
    char err[256];
    hone_train_spec_defaults(&s);
    const char *flow = "network: cnn            # mlp | cnn\n"
                       "data: {format: idx, path: /data/fm, train_limit: 2000, val_size: 500}\n"
                       "train: {epochs: 7, batch_size: 64, optimizer: adamw, lr: 0.001,\n"
                       "        momentum: 0.8, nesterov: true, weight_decay: 1e-4,\n"
                       "        lr_schedule: step, warmup_epochs: 1, seed: 12345678901}\n"
                       "model: {hidden: 96, dropout: 0.25, batchnorm: yes}\n";
    CHECK(hone_train_spec_load_string(&s, flow, strlen(flow), err, sizeof(err)) == HONE_OK);
    CHECK(strcmp(s.network, "cnn") == 0 && strcmp(s.data.path, "/data/fm") == 0);
    CHECK(s.data.train_limit == 2000 && s.data.val_size == 500 && s.train.epochs == 7);
    CHECK(s.train.batch_size == 64 && strcmp(s.train.optimizer, "adamw") == 0);
    CHECK(s.train.lr == 0.001 && s.train.momentum == 0.8 && s.train.nesterov == 1);
    CHECK(s.train.weight_decay == 1e-4 && strcmp(s.train.lr_schedule, "step") == 0);
    CHECK(s.train.warmup_epochs == 1 && s.train.seed == 12345678901ULL);
    CHECK(s.model.hidden == 96 && s.model.dropout == 0.25 && s.model.batchnorm == 1);
    CHECK(s.model.depth == 1); /* untouched default */

    const char *block = "train:\n  lr: 0.2\n  epochs: 3\nmodel:\n  depth: 2\n";
    CHECK(hone_train_spec_load_string(&s, block, strlen(block), err, sizeof(err)) == HONE_OK);
    CHECK(s.train.lr == 0.2 && s.train.epochs == 3 && s.model.depth == 2);
    CHECK(s.train.batch_size == 64); /* layered over the previous document */

    CHECK(hone_train_spec_set(&s, "train.lr=0.01", err, sizeof(err)) == HONE_OK);
    CHECK(s.train.lr == 0.01);
    CHECK(hone_train_spec_set(&s, "model.batchnorm=false", err, sizeof(err)) == HONE_OK);
    CHECK(s.model.batchnorm == 0);
    CHECK(hone_train_spec_set(&s, "network=mlp", err, sizeof(err)) == HONE_OK);

    expect_yaml_error("train: {lr: fast}\n", "train.lr: expected a number");
    expect_yaml_error("train: {learning_rate: 0.1}\n", "train.learning_rate: unknown key");
    expect_yaml_error("network: resnet\n", "network: 'resnet' is not one of");
    expect_yaml_error("train: {epochs: 0}\n", "train.epochs: 0 out of range");
    expect_yaml_error("train: {epochs: 2.5}\n", "train.epochs: expected an integer");
    expect_yaml_error("model: {batchnorm: maybe}\n", "model.batchnorm: expected true or false");
    expect_yaml_error("train: {lr: [1, 2]}\n", "train.lr: lists");
    expect_yaml_error("data: {path: {deep: x}}\n", "data.path: nested too deeply");
    expect_yaml_error("train: {lr: 0.1\n", "YAML error");
    expect_yaml_error("- a\n- b\n", "lists");
    expect_set_error("train.lr", "expected key=value");
    expect_set_error("train.seed=-1", "train.seed: expected a non-negative integer");
    expect_set_error("train.optimizer=rmsprop", "train.optimizer");
    expect_set_error("bogus.key=1", "bogus.key: unknown key");

    /* write + reload gives identical values */
    hone_train_spec_defaults(&s);
    hone_train_spec_load_string(&s, flow, strlen(flow), err, sizeof(err));
    hone_train_spec_set(&s, "data.path=/odd \"quoted\" path", err, sizeof(err));
    char path[] = "/tmp/hone-spec-XXXXXX";
    int fd = mkstemp(path);
    FILE *f = fdopen(fd, "w");
    CHECK(hone_train_spec_write(&s, f) == HONE_OK);
    fclose(f);
    hone_train_spec t;
    hone_train_spec_defaults(&t);
    CHECK(hone_train_spec_load_file(&t, path, err, sizeof(err)) == HONE_OK);
    /* the same values; every key in the file counts as given once read back (the keys whose
     * default follows the network no longer follow it), so `given` is compared apart */
    CHECK((t.given | s.given) == t.given);
    t.given = s.given;
    CHECK(memcmp(&s, &t, sizeof(s)) == 0);
    unlink(path);
    CHECK(hone_train_spec_load_file(&t, "/nonexistent/spec.yaml", err, sizeof(err)) == HONE_ENOENT);

    /* the flat dotted JSON a lease carries loads to the same values as the YAML it replaces
     * (network first, wherever it stands); a bad value names its key; a nested object is
     * still read as YAML */
    {
        json_t *flat = hone_spec_to_json(&s);
        json_object_del(flat, "network");
        json_object_set_new(flat, "network", hone_spec_get_json(&s, "network"));
        char jpath[] = "/tmp/hone-spec-json-XXXXXX";
        int jfd = mkstemp(jpath);
        FILE *jf = fdopen(jfd, "w");
        CHECK(json_dumpf(flat, jf, JSON_INDENT(1)) == 0);
        fclose(jf);
        hone_train_spec u;
        hone_train_spec_defaults(&u);
        CHECK(hone_train_spec_load_file(&u, jpath, err, sizeof(err)) == HONE_OK);
        u.given = s.given;
        CHECK(memcmp(&s, &u, sizeof(s)) == 0);
        jf = fopen(jpath, "w");
        fputs(" {\"network\": \"cnn\", \"train.lr\": \"fast\"}", jf);
        fclose(jf);
        hone_train_spec_defaults(&u);
        CHECK(hone_train_spec_load_file(&u, jpath, err, sizeof(err)) == HONE_EPARSE);
        CHECK(strstr(err, "train.lr") != NULL);
        jf = fopen(jpath, "w");
        fputs("{\"train\": {\"lr\": 0.25}}", jf);
        fclose(jf);
        hone_train_spec_defaults(&u);
        CHECK(hone_train_spec_load_file(&u, jpath, err, sizeof(err)) == HONE_OK);
        json_t *lr = hone_spec_get_json(&u, "train.lr");
        CHECK(json_real_value(lr) == 0.25);
        json_decref(lr);
        unlink(jpath);
        json_decref(flat);
    }

    /* string values: control characters and invalid UTF-8 are refused at set time, naming the
     * key (they would otherwise be written as YAML that does not load back) */
    expect_set_error("data.path=/a\x05"
                     "b",
                     "data.path: control character U+0005 at byte 2");
    expect_set_error("data.path=/a\tb", "data.path: control character U+0009");
    expect_set_error("data.path=/a\nb", "data.path: control character U+000A");
    expect_set_error("data.path=/a\x7f", "data.path: control character U+007F");
    expect_set_error("data.path=/a\xc2\x85", "data.path: control character U+0085");
    expect_set_error("data.path=/x\x99y", "data.path: invalid UTF-8 at byte 2");
    expect_set_error("data.path=/x\xc0\xaf", "data.path: invalid UTF-8");         /* overlong '/' */
    expect_set_error("data.path=/x\xed\xa0\x80", "data.path: invalid UTF-8");     /* surrogate */
    expect_set_error("data.path=/x\xf4\x90\x80\x80", "data.path: invalid UTF-8"); /* > U+10FFFF */
    expect_set_error("data.path=/x\xe6\x97", "data.path: invalid UTF-8");         /* truncated */
    expect_set_error("network=cnn\x01", "network: control character U+0001");
    expect_yaml_error("data: {path: \"/a\\x01b\"}\n", "data.path: control character U+0001");
    expect_yaml_error("data: {path: \"/a\\tb\"}\n", "data.path: control character U+0009");
    {
        hone_train_spec u;
        hone_train_spec_defaults(&u);
        strcpy(u.data.path, "/keep");
        CHECK(hone_train_spec_set(&u, "data.path=/bad\x1b[0m", err, sizeof(err)) == HONE_EPARSE);
        CHECK(strcmp(u.data.path, "/keep") == 0); /* a refused value leaves the old one */
    }

    /* non-ASCII UTF-8 paths are fine and round-trip byte for byte */
    {
        const char *utf = "/donn\xc3\xa9"
                          "es/\xe6\x97\xa5\xe6\x9c\xac/\xf0\x9f\x98\x80 \"q\" \\ end";
        char set[256];
        snprintf(set, sizeof set, "data.path=%s", utf);
        hone_train_spec_defaults(&s);
        CHECK(hone_train_spec_set(&s, set, err, sizeof(err)) == HONE_OK);
        char *buf = NULL;
        size_t len = 0;
        FILE *m = open_memstream(&buf, &len);
        CHECK(hone_train_spec_write(&s, m) == HONE_OK);
        fclose(m);
        hone_train_spec t2;
        hone_train_spec_defaults(&t2);
        CHECK(hone_train_spec_load_string(&t2, buf, len, err, sizeof(err)) == HONE_OK);
        CHECK(strcmp(t2.data.path, utf) == 0);
        char *buf2 = NULL;
        size_t len2 = 0;
        m = open_memstream(&buf2, &len2);
        CHECK(hone_train_spec_write(&t2, m) == HONE_OK);
        fclose(m);
        CHECK(len == len2 && memcmp(buf, buf2, len) == 0); /* and writes out the same again */
        free(buf);
        free(buf2);
    }

    /* a spec filled in by code (not through the setter) still writes valid YAML: control
     * characters are escaped (\xNN, \uNNNN), so loading it back reports the key instead of a
     * YAML syntax error; invalid UTF-8 cannot be written at all */
    {
        hone_train_spec_defaults(&s);
        strcpy(s.data.path, "/a\x01\"\x7f\xc2\x85\xef\xbf\xbe");
        char *buf = NULL;
        size_t len = 0;
        FILE *m = open_memstream(&buf, &len);
        CHECK(hone_train_spec_write(&s, m) == HONE_OK);
        fclose(m);
        CHECK(strstr(buf, "path: \"/a\\x01\\\"\\x7F\\x85\\uFFFE\"\n") != NULL);
        hone_train_spec t2;
        hone_train_spec_defaults(&t2);
        err[0] = 0;
        CHECK(hone_train_spec_load_string(&t2, buf, len, err, sizeof(err)) == HONE_EPARSE);
        CHECK(strstr(err, "data.path: control character U+0001") != NULL);
        free(buf);
        strcpy(s.data.path, "/a\xff");
        buf = NULL;
        m = open_memstream(&buf, &len);
        CHECK(hone_train_spec_write(&s, m) == HONE_EINVAL);
        fclose(m);
        free(buf);
    }

    hone_train_spec_defaults(&s);
    hone_train_spec_set(&s, "train.min_lr=1", err, sizeof(err));
    CHECK(hone_train_spec_validate(&s, err, sizeof(err)) == HONE_EPARSE);
    CHECK(strstr(err, "train.min_lr") != NULL);
    if (failures)
        fprintf(stderr, "test_train_spec: %d failure(s)\n", failures);
    return failures != 0;
}
