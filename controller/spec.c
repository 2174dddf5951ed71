/* The trainer spec (hone-train's YAML): which keys exist, their types and ranges, the defaults per
 * network, flattening user overrides (nested or dotted) into dotted keys with a field name for
 * every error, emitting the resolved spec as YAML, and the AutoML search spaces per network. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "ctl.h"

enum { K_INT, K_NUM, K_BOOL, K_ENUM, K_STR };

typedef struct spec_key {
    const char *key;
    int type;
    double lo, hi;
    const char *const *values; /* K_ENUM */
    int user;                  /* may be overridden in experiment/job specs */
} spec_key;

static const char *const optimizers[] = {"sgd", "adamw", NULL};
static const char *const schedules[] = {"cosine", "step", "constant", NULL};
static const char *const formats[] = {"idx", "image_folder", "kitti", NULL};
static const char *const networks[] = {"mlp", "cnn", NULL};
static const char *const maths[] = {"fp32", "tf32", "bf16", NULL};

static const spec_key keys[] = {
    {"network", K_ENUM, 0, 0, networks, 0},
    {"data.format", K_ENUM, 0, 0, formats, 0},
    {"data.path", K_STR, 0, 0, NULL, 0},
    {"data.train_limit", K_INT, 0, 1e9, NULL, 1},
    {"data.val_size", K_INT, 0, 1e9, NULL, 1},
    {"train.epochs", K_INT, 1, 10000, NULL, 1},
    {"train.batch_size", K_INT, 1, 65536, NULL, 1},
    {"train.optimizer", K_ENUM, 0, 0, optimizers, 1},
    {"train.lr", K_NUM, 0, 10, NULL, 1},
    {"train.momentum", K_NUM, 0, 1, NULL, 1},
    {"train.nesterov", K_BOOL, 0, 0, NULL, 1},
    {"train.weight_decay", K_NUM, 0, 1, NULL, 1},
    {"train.lr_schedule", K_ENUM, 0, 0, schedules, 1},
    {"train.warmup_epochs", K_INT, 0, 1000, NULL, 1},
    {"train.seed", K_INT, 0, 4294967295.0, NULL, 1},
    {"train.beta1", K_NUM, 0, 0.9999, NULL, 1},
    {"train.beta2", K_NUM, 0, 0.999999, NULL, 1},
    {"train.eps", K_NUM, 1e-12, 1, NULL, 1},
    {"train.step_epochs", K_INT, 1, 100000, NULL, 1},
    {"train.step_gamma", K_NUM, 0, 1, NULL, 1},
    {"train.min_lr", K_NUM, 0, 100, NULL, 1},
    {"train.math", K_ENUM, 0, 0, maths, 1},
    {"data.test_limit", K_INT, 0, 1e9, NULL, 1},
    {"model.depth", K_INT, 1, 64, NULL, 1},
    {"model.augment_flip", K_BOOL, 0, 0, NULL, 1},
    {"model.augment_shift", K_INT, 0, 8, NULL, 1},
    {"model.hidden", K_INT, 1, 65536, NULL, 1},
    {"model.dropout", K_NUM, 0, 0.95, NULL, 1},
    {"model.batchnorm", K_BOOL, 0, 0, NULL, 1},
};

int ctl_network_valid(const char *network)
{
    for (int i = 0; network && networks[i]; i++)
        if (!strcmp(network, networks[i]))
            return 1;
    return 0;
}

static const spec_key *find_key(const char *k)
{
    for (size_t i = 0; i < HONE_ARRAY_LEN(keys); i++)
        if (!strcmp(keys[i].key, k))
            return &keys[i];
    return NULL;
}

static int check_value(const spec_key *k, const json_t *v, char *msg, size_t msglen)
{
    switch (k->type) {
    case K_INT:
        if (!json_is_integer(v)) {
            snprintf(msg, msglen, "%s must be an integer", k->key);
            return HONE_EINVAL;
        }
        if ((double)json_integer_value(v) < k->lo || (double)json_integer_value(v) > k->hi) {
            snprintf(msg, msglen, "%s must be in [%g, %g]", k->key, k->lo, k->hi);
            return HONE_EINVAL;
        }
        return HONE_OK;
    case K_NUM:
        if (!json_is_number(v)) {
            snprintf(msg, msglen, "%s must be a number", k->key);
            return HONE_EINVAL;
        }
        if (json_number_value(v) < k->lo || json_number_value(v) > k->hi) {
            snprintf(msg, msglen, "%s must be in [%g, %g]", k->key, k->lo, k->hi);
            return HONE_EINVAL;
        }
        return HONE_OK;
    case K_BOOL:
        if (!json_is_boolean(v)) {
            snprintf(msg, msglen, "%s must be true or false", k->key);
            return HONE_EINVAL;
        }
        return HONE_OK;
    case K_ENUM:
        if (json_is_string(v))
            for (int i = 0; k->values[i]; i++)
                if (!strcmp(k->values[i], json_string_value(v)))
                    return HONE_OK;
        snprintf(msg, msglen, "%s must be one of", k->key);
        for (int i = 0; k->values[i]; i++) {
            size_t l = strlen(msg);
            snprintf(msg + l, msglen - l, "%s %s", i ? "," : "", k->values[i]);
        }
        return HONE_EINVAL;
    default:
        if (!json_is_string(v)) {
            snprintf(msg, msglen, "%s must be a string", k->key);
            return HONE_EINVAL;
        }
        return HONE_OK;
    }
}

static int flatten(const json_t *in, const char *base, const char *prefix, json_t *flat,
                   char *field, size_t fieldlen, char *msg, size_t msglen, int depth)
{
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)in, k, v)
    {
        char dotted[256];
        int n = snprintf(dotted, sizeof dotted, "%s%s%s", base, *base ? "." : "", k);
        snprintf(field, fieldlen, "%s%s%.200s", prefix ? prefix : "", prefix ? "." : "", dotted);
        if (n < 0 || (size_t)n >= sizeof dotted) {
            snprintf(msg, msglen, "spec key is too long (at most %zu characters)",
                     sizeof dotted - 1);
            return HONE_EINVAL;
        }
        if (json_is_object(v) && depth < 2) {
            int rc = flatten(v, dotted, prefix, flat, field, fieldlen, msg, msglen, depth + 1);
            if (rc)
                return rc;
            continue;
        }
        const spec_key *sk = find_key(dotted);
        if (!sk || !sk->user) {
            snprintf(msg, msglen, "%s: %s", dotted,
                     sk ? "is set by the controller" : "unknown spec key");
            return HONE_EINVAL;
        }
        if (check_value(sk, v, msg, msglen))
            return HONE_EINVAL;
        json_object_set(flat, dotted, v);
    }
    return HONE_OK;
}

int ctl_spec_flatten(const json_t *in, const char *prefix, json_t **flat, char *field,
                     size_t fieldlen, char *msg, size_t msglen)
{
    *flat = json_object();
    if (!in || json_is_null(in))
        return HONE_OK;
    if (!json_is_object(in)) {
        snprintf(field, fieldlen, "%s", prefix ? prefix : "specs");
        snprintf(msg, msglen, "must be an object");
        goto fail;
    }
    if (flatten(in, "", prefix, *flat, field, fieldlen, msg, msglen, 0))
        goto fail;
    return HONE_OK;
fail:
    json_decref(*flat);
    *flat = NULL;
    return HONE_EINVAL;
}

int ctl_spec_key_sweepable(const char *key)
{
    const spec_key *k = find_key(key);
    return k && k->user;
}

json_t *ctl_spec_defaults(const char *network)
{
    int cnn = network && !strcmp(network, "cnn");
    return json_pack("{s:s,s:s,s:s,s:i,s:i,s:i,s:i,s:s,s:f,s:f,s:b,s:f,s:s,s:i,s:i,s:i,s:f,s:b}",
                     "network", cnn ? "cnn" : "mlp", "data.format", "idx", "data.path", "",
                     "data.train_limit", 0, "data.val_size", 5000, "train.epochs", 10,
                     "train.batch_size", 128, "train.optimizer", "sgd", "train.lr",
                     cnn ? 0.05 : 0.1, "train.momentum", 0.9, "train.nesterov", 1,
                     "train.weight_decay", 5e-4, "train.lr_schedule", "cosine",
                     "train.warmup_epochs", 0, "train.seed", 1, "model.hidden", cnn ? 128 : 256,
                     "model.dropout", 0.0, "model.batchnorm", 0);
}

static void yaml_scalar(FILE *f, const json_t *v)
{
    if (json_is_string(v)) {
        fputc('"', f);
        for (const char *p = json_string_value(v); *p; p++) {
            if (*p == '"' || *p == '\\')
                fputc('\\', f);
            if ((unsigned char)*p < 0x20)
                fprintf(f, "\\x%02x", (unsigned char)*p);
            else
                fputc(*p, f);
        }
        fputc('"', f);
    } else if (json_is_integer(v)) {
        fprintf(f, "%lld", (long long)json_integer_value(v));
    } else if (json_is_real(v)) {
        char b[64];
        snprintf(b, sizeof b, "%.17g", json_real_value(v));
        if (!strpbrk(b, ".eEn"))
            strcat(b, ".0");
        fputs(b, f);
    } else if (json_is_boolean(v)) {
        fputs(json_is_true(v) ? "true" : "false", f);
    } else {
        fputs("null", f);
    }
}

/* Groups dotted keys by their first segment, in the order sections first appear. */
char *ctl_spec_yaml(const json_t *flat)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f)
        return hone_xstrdup("");
    fputs("# resolved by hone-controller\n", f);
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)flat, k, v)
    {
        if (!strchr(k, '.')) {
            fprintf(f, "%s: ", k);
            yaml_scalar(f, v);
            fputc('\n', f);
        }
    }
    json_t *done = json_object();
    json_object_foreach((json_t *)flat, k, v)
    {
        const char *dot = strchr(k, '.');
        if (!dot)
            continue;
        char section[64];
        snprintf(section, sizeof section, "%.*s", (int)(dot - k), k);
        if (json_object_get(done, section))
            continue;
        json_object_set_new(done, section, json_true());
        fprintf(f, "%s:\n", section);
        const char *k2;
        json_t *v2;
        json_object_foreach((json_t *)flat, k2, v2)
        {
            size_t sl = strlen(section);
            if (strncmp(k2, section, sl) == 0 && k2[sl] == '.') {
                fprintf(f, "  %s: ", k2 + sl + 1);
                yaml_scalar(f, v2);
                fputc('\n', f);
            }
        }
    }
    json_decref(done);
    fclose(f);
    return buf;
}

static json_t *p_float(double lo, double hi, int log)
{
    return json_pack("{s:s,s:f,s:f,s:b}", "type", "float", "min", lo, "max", hi, "log", log);
}

static json_t *p_int(int lo, int hi, int log)
{
    return json_pack("{s:s,s:i,s:i,s:b}", "type", "int", "min", lo, "max", hi, "log", log);
}

json_t *ctl_space_all(const char *network)
{
    int cnn = network && !strcmp(network, "cnn");
    json_t *s = json_object();
    json_object_set_new(s, "train.lr", p_float(1e-3, 0.3, 1));
    json_object_set_new(s, "train.momentum", p_float(0.5, 0.99, 0));
    json_object_set_new(s, "train.weight_decay", p_float(1e-6, 1e-2, 1));
    json_object_set_new(s, "train.batch_size", p_int(64, 512, 1));
    json_object_set_new(
        s, "train.optimizer",
        json_pack("{s:s,s:[s,s]}", "type", "categorical", "values", "sgd", "adamw"));
    json_object_set_new(s, "model.hidden", cnn ? p_int(32, 512, 1) : p_int(64, 1024, 1));
    json_object_set_new(s, "model.dropout", p_float(0.0, 0.5, 0));
    json_object_set_new(s, "train.lr_schedule",
                        json_pack("{s:s,s:[s,s,s]}", "type", "categorical", "values", "cosine",
                                  "step", "constant"));
    json_object_set_new(s, "train.warmup_epochs", p_int(0, 5, 0));
    json_object_set_new(s, "train.nesterov", json_pack("{s:s}", "type", "bool"));
    json_object_set_new(s, "model.batchnorm", json_pack("{s:s}", "type", "bool"));
    return s;
}

json_t *ctl_space_default(const char *network)
{
    static const char *const swept[] = {"train.lr", "train.momentum", "train.weight_decay",
                                        "train.batch_size", "train.optimizer"};
    json_t *all = ctl_space_all(network), *s = json_object();
    for (size_t i = 0; i < HONE_ARRAY_LEN(swept); i++)
        json_object_set(s, swept[i], json_object_get(all, swept[i]));
    json_decref(all);
    return s;
}
