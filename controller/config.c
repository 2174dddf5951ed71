/* Controller configuration: defaults, a YAML file (read with libyaml into JSON, then checked key by
 * key so an unknown or mistyped key is named), and flag-style overrides. */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "controller.h"

void hone_controller_config_default(hone_controller_config *c)
{
    memset(c, 0, sizeof *c);
    c->listen_host = hone_xstrdup("127.0.0.1");
    c->listen_port = 8080;
    c->data_dir = hone_xstrdup("./hone-data");
    c->max_body_bytes = 1 << 20;
    c->max_upload_bytes = 256u << 20;
    c->max_uploads = 4;
    c->upload_inflight = 4u << 20;
    c->max_header_bytes = 16 << 10;
    c->lease_seconds = 30;
    c->heartbeat_seconds = 5;
    c->max_attempts = 3;
    c->max_wait_seconds = 60;
    c->max_streams = 64;
    c->dataset_checks = 2;
    c->coco_json_memory = (size_t)2 << 30;
    c->downloads_per_user = 4;
    c->log_json = 1;
    c->token_ttl_seconds = 7 * 86400;
    c->fair_max_queued = 1000;
}

void hone_controller_config_free(hone_controller_config *c)
{
    free(c->listen_host);
    free(c->data_dir);
    free(c->db_path);
    for (int i = 0; i < c->n_data_roots; i++)
        free(c->data_roots[i]);
    free(c->data_roots);
    free(c->auth_token);
    free(c->worker_token);
    free(c->port_file);
    free(c->fair_weights);
    memset(c, 0, sizeof *c);
}

static void set_str(char **dst, const char *v)
{
    free(*dst);
    *dst = v ? hone_xstrdup(v) : NULL;
}

void hone_controller_config_env(hone_controller_config *c)
{
    const char *k = getenv("HONE_ADMIN_KEY"), *w = getenv("HONE_WORKER_TOKEN");
    if (!c->auth_token && k && *k)
        set_str(&c->auth_token, k);
    if (!c->worker_token && w && *w)
        set_str(&c->worker_token, w);
}

static int parse_listen(hone_controller_config *c, const char *v, char *err, size_t errlen)
{
    const char *colon = strrchr(v, ':');
    char *end = NULL;
    if (!colon || colon == v) {
        snprintf(err, errlen, "listen: expected HOST:PORT, got '%s'", v);
        return HONE_EINVAL;
    }
    errno = 0;
    long port = strtol(colon + 1, &end, 10);
    if (errno || !end || *end || port < 0 || port > 65535 || end == colon + 1) {
        snprintf(err, errlen, "listen: bad port in '%s'", v);
        return HONE_EINVAL;
    }
    free(c->listen_host);
    size_t hl = (size_t)(colon - v);
    const char *h = v;
    if (hl >= 2 && h[0] == '[' && h[hl - 1] == ']') { /* [::1]:8080 */
        h++;
        hl -= 2;
    }
    c->listen_host = hone_xmalloc(hl + 1);
    memcpy(c->listen_host, h, hl);
    c->listen_host[hl] = '\0';
    c->listen_port = (int)port;
    return HONE_OK;
}

int hone_controller_config_set(hone_controller_config *c, const char *key, const char *value,
                               char *err, size_t errlen)
{
    if (strcmp(key, "listen") == 0)
        return parse_listen(c, value, err, errlen);
    if (strcmp(key, "data_dir") == 0)
        set_str(&c->data_dir, value);
    else if (strcmp(key, "db") == 0)
        set_str(&c->db_path, value);
    else if (strcmp(key, "port_file") == 0)
        set_str(&c->port_file, value);
    else if (strcmp(key, "auth_token") == 0)
        set_str(&c->auth_token, value);
    else if (strcmp(key, "worker_token") == 0)
        set_str(&c->worker_token, value);
    else {
        snprintf(err, errlen, "unknown option '%s'", key);
        return HONE_EINVAL;
    }
    return HONE_OK;
}

/* ---- YAML to JSON (block/flow mappings, sequences, plain and quoted scalars) ---- */

static json_t *scalar_json(const yaml_event_t *ev)
{
    const char *v = (const char *)ev->data.scalar.value;
    if (ev->data.scalar.style == YAML_PLAIN_SCALAR_STYLE) {
        if (!strcmp(v, "true") || !strcmp(v, "True") || !strcmp(v, "yes"))
            return json_true();
        if (!strcmp(v, "false") || !strcmp(v, "False") || !strcmp(v, "no"))
            return json_false();
        if (!strcmp(v, "null") || !strcmp(v, "~") || !*v)
            return json_null();
        char *end = NULL;
        errno = 0;
        long long i = strtoll(v, &end, 10);
        if (!errno && end && !*end)
            return json_integer(i);
        double d = strtod(v, &end);
        if (end && !*end && end != v)
            return json_real(d);
    }
    return json_string(v);
}

static int yaml_node(yaml_parser_t *p, yaml_event_t *first, json_t **out, int depth)
{
    if (depth > 32)
        return HONE_ELIMIT;
    if (first->type == YAML_SCALAR_EVENT) {
        *out = scalar_json(first);
        return *out ? HONE_OK : HONE_EPARSE;
    }
    int is_map = first->type == YAML_MAPPING_START_EVENT;
    if (!is_map && first->type != YAML_SEQUENCE_START_EVENT)
        return HONE_EPARSE;
    json_t *c = is_map ? json_object() : json_array();
    char *key = NULL;
    for (;;) {
        yaml_event_t ev;
        if (!yaml_parser_parse(p, &ev))
            goto fail;
        if (ev.type == YAML_MAPPING_END_EVENT || ev.type == YAML_SEQUENCE_END_EVENT) {
            yaml_event_delete(&ev);
            break;
        }
        if (is_map && !key) {
            if (ev.type != YAML_SCALAR_EVENT) {
                yaml_event_delete(&ev);
                goto fail;
            }
            key = hone_xstrdup((const char *)ev.data.scalar.value);
            yaml_event_delete(&ev);
            continue;
        }
        json_t *child = NULL;
        int rc = yaml_node(p, &ev, &child, depth + 1);
        yaml_event_delete(&ev);
        if (rc)
            goto fail;
        if (is_map) {
            json_object_set_new(c, key, child);
            free(key);
            key = NULL;
        } else {
            json_array_append_new(c, child);
        }
    }
    *out = c;
    return HONE_OK;
fail:
    free(key);
    json_decref(c);
    return HONE_EPARSE;
}

static int yaml_file_json(const char *path, json_t **out, char *err, size_t errlen)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return HONE_EIO;
    }
    yaml_parser_t p;
    yaml_parser_initialize(&p);
    yaml_parser_set_input_file(&p, f);
    int rc = HONE_EPARSE;
    *out = NULL;
    for (;;) {
        yaml_event_t ev;
        if (!yaml_parser_parse(&p, &ev)) {
            snprintf(err, errlen, "%s:%zu: %s", path, p.problem_mark.line + 1,
                     p.problem ? p.problem : "YAML error");
            break;
        }
        yaml_event_type_t t = ev.type;
        if (t == YAML_MAPPING_START_EVENT && !*out) {
            if (yaml_node(&p, &ev, out, 0) != HONE_OK) {
                snprintf(err, errlen, "%s:%zu: %s", path, p.problem_mark.line + 1,
                         p.problem ? p.problem : "bad YAML");
                yaml_event_delete(&ev);
                break;
            }
        } else if (t == YAML_SCALAR_EVENT || t == YAML_SEQUENCE_START_EVENT) {
            snprintf(err, errlen, "%s: the top level must be a mapping", path);
            yaml_event_delete(&ev);
            break;
        }
        yaml_event_delete(&ev);
        if (t == YAML_STREAM_END_EVENT) {
            if (!*out)
                *out = json_object(); /* empty file: all defaults */
            rc = HONE_OK;
            break;
        }
    }
    yaml_parser_delete(&p);
    fclose(f);
    if (rc) {
        json_decref(*out);
        *out = NULL;
    }
    return rc;
}

static int want_int(json_t *v, const char *key, long long lo, long long hi, long long *out,
                    char *err, size_t errlen)
{
    if (!json_is_integer(v) || json_integer_value(v) < lo || json_integer_value(v) > hi) {
        snprintf(err, errlen, "%s: must be an integer in [%lld, %lld]", key, lo, hi);
        return HONE_EINVAL;
    }
    *out = json_integer_value(v);
    return HONE_OK;
}

#define WANT_STR(v, key)                                                                           \
    do {                                                                                           \
        if (!json_is_string(v)) {                                                                  \
            snprintf(err, errlen, "%s: must be a string", key);                                    \
            goto fail;                                                                             \
        }                                                                                          \
    } while (0)

/* fair_share: {max_running_per_user: N, max_queued_per_user: N, weights: {NAME: W}} (0: no
 * cap; a weight is a number above 0). */
static int fair_share(hone_controller_config *c, json_t *v, char *err, size_t errlen)
{
    const char *k, *name;
    json_t *kv, *w;
    long long n;
    if (!json_is_object(v)) {
        snprintf(err, errlen,
                 "fair_share: expected {max_running_per_user: INT, "
                 "max_queued_per_user: INT, weights: {USER: NUMBER}}");
        return HONE_EINVAL;
    }
    json_object_foreach(v, k, kv)
    {
        char full[64];
        snprintf(full, sizeof full, "fair_share.%s", k);
        if (!strcmp(k, "max_running_per_user") || !strcmp(k, "max_queued_per_user")) {
            if (want_int(kv, full, 0, 1 << 20, &n, err, errlen))
                return HONE_EINVAL;
            *(!strcmp(k, "max_running_per_user") ? &c->fair_max_running : &c->fair_max_queued) =
                (int)n;
        } else if (!strcmp(k, "weights")) {
            if (!json_is_object(kv) && !json_is_null(kv)) {
                snprintf(err, errlen, "%s: must be a mapping of user names to weights", full);
                return HONE_EINVAL;
            }
            json_t *ws = json_object();
            json_object_foreach(kv, name, w)
            {
                double x = json_number_value(w);
                if (!json_is_number(w) || !(x > 0 && x <= 1e6)) {
                    snprintf(err, errlen, "%s.%s: must be a number in (0, 1000000]", full, name);
                    json_decref(ws);
                    return HONE_EINVAL;
                }
                json_object_set_new(ws, name, json_real(x));
            }
            free(c->fair_weights);
            c->fair_weights = json_object_size(ws) ? json_dumps(ws, JSON_COMPACT) : NULL;
            json_decref(ws);
        } else {
            snprintf(err, errlen, "%s: unknown key", full);
            return HONE_EINVAL;
        }
    }
    return HONE_OK;
}

int hone_controller_config_load(hone_controller_config *c, const char *path, char *err,
                                size_t errlen)
{
    json_t *root = NULL, *v;
    const char *key;
    long long n;
    int rc = yaml_file_json(path, &root, err, errlen);
    if (rc)
        return rc;
    json_object_foreach(root, key, v)
    {
        if (!strcmp(key, "listen")) {
            WANT_STR(v, key);
            if (parse_listen(c, json_string_value(v), err, errlen))
                goto fail;
        } else if (!strcmp(key, "data_dir") || !strcmp(key, "db") || !strcmp(key, "port_file")) {
            WANT_STR(v, key);
            hone_controller_config_set(c, key, json_string_value(v), err, errlen);
        } else if (!strcmp(key, "data_roots")) {
            if (!json_is_array(v)) {
                snprintf(err, errlen, "data_roots: must be a list of folders");
                goto fail;
            }
            size_t i;
            json_t *r;
            json_array_foreach(v, i, r)
            {
                if (!json_is_string(r)) {
                    snprintf(err, errlen, "data_roots[%zu]: must be a string", i);
                    goto fail;
                }
                c->data_roots =
                    hone_xrealloc(c->data_roots, sizeof(char *) * (size_t)(c->n_data_roots + 1));
                c->data_roots[c->n_data_roots++] = hone_xstrdup(json_string_value(r));
            }
        } else if (!strcmp(key, "auth")) {
            /* admin_key and token are one key under two names (token: before users existed) */
            const char *ak;
            json_t *av;
            if (!json_is_object(v)) {
                snprintf(err, errlen,
                         "auth: expected {admin_key: STRING, worker_token: STRING, "
                         "token_ttl_seconds: INT}");
                goto fail;
            }
            json_object_foreach(v, ak, av)
            {
                char full[64];
                snprintf(full, sizeof full, "auth.%s", ak);
                if (!strcmp(ak, "token_ttl_seconds")) {
                    if (want_int(av, full, 1, 366LL * 86400, &n, err, errlen))
                        goto fail;
                    c->token_ttl_seconds = (int)n;
                    continue;
                }
                if (strcmp(ak, "admin_key") && strcmp(ak, "token") && strcmp(ak, "worker_token")) {
                    snprintf(err, errlen, "%s: unknown key", full);
                    goto fail;
                }
                if (!json_is_string(av) && !json_is_null(av)) {
                    snprintf(err, errlen, "%s: must be a string", full);
                    goto fail;
                }
                /* empty counts as unset, so a chart's blank value leaves the environment's */
                const char *sv = json_string_value(av);
                set_str(strcmp(ak, "worker_token") ? &c->auth_token : &c->worker_token,
                        sv && *sv ? sv : NULL);
            }
        } else if (!strcmp(key, "limits")) {
            const char *lk;
            json_t *lv;
            if (!json_is_object(v)) {
                snprintf(err, errlen, "limits: must be a mapping");
                goto fail;
            }
            json_object_foreach(v, lk, lv)
            {
                char full[64];
                snprintf(full, sizeof full, "limits.%s", lk);
                if (!strcmp(lk, "coco_json_memory")) { /* all COCO parses at once, bytes */
                    if (want_int(lv, full, 1 << 20, 1LL << 40, &n, err, errlen))
                        goto fail;
                    c->coco_json_memory = (size_t)n;
                    continue;
                }
                if (!strcmp(lk, "downloads_per_user")) { /* admins and workers are not counted */
                    if (want_int(lv, full, 1, 1024, &n, err, errlen))
                        goto fail;
                    c->downloads_per_user = (int)n;
                    continue;
                }
                int count = !strcmp(lk, "uploads") || !strcmp(lk, "connections") ||
                            !strcmp(lk, "connections_per_address") || !strcmp(lk, "streams");
                if (want_int(lv, full, count ? 1 : 1024, count ? 1 << 20 : 1LL << 40, &n, err,
                             errlen))
                    goto fail;
                if (!strcmp(lk, "uploads") && n > 1024) {
                    snprintf(err, errlen, "%s: must be at most 1024", full);
                    goto fail;
                }
                if (!strcmp(lk, "streams") && n > 4096) {
                    snprintf(err, errlen, "%s: must be at most 4096", full);
                    goto fail;
                }
                if (!strcmp(lk, "uploads"))
                    c->max_uploads = (int)n;
                else if (!strcmp(lk, "streams"))
                    c->max_streams = (int)n;
                else if (!strcmp(lk, "connections"))
                    c->max_connections = (int)n;
                else if (!strcmp(lk, "connections_per_address"))
                    c->max_per_address = (int)n;
                else if (!strcmp(lk, "upload_inflight_bytes"))
                    c->upload_inflight = (size_t)n;
                else if (!strcmp(lk, "body_bytes"))
                    c->max_body_bytes = (size_t)n;
                else if (!strcmp(lk, "upload_bytes"))
                    c->max_upload_bytes = (size_t)n;
                else if (!strcmp(lk, "header_bytes"))
                    c->max_header_bytes = (size_t)n;
                else {
                    snprintf(err, errlen, "%s: unknown key", full);
                    goto fail;
                }
            }
        } else if (!strcmp(key, "fair_share")) {
            if (fair_share(c, v, err, errlen))
                goto fail;
        } else if (!strcmp(key, "lease_seconds") || !strcmp(key, "heartbeat_seconds") ||
                   !strcmp(key, "max_attempts") || !strcmp(key, "max_wait_seconds")) {
            if (want_int(v, key, 1, 86400, &n, err, errlen))
                goto fail;
            if (!strcmp(key, "lease_seconds"))
                c->lease_seconds = (int)n;
            else if (!strcmp(key, "heartbeat_seconds"))
                c->heartbeat_seconds = (int)n;
            else if (!strcmp(key, "max_attempts"))
                c->max_attempts = (int)n;
            else
                c->max_wait_seconds = (int)n;
        } else if (!strcmp(key, "dataset_checks")) {
            if (want_int(v, key, 1, 64, &n, err, errlen))
                goto fail;
            c->dataset_checks = (int)n;
        } else if (!strcmp(key, "log_format")) {
            WANT_STR(v, key);
            if (!strcmp(json_string_value(v), "json"))
                c->log_json = 1;
            else if (!strcmp(json_string_value(v), "text"))
                c->log_json = 0;
            else {
                snprintf(err, errlen, "log_format: must be json or text");
                goto fail;
            }
        } else {
            snprintf(err, errlen, "%s: unknown key", key);
            goto fail;
        }
    }
    json_decref(root);
    return HONE_OK;
fail:
    json_decref(root);
    return HONE_EINVAL;
}
