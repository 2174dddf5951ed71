/* args: the hone command's option parser and the small value grammars it accepts (dotted
 * key=value spec overrides, --param search-space entries). Pure: no I/O, no globals written. */
#include "cli.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

const cli_opt cli_global_opts[] = {
    {"url", CLI_VALUE, "URL  controller URL (env HONE_URL, default http://127.0.0.1:8080)", 0},
    {"token", CLI_VALUE, "TOKEN  bearer token (env HONE_TOKEN)", 0},
    {"json", CLI_FLAG, "  print machine-readable JSON", 0},
    {"help", CLI_FLAG, "  show this help", 0},
    {"version", CLI_FLAG, "  print hone's version", 0},
};
const int cli_nglobal_opts = (int)HONE_ARRAY_LEN(cli_global_opts);

static int args_find(const cli_args *a, const char *name)
{
    for (int i = 0; i < a->nopts; i++) {
        const cli_opt *o =
            i < cli_nglobal_opts ? &cli_global_opts[i] : &a->opts[i - cli_nglobal_opts];
        if (strcmp(o->name, name) == 0)
            return i;
    }
    return -1;
}

static const cli_opt *args_opt(const cli_args *a, int i)
{
    return i < cli_nglobal_opts ? &cli_global_opts[i] : &a->opts[i - cli_nglobal_opts];
}

int cli_args_parse(const cli_opt *opts, int nopts, int npos_min, int npos_max, int argc,
                   char **argv, cli_args *a, char *err, size_t errlen)
{
    int only_pos = 0;

    memset(a, 0, sizeof(*a));
    a->opts = opts;
    a->nopts = cli_nglobal_opts + nopts;
    if (a->nopts > CLI_MAX_OPTS) {
        snprintf(err, errlen, "internal: too many options");
        return HONE_EINVAL;
    }
    for (int i = 0; i < argc; i++) {
        const char *s = argv[i], *val = NULL, *eq;
        char name[64];
        int k;
        const cli_opt *o;

        if (only_pos || s[0] != '-' || s[1] == '\0' || (s[1] != '-' && strcmp(s, "-h") != 0)) {
            if (a->npos >= npos_max || a->npos >= CLI_MAX_POS) {
                snprintf(err, errlen, "unexpected argument '%s'%s", s,
                         npos_max == 0 ? " (this command takes options only)" : "");
                return HONE_EINVAL;
            }
            a->pos[a->npos++] = s;
            continue;
        }
        if (strcmp(s, "--") == 0) {
            only_pos = 1;
            continue;
        }
        if (strcmp(s, "-h") == 0)
            s = "--help";
        eq = strchr(s, '=');
        snprintf(name, sizeof(name), "%.*s", eq ? (int)(eq - s - 2) : (int)strlen(s + 2), s + 2);
        k = args_find(a, name);
        if (k < 0) {
            const char *names[CLI_MAX_OPTS], *near;
            for (int j = 0; j < a->nopts; j++)
                names[j] = args_opt(a, j)->name;
            near = hone_suggest(name, names, (size_t)a->nopts);
            if (near)
                snprintf(err, errlen, "unknown option --%s (did you mean --%s?)", name, near);
            else
                snprintf(err, errlen, "unknown option --%s (see --help for this command's options)",
                         name);
            return HONE_EINVAL;
        }
        o = args_opt(a, k);
        if (o->kind == CLI_FLAG) {
            if (eq) {
                snprintf(err, errlen, "option --%s takes no value (write just --%s)", name, name);
                return HONE_EINVAL;
            }
            a->set[k]++;
            continue;
        }
        if (eq) {
            val = eq + 1;
        } else {
            if (i + 1 >= argc) {
                char meta[32] = "VALUE";
                if (o->help && o->help[0] != ' ')
                    sscanf(o->help, "%31s", meta);
                snprintf(err, errlen, "option --%s needs a value (--%s %s)", name, name, meta);
                return HONE_EINVAL;
            }
            val = argv[++i];
        }
        if (o->kind == CLI_MULTI) {
            if (a->set[k] >= CLI_MAX_MULTI) {
                snprintf(err, errlen, "too many --%s options (at most %d)", name, CLI_MAX_MULTI);
                return HONE_EINVAL;
            }
            a->multi[k][a->set[k]] = val;
        }
        a->val[k] = val;
        a->set[k]++;
    }
    for (int k = 0; k < a->nopts && !cli_flag(a, "help"); k++) {
        const cli_opt *o = args_opt(a, k);
        if (o->required && a->set[k] == 0) {
            char meta[32] = "VALUE";
            sscanf(o->help, "%31s", meta);
            snprintf(err, errlen, "missing --%s (add --%s %s)", o->name, o->name, meta);
            return HONE_EINVAL;
        }
    }
    if (a->npos < npos_min && !cli_flag(a, "help")) {
        snprintf(err, errlen, "missing argument%s (see --help)", npos_min - a->npos > 1 ? "s" : "");
        return HONE_EINVAL;
    }
    return HONE_OK;
}

const char *cli_arg(const cli_args *a, const char *name)
{
    int k = args_find(a, name);
    return k >= 0 ? a->val[k] : NULL;
}

int cli_flag(const cli_args *a, const char *name)
{
    int k = args_find(a, name);
    return k >= 0 ? a->set[k] : 0;
}

int cli_multi(const cli_args *a, const char *name, const char ***vals)
{
    int k = args_find(a, name);
    if (k < 0) {
        *vals = NULL;
        return 0;
    }
    *vals = (const char **)a->multi[k];
    return a->set[k];
}

int cli_arg_int(const cli_args *a, const char *name, long lo, long hi, long *out, char *err,
                size_t errlen)
{
    const char *v = cli_arg(a, name);
    char *end;
    long x;

    if (!v)
        return HONE_OK;
    errno = 0;
    x = strtol(v, &end, 10);
    if (*v == '\0' || *end != '\0' || errno != 0 || x < lo || x > hi) {
        snprintf(err, errlen, "--%s must be an integer from %ld to %ld (got '%s')", name, lo, hi,
                 v);
        return HONE_EINVAL;
    }
    *out = x;
    return HONE_OK;
}

int cli_arg_num(const cli_args *a, const char *name, double lo, double hi, double *out, char *err,
                size_t errlen)
{
    const char *v = cli_arg(a, name);
    char *end;
    double x;

    if (!v)
        return HONE_OK;
    x = strtod(v, &end);
    if (*v == '\0' || *end != '\0' || !isfinite(x) || x < lo || x > hi) {
        snprintf(err, errlen, "--%s must be a number from %g to %g (got '%s')", name, lo, hi, v);
        return HONE_EINVAL;
    }
    *out = x;
    return HONE_OK;
}

json_t *cli_parse_value(const char *text)
{
    json_t *v;
    char *end;
    double d;

    if (text[0] == '\0')
        return json_string("");
    if (strcmp(text, "true") == 0)
        return json_true();
    if (strcmp(text, "false") == 0)
        return json_false();
    if (strcmp(text, "null") == 0)
        return json_null();
    if (text[0] == '{' || text[0] == '[' || text[0] == '"') {
        v = json_loads(text, JSON_DECODE_ANY, NULL);
        if (v)
            return v;
    }
    d = strtod(text, &end);
    if (*end == '\0' && isfinite(d)) {
        char *iend;
        long long ll = strtoll(text, &iend, 10);
        if (*iend == '\0')
            return json_integer(ll);
        return json_real(d);
    }
    return json_string(text);
}

int cli_set_dotted(json_t *obj, const char *kv, char *err, size_t errlen)
{
    const char *eq = strchr(kv, '=');
    char key[256];
    char *part, *save = NULL, *next;
    json_t *cur = obj;

    if (!eq || eq == kv) {
        snprintf(err, errlen, "'%s' must look like key=value (e.g. train.lr=0.01)", kv);
        return HONE_EINVAL;
    }
    if ((size_t)(eq - kv) >= sizeof(key)) {
        snprintf(err, errlen, "key too long in '%s'", kv);
        return HONE_EINVAL;
    }
    memcpy(key, kv, (size_t)(eq - kv));
    key[eq - kv] = '\0';
    part = strtok_r(key, ".", &save);
    while (part) {
        next = strtok_r(NULL, ".", &save);
        if (!next) {
            json_object_set_new(cur, part, cli_parse_value(eq + 1));
            break;
        }
        json_t *child = json_object_get(cur, part);
        if (!json_is_object(child)) {
            child = json_object();
            json_object_set_new(cur, part, child);
        }
        cur = child;
        part = next;
    }
    if (!part) {
        snprintf(err, errlen, "empty key in '%s'", kv);
        return HONE_EINVAL;
    }
    return HONE_OK;
}

static int param_num(const char *s, double *out)
{
    char *end;
    *out = strtod(s, &end);
    return *s != '\0' && *end == '\0' && isfinite(*out);
}

static int param_parse_body(const char *spec, char *name_out, size_t namelen, json_t **entry,
                            char *err, size_t errlen)
{
    const char *eq = strchr(spec, '=');
    char body[512], *f[5] = {0}, *save = NULL;
    int nf = 0;
    json_t *e;
    double lo, hi;

    *entry = NULL;
    if (!eq || eq == spec || (size_t)(eq - spec) >= namelen || strlen(eq + 1) >= sizeof(body)) {
        snprintf(err, errlen,
                 "--param '%s' must look like name=float:LO:HI[:log], name=int:LO:HI[:log], "
                 "name=A,B,C or name=bool",
                 spec);
        return HONE_EINVAL;
    }
    snprintf(name_out, namelen, "%.*s", (int)(eq - spec), spec);
    snprintf(body, sizeof(body), "%s", eq + 1);
    if (strcmp(body, "bool") == 0) {
        e = json_object();
        json_object_set_new(e, "type", json_string("bool"));
        *entry = e;
        return HONE_OK;
    }
    if (strncmp(body, "float:", 6) == 0 || strncmp(body, "int:", 4) == 0) {
        for (char *t = strtok_r(body, ":", &save); t && nf < 5; t = strtok_r(NULL, ":", &save))
            f[nf++] = t;
        if (nf < 3 || nf > 4 || !param_num(f[1], &lo) || !param_num(f[2], &hi) || !(lo < hi) ||
            (nf == 4 && strcmp(f[3], "log") != 0) || (nf == 4 && lo <= 0)) {
            snprintf(err, errlen,
                     "--param %s: write %s:LO:HI or %s:LO:HI:log with numbers LO < HI (LO > 0 "
                     "for log)",
                     name_out, f[0] ? f[0] : "float", f[0] ? f[0] : "float");
            return HONE_EINVAL;
        }
        e = json_object();
        json_object_set_new(e, "type", json_string(f[0]));
        if (strcmp(f[0], "int") == 0) {
            json_object_set_new(e, "min", json_integer((json_int_t)lo));
            json_object_set_new(e, "max", json_integer((json_int_t)hi));
        } else {
            json_object_set_new(e, "min", json_real(lo));
            json_object_set_new(e, "max", json_real(hi));
        }
        if (nf == 4)
            json_object_set_new(e, "log", json_true());
        *entry = e;
        return HONE_OK;
    }
    if (strchr(body, ':')) {
        snprintf(err, errlen,
                 "--param %s: unknown type '%.*s' (use float, int, bool or a list A,B,C)", name_out,
                 (int)(strchr(body, ':') - body), body);
        return HONE_EINVAL;
    }
    e = json_object();
    json_t *vals = json_array();
    json_object_set_new(e, "type", json_string("categorical"));
    for (char *t = strtok_r(body, ",", &save); t; t = strtok_r(NULL, ",", &save))
        json_array_append_new(vals, cli_parse_value(t));
    if (json_array_size(vals) < 1) {
        json_decref(vals);
        json_decref(e);
        snprintf(err, errlen, "--param %s: a categorical needs values A,B,...", name_out);
        return HONE_EINVAL;
    }
    json_object_set_new(e, "values", vals);
    *entry = e;
    return HONE_OK;
}

/* A condition "@PARENT=V1|V2" after the type: the parameter is swept only while PARENT (another
 * --param, categorical or bool) holds one of those values; the controller checks the rest. */
int cli_param_parse(const char *spec, char *name_out, size_t namelen, json_t **entry, char *err,
                    size_t errlen)
{
    const char *at = strchr(spec, '=') ? strrchr(strchr(spec, '='), '@') : NULL;
    char head[600], parent[128];
    if (!at)
        return param_parse_body(spec, name_out, namelen, entry, err, errlen);
    const char *ceq = strchr(at, '=');
    if ((size_t)(at - spec) >= sizeof(head) || !ceq || ceq == at + 1 || !ceq[1] ||
        (size_t)(ceq - at - 1) >= sizeof(parent)) {
        snprintf(err, errlen,
                 "--param '%s': a condition is written @PARENT=V1|V2 after the type (e.g. "
                 "train.momentum=float:0.5:0.99@train.optimizer=sgd)",
                 spec);
        *entry = NULL;
        return HONE_EINVAL;
    }
    snprintf(head, sizeof(head), "%.*s", (int)(at - spec), spec);
    snprintf(parent, sizeof(parent), "%.*s", (int)(ceq - at - 1), at + 1);
    int rc = param_parse_body(head, name_out, namelen, entry, err, errlen);
    if (rc != HONE_OK)
        return rc;
    char vals[512], *save = NULL;
    json_t *arr = json_array();
    snprintf(vals, sizeof(vals), "%s", ceq + 1);
    for (char *t = strtok_r(vals, "|", &save); t; t = strtok_r(NULL, "|", &save))
        json_array_append_new(arr, cli_parse_value(t));
    json_object_set_new(*entry, "condition", json_pack("{s:o}", parent, arr));
    return HONE_OK;
}
