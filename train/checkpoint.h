/* train/checkpoint.h (private): the checkpoint file: everything a resumed run needs to continue
 * bit for bit (weights, norm statistics, optimiser state, step and random counters, epoch), with a
 * CRC-32 over the whole file. model.bin uses the same container without optimiser state. */
#ifndef HONE_TRAIN_CHECKPOINT_H
#define HONE_TRAIN_CHECKPOINT_H

#include "train.h"

typedef struct {
    int32_t epoch;        /* epochs completed */
    int32_t t;            /* optimiser steps taken */
    double best_val;      /* best validation accuracy so far */
    uint64_t fingerprint; /* of the spec fields that shape the state (network, model, optimizer) */
    uint64_t nparams, nstate, nopt;
    uint32_t ncounters;
    float *params, *state, *opt; /* host arrays of nparams, nstate, nopt floats */
    uint64_t *counters;          /* ncounters */
} ckpt;

/* Writes path atomically: path.tmp, fsync, rename, fsync of the folder. */
int ckpt_write(const char *path, const ckpt *c, char *err, size_t errlen);
/* Reads and verifies (magic, sizes, CRC); allocates the arrays (ckpt_free releases them). */
int ckpt_read(const char *path, ckpt *c, char *err, size_t errlen);
void ckpt_free(ckpt *c);

#endif
