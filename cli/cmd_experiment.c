/* cmd_experiment: `hone experiment create|list|get|delete|automl-defaults` and
 * `hone automl start`, which folds its flags into the experiment's automl_settings (TAO's names)
 * and starts an AutoML job. */
#include "cli.h"
#include "wire.h"

#include <stdlib.h>
#include <string.h>

static void exp_path(const char *id, const char *suffix, char *buf, size_t len)
{
    char *e = hone_rest_escape(id);
    snprintf(buf, len, "/api/v1/experiments/%s%s", e, suffix);
    free(e);
}

/* --spec k=v (repeatable) into a nested specs object; prints a usage error on a bad one. */
static int exp_specs(cli_ctx *c, json_t **out)
{
    const char **v;
    int n = cli_multi(c->a, "spec", &v);
    char err[512];

    *out = json_object();
    for (int i = 0; i < n; i++) {
        if (cli_set_dotted(*out, v[i], err, sizeof(err)) != 0) {
            fprintf(stderr, "usage error: --spec %s\n", err);
            json_decref(*out);
            *out = NULL;
            return 2;
        }
    }
    return 0;
}

static int experiment_create(cli_ctx *c)
{
    json_t *body = json_object(), *ds = json_array(), *specs = NULL;
    const char **v;
    int n = cli_multi(c->a, "train-dataset", &v), rc;
    hone_rest_resp resp;

    for (int i = 0; i < n; i++)
        json_array_append_new(ds, json_string(v[i]));
    json_object_set_new(body, "name", json_string(cli_arg(c->a, "name")));
    json_object_set_new(body, "network_arch", json_string(cli_arg(c->a, "network")));
    json_object_set_new(body, "train_datasets", ds);
    if (cli_arg(c->a, "eval-dataset"))
        json_object_set_new(body, "eval_dataset", json_string(cli_arg(c->a, "eval-dataset")));
    if (cli_arg(c->a, "metric")) /* else the server's default: the network's own (kpi) */
        json_object_set_new(body, "metric", json_string(cli_arg(c->a, "metric")));
    rc = exp_specs(c, &specs);
    if (rc != 0) {
        json_decref(body);
        return rc;
    }
    if (json_object_size(specs) > 0)
        json_object_set(body, "specs", specs);
    json_decref(specs);
    rc = cli_call(c, "POST", "/api/v1/experiments", body, &resp);
    json_decref(body);
    if (rc != 0)
        return rc;
    if (c->json)
        cli_print_json(resp.json);
    else
        printf("created experiment %s (%s, %s)\n",
               json_string_value(json_object_get(resp.json, "id")),
               json_string_value(json_object_get(resp.json, "name")),
               json_string_value(json_object_get(resp.json, "network_arch")));
    hone_rest_resp_clear(&resp);
    return 0;
}

static int experiment_list(cli_ctx *c)
{
    static const char *const h[] = {"ID", "NAME", "NETWORK", "METRIC", "TRAIN DATASETS"};
    static const char *const k[] = {"id", "name", "network_arch", "metric", "train_datasets"};

    return cli_get_list(c, "/api/v1/experiments", "experiments", h, k, 5);
}

static int experiment_get(cli_ctx *c)
{
    char path[512];

    exp_path(c->a->pos[0], "", path, sizeof(path));
    return cli_get_show(c, path);
}

static int experiment_delete(cli_ctx *c)
{
    hone_rest_resp resp;
    char path[512];

    exp_path(c->a->pos[0], "", path, sizeof(path));
    if (cli_call(c, "DELETE", path, NULL, &resp) != 0)
        return 1;
    if (c->json)
        printf("{\"deleted\": \"%s\"}\n", c->a->pos[0]);
    else
        printf("deleted experiment %s\n", c->a->pos[0]);
    hone_rest_resp_clear(&resp);
    return 0;
}

static void defaults_row(const char *name, const json_t *p, int swept, char **row)
{
    char buf[256];
    const char *type = json_string_value(json_object_get(p, "type"));

    row[0] = hone_xstrdup(name);
    row[1] = hone_xstrdup(type ? type : "?");
    if (json_object_get(p, "values")) {
        row[2] = hone_xstrdup(cli_cell(json_object_get(p, "values"), buf, sizeof(buf)));
    } else if (json_object_get(p, "min")) {
        char step[32] = "";
        if (json_integer_value(json_object_get(p, "step")) > 1)
            snprintf(step, sizeof(step), " step %lld",
                     (long long)json_integer_value(json_object_get(p, "step")));
        snprintf(buf, sizeof(buf), "%g .. %g%s%s", json_number_value(json_object_get(p, "min")),
                 json_number_value(json_object_get(p, "max")), step,
                 json_is_true(json_object_get(p, "log")) ? " (log)" : "");
        row[2] = hone_xstrdup(buf);
    } else {
        row[2] = hone_xstrdup(type && strcmp(type, "bool") == 0 ? "true, false" : "-");
    }
    /* a conditional parameter: swept only while its parents hold those values (RANGE if a=x|y) */
    const json_t *cond = json_object_get(p, "condition"), *vals, *v;
    const char *parent;
    json_object_foreach((json_t *)cond, parent, vals)
    {
        size_t used = strlen(row[2]), i;
        char c[256], pbuf[128];
        snprintf(c, sizeof(c), " %s %s=", strstr(row[2], " if ") ? "and" : "if",
                 cli_escape(parent, pbuf, sizeof(pbuf)));
        json_array_foreach(vals, i, v)
        {
            size_t l = strlen(c);
            snprintf(c + l, sizeof(c) - l, "%s%s", i ? "|" : "",
                     json_is_boolean(v) ? (json_is_true(v) ? "true" : "false")
                                        : cli_cell(v, buf, sizeof(buf)));
        }
        row[2] = hone_xrealloc(row[2], used + strlen(c) + 1);
        memcpy(row[2] + used, c, strlen(c) + 1);
    }
    /* the value the experiment's jobs train with: as the spec writes it (0.9, 5e-4, true) */
    const json_t *d = json_object_get(p, "default");
    if (json_is_real(d))
        snprintf(buf, sizeof(buf), "%g", json_real_value(d));
    else if (json_is_boolean(d))
        snprintf(buf, sizeof(buf), "%s", json_is_true(d) ? "true" : "false");
    row[3] =
        hone_xstrdup(json_is_real(d) || json_is_boolean(d) ? buf : cli_cell(d, buf, sizeof(buf)));
    row[4] = hone_xstrdup(swept ? "yes" : "no");
}

static int experiment_automl_defaults(cli_ctx *c)
{
    static const char *const h[] = {"PARAMETER", "TYPE", "RANGE", "DEFAULT", "SWEPT"};
    hone_rest_resp resp;
    const json_t *def, *all;
    const char *key;
    json_t *p;
    char path[512], ***rows;
    int n = 0;

    exp_path(c->a->pos[0], "/automl-defaults", path, sizeof(path));
    if (cli_call(c, "GET", path, NULL, &resp) != 0)
        return 1;
    if (c->json) {
        cli_print_json(resp.json);
        hone_rest_resp_clear(&resp);
        return 0;
    }
    def = json_object_get(resp.json, "default_hyperparameters");
    all = json_object_get(resp.json, "all_hyperparameters");
    if (!json_is_object(all))
        all = def;
    rows = hone_xcalloc(json_object_size(all) + 1, sizeof(char **));
    json_object_foreach((json_t *)all, key, p)
    {
        rows[n] = hone_xcalloc(5, sizeof(char *));
        defaults_row(key, p, json_object_get(def, key) != NULL, rows[n]);
        n++;
    }
    cli_print_table(h, 5, rows, n);
    for (int i = 0; i < n; i++) {
        for (int j = 0; j < 5; j++)
            free(rows[i][j]);
        free(rows[i]);
    }
    free(rows);
    /* what the experiment's dataset sized (DEFAULT above is the spec its jobs train) */
    const json_t *sized = json_object_get(resp.json, "sized");
    const json_t *ntrain = json_object_get(resp.json, "training_images");
    if (json_is_integer(ntrain) && json_object_size(sized)) {
        char buf[64];
        int first = 1;
        printf("\nsized to the dataset (%lld training images):",
               (long long)json_integer_value(ntrain));
        json_object_foreach((json_t *)sized, key, p)
        {
            printf("%s %s=%s", first ? "" : ",", key, cli_cell(p, buf, sizeof(buf)));
            first = 0;
        }
        printf("\n(a key set in the experiment's or a job's specs is used as set)\n");
    }
    hone_rest_resp_clear(&resp);
    return 0;
}

/* The automl_settings that the flags ask for, over `current` (may be NULL). */
static int automl_settings(cli_ctx *c, const json_t *current, json_t **out)
{
    static const struct {
        const char *flag, *key;
        long lo, hi;
    } ints[] = {
        {"max-recommendations", "automl_max_recommendations", 1, 100000},
        {"R", "automl_R", 1, 100000},
        {"nu", "automl_nu", 2, 100},
        {"epoch-multiplier", "epoch_multiplier", 1, 10000},
        {"max-parallel", "automl_max_parallel", 1, 10000},
        {"max-failed-trials", "automl_max_failed_trials", 1, 100000},
        {"seed", "seed", 0, 2147483647L},
    };
    json_t *s = json_is_object(current) ? json_deep_copy(current) : json_object();
    json_t *space = NULL;
    const char **v;
    char err[512], name[128];
    int n;

    json_object_set_new(s, "automl_enabled", json_true());
    if (cli_arg(c->a, "algorithm"))
        json_object_set_new(s, "automl_algorithm", json_string(cli_arg(c->a, "algorithm")));
    for (size_t i = 0; i < HONE_ARRAY_LEN(ints); i++) {
        long x = -1;
        if (cli_arg_int(c->a, ints[i].flag, ints[i].lo, ints[i].hi, &x, err, sizeof(err)) != 0)
            goto usage;
        if (x >= 0 && cli_arg(c->a, ints[i].flag))
            json_object_set_new(s, ints[i].key, json_integer(x));
    }
    const char *es = cli_arg(c->a, "early-stop");
    if (es && strcmp(es, "curve") != 0 && strcmp(es, "none") != 0) {
        snprintf(err, sizeof(err), "--early-stop must be curve or none (got '%s')", es);
        goto usage;
    }
    if (es)
        json_object_set_new(s, "automl_early_stop", json_string(es));
    double conf = 0;
    if (cli_arg_num(c->a, "early-stop-confidence", 0.5, 0.999, &conf, err, sizeof(err)) != 0)
        goto usage;
    if (cli_arg(c->a, "early-stop-confidence"))
        json_object_set_new(s, "automl_early_stop_confidence", json_real(conf));
    /* the time budget (minutes, decimals allowed) and the planner's first epoch-time estimate */
    static const struct {
        const char *flag, *key;
        double lo, hi;
    } nums[] = {{"budget-minutes", "automl_budget_minutes", 0.01, 10080},
                {"epoch-seconds", "automl_epoch_seconds", 0.001, 86400}};
    for (size_t i = 0; i < HONE_ARRAY_LEN(nums); i++) {
        double x = 0;
        if (cli_arg_num(c->a, nums[i].flag, nums[i].lo, nums[i].hi, &x, err, sizeof(err)) != 0)
            goto usage;
        if (cli_arg(c->a, nums[i].flag))
            json_object_set_new(s, nums[i].key, json_real(x));
    }
    n = cli_multi(c->a, "param", &v);
    for (int i = 0; i < n; i++) {
        json_t *entry;
        if (cli_param_parse(v[i], name, sizeof(name), &entry, err, sizeof(err)) != 0)
            goto usage;
        if (!space)
            space = json_object();
        json_object_set_new(space, name, entry);
    }
    /* --param, --add-param and --remove-param are one choice of the swept set: any of them
     * replaces all three (the controller merges automl_settings key by key, so a set chosen by
     * an earlier start would otherwise stay beside this one); none leaves the set as it was. */
    static const struct {
        const char *flag, *key;
    } sets[] = {{"add-param", "automl_add_hyperparameters"},
                {"remove-param", "automl_remove_hyperparameters"}};
    int chosen = space != NULL;
    for (size_t i = 0; i < HONE_ARRAY_LEN(sets); i++)
        chosen |= cli_multi(c->a, sets[i].flag, &v) > 0;
    if (chosen) {
        json_object_set_new(s, "automl_hyperparameters", space ? space : json_null());
        for (size_t i = 0; i < HONE_ARRAY_LEN(sets); i++) {
            json_t *arr = json_array();
            n = cli_multi(c->a, sets[i].flag, &v);
            for (int j = 0; j < n; j++)
                json_array_append_new(arr, json_string(v[j]));
            json_object_set_new(s, sets[i].key, arr);
        }
    }
    *out = s;
    return 0;
usage:
    fprintf(stderr, "usage error: %s\n", err);
    json_decref(space);
    json_decref(s);
    return 2;
}

static int automl_start(cli_ctx *c)
{
    const char *exp = cli_arg(c->a, "experiment");
    json_t *settings = NULL, *patch = NULL, *body = NULL, *specs = NULL;
    hone_rest_resp resp = {0};
    char path[512];
    int rc;

    rc = exp_specs(c, &specs);
    if (rc != 0)
        return rc;
    /* Flags are checked before anything is sent; the controller merges automl_settings key by
     * key, so only what the flags say is patched. */
    rc = automl_settings(c, NULL, &settings);
    if (rc != 0)
        goto fail;
    exp_path(exp, "", path, sizeof(path));
    patch = json_object();
    json_object_set(patch, "automl_settings", settings);
    rc = cli_call(c, "PATCH", path, patch, &resp);
    if (rc != 0)
        goto fail;
    hone_rest_resp_clear(&resp);
    body = json_object();
    json_object_set_new(body, "action", json_string(hone_kind_name(HONE_KIND_AUTOML)));
    if (json_object_size(specs) > 0)
        json_object_set(body, "specs", specs);
    if (cli_arg(c->a, "name"))
        json_object_set_new(body, "name", json_string(cli_arg(c->a, "name")));
    if (cli_arg(c->a, "parent")) /* fine-tuning: every trial starts from that job's model */
        json_object_set_new(body, "parent_job_id", json_string(cli_arg(c->a, "parent")));
    exp_path(exp, "/jobs", path, sizeof(path));
    rc = cli_call(c, "POST", path, body, &resp);
    if (rc != 0)
        goto fail;
    if (cli_flag(c->a, "wait")) {
        const char *id = json_string_value(json_object_get(resp.json, "id"));
        char idbuf[128];
        json_t *fin = NULL;
        snprintf(idbuf, sizeof(idbuf), "%s", id ? id : "");
        if (!c->json)
            printf("started AutoML job %s\n", idbuf);
        rc = cli_job_wait(c, idbuf, 0, c->json ? NULL : stdout, &fin);
        if (c->json && fin)
            cli_print_json(fin);
        json_decref(fin);
    } else if (c->json) {
        cli_print_json(resp.json);
    } else {
        const json_t *a = json_object_get(resp.json, "automl");
        printf("started AutoML job %s (%s); follow it with: hone job wait %s\n",
               json_string_value(json_object_get(resp.json, "id")),
               a && json_string_value(json_object_get(a, "algorithm"))
                   ? json_string_value(json_object_get(a, "algorithm"))
               : json_string_value(json_object_get(settings, "automl_algorithm"))
                   ? json_string_value(json_object_get(settings, "automl_algorithm"))
                   : "default algorithm",
               json_string_value(json_object_get(resp.json, "id")));
    }
fail:
    hone_rest_resp_clear(&resp);
    json_decref(settings);
    json_decref(patch);
    json_decref(body);
    json_decref(specs);
    return rc;
}

static const cli_opt create_opts[] = {
    {"name", CLI_VALUE, "NAME  experiment name", 1},
    {"network", CLI_VALUE, "ARCH  mlp, cnn, resnet18, resnet34 or detectnet_v2", 1},
    {"train-dataset", CLI_MULTI, "ID  training dataset (repeatable)", 1},
    {"eval-dataset", CLI_VALUE, "ID  evaluation dataset (default: the train set's test split)", 0},
    {"metric", CLI_VALUE,
     "METRIC  kpi (default: val_map for detectnet_v2, else val_accuracy), val_accuracy, val_loss, "
     "train_loss, val_map or map",
     0},
    {"spec", CLI_MULTI, "KEY=VALUE  base spec override, e.g. train.epochs=10 (repeatable)", 0},
};

/* `hone train start --experiment ID`: one train job (TAO's model train) on the experiment's spec
 * with --spec overrides; --wait follows it like `hone job wait`. */
static int train_start(cli_ctx *c)
{
    json_t *specs = NULL, *body = NULL, *fin = NULL;
    hone_rest_resp resp = {0};
    char path[512], id[128];
    int rc = exp_specs(c, &specs);
    if (rc != 0)
        return rc;
    body = json_pack("{s:s}", "action", hone_kind_name(HONE_KIND_TRAIN));
    if (json_object_size(specs) > 0)
        json_object_set(body, "specs", specs);
    if (cli_arg(c->a, "name"))
        json_object_set_new(body, "name", json_string(cli_arg(c->a, "name")));
    if (cli_arg(c->a, "parent")) /* fine-tuning: start from that job's model */
        json_object_set_new(body, "parent_job_id", json_string(cli_arg(c->a, "parent")));
    exp_path(cli_arg(c->a, "experiment"), "/jobs", path, sizeof(path));
    rc = cli_call(c, "POST", path, body, &resp);
    if (rc != 0)
        goto fail;
    snprintf(id, sizeof(id), "%s", json_string_value(json_object_get(resp.json, "id")));
    if (cli_flag(c->a, "wait")) {
        if (!c->json)
            printf("started train job %s\n", id);
        rc = cli_job_wait(c, id, 0, c->json ? NULL : stdout, &fin);
        if (c->json && fin)
            cli_print_json(fin);
    } else if (c->json) {
        cli_print_json(resp.json);
    } else {
        printf("started train job %s; follow it with: hone job wait %s\n", id, id);
    }
fail:
    hone_rest_resp_clear(&resp);
    json_decref(fin);
    json_decref(body);
    json_decref(specs);
    return rc;
}

/* `hone experiment update ID`: PATCH of the name, description and specs (the specs given replace
 * the experiment's; the controller validates the result whole). */
static int experiment_update(cli_ctx *c)
{
    json_t *specs = NULL, *body = json_object();
    char path[512];
    int rc = exp_specs(c, &specs);
    if (rc != 0)
        goto fail;
    if (json_object_size(specs) > 0)
        json_object_set(body, "specs", specs);
    static const char *const members[] = {"name", "description"};
    for (size_t i = 0; i < HONE_ARRAY_LEN(members); i++)
        if (cli_arg(c->a, members[i]))
            json_object_set_new(body, members[i], json_string(cli_arg(c->a, members[i])));
    if (json_object_size(body) == 0) {
        fprintf(stderr, "usage error: nothing to change (--name, --description or --spec)\n");
        rc = 2;
        goto fail;
    }
    exp_path(c->a->pos[0], "", path, sizeof(path));
    hone_rest_resp resp = {0};
    rc = cli_call(c, "PATCH", path, body, &resp);
    if (rc == 0) {
        if (c->json)
            cli_print_json(resp.json);
        else
            cli_print_kv(resp.json, 0);
    }
    hone_rest_resp_clear(&resp);
fail:
    json_decref(specs);
    json_decref(body);
    return rc;
}

static const cli_opt train_opts[] = {
    {"experiment", CLI_VALUE, "ID  the experiment to train", 1},
    {"spec", CLI_MULTI, "KEY=VALUE  spec override (repeatable)", 0},
    {"name", CLI_VALUE, "NAME  job name", 0},
    {"parent", CLI_VALUE, "JOB  fine-tune: start from the model of this done train or AutoML job",
     0},
    {"wait", CLI_FLAG, "  wait for the job, showing progress", 0},
};

static const cli_opt update_opts[] = {
    {"name", CLI_VALUE, "NAME  new name", 0},
    {"description", CLI_VALUE, "TEXT  new description", 0},
    {"spec", CLI_MULTI, "KEY=VALUE  the experiment's specs, replaced by these (repeatable)", 0},
};

static const cli_opt automl_opts[] = {
    {"experiment", CLI_VALUE, "ID  the experiment to search on", 1},
    {"algorithm", CLI_VALUE, "ALGO  bayesian, hyperband, asha, bohb, dehb, random or hyperband_es",
     0},
    {"max-recommendations", CLI_VALUE, "N  most trials to run", 0},
    {"R", CLI_VALUE, "N  Hyperband's largest budget (in epoch units)", 0},
    {"nu", CLI_VALUE, "N  Hyperband's reduction factor", 0},
    {"epoch-multiplier", CLI_VALUE, "N  epochs per budget unit", 0},
    {"max-parallel", CLI_VALUE, "N  trials running at once", 0},
    {"max-failed-trials", CLI_VALUE,
     "N  failed trials that end the search (default: 3 while none has a metric, then half the "
     "trials)",
     0},
    {"seed", CLI_VALUE, "N  search seed", 0},
    {"early-stop", CLI_VALUE,
     "curve|none  stop trials whose learning curve cannot reach the best (default: curve for "
     "bayesian and random)",
     0},
    {"early-stop-confidence", CLI_VALUE,
     "P  how sure a curve stop must be (0.5-0.999, default 0.95)", 0},
    {"budget-minutes", CLI_VALUE,
     "M  time budget: the search sizes itself to it, launches only what can finish and ends "
     "within it with the best finished trial (decimals allowed; no count cap ends it early)",
     0},
    {"epoch-seconds", CLI_VALUE,
     "S  seconds one epoch takes on one worker: the budget planner's first estimate (measured "
     "from the trials after that)",
     0},
    {"param", CLI_MULTI,
     "NAME=DEF  sweep NAME: float:LO:HI[:log], int:LO:HI[:log], A,B,C, bool, each optionally "
     "@PARENT=V1|V2 (swept only while PARENT holds one of them; the --param flags are the whole "
     "swept set)",
     0},
    {"add-param", CLI_MULTI, "NAME  add a parameter to the default swept set", 0},
    {"remove-param", CLI_MULTI,
     "NAME  drop a parameter from the default swept set (any of these three flags replaces the "
     "set an earlier start chose)",
     0},
    {"spec", CLI_MULTI, "KEY=VALUE  spec override for every trial (repeatable)", 0},
    {"name", CLI_VALUE, "NAME  job name", 0},
    {"parent", CLI_VALUE, "JOB  fine-tune: start from the model of this done train or AutoML job",
     0},
    {"wait", CLI_FLAG, "  wait for the job, showing progress", 0},
};

const cli_command cli_experiment_commands[] = {
    {"experiment", "create", experiment_create, create_opts, (int)HONE_ARRAY_LEN(create_opts), 0, 0,
     "--name N --network ARCH --train-dataset ID [--spec k=v ...]", "create an experiment", 0},
    {"experiment", "list", experiment_list, NULL, 0, 0, 0, "", "list experiments", 0},
    {"experiment", "get", experiment_get, NULL, 0, 1, 1, "ID", "show one experiment", 0},
    {"experiment", "update", experiment_update, update_opts, (int)HONE_ARRAY_LEN(update_opts), 1, 1,
     "ID [--name N] [--description T] [--spec k=v ...]",
     "change an experiment's name, description or specs", 0},
    {"experiment", "delete", experiment_delete, NULL, 0, 1, 1, "ID", "delete an experiment", 0},
    {"experiment", "automl-defaults", experiment_automl_defaults, NULL, 0, 1, 1, "ID",
     "list the hyperparameters AutoML sweeps by default and all that could be", 0},
    {"automl", "start", automl_start, automl_opts, (int)HONE_ARRAY_LEN(automl_opts), 0, 0,
     "--experiment ID [--algorithm A] [--budget-minutes M] [--max-recommendations N] [--param ...] "
     "[--parent JOB]",
     "start an AutoML search on an experiment", 0},
    {"train", "start", train_start, train_opts, (int)HONE_ARRAY_LEN(train_opts), 0, 0,
     "--experiment ID [--spec k=v ...] [--name N] [--parent JOB] [--wait]",
     "start one train job on an experiment (TAO's model train)", 0},
};
const int cli_nexperiment_commands = (int)HONE_ARRAY_LEN(cli_experiment_commands);
