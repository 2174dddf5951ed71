/* trainer_argv: the hone-train command line for a lease (trainer_argv.c). Pure: builds strings,
 * runs nothing. */
#ifndef HONE_WORKER_TRAINER_ARGV_H
#define HONE_WORKER_TRAINER_ARGV_H

#include <jansson.h>

#include "args.h"

/* Builds the trainer's argv for a leased job (the "job" object of a lease reply): --spec spec_path
 * (the lease's flat spec, written there by the caller: the trial's values are in it, nothing is
 * passed as --set), --epochs-until, --resume, --out, --device, --threads. Writes nothing;
 * spec_path and out_dir are where the caller put (or will put) them. Free with
 * hone_worker_argv_free. */
char **hone_worker_trainer_argv(const hone_worker_opts *o, const char *trainer, const json_t *job,
                                const char *spec_path, const char *out_dir);
/* The same for an evaluate or inference lease: hone-train --evaluate MODEL_DIR, or --infer
 * MODEL_DIR FOLDER, the lease's --set data overrides, --out (its out_dir), --device, --threads;
 * for an export lease: --export MODEL_DIR OUT_DIR/model.onnx, --device, --threads.
 * NULL when the lease lacks model_dir or out_dir (or inference its folder). */
char **hone_worker_action_argv(const hone_worker_opts *o, const char *trainer, const json_t *job);
void hone_worker_argv_free(char **argv);

#endif
