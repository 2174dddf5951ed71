/* nvml: GPU telemetry through libnvidia-ml.so.1, loaded at run time (nvml.c). */
#ifndef HONE_WORKER_NVML_H
#define HONE_WORKER_NVML_H

#include <jansson.h>

typedef struct worker_nvml worker_nvml;

/* Opens NVML from lib (NULL: "libnvidia-ml.so.1") for n GPUs, each named by sel[i] (an NVML index
 * as digits, else a UUID "GPU-...") and reported as index[i]. HONE_ENOENT when the library, a
 * symbol, nvmlInit or every GPU is missing: no telemetry, not an error. Free with
 * worker_nvml_free. */
int worker_nvml_open(const char *lib, const char *const *sel, const int *index, int n,
                     worker_nvml **out);
/* [{index, util (0..100), mem_used, mem_total (bytes)}] now; a GPU NVML cannot read is left out.
 * New reference; [] for NULL. */
json_t *worker_nvml_sample(worker_nvml *nv);
void worker_nvml_free(worker_nvml *nv);

#endif
