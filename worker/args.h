/* args: hone-worker's options (what the command line and the environment say) and their parser
 * (args.c). Read by every part of the worker; nothing here runs anything. */
#ifndef HONE_WORKER_ARGS_H
#define HONE_WORKER_ARGS_H

#include <stddef.h>

typedef struct hone_worker_opts {
    const char *controller; /* base URL */
    const char *name;       /* default: hostname-pid */
    const char *work_dir;   /* default: ./hone-worker-<name> */
    const char *device;     /* cpu | cuda | auto (default auto) */
    int threads;            /* trainer threads (0 = let the trainer decide) */
    /* the enrolment token (or admin key) registering takes: --token-file FILE (its first line,
     * read into token_buf; token_file_loose when others may read the file: a warning), --token
     * T, or HONE_TOKEN */
    const char *token;
    char token_buf[512];
    int token_file_loose;
    const char *trainer; /* path to hone-train (default: beside this executable, then PATH) */
    const char *packer;  /* path to hone-pack, for convert jobs (default: as hone-train, or
                            beside it) */
    int lease_wait_s;    /* long-poll length (default 20) */
    double grace_s;      /* trainer stop grace (default 10) */
    int max_jobs;        /* exit after this many jobs (0 = never; for tests) */
    int verbose;
    /* How datasets reach the trainer and outputs reach the controller: "shared" (the controller's
     * data dir is this machine's too: the lease's paths are used as they are) or "http" (datasets
     * are downloaded into cache_dir, outputs uploaded). Default shared (env HONE_STORAGE). */
    const char *storage;
    const char *cache_dir; /* http storage's download cache (default <work-dir>/cache) */
    /* --gpu INDEX (env HONE_GPU): this worker uses that one GPU (its trainers see it alone, as
     * CUDA_VISIBLE_DEVICES) and registers only it. Implies --device cuda. pin_gpu 0 (the zero
     * value): unpinned, every GPU the trainer sees. */
    int pin_gpu;
    int gpu;
    /* 1: train jobs run on a resident hone-train --serve kept between leases
     * (hone_trun_run_resident); 0: a new hone-train per job; -1 (default): 1 with --device cuda */
    int resident;
    /* --trainer-socket PATH (env HONE_TRAINER_SOCKET): train jobs run on the shared trainer
     * server at this unix socket (hone_trun_run_socket), started by the first worker that needs
     * it; NULL (default): not shared. Workers that share a socket must share a GPU. */
    const char *trainer_socket;
} hone_worker_opts;

/* Parses hone-worker's command line (argv[0] is skipped). Returns 0, HONE_EINVAL with a message
 * in err, or 1 when --help was asked (usage goes to err). Strings point into argv (the token of
 * --token-file into o->token_buf). */
int hone_worker_args_parse(int argc, char **argv, hone_worker_opts *o, char *err, size_t errlen);
const char *hone_worker_usage(void);

#endif
