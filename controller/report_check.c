/* What a worker may report for an epoch: the metric names hone-train writes for the networks the
 * controller knows (all image classifiers today), each with its natural range. A report outside
 * this set is refused before anything is stored, so a bad or hostile worker can neither grow the
 * store with made-up keys nor make an impossible value (an accuracy of 1e308) the AutoML best.
 * Detection networks will add their own names here (mAP in [0, 1]). A convert job reports its
 * progress through the same route: images done and in all, and the rate. Pure: no store, no HTTP.
 * The error field is "metrics" for a name or type problem, "metrics.<name>" for a value out of
 * its range. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "hone.h"
#include "report_check.h"

enum { TRAIN = CTL_REPORT_EPOCHS, CONVERT = CTL_REPORT_PROGRESS };

typedef struct metric_rule {
    const char *name;
    double min, max; /* inclusive */
    int integer;
    int jobs; /* TRAIN, CONVERT: the jobs that report it */
} metric_rule;

/* A packed file holds at most 2^32 images in practice (data/data.h caps what a folder may hold far
 * below): 1e10 is a bound no real dataset reaches. */
static const metric_rule rules[] = {
    {"epoch", 1, 100000, 1, TRAIN},
    {"epochs", 1, 100000, 1, TRAIN},
    {"train_loss", 0, INFINITY, 0, TRAIN},
    {"val_loss", 0, INFINITY, 0, TRAIN},
    {"test_loss", 0, INFINITY, 0, TRAIN},
    {"train_accuracy", 0, 1, 0, TRAIN},
    {"val_accuracy", 0, 1, 0, TRAIN},
    {"test_accuracy", 0, 1, 0, TRAIN},
    {"val_map", 0, 1, 0, TRAIN}, /* detectnet_v2: mAP at IoU 0.5 in place of the accuracies */
    {"test_map", 0, 1, 0, TRAIN},
    {"best_val_map", 0, 1, 0, TRAIN},
    {"lr", 0, 100, 0, TRAIN},
    {"seconds", 0, 1e9, 0, TRAIN | CONVERT},
    {"images_per_second", 0, 1e12, 0, TRAIN | CONVERT},
    {"images_done", 0, 1e10, 1, CONVERT},
    {"images_total", 0, 1e10, 1, CONVERT},
};

int ctl_report_metrics_check(const json_t *metrics, ctl_report_form form, char *field,
                             size_t fieldlen, char *msg, size_t msglen)
{
    const char *k;
    json_t *v;
    int jobs = (int)form;
    int convert = form == CTL_REPORT_PROGRESS;
    json_object_foreach((json_t *)metrics, k, v)
    {
        const metric_rule *r = NULL;
        for (size_t i = 0; i < HONE_ARRAY_LEN(rules) && !r; i++)
            if (!strcmp(k, rules[i].name) && (rules[i].jobs & jobs))
                r = &rules[i];
        if (!r) {
            snprintf(field, fieldlen, "metrics");
            snprintf(msg, msglen, "metrics.%.60s%s is not a metric %s reports", k,
                     strlen(k) > 60 ? "..." : "",
                     convert                     ? "a convert job"
                     : form == CTL_REPORT_EPOCHS ? "hone-train"
                                                 : "a job");
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
    if (convert) {
        const json_t *d = json_object_get(metrics, "images_done");
        const json_t *t = json_object_get(metrics, "images_total");
        if (!json_is_number(d) || !json_is_number(t)) {
            snprintf(field, fieldlen, "metrics");
            snprintf(msg, msglen, "a convert job reports metrics.images_done and images_total");
            return HONE_EINVAL;
        }
        if (json_number_value(d) > json_number_value(t)) {
            snprintf(field, fieldlen, "metrics.images_done");
            snprintf(msg, msglen, "metrics.images_done is %.17g, more than images_total %.17g",
                     json_number_value(d), json_number_value(t));
            return HONE_EINVAL;
        }
    }
    return HONE_OK;
}

int ctl_report_log_check(const json_t *log, char *field, size_t fieldlen, char *msg, size_t msglen)
{
    size_t i, bytes = 0;
    json_t *v;
    snprintf(field, fieldlen, "log");
    if (!json_is_array(log)) {
        snprintf(msg, msglen, "log must be an array of lines");
        return HONE_EINVAL;
    }
    if (json_array_size(log) > HONE_REPORT_LOG_LINES) {
        snprintf(msg, msglen, "log has %zu lines; a report carries at most %d",
                 json_array_size(log), HONE_REPORT_LOG_LINES);
        return HONE_EINVAL;
    }
    json_array_foreach((json_t *)log, i, v)
    {
        if (!json_is_string(v)) {
            snprintf(msg, msglen, "log[%zu] must be a string", i);
            return HONE_EINVAL;
        }
        size_t n = json_string_length(v);
        if (memchr(json_string_value(v), '\n', n) || memchr(json_string_value(v), '\0', n)) {
            snprintf(msg, msglen, "log[%zu] must be one line (no newline or NUL)", i);
            return HONE_EINVAL;
        }
        bytes += n;
    }
    if (bytes > HONE_REPORT_LOG_BYTES) {
        snprintf(msg, msglen, "log has %zu bytes; a report carries at most %d", bytes,
                 HONE_REPORT_LOG_BYTES);
        return HONE_EINVAL;
    }
    return HONE_OK;
}
