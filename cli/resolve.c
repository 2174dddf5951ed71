/* resolve: a name wherever an id is asked for. Before a command runs, each dataset, experiment or
 * job argument that does not look like an id ("ds-", "exp-", "job-", "cvt-" and 16 hex digits)
 * is looked up by name in the caller's own list (the controller scopes lists to their owner): one
 * match becomes its id, several are an error naming every id, none is left as given so the
 * controller's own "no dataset X" answers it. Also the id lists that bash completion offers. */
#include "cli.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#define RESOLVE_MAX_OWNED 64

static char *owned[RESOLVE_MAX_OWNED]; /* the ids put in place of names, freed at exit */
static int nowned;

static const struct {
    const char *noun;   /* a command noun whose ID/PARENT argument is one of these */
    const char *coll;   /* the REST collection */
    const char *member; /* its list's member */
    const char *query;  /* asked of the list */
    const char *what;   /* for messages */
} kinds[] = {
    {"dataset", "datasets", "datasets", "", "dataset"},
    {"experiment", "experiments", "experiments", "", "experiment"},
    {"job", "jobs", "jobs", "top=1&", "job"}, /* trials have no names of their own */
};

/* option → the kinds[] entry its value names */
static const struct {
    const char *opt;
    int kind;
} opt_kinds[] = {
    {"experiment", 1}, {"train-dataset", 0}, {"eval-dataset", 0}, {"dataset", 0}, {"parent", 2},
};

static int looks_like_id(const char *s)
{
    static const char *const prefixes[] = {"ds-", "exp-", "job-", "cvt-"};
    for (size_t i = 0; i < HONE_ARRAY_LEN(prefixes); i++) {
        size_t n = strlen(prefixes[i]);
        if (strncmp(s, prefixes[i], n) != 0 || strlen(s + n) != 16)
            continue;
        int hex = 1;
        for (const char *p = s + n; *p; p++)
            hex &= isxdigit((unsigned char)*p) != 0;
        if (hex)
            return 1;
    }
    return 0;
}

json_t *cli_resolve_list(cli_ctx *c, int kind, long timeout_s)
{
    json_t *all = json_array();
    long long offset = 0;
    char path[256], err[256];

    for (int page = 0; page < 100; page++) { /* at most 100 pages of 500 */
        hone_rest_resp r;
        snprintf(path, sizeof path, "/api/v1/%s?%slimit=500&offset=%lld", kinds[kind].coll,
                 kinds[kind].query, offset);
        if (hone_rest_call(c->rest, "GET", path, NULL, timeout_s, &r, err, sizeof err) != 0)
            break;
        if (r.status != 200) {
            hone_rest_resp_clear(&r);
            break;
        }
        json_array_extend(all, json_object_get(r.json, kinds[kind].member));
        const json_t *next = json_object_get(r.json, "next_offset");
        long long n = json_is_integer(next) ? (long long)json_integer_value(next) : 0;
        hone_rest_resp_clear(&r);
        if (n <= offset)
            break;
        offset = n;
    }
    return all;
}

int cli_resolve_kind(const char *what)
{
    for (size_t i = 0; what && i < HONE_ARRAY_LEN(kinds); i++)
        if (!strcmp(kinds[i].coll, what) || !strcmp(kinds[i].what, what))
            return (int)i;
    return -1;
}

/* *v (a name or an id) → its id. 0; 2 after printing why when the name is ambiguous. */
static int resolve_one(cli_ctx *c, int kind, const char **v, const char *field)
{
    if (!*v || !**v || looks_like_id(*v))
        return 0;
    json_t *all = cli_resolve_list(c, kind, 30), *o;
    const char *id = NULL;
    size_t i, n = 0;
    char ids[512] = "";

    json_array_foreach(all, i, o)
    {
        const char *name = json_string_value(json_object_get(o, "name"));
        const char *oid = json_string_value(json_object_get(o, "id"));
        if (!oid)
            continue;
        if (!strcmp(oid, *v)) { /* an id after all (an older id shape): it wins */
            n = 0;
            break;
        }
        if (name && !strcmp(name, *v)) {
            size_t l = strlen(ids);
            snprintf(ids + l, sizeof ids - l, "%s%s", n ? ", " : "", oid);
            id = oid;
            n++;
        }
    }
    if (n > 1) {
        char *e = cli_escape_dup(*v);
        fprintf(stderr,
                "usage error: the name '%s' matches %zu %ss: %s; give one of the ids "
                "(field: %s)\n",
                e, n, kinds[kind].what, ids, field);
        free(e);
        json_decref(all);
        return 2;
    }
    if (n == 1 && nowned < RESOLVE_MAX_OWNED) {
        owned[nowned] = hone_xstrdup(id);
        *v = owned[nowned++];
    }
    json_decref(all);
    return 0;
}

int cli_resolve_args(cli_ctx *c, const cli_command *cmd)
{
    cli_args *a = c->a;
    int rc = 0;

    if (cmd->local || !c->rest)
        return 0;
    if (a->npos > 0 && (!strncmp(cmd->usage, "ID", 2) || !strncmp(cmd->usage, "PARENT", 6)))
        for (size_t k = 0; k < HONE_ARRAY_LEN(kinds) && rc == 0; k++)
            if (!strcmp(cmd->noun, kinds[k].noun))
                rc = resolve_one(c, (int)k, &a->pos[0], cmd->usage[0] == 'I' ? "id" : "parent");
    for (int i = 0; i < a->nopts && rc == 0; i++) {
        const cli_opt *o =
            i < cli_nglobal_opts ? &cli_global_opts[i] : &a->opts[i - cli_nglobal_opts];
        for (size_t k = 0; k < HONE_ARRAY_LEN(opt_kinds) && rc == 0; k++) {
            if (strcmp(o->name, opt_kinds[k].opt) != 0 || a->set[i] == 0)
                continue;
            if (o->kind == CLI_MULTI) {
                for (int j = 0; j < a->set[i] && j < CLI_MAX_MULTI && rc == 0; j++)
                    rc = resolve_one(c, opt_kinds[k].kind, &a->multi[i][j], o->name);
                a->val[i] = a->multi[i][a->set[i] - 1];
            } else {
                rc = resolve_one(c, opt_kinds[k].kind, &a->val[i], o->name);
            }
        }
    }
    return rc;
}

void cli_resolve_free(void)
{
    for (int i = 0; i < nowned; i++)
        free(owned[i]);
    nowned = 0;
}
