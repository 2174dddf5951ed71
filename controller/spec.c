/* The controller's side of the trainer spec, over spec/'s one schema (keys, ranges, defaults,
 * spaces live there): flattening user overrides (nested or dotted) into dotted keys with a field
 * name for every error, resolving a job's spec, the cross-key checks at create time against the
 * dataset's stats, and the resolved spec as YAML through spec/'s one emitter. Keeps no key table of
 * its own. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl_spec.h"

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
        const hone_spec_key *sk = hone_spec_key_find(dotted);
        if (!sk || !sk->user) {
            const char *near = sk ? NULL : hone_spec_key_suggest(dotted);
            snprintf(msg, msglen, "%s: %s%s%s%s", dotted,
                     sk ? "is set by the controller" : "unknown spec key",
                     near ? " (did you mean " : "", near ? near : "", near ? "?)" : "");
            return HONE_EINVAL;
        }
        if (hone_spec_check_json(dotted, v, msg, msglen))
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

int ctl_spec_key_sweepable(const char *key, const char *network)
{
    return hone_spec_key_sweepable(hone_spec_key_find(key), network);
}

json_t *ctl_spec_defaults(const char *network)
{
    hone_spec s;
    hone_spec_defaults(&s, network);
    return hone_spec_to_json(&s);
}

char *ctl_spec_to_yaml(const json_t *flat, char *err, size_t errlen)
{
    hone_spec *s = hone_xcalloc(1, sizeof *s);
    char *buf = NULL;
    size_t len = 0;
    const char *k;
    json_t *v;
    int rc = HONE_OK;
    hone_spec_defaults(s, json_string_value(json_object_get(flat, "network")));
    json_object_foreach((json_t *)flat, k, v)
    {
        if ((rc = hone_spec_set_json(s, k, v, err, errlen)))
            break;
    }
    FILE *f = rc ? NULL : open_memstream(&buf, &len);
    if (f) {
        rc = hone_spec_write_yaml(s, f);
        fclose(f);
    }
    free(s);
    if (rc || !buf) {
        if (!rc)
            snprintf(err, errlen, "out of memory");
        free(buf);
        return NULL;
    }
    return buf;
}

/* The swept batches kept at or below the batch the heaviest trial fits a worker at. */
static json_t *fit_batch(json_t *s, const ctl_sizing *z)
{
    json_t *p = json_object_get(s, "train.batch_size");
    if (!s || !p || !z || z->batch_fit < 1 ||
        json_integer_value(json_object_get(p, "max")) <= z->batch_fit)
        return s;
    if (z->batch_fit < 2) {
        json_object_del(s, "train.batch_size");
        return s;
    }
    json_object_set_new(p, "max", json_integer(z->batch_fit));
    if (json_integer_value(json_object_get(p, "min")) >= z->batch_fit)
        json_object_set_new(p, "min", json_integer(z->batch_fit / 2));
    return s;
}

json_t *ctl_space_all(const char *network, const ctl_sizing *z)
{
    json_t *s =
        fit_batch(hone_spec_space_sized(network, 1, z ? z->ntrain : -1, z ? z->lr_factor : 1.0), z);
    return s ? s : json_object();
}

json_t *ctl_space_default(const char *network, const ctl_sizing *z)
{
    json_t *s =
        fit_batch(hone_spec_space_sized(network, 0, z ? z->ntrain : -1, z ? z->lr_factor : 1.0), z);
    return s ? s : json_object();
}
