/* joblog.c: the lines the controller writes into a job's own log (table job_logs, epoch 0: no
 * report carried them), each after its ISO 8601 UTC time: a failure's cause and the trainer's last
 * lines, an AutoML search's decisions; and the cause of a failure read from a trainer's stderr
 * tail. Writers run inside the caller's transaction and never open one. */
#ifndef HONE_CTL_JOBLOG_H
#define HONE_CTL_JOBLOG_H

#include <jansson.h>
#include <stddef.h>

#include "controller.h"

/* What a job's error_log holds of the tail: its last lines, within these bounds. */
#define CTL_ERRLOG_LINES 20
#define CTL_ERRLOG_BYTES 4096

/* The cause of a failure, one line, from the stderr tail a worker sent (or an error already made
 * one line): the trainer's last "hone-train: ..." message before it exited, a signal that killed
 * it, else the last line. "" for an empty tail. */
void ctl_failure_cause(const char *tail, char *out, size_t len);
/* The last CTL_ERRLOG_LINES lines of tail within CTL_ERRLOG_BYTES, control characters other than
 * the newlines written \xNN. NULL for an empty tail; the caller frees it. */
char *ctl_failure_tail(const char *tail);
/* Appends "<time> <text>" to the job's log. */
int ctl_joblog(hone_controller *c, const char *job_id, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* The n of an epoch's own line in job_logs: after every line a report may carry (those are 0..49),
 * and not one of the trainer's (a tail is matched against those only). */
#define CTL_LOG_N_EPOCH 1000
/* Inside a fresh epoch report: "<time> epoch E/N: train_loss ..., val_accuracy ..., lr ...,
 * S s (I images/s)" from its metrics, after the report's log lines (n: their count). */
int ctl_joblog_epoch(hone_controller *c, const char *job_id, int epoch, int epochs,
                     const json_t *metrics, int n);
/* Before a job's kind ends it: when its worker says it failed, the tail's lines that no report
 * carried go into its log (then its search's log, if any, follows them). */
int ctl_joblog_tail(hone_controller *c, const json_t *job, const char *status,
                    const char *log_tail);
/* After a job's kind ended it (ctl_job_finish): a failed or retried job gets its cause as its
 * error (one line; the tail stays as log_tail, shown as error_log), and its log "failed ...:
 * <cause>" (or the attempt that failed and the retry). */
int ctl_joblog_finished(hone_controller *c, const json_t *before, const char *log_tail);

#endif
