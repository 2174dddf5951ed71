/* report_check.c: what a report may carry: a train job's per-epoch metrics, a convert job's
 * progress. Pure: no store, no controller. */
#ifndef HONE_CTL_REPORT_CHECK_H
#define HONE_CTL_REPORT_CHECK_H

#include <jansson.h>
#include <stddef.h>

/* Checks a report's metrics object: known names only, numbers (or null) in each one's natural
 * range. action "train" (train jobs and trials), "convert" (progress: images_done <= images_total)
 * or NULL (before the job is known: a name either may report). On refusal writes the field
 * ("metrics.val_accuracy") and a message. */
int ctl_report_metrics_check(const json_t *metrics, const char *action, char *field,
                             size_t fieldlen, char *msg, size_t msglen);

#endif
