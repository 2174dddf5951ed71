/* report_check.c: what a per-epoch report may carry. Pure: no store, no controller. */
#ifndef HONE_CTL_REPORT_CHECK_H
#define HONE_CTL_REPORT_CHECK_H

#include <jansson.h>
#include <stddef.h>

/* Checks a report's metrics object: known names only, numbers (or null) in each one's natural
 * range. On refusal writes the field ("metrics.val_accuracy") and a message. */
int ctl_report_metrics_check(const json_t *metrics, char *field, size_t fieldlen, char *msg,
                             size_t msglen);

#endif
