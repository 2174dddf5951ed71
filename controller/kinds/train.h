/* kinds/train.c: the train kind, and what the AutoML kind shares with it (creation from an
 * experiment, the resolved spec of a trial, the end of a run). */
#ifndef HONE_CTL_TRAIN_H
#define HONE_CTL_TRAIN_H

#include <jansson.h>
#include <stddef.h>

#include "controller.h"
#include "wire.h"

/* Inside the caller's transaction: a train or AutoML job from an experiment and the request body
 * (specs, name); a train job of an experiment whose AutoML settings are enabled becomes an AutoML
 * job. HONE_EINVAL with field and msg. */
int ctl_train_create_as(hone_controller *c, const json_t *exp, hone_kind kind, const json_t *body,
                        char *id_out, size_t idlen, char *field, size_t fieldlen, char *msg,
                        size_t msglen);
/* Resolved flat spec of a job: network defaults < experiment specs < job specs < trial config. */
int ctl_train_spec(hone_controller *c, const json_t *job, json_t **flat);
/* Inside the caller's transaction: a train job ends (complete, or lease lost after stop/pause). */
int ctl_train_finish(hone_controller *c, const json_t *job, const char *status,
                     const char *log_tail, const json_t *final);

#endif
