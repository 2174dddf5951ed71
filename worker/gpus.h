/* gpus: the GPUs a worker registers and trains on (gpus.c): listed by the trainer, pinned with
 * --gpu, watched through NVML (nvml.h). */
#ifndef HONE_WORKER_GPUS_H
#define HONE_WORKER_GPUS_H

#include "lease.h"

/* The GPUs hone-train can use here ([] for --device cpu or when it cannot tell), for registering
 * (gpus.c): {index, name, memory_bytes} and uuid ("GPU-..."), when the trainer gave a well-formed
 * one. */
json_t *worker_gpus(hone_worker *w);
/* The GPU this worker's trainers train on (its first listed, CUDA's device 0) by UUID, for the
 * controller to group the workers sharing one GPU; NULL when gpus has none. Borrowed from gpus. */
const char *worker_gpu_uuid(const json_t *gpus);
/* gpus.c: before anything runs, pins the worker to --gpu INDEX (CUDA_VISIBLE_DEVICES, indexing
 * into a CUDA_VISIBLE_DEVICES the worker was given) and sets CUDA_DEVICE_ORDER=PCI_BUS_ID unless
 * set, so that CUDA's numbering is NVML's; then opens NVML for the GPUs this worker uses (w->nvml,
 * NULL when absent). HONE_EINVAL (logged) when --gpu names a GPU CUDA_VISIBLE_DEVICES lacks. */
int worker_gpu_setup(hone_worker *w);

#endif
