/* What a worker may report for an epoch: the metric names hone-train writes for the networks the
 * controller knows (all image classifiers today), each with its natural range. A report outside
 * this set is refused before anything is stored, so a bad or hostile worker can neither grow the
 * store with made-up keys nor make an impossible value (an accuracy of 1e308) the AutoML best.
 * Detection networks will add their own names here (mAP in [0, 1]). Pure: no store, no HTTP.
 * The error field is "metrics" for a name or type problem, "metrics.<name>" for a value out of
 * its range. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "hone.h"
#include "report_check.h"

typedef struct metric_rule {
    const char *name;
    double min, max; /* inclusive */
    int integer;
} metric_rule;

static const metric_rule rules[] = {
    {"epoch", 1, 100000, 1},      {"epochs", 1, 100000, 1},          {"train_loss", 0, INFINITY, 0},
    {"val_loss", 0, INFINITY, 0}, {"test_loss", 0, INFINITY, 0},     {"train_accuracy", 0, 1, 0},
    {"val_accuracy", 0, 1, 0},    {"test_accuracy", 0, 1, 0},        {"lr", 0, 100, 0},
    {"seconds", 0, 1e9, 0},       {"images_per_second", 0, 1e12, 0},
};

int ctl_report_metrics_check(const json_t *metrics, char *field, size_t fieldlen, char *msg,
                             size_t msglen)
{
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)metrics, k, v)
    {
        const metric_rule *r = NULL;
        for (size_t i = 0; i < HONE_ARRAY_LEN(rules) && !r; i++)
            if (!strcmp(k, rules[i].name))
                r = &rules[i];
        if (!r) {
            snprintf(field, fieldlen, "metrics");
            snprintf(msg, msglen, "metrics.%.60s%s is not a metric hone-train reports", k,
                     strlen(k) > 60 ? "..." : "");
            return HONE_EINVAL;
        }
        if (json_is_null(v)) /* not computed this epoch */
            continue;
        if (!json_is_number(v)) {
            snprintf(field, fieldlen, "metrics");
            snprintf(msg, msglen, "metrics.%s must be a number", k);
            return HONE_EINVAL;
        }
        snprintf(field, fieldlen, "metrics.%s", k);
        double x = json_number_value(v);
        if (!isfinite(x) || x < r->min || x > r->max || (r->integer && x != floor(x))) {
            snprintf(msg, msglen, "metrics.%s is %.17g; it must be %s in [%g, %g]", k, x,
                     r->integer ? "an integer" : "finite and", r->min, r->max);
            return HONE_EINVAL;
        }
    }
    return HONE_OK;
}
