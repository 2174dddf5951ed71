/* train/serve.h (private to hone-train): what the command's files share. args.c parses and runs
 * one hone-train command line (train_run_argv, train_args_*) and reads a request line as one;
 * serve_stdin.c serves requests on stdin, serve_listen.c over a unix socket, one thread a
 * connection, jobs running at the same time, serve_pack.c packs those that can train together.
 * Calls run downward only: main.c -> serve_stdin.c -> serve_listen.c -> serve_pack.c -> args.c. */
#ifndef HONE_TRAIN_SERVE_H
#define HONE_TRAIN_SERVE_H

#include <signal.h>
#include <stdio.h>

#include <jansson.h>

#include "train.h"

/* One hone-train run of argv (argv[0] is the program name); its exit status (0, 1, 2). cache and
 * cancel: hone_train_opts's (NULL outside --serve); the run's stdout lines go to out, its messages
 * to log. */
int train_run_argv(int argc, char **argv, hone_train_cache *cache, volatile sig_atomic_t *cancel,
                   FILE *out, FILE *log);
/* train_run_argv in two halves, for the listener's packed jobs (serve_listen.c): the parsed
 * command line (train_args_parse: -1 when it is to run, else the exit status it ends with now;
 * *a is set either way, train_args_free releases it), its options when it is a plain training
 * run (NULL for --evaluate, --infer, --export, --print-spec; the caller may adjust them before
 * train_args_exec or hone_train_run_pack) and the run itself. */
typedef struct run_args run_args;
int train_args_parse(int argc, char **argv, hone_train_cache *cache, volatile sig_atomic_t *cancel,
                     FILE *out, FILE *log, run_args **a);
hone_train_opts *train_args_training(run_args *a);
int train_args_exec(run_args *a);
void train_args_free(run_args *a);
/* Packed jobs of --listen --pack-window-ms (serve_pack.c): training requests of one pack key that
 * arrive within window_ms of the first train as one hone_train_run_pack, up to max. Thread safe.
 * serve_packs_job: a's exit status, after its trial left its pack; -1 when a cannot be packed
 * (not a training run, or a network that cannot be packed): run it as usual. serve_packs_free
 * waits for every pack to end (they borrow the server's dataset cache). */
typedef struct serve_packs serve_packs;
serve_packs *serve_packs_new(int window_ms, int max);
int serve_packs_job(serve_packs *s, run_args *a);
void serve_packs_free(serve_packs *s);
/* flag's value v as an integer in [lo, 1000000] (args.c); -1 with the reason on log. */
int train_parse_int(FILE *log, const char *flag, const char *v, int lo, int *out);
/* hone-train --serve ARGS... (serve_stdin.c): serves requests on stdin, or with --listen on a
 * socket (train_serve_listen); its exit status. */
int train_serve(int argc, char **argv);
/* One request line {"run": [ARGS]} as argv (argv[0] "hone-train", the strings borrowed from *req:
 * free(*argv) and json_decref(*req) when done). HONE_EPARSE, with the reason on log, for anything
 * else (also an argument that is not a string or starts with --serve). */
int train_serve_parse(const char *line, FILE *log, json_t **req, char ***argv, int *argc);
/* hone-train --serve --listen PATH: serves until SIGTERM/SIGINT, a job failing on a GPU, or
 * idle_exit_s seconds without a connection (0: never); its exit status. pack_window_ms > 0:
 * training requests whose specs share a hone_train_pack_key and arrive within that many
 * milliseconds of the first are run together as one hone_train_run_pack, up to pack_max. */
int train_serve_listen(const char *path, int ncache, int alive_ms, int idle_exit_s,
                       int pack_window_ms, int pack_max);

#endif
