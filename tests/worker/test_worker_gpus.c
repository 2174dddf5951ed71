/* test_worker_gpus: the GPUs a worker registers come from `hone-train --list-devices`: a trainer
 * that lists two GPUs gives both, one that fails or prints garbage gives none, and --device cpu
 * never asks; a worker pinned by --gpu registers its one GPU under the host's index and sets
 * CUDA_VISIBLE_DEVICES for its trainers; the NVML loader answers "absent" cleanly without a
 * driver. Fake trainers are small shell scripts written here. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gpus.h"
#include "nvml.h"
#include "check.h"

static void fake_trainer(const char *path, const char *body)
{
    FILE *f = fopen(path, "w");
    fprintf(f, "#!/bin/sh\n[ \"$1\" = --list-devices ] || exit 3\n%s\n", body);
    fclose(f);
    chmod(path, 0755);
}

static json_t *gpus_pinned(const char *trainer, const char *device, int pin, int gpu)
{
    hone_worker_opts o = {.device = device, .pin_gpu = pin, .gpu = gpu};
    hone_worker w;
    memset(&w, 0, sizeof w);
    w.o = &o;
    snprintf(w.name, sizeof w.name, "t");
    snprintf(w.trainer, sizeof w.trainer, "%s", trainer);
    return worker_gpus(&w);
}

static json_t *gpus_with(const char *trainer, const char *device)
{
    return gpus_pinned(trainer, device, 0, 0);
}

/* worker_gpu_setup's CUDA_VISIBLE_DEVICES for a worker pinned to gpu, given the env it started
 * with (NULL: unset); "" when it refused. */
static void pin_env(int gpu, const char *given, char *out, size_t cap)
{
    hone_worker_opts o = {.device = "cuda", .pin_gpu = 1, .gpu = gpu};
    hone_worker w;
    memset(&w, 0, sizeof w);
    w.o = &o;
    snprintf(w.name, sizeof w.name, "t");
    if (given)
        setenv("CUDA_VISIBLE_DEVICES", given, 1);
    else
        unsetenv("CUDA_VISIBLE_DEVICES");
    int rc = worker_gpu_setup(&w);
    const char *v = getenv("CUDA_VISIBLE_DEVICES");
    snprintf(out, cap, "%s", rc == 0 && v ? v : "");
    CHECK(w.nvml == NULL); /* no driver here */
    worker_nvml_free(w.nvml);
}

static void test_pin_and_nvml(void)
{
    char v[128];
    unsetenv("CUDA_DEVICE_ORDER");
    pin_env(1, NULL, v, sizeof v);
    CHECK(!strcmp(v, "1"));
    CHECK(getenv("CUDA_DEVICE_ORDER") && !strcmp(getenv("CUDA_DEVICE_ORDER"), "PCI_BUS_ID"));
    pin_env(1, "4,6", v, sizeof v); /* --gpu indexes into the worker's own list */
    CHECK(!strcmp(v, "6"));
    pin_env(0, "GPU-8f3c,GPU-11aa", v, sizeof v);
    CHECK(!strcmp(v, "GPU-8f3c"));
    pin_env(2, "4,6", v, sizeof v); /* not in the list: refused */
    CHECK(!strcmp(v, ""));
    unsetenv("CUDA_VISIBLE_DEVICES");

    /* The loader: no driver, a missing file, a library without NVML's symbols: absent, cleanly. */
    const char *sel[] = {"0"};
    int index[] = {0};
    worker_nvml *nv = (worker_nvml *)1;
    if (access("/dev/nvidiactl", F_OK) != 0) {
        CHECK(worker_nvml_open(NULL, sel, index, 1, &nv) == HONE_ENOENT && nv == NULL);
    }
    nv = (worker_nvml *)1;
    CHECK(worker_nvml_open("/nonexistent/libnvidia-ml.so.1", sel, index, 1, &nv) == HONE_ENOENT &&
          nv == NULL);
    nv = (worker_nvml *)1;
    CHECK(worker_nvml_open("libm.so.6", sel, index, 1, &nv) == HONE_ENOENT && nv == NULL);
    json_t *s = worker_nvml_sample(NULL);
    CHECK(json_is_array(s) && json_array_size(s) == 0);
    json_decref(s);
    worker_nvml_free(NULL);
}

int main(void)
{
    char dir[] = "/tmp/hone-gpus-XXXXXX", path[512];
    if (!mkdtemp(dir))
        return 1;
    snprintf(path, sizeof path, "%s/hone-train", dir);

    fake_trainer(path, "echo '{\"gpus\":[{\"index\":0,\"name\":\"NVIDIA H100\",\"memory_bytes\":"
                       "85000000000},{\"index\":1,\"name\":\"NVIDIA H200\",\"memory_bytes\":"
                       "150000000000}]}'");
    json_t *g = gpus_with(path, "auto");
    CHECK(json_array_size(g) == 2);
    CHECK(!strcmp(json_string_value(json_object_get(json_array_get(g, 1), "name")), "NVIDIA H200"));
    CHECK(json_integer_value(json_object_get(json_array_get(g, 0), "memory_bytes")) ==
          85000000000LL);
    json_decref(g);

    g = gpus_with(path, "cpu"); /* --device cpu: no GPUs, whatever the trainer says */
    CHECK(json_array_size(g) == 0);
    json_decref(g);

    fake_trainer(path, "echo 'no json here'");
    g = gpus_with(path, "cuda");
    CHECK(json_is_array(g) && json_array_size(g) == 0);
    json_decref(g);

    fake_trainer(path, "echo '{\"gpus\":[{\"name\":\"x\"}]}'; exit 1");
    g = gpus_with(path, "cuda");
    CHECK(json_array_size(g) == 0);
    json_decref(g);

    g = gpus_with("/nonexistent/hone-train", "auto");
    CHECK(json_array_size(g) == 0);
    json_decref(g);

    /* Pinned to GPU 1, the trainer sees that one GPU as its device 0: registered as index 1. */
    fake_trainer(path, "echo '{\"gpus\":[{\"index\":0,\"name\":\"NVIDIA H200\",\"memory_bytes\":"
                       "150000000000}]}'");
    g = gpus_pinned(path, "cuda", 1, 1);
    CHECK(json_array_size(g) == 1);
    CHECK(json_integer_value(json_object_get(json_array_get(g, 0), "index")) == 1);
    json_decref(g);

    /* Each GPU's UUID goes along when well formed; the first is the one the worker registers as
     * its gpu_uuid. A malformed one is left out, the GPU still listed. */
    fake_trainer(path, "echo '{\"gpus\":[{\"index\":0,\"name\":\"A\",\"memory_bytes\":1,"
                       "\"uuid\":\"GPU-8f3c0a1b-2c3d-4e5f-6a7b-8c9d0e1f2a3b\"},{\"index\":1,"
                       "\"name\":\"B\",\"memory_bytes\":2,\"uuid\":\"GPU-zz\"},{\"index\":2,"
                       "\"name\":\"C\",\"memory_bytes\":3,\"uuid\":7}]}'");
    g = gpus_with(path, "cuda");
    CHECK(json_array_size(g) == 3);
    CHECK(worker_gpu_uuid(g) &&
          !strcmp(worker_gpu_uuid(g), "GPU-8f3c0a1b-2c3d-4e5f-6a7b-8c9d0e1f2a3b"));
    CHECK(json_object_get(json_array_get(g, 1), "uuid") == NULL);
    CHECK(json_object_get(json_array_get(g, 2), "uuid") == NULL);
    json_decref(g);
    g = gpus_pinned(path, "cuda", 1, 3); /* pinned: its one GPU, with its UUID */
    CHECK(json_array_size(g) == 1 && worker_gpu_uuid(g) &&
          !strncmp(worker_gpu_uuid(g), "GPU-8f3c", 8));
    json_decref(g);
    g = gpus_with(path, "cpu"); /* a CPU worker names no GPU */
    CHECK(worker_gpu_uuid(g) == NULL);
    json_decref(g);

    test_pin_and_nvml();

    unlink(path);
    rmdir(dir);
    if (failures)
        fprintf(stderr, "test_worker_gpus: %d failures\n", failures);
    return failures ? 1 : 0;
}
