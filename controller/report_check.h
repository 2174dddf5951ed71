/* report_check.c: what a report may carry: a train job's per-epoch metrics, a convert job's
 * progress and the
 * trainer's log lines. Pure: no store, no controller. */
#ifndef HONE_CTL_REPORT_CHECK_H
#define HONE_CTL_REPORT_CHECK_H

#include <jansson.h>
#include <stddef.h>

/* What a job's reports carry (a kind's row says which, kind.h). */
typedef enum ctl_report_form {
    CTL_REPORT_EPOCHS = 1,   /* per-epoch training metrics (train jobs and trials) */
    CTL_REPORT_PROGRESS = 2, /* a convert's progress (images_done <= images_total) */
    CTL_REPORT_ANY = 3       /* before the job is known: a name either may report */
} ctl_report_form;

/* Checks a report's metrics object: known names only, numbers (or null) in each one's natural
 * range, as the form allows. On refusal writes the field ("metrics.val_accuracy") and a message. */
int ctl_report_metrics_check(const json_t *metrics, ctl_report_form form, char *field,
                             size_t fieldlen, char *msg, size_t msglen);

/* A report's log: an array of at most HONE_REPORT_LOG_LINES strings (the trainer's stderr lines
 * since the previous report), HONE_REPORT_LOG_BYTES in all, none with a newline. On refusal
 * writes the field ("log") and a message. */
#define HONE_REPORT_LOG_LINES 50
#define HONE_REPORT_LOG_BYTES 8192
int ctl_report_log_check(const json_t *log, char *field, size_t fieldlen, char *msg, size_t msglen);

#endif
