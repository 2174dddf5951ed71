/* nvml: GPU utilisation and memory for heartbeats, read through NVML (libnvidia-ml.so.1, part of
 * the NVIDIA driver) opened with dlopen() at run time, so the worker has no build dependency on
 * CUDA or the driver. No library, a missing symbol or a failing nvmlInit means "absent": no
 * telemetry, never an error. The few NVML types and prototypes below are written from NVML's
 * documented API (nvmlReturn_t 0 = success, opaque device handles, the two result structs). */
#include "nvml.h"

#include "hone.h"

#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

/* ---- NVML's documented ABI, the part we call ---- */
typedef int nvml_return;                    /* nvmlReturn_t: 0 is NVML_SUCCESS */
typedef struct nvml_device_st *nvml_device; /* nvmlDevice_t: an opaque handle */
typedef struct {                            /* nvmlUtilization_t */
    unsigned int gpu;                       /* percent of the last sample period a kernel ran */
    unsigned int memory;                    /* percent of it device memory was read or written */
} nvml_utilization;
typedef struct { /* nvmlMemory_t (v1), bytes */
    unsigned long long total;
    unsigned long long free;
    unsigned long long used;
} nvml_memory;

enum { NVML_MAX_DEVICES = 16 };

struct worker_nvml {
    void *lib;
    nvml_return (*shutdown)(void);
    nvml_return (*by_index)(unsigned int, nvml_device *);
    nvml_return (*by_uuid)(const char *, nvml_device *);
    nvml_return (*util)(nvml_device, nvml_utilization *);
    nvml_return (*mem)(nvml_device, nvml_memory *);
    int n;
    int index[NVML_MAX_DEVICES]; /* the GPU's index as the worker reports it */
    nvml_device dev[NVML_MAX_DEVICES];
};

int worker_nvml_open(const char *lib, const char *const *sel, const int *index, int n,
                     worker_nvml **out)
{
    worker_nvml *nv = hone_xcalloc(1, sizeof(*nv));
    nvml_return (*init)(void) = NULL;
    int rc = HONE_ENOENT;

    *out = NULL;
    nv->lib = dlopen(lib ? lib : "libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!nv->lib)
        goto fail;
    /* POSIX's way to turn dlsym's void * into a function pointer. */
    *(void **)&init = dlsym(nv->lib, "nvmlInit_v2");
    *(void **)&nv->shutdown = dlsym(nv->lib, "nvmlShutdown");
    *(void **)&nv->by_index = dlsym(nv->lib, "nvmlDeviceGetHandleByIndex_v2");
    *(void **)&nv->by_uuid = dlsym(nv->lib, "nvmlDeviceGetHandleByUUID");
    *(void **)&nv->util = dlsym(nv->lib, "nvmlDeviceGetUtilizationRates");
    *(void **)&nv->mem = dlsym(nv->lib, "nvmlDeviceGetMemoryInfo");
    if (!init || !nv->shutdown || !nv->by_index || !nv->by_uuid || !nv->util || !nv->mem)
        goto fail;
    if (init() != 0) {
        nv->shutdown = NULL; /* nothing to shut down */
        goto fail;
    }
    for (int i = 0; i < n && nv->n < NVML_MAX_DEVICES; i++) {
        nvml_device d = NULL;
        char *end;
        unsigned long k = strtoul(sel[i], &end, 10);
        nvml_return r =
            sel[i][0] && *end == '\0' ? nv->by_index((unsigned int)k, &d) : nv->by_uuid(sel[i], &d);
        if (r == 0 && d) {
            nv->index[nv->n] = index[i];
            nv->dev[nv->n++] = d;
        }
    }
    if (nv->n == 0)
        goto fail;
    *out = nv;
    return HONE_OK;
fail:
    worker_nvml_free(nv);
    return rc;
}

json_t *worker_nvml_sample(worker_nvml *nv)
{
    json_t *arr = json_array();
    for (int i = 0; nv && i < nv->n; i++) {
        nvml_utilization u;
        nvml_memory m;
        if (nv->util(nv->dev[i], &u) != 0 || nv->mem(nv->dev[i], &m) != 0 || u.gpu > 100)
            continue; /* a GPU that cannot say this time is left out, not guessed */
        json_array_append_new(arr, json_pack("{s:i,s:i,s:I,s:I}", "index", nv->index[i], "util",
                                             (int)u.gpu, "mem_used", (json_int_t)m.used,
                                             "mem_total", (json_int_t)m.total));
    }
    return arr;
}

void worker_nvml_free(worker_nvml *nv)
{
    if (!nv)
        return;
    if (nv->shutdown)
        nv->shutdown();
    if (nv->lib)
        dlclose(nv->lib);
    free(nv);
}
