/* tests/spec/test_spec_spaces.c: the AutoML spaces spec/'s table gives each network. Each default
 * set's contents (augmentation, depth and the schedule for the resnets, the optimizer's own
 * parameters as conditionals for mlp and cnn) and its size; every space, default and whole, parses
 * as a search space with its conditions; every network's default spec, sized to datasets small and
 * large, lies inside its swept ranges (so automl_start_from_spec can run it as one trial); and the
 * conditions follow a set edited by adding or removing its parents. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "search.h"
#include "spec.h"
#include "check.h"

static int has(const json_t *sp, const char *k)
{
    return json_object_get(sp, k) != NULL;
}

/* The parent a parameter's condition names, and whether `value` is among its values. */
static int cond_on(const json_t *sp, const char *k, const char *parent, const char *value)
{
    json_t *c = json_object_get(json_object_get(sp, k), "condition");
    json_t *vals = json_object_get(c, parent), *v;
    size_t i;
    if (json_object_size(c) != 1 || !json_is_array(vals))
        return 0;
    json_array_foreach(vals, i,
                       v) if (json_is_string(v) && !strcmp(json_string_value(v), value)) return 1;
    return 0;
}

/* The space parses as a search space (its conditions valid); returns its parameter count. */
static int parses(const json_t *sp, const char *what)
{
    char *t = json_dumps(sp, JSON_PRESERVE_ORDER), err[256] = "";
    hone_space *s = NULL;
    int rc = hone_space_parse(t, &s, err, sizeof err);
    if (rc)
        fprintf(stderr, "%s: %s\n%s\n", what, err, t);
    CHECK(rc == 0);
    int n = s ? hone_space_nparams(s) : 0;
    hone_space_free(s);
    free(t);
    return n;
}

static void default_sets(void)
{
    json_t *mlp = hone_spec_space("mlp", 0), *cnn = hone_spec_space("cnn", 0);
    /* the optimizer swept, its parameters conditional on it */
    for (int i = 0; i < 2; i++) {
        json_t *sp = i ? cnn : mlp;
        CHECK(has(sp, "train.optimizer") && has(sp, "train.lr") && has(sp, "train.batch_size"));
        CHECK(cond_on(sp, "train.momentum", "train.optimizer", "sgd"));
        CHECK(cond_on(sp, "train.beta1", "train.optimizer", "adamw"));
        CHECK(cond_on(sp, "train.beta2", "train.optimizer", "adamw"));
        CHECK(!cond_on(sp, "train.momentum", "train.optimizer", "adamw"));
        CHECK(!json_object_get(json_object_get(sp, "train.lr"), "condition"));
    }
    /* augmentation for the cnn, not for the mlp */
    static const char *const aug[] = {"augment.flip", "augment.crop_padding", "augment.cutout"};
    for (size_t i = 0; i < 3; i++)
        CHECK(has(cnn, aug[i]) && !has(mlp, aug[i]));
    json_decref(mlp);
    json_decref(cnn);

    /* resnets: augmentation, depth, the schedule (step's own keys only given step) */
    static const char *const res[] = {
        "train.lr",          "train.weight_decay", "train.batch_size",     "model.width",
        "network",           "augment.flip",       "augment.crop_padding", "augment.cutout",
        "train.lr_schedule", "train.step_gamma",   "train.step_epochs"};
    for (int n = 2; n <= 3; n++) {
        json_t *sp = hone_spec_space(hone_spec_networks[n], 0);
        for (size_t i = 0; i < HONE_ARRAY_LEN(res); i++)
            CHECK(has(sp, res[i]));
        CHECK(cond_on(sp, "train.step_gamma", "train.lr_schedule", "step"));
        CHECK(cond_on(sp, "train.step_epochs", "train.lr_schedule", "step"));
        /* cosine or step: a constant rate is not worth a third of the first trials */
        json_t *ls = json_object_get(json_object_get(sp, "train.lr_schedule"), "values");
        CHECK(json_array_size(ls) == 2 &&
              !strcmp(json_string_value(json_array_get(ls, 0)), "cosine") &&
              !strcmp(json_string_value(json_array_get(ls, 1)), "step"));
        /* a dozen dimensions at most, so a five-minute search learns something; the optimizer
         * is not swept (sgd's rates are not adamw's), so neither are its parameters */
        CHECK(json_object_size(sp) <= 12);
        CHECK(!has(sp, "train.optimizer") && !has(sp, "train.momentum"));
        json_t *net = json_object_get(json_object_get(sp, "network"), "values");
        CHECK(json_array_size(net) == 2 &&
              !strcmp(json_string_value(json_array_get(net, 0)), "resnet18") &&
              !strcmp(json_string_value(json_array_get(net, 1)), "resnet34"));
        json_decref(sp);
    }
    /* detectnet_v2 and the others never sweep the network */
    for (int n = 0; n < HONE_SPEC_NNETS; n++) {
        json_t *sp = hone_spec_space(hone_spec_networks[n], 1);
        CHECK(has(sp, "network") == (n == 2 || n == 3));
        CHECK(hone_spec_key_sweepable(hone_spec_key_find("network"), hone_spec_networks[n]) ==
              (n == 2 || n == 3));
        json_decref(sp);
    }
    /* a search may not turn a resnet into an mlp */
    char err[256] = "";
    json_t *p = json_pack("{s:s,s:[s,s]}", "type", "categorical", "values", "resnet18", "mlp");
    CHECK(hone_spec_sweep_check(hone_spec_key_find("network"), p, "resnet18", err, sizeof err) ==
          HONE_EINVAL);
    CHECK(strstr(err, "network: a resnet18 experiment's search may set it to resnet18, resnet34 "
                      "only, not \"mlp\"") != NULL);
    json_decref(p);
    /* a space of one's own may sweep any schedule: the default set's choice is advice */
    p = json_pack("{s:s,s:[s,s]}", "type", "categorical", "values", "constant", "cosine");
    CHECK(hone_spec_sweep_check(hone_spec_key_find("train.lr_schedule"), p, "resnet18", err,
                                sizeof err) == HONE_OK);
    json_decref(p);
}

/* Every space parses (conditions included); a network's default spec sized to a dataset of n
 * training images lies inside the space sized the same way: the default set with each key's
 * "default" the spec's value still parses. */
static void defaults_inside(void)
{
    static const long long sizes[] = {-1, 120, 1000, 60000};
    for (int n = 0; n < HONE_SPEC_NNETS; n++) {
        const char *net = hone_spec_networks[n];
        for (int all = 0; all <= 1; all++) {
            json_t *sp = hone_spec_space(net, all);
            CHECK(parses(sp, net) == (int)json_object_size(sp));
            json_decref(sp);
        }
        for (size_t z = 0; z < HONE_ARRAY_LEN(sizes); z++) {
            hone_spec s;
            hone_spec_defaults(&s, net);
            hone_spec_data d = HONE_SPEC_DATA_UNKNOWN;
            d.train_images = sizes[z];
            if (sizes[z] >= 0)
                hone_spec_size(&s, &d, 0, 0);
            long long ntrain = sizes[z] < 0 ? -1 : sizes[z] - s.data.val_size;
            hone_spec def;
            hone_spec_defaults(&def, net);
            double f = def.train.lr > 0 ? s.train.lr / def.train.lr : 1;
            for (int all = 0; all <= 1; all++) {
                json_t *sp = hone_spec_space_sized(net, all, ntrain, f);
                const char *k;
                json_t *prm;
                json_object_foreach(sp, k, prm)
                {
                    json_object_set_new(prm, "default", hone_spec_get_json(&s, k));
                }
                char what[96];
                snprintf(what, sizeof what, "%s defaults, %lld images, %s", net, sizes[z],
                         all ? "all" : "default set");
                parses(sp, what);
                json_decref(sp);
            }
        }
    }
}

/* A set edited by hand: a child whose parent left loses its condition, one whose parent came
 * back gets it again; keys without a condition are left as they are. */
static void conditions_follow(void)
{
    json_t *sp = hone_spec_space("mlp", 0), *all = hone_spec_space("mlp", 1);
    CHECK(cond_on(sp, "train.momentum", "train.optimizer", "sgd"));
    json_object_del(sp, "train.optimizer");
    hone_spec_space_conditions(sp);
    CHECK(!json_object_get(json_object_get(sp, "train.momentum"), "condition"));
    CHECK(parses(sp, "mlp without the optimizer") == (int)json_object_size(sp));
    json_object_set(sp, "train.nesterov", json_object_get(all, "train.nesterov"));
    json_object_set(sp, "train.optimizer", json_object_get(all, "train.optimizer"));
    hone_spec_space_conditions(sp);
    CHECK(cond_on(sp, "train.momentum", "train.optimizer", "sgd"));
    CHECK(cond_on(sp, "train.nesterov", "train.optimizer", "sgd"));
    CHECK(parses(sp, "mlp with nesterov") == (int)json_object_size(sp));
    json_decref(sp);
    json_decref(all);
}

int main(void)
{
    default_sets();
    defaults_inside();
    conditions_follow();
    if (failures)
        fprintf(stderr, "test_spec_spaces: %d failure(s)\n", failures);
    return failures != 0;
}
