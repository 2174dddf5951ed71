/* train/spec.c: the training spec: defaults, a table of every dotted key with its type and range,
 * YAML loading (libyaml events; nested mappings flatten to dotted keys) and "key=value" overrides
 * through the same setter, so a typo or a wrong type is reported the same way from both. */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <yaml.h>

#include "train.h"

typedef enum { K_INT, K_U64, K_NUM, K_BOOL, K_STR } key_type;

typedef struct {
    const char *key;
    key_type type;
    size_t off, size;
    double lo, hi;       /* numeric range, inclusive */
    const char *choices; /* K_STR: space-separated allowed values, NULL = any */
} key_def;

#define F(field) offsetof(hone_train_spec, field), sizeof(((hone_train_spec *)0)->field)
static const key_def KEYS[] = {
    {"network", K_STR, F(network), 0, 0, "mlp cnn"},
    {"data.format", K_STR, F(data.format), 0, 0, "idx"},
    {"data.path", K_STR, F(data.path), 0, 0, NULL},
    {"data.train_limit", K_INT, F(data.train_limit), 0, 1e9, NULL},
    {"data.val_size", K_INT, F(data.val_size), 0, 1e9, NULL},
    {"data.test_limit", K_INT, F(data.test_limit), 0, 1e9, NULL},
    {"train.epochs", K_INT, F(train.epochs), 1, 100000, NULL},
    {"train.batch_size", K_INT, F(train.batch_size), 1, 65536, NULL},
    {"train.optimizer", K_STR, F(train.optimizer), 0, 0, "sgd adamw"},
    {"train.lr", K_NUM, F(train.lr), 0, 100, NULL},
    {"train.momentum", K_NUM, F(train.momentum), 0, 0.9999, NULL},
    {"train.nesterov", K_BOOL, F(train.nesterov), 0, 1, NULL},
    {"train.weight_decay", K_NUM, F(train.weight_decay), 0, 10, NULL},
    {"train.beta1", K_NUM, F(train.beta1), 0, 0.9999, NULL},
    {"train.beta2", K_NUM, F(train.beta2), 0, 0.999999, NULL},
    {"train.eps", K_NUM, F(train.eps), 1e-12, 1, NULL},
    {"train.lr_schedule", K_STR, F(train.lr_schedule), 0, 0, "constant step cosine"},
    {"train.warmup_epochs", K_NUM, F(train.warmup_epochs), 0, 100000, NULL},
    {"train.step_epochs", K_INT, F(train.step_epochs), 1, 100000, NULL},
    {"train.step_gamma", K_NUM, F(train.step_gamma), 0, 1, NULL},
    {"train.min_lr", K_NUM, F(train.min_lr), 0, 100, NULL},
    {"train.seed", K_U64, F(train.seed), 0, 0, NULL},
    {"train.math", K_STR, F(train.math), 0, 0, "fp32 tf32 bf16"},
    {"model.hidden", K_INT, F(model.hidden), 1, 65536, NULL},
    {"model.depth", K_INT, F(model.depth), 1, 64, NULL},
    {"model.dropout", K_NUM, F(model.dropout), 0, 0.95, NULL},
    {"model.batchnorm", K_BOOL, F(model.batchnorm), 0, 1, NULL},
    {"model.augment_flip", K_BOOL, F(model.augment_flip), 0, 1, NULL},
    {"model.augment_shift", K_INT, F(model.augment_shift), 0, 8, NULL},
};

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
    memset(s, 0, sizeof(*s));
    snprintf(s->network, sizeof(s->network), "mlp");
    snprintf(s->data.format, sizeof(s->data.format), "idx");
    snprintf(s->data.path, sizeof(s->data.path), "/usr/share/datasets/fashion-mnist");
    s->data.val_size = 5000;
    s->train.epochs = 10;
    s->train.batch_size = 128;
    snprintf(s->train.optimizer, sizeof(s->train.optimizer), "sgd");
    s->train.lr = 0.05;
    s->train.momentum = 0.9;
    s->train.weight_decay = 5e-4;
    s->train.beta1 = 0.9;
    s->train.beta2 = 0.999;
    s->train.eps = 1e-8;
    snprintf(s->train.lr_schedule, sizeof(s->train.lr_schedule), "cosine");
    s->train.step_epochs = 10;
    s->train.step_gamma = 0.1;
    s->train.seed = 1;
    snprintf(s->train.math, sizeof(s->train.math), "fp32");
    s->model.hidden = 256;
    s->model.depth = 1;
}

static const key_def *find_key(const char *key)
{
    for (size_t i = 0; i < HONE_ARRAY_LEN(KEYS); i++)
        if (strcmp(KEYS[i].key, key) == 0)
            return &KEYS[i];
    return NULL;
}

static int in_choices(const char *choices, const char *v)
{
    size_t n = strlen(v);
    for (const char *p = choices; *p;) {
        const char *e = strchr(p, ' ');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        if (len == n && strncmp(p, v, n) == 0)
            return 1;
        if (!e)
            break;
        p = e + 1;
    }
    return 0;
}

/* Decodes one UTF-8 sequence at s (shortest form, no surrogates, at most U+10FFFF): its length
 * and code point, or 0 when the bytes are not valid UTF-8. */
static int utf8_next(const unsigned char *s, unsigned *cp)
{
    unsigned c = s[0], min;
    int n;
    if (c < 0x80) {
        *cp = c;
        return 1;
    }
    if (c >= 0xC2 && c <= 0xDF)
        n = 2, c &= 0x1F, min = 0x80;
    else if (c >= 0xE0 && c <= 0xEF)
        n = 3, c &= 0x0F, min = 0x800;
    else if (c >= 0xF0 && c <= 0xF4)
        n = 4, c &= 0x07, min = 0x10000;
    else
        return 0;
    for (int i = 1; i < n; i++) {
        if ((s[i] & 0xC0) != 0x80)
            return 0;
        c = (c << 6) | (s[i] & 0x3F);
    }
    if (c < min || c > 0x10FFFF || (c >= 0xD800 && c <= 0xDFFF))
        return 0;
    *cp = c;
    return n;
}

/* Control characters (C0, DEL, C1) and the non-characters U+FFFE/U+FFFF: never in a name or path,
 * and not printable in YAML. */
static int is_control(unsigned cp)
{
    return cp < 0x20 || (cp >= 0x7F && cp <= 0x9F) || cp == 0xFFFE || cp == 0xFFFF;
}

/* A string value must be valid UTF-8 without control characters, so the spec writes out as YAML
 * that loads back; the message names the key and the byte offset. */
static int check_text(const char *key, const char *v, char *err, size_t errlen)
{
    const unsigned char *u = (const unsigned char *)v;
    for (size_t i = 0; u[i];) {
        unsigned cp;
        int n = utf8_next(u + i, &cp);
        if (n == 0)
            return fail(err, errlen, "%s: invalid UTF-8 at byte %zu", key, i);
        if (is_control(cp))
            return fail(err, errlen, "%s: control character U+%04X at byte %zu", key, cp, i);
        i += (size_t)n;
    }
    return HONE_OK;
}

/* Sets one key from its text form (YAML scalar or command-line value). */
static int set_value_raw(hone_train_spec *s, const char *key, const char *v, char *err,
                         size_t errlen);

/* The fc width defaults to the network's reference (mlp 784-256-10, cnn fc-128) unless given. */
static int set_value(hone_train_spec *s, const char *key, const char *v, char *err, size_t errlen)
{
    int rc = set_value_raw(s, key, v, err, errlen);
    if (rc == HONE_OK && !strcmp(key, "model.hidden"))
        s->model.hidden_set = 1;
    if (rc == HONE_OK && !strcmp(key, "network") && !s->model.hidden_set)
        s->model.hidden = strcmp(s->network, "cnn") == 0 ? 128 : 256;
    return rc;
}

static int set_value_raw(hone_train_spec *s, const char *key, const char *v, char *err,
                         size_t errlen)
{
    const key_def *k = find_key(key);
    if (!k)
        return fail(err, errlen, "%s: unknown key", key);
    char *base = (char *)s + k->off, *end = NULL;
    errno = 0;
    switch (k->type) {
    case K_INT: {
        long long x = strtoll(v, &end, 10);
        if (!*v || *end || errno)
            return fail(err, errlen, "%s: expected an integer, got '%s'", key, v);
        if (x < k->lo || x > k->hi)
            return fail(err, errlen, "%s: %lld out of range [%g, %g]", key, x, k->lo, k->hi);
        *(int *)base = (int)x;
        return HONE_OK;
    }
    case K_U64: {
        if (*v == '-')
            return fail(err, errlen, "%s: expected a non-negative integer, got '%s'", key, v);
        unsigned long long x = strtoull(v, &end, 10);
        if (!*v || *end || errno)
            return fail(err, errlen, "%s: expected a non-negative integer, got '%s'", key, v);
        *(uint64_t *)base = x;
        return HONE_OK;
    }
    case K_NUM: {
        double x = strtod(v, &end);
        if (!*v || *end || errno || !isfinite(x))
            return fail(err, errlen, "%s: expected a number, got '%s'", key, v);
        if (x < k->lo || x > k->hi)
            return fail(err, errlen, "%s: %g out of range [%g, %g]", key, x, k->lo, k->hi);
        *(double *)base = x;
        return HONE_OK;
    }
    case K_BOOL:
        if (!strcasecmp(v, "true") || !strcasecmp(v, "yes") || !strcmp(v, "1") ||
            !strcasecmp(v, "on"))
            *(int *)base = 1;
        else if (!strcasecmp(v, "false") || !strcasecmp(v, "no") || !strcmp(v, "0") ||
                 !strcasecmp(v, "off"))
            *(int *)base = 0;
        else
            return fail(err, errlen, "%s: expected true or false, got '%s'", key, v);
        return HONE_OK;
    case K_STR:
        if (strlen(v) >= k->size)
            return fail(err, errlen, "%s: value longer than %zu characters", key, k->size - 1);
        if (check_text(key, v, err, errlen) != HONE_OK)
            return HONE_EPARSE;
        if (k->choices && !in_choices(k->choices, v))
            return fail(err, errlen, "%s: '%s' is not one of: %s", key, v, k->choices);
        memcpy(base, v, strlen(v) + 1);
        return HONE_OK;
    }
    return HONE_EINVAL;
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
    return set_value(s, key, eq + 1, err, errlen);
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
                rc = set_value(s, key, v, err, errlen);
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

int hone_train_spec_load_file(hone_train_spec *s, const char *path, char *err, size_t errlen)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        if (err && errlen)
            snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return HONE_ENOENT;
    }
    yaml_parser_t p;
    if (!yaml_parser_initialize(&p)) {
        fclose(f);
        return fail(err, errlen, "spec: cannot initialise the YAML parser");
    }
    yaml_parser_set_input_file(&p, f);
    int rc = load_events(s, &p, err, errlen);
    yaml_parser_delete(&p);
    fclose(f);
    return rc;
}

int hone_train_spec_validate(const hone_train_spec *s, char *err, size_t errlen)
{
    if (!s->data.path[0])
        return fail(err, errlen, "data.path: must be set");
    if (s->train.min_lr > s->train.lr)
        return fail(err, errlen, "train.min_lr: %g exceeds train.lr %g", s->train.min_lr,
                    s->train.lr);
    if (s->train.warmup_epochs > s->train.epochs)
        return fail(err, errlen, "train.warmup_epochs: %g exceeds train.epochs %d",
                    s->train.warmup_epochs, s->train.epochs);
    return HONE_OK;
}

/* A YAML double-quoted scalar: '"' and '\\' escaped, control characters as \\xNN / \\uNNNN (the
 * setter rejects them, but a spec filled in by code may hold them). Invalid UTF-8 has no YAML
 * form: HONE_EINVAL. */
static int write_quoted(FILE *f, const char *v)
{
    const unsigned char *u = (const unsigned char *)v;
    fputc('"', f);
    for (size_t i = 0; u[i];) {
        unsigned cp;
        int n = utf8_next(u + i, &cp);
        if (n == 0)
            return HONE_EINVAL;
        if (cp == '"' || cp == '\\')
            fprintf(f, "\\%c", (char)cp);
        else if (cp <= 0xFF && is_control(cp))
            fprintf(f, "\\x%02X", cp);
        else if (is_control(cp))
            fprintf(f, "\\u%04X", cp);
        else
            fwrite(u + i, 1, (size_t)n, f);
        i += (size_t)n;
    }
    fputc('"', f);
    return HONE_OK;
}

/* Values are written with %.17g / quoted strings so a reload gives identical numbers. */
int hone_train_spec_write(const hone_train_spec *s, FILE *f)
{
    const char *section = "";
    for (size_t i = 0; i < HONE_ARRAY_LEN(KEYS); i++) {
        const key_def *k = &KEYS[i];
        const char *dot = strchr(k->key, '.');
        const char *name = k->key;
        if (dot) {
            size_t n = (size_t)(dot - k->key);
            if (strncmp(section, k->key, n) != 0 || section[n] != '.') {
                fprintf(f, "%.*s:\n", (int)n, k->key);
                section = k->key;
            }
            name = dot + 1;
            fputs("  ", f);
        }
        const char *base = (const char *)s + k->off;
        switch (k->type) {
        case K_INT:
            fprintf(f, "%s: %d\n", name, *(const int *)base);
            break;
        case K_U64:
            fprintf(f, "%s: %llu\n", name, (unsigned long long)*(const uint64_t *)base);
            break;
        case K_NUM:
            fprintf(f, "%s: %.17g\n", name, *(const double *)base);
            break;
        case K_BOOL:
            fprintf(f, "%s: %s\n", name, *(const int *)base ? "true" : "false");
            break;
        case K_STR:
            fputs(name, f);
            fputs(": ", f);
            if (write_quoted(f, base) != HONE_OK)
                return HONE_EINVAL;
            fputc('\n', f);
            break;
        }
    }
    return ferror(f) ? HONE_EIO : HONE_OK;
}
