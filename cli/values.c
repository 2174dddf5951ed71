/* values: the words an option takes (--algorithm, --network, --format, --device, --status ...),
 * read from the tables the code itself uses (search's algorithm names, the spec key table, the
 * wire's statuses), so that the check before sending, its "did you mean", bash completion and
 * `hone help TOPIC` never disagree with what the controller and hone-train accept. */
#include "cli.h"
#include "search.h"
#include "spec.h"
#include "wire.h"

#include <stdint.h>
#include <string.h>

static const char *const devices[] = {"cpu", "cuda", "auto", NULL};
static const char *const storages[] = {"shared", "http", NULL};
static const char *const ds_types[] = {"image_classification", "object_detection", NULL};
/* the controller's list (routes_experiments.c); kpi: the network's own (val_map for detectors) */
const char *const cli_metric_names[] = {"kpi",     "val_accuracy", "val_loss", "train_loss",
                                        "val_map", "map",          NULL};

static const char *const *spec_choices(const char *key)
{
    const hone_spec_key *k = hone_spec_key_find(key);
    return k ? k->choices : NULL;
}

static const char *const *formats(void)
{
    return spec_choices("data.format");
}

static const char *const *maths(void)
{
    return spec_choices("train.math");
}

static const char *const *statuses(void)
{
    static const char *names[HONE_STATUS_COUNT + 1];
    for (int i = 0; i < HONE_STATUS_COUNT; i++)
        names[i] = hone_status_name((hone_status)i);
    return names;
}

static const char *const *algorithms(void)
{
    return hone_algo_names;
}

static const char *const *networks(void)
{
    return hone_spec_networks;
}

static const char *const *metrics(void)
{
    return cli_metric_names;
}

#define LIST(name, arr)                                                                            \
    static const char *const *name(void)                                                           \
    {                                                                                              \
        return arr;                                                                                \
    }
LIST(device_list, devices)
LIST(storage_list, storages)
LIST(type_list, ds_types)
#undef LIST

/* check: refused before anything is sent when not in the list: the values only this side reads
 * (the local stack's --device, --storage, --math) and the list filter --status, which the
 * controller takes as given (a typo listed nothing). Offered, not checked: what the controller
 * checks itself, with its own "did you mean" and exit 1 as ever (--algorithm, --network, --format,
 * --type), and --metric (`job curves` draws any metric a trainer reports). */
static const struct {
    const char *opt;
    const char *const *(*list)(void);
    int check;
} values[] = {
    {"algorithm", algorithms, 0}, {"network", networks, 0},     {"format", formats, 0},
    {"device", device_list, 1},   {"storage", storage_list, 1}, {"math", maths, 1},
    {"status", statuses, 1},      {"type", type_list, 0},       {"metric", metrics, 0},
};

const char *const *cli_values_of(const char *opt)
{
    for (size_t i = 0; opt && i < HONE_ARRAY_LEN(values); i++)
        if (!strcmp(values[i].opt, opt))
            return values[i].list();
    return NULL;
}

int cli_values_check(const cli_args *a, char *err, size_t errlen)
{
    for (size_t i = 0; i < HONE_ARRAY_LEN(values); i++) {
        const char *v = cli_arg(a, values[i].opt), *const * l;
        if (!v || !values[i].check || !(l = values[i].list()))
            continue;
        int found = 0;
        for (size_t j = 0; l[j]; j++)
            found |= !strcmp(l[j], v);
        if (found)
            continue;
        size_t n = (size_t)snprintf(err, errlen, "--%s must be ", values[i].opt);
        for (size_t j = 0; l[j] && n < errlen; j++)
            n += (size_t)snprintf(err + n, errlen - n, "%s%s",
                                  j == 0     ? ""
                                  : l[j + 1] ? ", "
                                             : " or ",
                                  l[j]);
        const char *near = hone_suggest(v, l, SIZE_MAX);
        if (n < errlen)
            snprintf(err + n, errlen - n, " (got '%s')%s%s%s", v, near ? "; did you mean " : "",
                     near ? near : "", near ? "?" : "");
        return HONE_EINVAL;
    }
    return HONE_OK;
}
