/* test_worker_gpus: the GPUs a worker registers come from `hone-train --list-devices`: a trainer
 * that lists two GPUs gives both, one that fails or prints garbage gives none, and --device cpu
 * never asks. Fake trainers are small shell scripts written here. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "worker_internal.h"
#include "check.h"

static void fake_trainer(const char *path, const char *body)
{
    FILE *f = fopen(path, "w");
    fprintf(f, "#!/bin/sh\n[ \"$1\" = --list-devices ] || exit 3\n%s\n", body);
    fclose(f);
    chmod(path, 0755);
}

static json_t *gpus_with(const char *trainer, const char *device)
{
    hone_worker_opts o = {.device = device};
    hone_worker w;
    memset(&w, 0, sizeof w);
    w.o = &o;
    snprintf(w.name, sizeof w.name, "t");
    snprintf(w.trainer, sizeof w.trainer, "%s", trainer);
    return worker_gpus(&w);
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

    unlink(path);
    rmdir(dir);
    if (failures)
        fprintf(stderr, "test_worker_gpus: %d failures\n", failures);
    return failures ? 1 : 0;
}
