/* cmd_local: `hone local` (a controller and workers on this machine until Ctrl-C) and
 * `hone demo` (the README's Fashion-MNIST AutoML run on that same local stack, sized to a time
 * budget; demo.c drives it, the controller's budget planner sizes the search). */
#include "cli.h"

#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int cli_local_stack_opts(cli_ctx *c, cli_stack_opts *so, int default_workers, int default_port)
{
    long workers = default_workers, port = default_port, threads = 0, pack = 0;
    char err[256];

    memset(so, 0, sizeof(*so));
    so->data_dir = cli_arg(c->a, "data-dir") ? cli_arg(c->a, "data-dir") : "hone-data";
    so->device = cli_arg(c->a, "device") ? cli_arg(c->a, "device") : "auto";
    if (strcmp(so->device, "cpu") != 0 && strcmp(so->device, "cuda") != 0 &&
        strcmp(so->device, "auto") != 0) {
        fprintf(stderr, "usage error: --device must be cpu, cuda or auto (got '%s')\n", so->device);
        return 2;
    }
    if (cli_arg_int(c->a, "workers", 1, 64, &workers, err, sizeof(err)) != 0 ||
        cli_arg_int(c->a, "port", 0, 65535, &port, err, sizeof(err)) != 0 ||
        cli_arg_int(c->a, "threads", 0, 1024, &threads, err, sizeof(err)) != 0 ||
        cli_arg_int(c->a, "pack", 1, 64, &pack, err, sizeof(err)) != 0) {
        fprintf(stderr, "usage error: %s\n", err);
        return 2;
    }
    so->workers = (int)workers;
    so->port = (int)port;
    so->threads = (int)threads;
    so->bin_dir = c->bin_dir;
    so->storage = cli_arg(c->a, "storage");
    if (so->storage && strcmp(so->storage, "shared") != 0 && strcmp(so->storage, "http") != 0) {
        fprintf(stderr, "usage error: --storage must be shared or http (got '%s')\n", so->storage);
        return 2;
    }
    so->trainer = cli_arg(c->a, "trainer");
    so->n_data_roots = cli_multi(c->a, "data-root", &so->data_roots);
    if (strcmp(so->device, "cpu") != 0) {
        static const char *const trn_rel[] = {"../train", ".", NULL};
        char trn[PATH_MAX];
        const char *t = so->trainer;
        if (!t && cli_find_binary(c->bin_dir, "hone-train", trn_rel, trn, sizeof(trn)) == 0)
            t = trn;
        so->gpus = t ? cli_count_gpus(t) : 0;
        /* --pack N workers per GPU (default 4), the workers of a GPU sharing one trainer server
         * so that their trials overlap on it; --pack 1: at least one worker per GPU, a caller's
         * larger default (the demo's several workers) staying, each worker with its own
         * trainer. --workers N wins on the count: worker i on GPU i mod GPUs. */
        if (so->gpus > 0 && !pack)
            pack = 4;
        if (so->gpus > 0 && !cli_arg(c->a, "workers")) {
            long want = pack > 1 ? (long)so->gpus * pack : so->gpus;
            if (pack > 1 || so->workers < want)
                so->workers = want > 64 ? 64 : (int)want;
        }
    }
    so->pack = so->gpus > 0 && pack > 1 ? (int)pack : 1;
    return 0;
}

static int local_run(cli_ctx *c)
{
    cli_stack_opts so;
    cli_stack *s = NULL;
    char err[4096];
    int rc = cli_local_stack_opts(c, &so, 1, 8080);

    if (rc != 0)
        return rc;
    if (cli_stack_start(&so, &s, err, sizeof(err)) != 0) {
        fprintf(stderr, "error: %s\n", err);
        if (so.port != 0)
            fprintf(stderr, "hint: if port %d is taken, pass --port 0 for any free port\n",
                    so.port);
        return 1;
    }
    char *const *roots;
    int nroots = cli_stack_roots(s, &roots);
    if (c->json) {
        json_t *o = json_pack("{s:s,s:s,s:i,s:i,s:i}", "url", cli_stack_url(s), "data_dir",
                              so.data_dir, "workers", so.workers, "gpus", so.gpus, "pack", so.pack);
        json_t *jr = json_array();
        for (int i = 0; i < nroots; i++)
            json_array_append_new(jr, json_string(roots[i]));
        json_object_set_new(o, "data_roots", jr);
        char *t = json_dumps(o, JSON_COMPACT);
        printf("%s\n", t);
        free(t);
        json_decref(o);
    } else {
        printf("hone local: controller at %s with %d worker(s)", cli_stack_url(s), so.workers);
        if (so.gpus > 0)
            printf(" on %d GPU(s)", so.gpus);
        if (so.pack > 1)
            printf(", trials packed %d to a GPU", so.pack);
        printf("; data in %s (logs in %s/logs)\n", so.data_dir, so.data_dir);
        for (int i = 0; i < nroots; i++)
            printf("  data root: %s\n", roots[i]);
        printf("  hone dataset create --path takes folders inside %s, /usr/share/datasets%s (add "
               "one: hone local --data-root DIR)\n"
               "  try: HONE_URL=%s hone worker list\n"
               "Press Ctrl-C to stop.\n",
               so.data_dir, nroots ? " and the data roots above" : "", cli_stack_url(s));
    }
    fflush(stdout);
    while (!*c->stop) {
        if (!cli_stack_alive(s, err, sizeof(err))) {
            fprintf(stderr, "error: %s\n", err);
            rc = 1;
            break;
        }
        usleep(200000);
    }
    if (!c->json)
        printf("\nstopping workers and controller...\n");
    cli_stack_stop(s);
    return rc;
}

static const cli_opt local_opts[] = {
    {"data-dir", CLI_VALUE, "DIR  database, artifacts and logs (default ./hone-data)", 0},
    {"data-root", CLI_MULTI,
     "DIR  a folder datasets may come from (hone dataset create --path); repeatable, kept in "
     "DATA_DIR/data_roots across restarts",
     0},
    {"port", CLI_VALUE, "N  controller port (default 8080; 0 picks a free one)", 0},
    {"workers", CLI_VALUE,
     "N  workers to start, in all (default: --pack per GPU with --device cuda/auto, else 1; "
     "with GPUs, worker i uses GPU i mod GPUs)",
     0},
    {"pack", CLI_VALUE,
     "N  trials sharing each GPU: N workers per GPU on one shared trainer server (default 4 "
     "with GPUs; 1: each worker its own trainer; no effect on the CPU)",
     0},
    {"device", CLI_VALUE, "DEV  cpu, cuda or auto (default auto)", 0},
    {"trainer", CLI_VALUE, "PATH  hone-train for the workers (default: beside hone)", 0},
    {"threads", CLI_VALUE, "N  CPU threads per trainer (default: all cores)", 0},
    {"storage", CLI_VALUE,
     "MODE  shared (default) or http: workers download datasets and upload outputs", 0},
};

static const cli_opt demo_opts[] = {
    {"data-dir", CLI_VALUE, "DIR  database, artifacts and logs (default ./hone-data)", 0},
    {"data-root", CLI_MULTI,
     "DIR  a folder datasets may come from; repeatable, kept in DATA_DIR/data_roots", 0},
    {"budget-minutes", CLI_VALUE, "N  time budget for the whole run (default 12)", 0},
    {"algorithm", CLI_VALUE,
     "ALGO  hyperband, bayesian, asha or bohb (default: chosen for the budget)", 0},
    {"workers", CLI_VALUE,
     "N  workers in all (default: one per 1-2 cores, at most 4; with --device cuda/auto --pack "
     "per GPU; worker i uses GPU i mod GPUs)",
     0},
    {"pack", CLI_VALUE,
     "N  trials sharing each GPU on one shared trainer server (default 4 with GPUs; 1: each "
     "worker its own trainer)",
     0},
    {"trainer", CLI_VALUE, "PATH  hone-train for the workers (default: beside hone)", 0},
    {"device", CLI_VALUE, "DEV  cpu, cuda or auto (default auto)", 0},
    {"port", CLI_VALUE, "N  controller port (default 0: any free port)", 0},
    {"threads", CLI_VALUE, "N  CPU threads per trainer (default: cores / workers)", 0},
    {"network", CLI_VALUE, "ARCH  cnn (default) or mlp", 0},
    {"dataset-path", CLI_VALUE, "DIR  Fashion-MNIST IDX folder (default: from the Debian package)",
     0},
    {"seed", CLI_VALUE, "N  search seed (default 1)", 0},
    {"math", CLI_VALUE,
     "M  fp32, tf32 or bf16: the trials' GPU precision (default tf32 unless --device cpu, the "
     "tensor cores PyTorch's convolutions use by default; the CPU always computes fp32)",
     0},
};

const cli_command cli_local_commands[] = {
    {"local", NULL, local_run, local_opts, (int)HONE_ARRAY_LEN(local_opts), 0, 0,
     "[--data-dir DIR] [--data-root DIR]... [--port N] [--workers N] [--pack N] [--device D]",
     "run a controller and workers on this machine until Ctrl-C", 1},
    {"demo", NULL, cli_demo_run, demo_opts, (int)HONE_ARRAY_LEN(demo_opts), 0, 0,
     "[--data-dir DIR] [--budget-minutes N] [--algorithm A] [--workers N] [--pack N] [--json]",
     "AutoML on Fashion-MNIST on a local stack, within a time budget", 1},
};
const int cli_nlocal_commands = (int)HONE_ARRAY_LEN(cli_local_commands);
