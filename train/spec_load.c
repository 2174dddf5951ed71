/* train/spec_load.c: hone-train's side of the spec: a spec file is YAML (what a person writes;
 * libyaml events, nested mappings flatten to dotted keys) or the flat dotted JSON object a lease
 * carries (what the controller stores, one form on the wire), and "key=value" overrides; all
 * through spec/'s setters, so a typo or a wrong type is reported the same way from each and from
 * the controller. No key table here: keys, types, ranges and defaults live in spec/spec.c. */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <jansson.h>
#include <yaml.h>

#include "train.h"

static int fail(char *err, size_t errlen, const char *fmt, ...)
{
    if (err && errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
    }
    return HONE_EPARSE;
}

void hone_train_spec_defaults(hone_train_spec *s)
{
    hone_spec_defaults(s, "mlp");
}

int hone_train_spec_set(hone_train_spec *s, const char *assignment, char *err, size_t errlen)
{
    const char *eq = strchr(assignment, '=');
    if (!eq || eq == assignment)
        return fail(err, errlen, "--set '%s': expected key=value", assignment);
    char key[128];
    size_t n = (size_t)(eq - assignment);
    if (n >= sizeof(key))
        return fail(err, errlen, "--set: key too long");
    memcpy(key, assignment, n);
    key[n] = 0;
    return hone_spec_set_text(s, key, eq + 1, 0, err, errlen);
}

static void join_path(char path[][64], int depth, char *out, size_t len)
{
    out[0] = 0;
    for (int i = 0; i < depth; i++) {
        size_t used = strlen(out);
        snprintf(out + used, len - used, "%s%s", i ? "." : "", path[i]);
    }
}

/* Walks the event stream keeping a stack of mapping keys; each scalar value is set under its
 * dotted path. Sequences, aliases and more than two levels of nesting are rejected. */
static int load_events(hone_train_spec *s, yaml_parser_t *p, char *err, size_t errlen)
{
    char path[3][64] = {{0}};
    int depth = 0, expect_key[4] = {0}, rc = HONE_OK, done = 0;
    while (!done) {
        yaml_event_t ev;
        char key[256];
        if (!yaml_parser_parse(p, &ev))
            return fail(err, errlen, "spec: YAML error at line %zu: %s", p->problem_mark.line + 1,
                        p->problem ? p->problem : "?");
        switch (ev.type) {
        case YAML_MAPPING_START_EVENT:
            if (depth > 0 && expect_key[depth]) {
                rc = fail(err, errlen, "spec: a mapping cannot be a key");
                break;
            }
            if (depth >= 2) {
                join_path(path, depth, key, sizeof(key));
                rc = fail(err, errlen, "%s: nested too deeply", key);
                break;
            }
            depth++;
            expect_key[depth] = 1;
            break;
        case YAML_MAPPING_END_EVENT:
            depth--;
            if (depth > 0)
                expect_key[depth] = 1;
            break;
        case YAML_SCALAR_EVENT: {
            const char *v = (const char *)ev.data.scalar.value;
            if (depth == 0) {
                rc = fail(err, errlen, "spec: expected a mapping at the top level");
                break;
            }
            if (expect_key[depth]) {
                snprintf(path[depth - 1], sizeof(path[0]), "%s", v);
                expect_key[depth] = 0;
            } else {
                join_path(path, depth, key, sizeof(key));
                rc = hone_spec_set_text(s, key, v, ev.data.scalar.style != YAML_PLAIN_SCALAR_STYLE,
                                        err, errlen);
                expect_key[depth] = 1;
            }
            break;
        }
        case YAML_SEQUENCE_START_EVENT:
        case YAML_ALIAS_EVENT:
            join_path(path, depth, key, sizeof(key));
            rc = fail(err, errlen, "%s: lists and aliases are not allowed here",
                      key[0] ? key : "spec");
            break;
        case YAML_STREAM_END_EVENT:
            done = 1;
            break;
        default:
            break;
        }
        yaml_event_delete(&ev);
        if (rc < 0)
            return rc;
    }
    return HONE_OK;
}

int hone_train_spec_load_string(hone_train_spec *s, const char *yaml, size_t len, char *err,
                                size_t errlen)
{
    yaml_parser_t p;
    if (!yaml_parser_initialize(&p))
        return fail(err, errlen, "spec: cannot initialise the YAML parser");
    yaml_parser_set_input_string(&p, (const unsigned char *)yaml, len);
    int rc = load_events(s, &p, err, errlen);
    yaml_parser_delete(&p);
    return rc;
}

/* The flat dotted JSON form: {"network": "cnn", "train.lr": 0.01, ...}: 1 when f holds such
 * an object (every value a scalar), which is then applied (network first, as a YAML file
 * names it before the keys that depend on it) with *rc its result; 0 otherwise, f rewound for the
 * YAML reader (JSON is YAML too: a nested object is read as YAML, as it always was). */
static int load_flat_json(hone_train_spec *s, FILE *f, char *err, size_t errlen, int *rc)
{
    json_t *obj = json_loadf(f, JSON_REJECT_DUPLICATES, NULL), *v;
    const char *key;
    int flat = json_is_object(obj);
    json_object_foreach(obj, key, v)
    {
        flat &= !json_is_object(v) && !json_is_array(v);
    }
    if (!flat) {
        json_decref(obj);
        rewind(f);
        return 0;
    }
    *rc = HONE_OK;
    if ((v = json_object_get(obj, "network")) &&
        hone_spec_set_json(s, "network", v, err, errlen) < 0)
        *rc = HONE_EPARSE;
    json_object_foreach(obj, key, v)
    {
        if (*rc == HONE_OK && strcmp(key, "network") &&
            hone_spec_set_json(s, key, v, err, errlen) < 0)
            *rc = HONE_EPARSE;
    }
    json_decref(obj);
    return 1;
}

int hone_train_spec_load_file(hone_train_spec *s, const char *path, char *err, size_t errlen)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        if (err && errlen)
            snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return HONE_ENOENT;
    }
    int ch, rc;
    while ((ch = getc(f)) == ' ' || ch == '\t' || ch == '\n' || ch == '\r')
        ;
    if (ch != EOF)
        ungetc(ch, f);
    if (ch == '{' && load_flat_json(s, f, err, errlen, &rc)) {
        fclose(f);
        return rc;
    }
    yaml_parser_t p;
    if (!yaml_parser_initialize(&p)) {
        fclose(f);
        return fail(err, errlen, "spec: cannot initialise the YAML parser");
    }
    yaml_parser_set_input_file(&p, f);
    rc = load_events(s, &p, err, errlen);
    yaml_parser_delete(&p);
    fclose(f);
    return rc;
}

int hone_train_spec_validate(const hone_train_spec *s, char *err, size_t errlen)
{
    char field[64];
    return hone_spec_check(s, NULL, field, sizeof field, err, errlen) == HONE_OK ? HONE_OK
                                                                                 : HONE_EPARSE;
}

int hone_train_spec_write(const hone_train_spec *s, FILE *f)
{
    return hone_spec_write_yaml(s, f);
}
