/* Validation of JSON request bodies against a table of allowed members, so that every 422 names
 * the offending field: unknown members, wrong types, missing members, lengths, enums, ranges.
 * Pure: looks at the JSON and, only on failure, answers through hone_http_res_error. */
#include <math.h>
#include <stdio.h>
#include <stdint.h>
#include <string.h>
#include "http_internal.h"

static const char *type_name(hone_json_type t)
{
    switch (t) {
    case HONE_JSON_STRING:
        return "a string";
    case HONE_JSON_INT:
        return "an integer";
    case HONE_JSON_NUMBER:
        return "a number";
    case HONE_JSON_BOOL:
        return "a boolean";
    case HONE_JSON_OBJECT:
        return "an object";
    case HONE_JSON_ARRAY:
        return "an array";
    default:
        return "a value";
    }
}

static int type_ok(hone_json_type t, const json_t *v)
{
    switch (t) {
    case HONE_JSON_STRING:
        return json_is_string(v);
    case HONE_JSON_INT:
        return json_is_integer(v);
    case HONE_JSON_NUMBER:
        return json_is_number(v);
    case HONE_JSON_BOOL:
        return json_is_boolean(v);
    case HONE_JSON_OBJECT:
        return json_is_object(v);
    case HONE_JSON_ARRAY:
        return json_is_array(v);
    default:
        return 1;
    }
}

/* Checks one present, non-null value; fills msg on failure. */
static int value_ok(const hone_json_field *f, const json_t *v, char *msg, size_t cap)
{
    if (!type_ok(f->type, v)) {
        snprintf(msg, cap, "must be %s", type_name(f->type));
        return 0;
    }
    if (json_is_string(v) || json_is_array(v)) {
        size_t n = json_is_string(v) ? json_string_length(v) : json_array_size(v);
        const char *unit = json_is_string(v) ? "bytes" : "items";
        if (n < f->min_len) {
            snprintf(msg, cap, "must have at least %zu %s", f->min_len, unit);
            return 0;
        }
        if (f->max_len && n > f->max_len) {
            snprintf(msg, cap, "must have at most %zu %s", f->max_len, unit);
            return 0;
        }
    }
    if (json_is_string(v) && f->enum_values) {
        const char *s = json_string_value(v);
        size_t used = 0;
        int found = 0;
        used += (size_t)snprintf(msg, cap, "must be one of:");
        for (const char *const *e = f->enum_values; *e; e++) {
            if (!strcmp(*e, s))
                found = 1;
            if (used < cap)
                used += (size_t)snprintf(msg + used, cap - used, " %s", *e);
        }
        if (!found) {
            const char *near = hone_suggest(s, f->enum_values, SIZE_MAX);
            if (near && used < cap)
                snprintf(msg + used, cap - used, " (did you mean %s?)", near);
            return 0;
        }
    }
    if (json_is_number(v) && f->has_range) {
        double d = json_number_value(v);
        if (!(d >= f->min && d <= f->max) || !isfinite(d)) {
            snprintf(msg, cap, "must be between %g and %g", f->min, f->max);
            return 0;
        }
    }
    return 1;
}

int hone_json_check_prefix(json_t *obj, const char *prefix, const hone_json_field *fields, size_t n,
                           hone_http_res *res)
{
    char msg[256], name[160];
    const char *bad = NULL;
    int status = 422;
    if (!json_is_object(obj)) {
        snprintf(name, sizeof(name), "%s", prefix ? prefix : "");
        if (res)
            hone_http_res_error(res, 422, prefix, "%s must be a JSON object",
                                prefix ? prefix : "body");
        return HONE_EINVAL;
    }
    const char *key;
    json_t *v;
    json_object_foreach(obj, key, v)
    {
        size_t i = 0;
        while (i < n && strcmp(fields[i].name, key))
            i++;
        if (i == n) {
            bad = key;
            snprintf(msg, sizeof(msg), "unknown field");
            goto fail;
        }
        if (json_is_null(v) && fields[i].nullable)
            continue;
        if (!value_ok(&fields[i], v, msg, sizeof(msg))) {
            bad = key;
            goto fail;
        }
    }
    for (size_t i = 0; i < n; i++) {
        json_t *m = json_object_get(obj, fields[i].name);
        if (fields[i].required && (!m || json_is_null(m))) {
            bad = fields[i].name;
            snprintf(msg, sizeof(msg), "is required");
            goto fail;
        }
    }
    return HONE_OK;
fail:
    if (prefix)
        snprintf(name, sizeof(name), "%s.%s", prefix, bad);
    else
        snprintf(name, sizeof(name), "%s", bad);
    if (res)
        hone_http_res_error(res, status, name, "%s %s", name, msg);
    return HONE_EINVAL;
}

int hone_json_check(json_t *obj, const hone_json_field *fields, size_t n, hone_http_res *res)
{
    return hone_json_check_prefix(obj, NULL, fields, n, res);
}
