/* kinds/train.c: the train kind, and what the AutoML kind shares with it (creation from an
 * experiment, the resolved spec of a trial, the end of a run). */
#ifndef HONE_CTL_TRAIN_H
#define HONE_CTL_TRAIN_H

#include <jansson.h>
#include <stddef.h>

#include "controller.h"
#include "ctl_spec.h"
#include "wire.h"

/* What a searching kind adds to a train job's creation: the space of the experiment's settings
 * (checked with the spec at every corner) and its start once the row is in. */
typedef struct ctl_train_search {
    int (*space)(const char *network, const ctl_sizing *z, const json_t *settings, json_t **space,
                 char *field, size_t fieldlen, char *msg, size_t msglen);
    int (*start)(hone_controller *c, const char *job_id, char *msg, size_t msglen);
} ctl_train_search;

/* Inside the caller's transaction: a job of this kind from an experiment and the request body
 * (specs, name, parent_job_id: the owner's job whose model it starts from), checked as hone-train
 * will check it (with search: also its space), then inserted (and started, with search).
 * HONE_EINVAL with *http, field and msg. */
int ctl_train_create_as(hone_controller *c, const json_t *exp, hone_kind kind,
                        const ctl_train_search *search, const json_t *body, const char *owner,
                        char *id_out, size_t idlen, int *http, char *field, size_t fieldlen,
                        char *msg, size_t msglen);
/* Resolved flat spec of a job: network defaults < experiment specs < job specs < trial config,
 * the keys none of them set sized to the dataset (ctl_spec_resolve). */
int ctl_train_spec(hone_controller *c, const json_t *job, json_t **flat);
/* What a resolved spec of experiment exp sizes its AutoML space by (ctl_spec_sizing). */
ctl_sizing ctl_train_sizing(hone_controller *c, const json_t *exp, const json_t *flat);
/* Inside the caller's transaction: a train job ends (complete, or lease lost after stop/pause). */
int ctl_train_finish(hone_controller *c, const json_t *job, const char *status,
                     const char *log_tail, const json_t *final);

#endif
