/* cli: the hone command. Argument parsing (args.c), output (out.c: tables, JSON, errors), the
 * REST commands (cmd_*.c), and the local stack that `hone local` and `hone demo` start
 * (stack.c). Exit codes: 0 ok, 1 the server or the work failed, 2 a usage error. */
#ifndef HONE_CLI_H
#define HONE_CLI_H

#include <signal.h>
#include <stdio.h>

#include <jansson.h>

#include "hone.h"
#include "rest.h"

/* ---------------------------------------------------------------- arguments (args.c) */

typedef enum { CLI_FLAG = 0, CLI_VALUE = 1, CLI_MULTI = 2 } cli_opt_kind;

typedef struct cli_opt {
    const char *name; /* without the leading "--" */
    cli_opt_kind kind;
    const char *help; /* "VALUE  what it does" for usage */
    int required;     /* the command fails with a usage error without it */
} cli_opt;

#define CLI_MAX_OPTS 40
#define CLI_MAX_POS 4
#define CLI_MAX_MULTI 64

typedef struct cli_args {
    const cli_opt *opts;
    int nopts;
    const char *pos[CLI_MAX_POS];
    int npos;
    int set[CLI_MAX_OPTS];         /* times given */
    const char *val[CLI_MAX_OPTS]; /* last value (CLI_VALUE) */
    const char *multi[CLI_MAX_OPTS][CLI_MAX_MULTI];
} cli_args;

/* The options every command takes: --url, --token, --json, --help. */
extern const cli_opt cli_global_opts[];
extern const int cli_nglobal_opts;

/* Parses argv[0..argc) against opts (plus the global ones). "--name value" and "--name=value"
 * both work; "--" ends options. npos_min..npos_max positional arguments. Returns 0, or
 * HONE_EINVAL with a message that names the fix in err. */
int cli_args_parse(const cli_opt *opts, int nopts, int npos_min, int npos_max, int argc,
                   char **argv, cli_args *a, char *err, size_t errlen);
const char *cli_arg(const cli_args *a, const char *name);               /* NULL if not given */
int cli_flag(const cli_args *a, const char *name);                      /* times given */
int cli_multi(const cli_args *a, const char *name, const char ***vals); /* count */
/* Integer / number options with a range; on a bad value writes a message and returns
 * HONE_EINVAL. Absent options leave *out unchanged and return 0. */
int cli_arg_int(const cli_args *a, const char *name, long lo, long hi, long *out, char *err,
                size_t errlen);
int cli_arg_num(const cli_args *a, const char *name, double lo, double hi, double *out, char *err,
                size_t errlen);

/* "key=value" → sets a JSON value at the dotted key inside obj (nested objects), the value
 * parsed as JSON when it is a number, true/false/null, an array/object or a quoted string, and
 * as a plain string otherwise. HONE_EINVAL (message in err) when there is no '='. */
int cli_set_dotted(json_t *obj, const char *kv, char *err, size_t errlen);
/* Parses a value as above (new reference). */
json_t *cli_parse_value(const char *text);
/* One --param into a search-space entry (search/search.h shape):
 *   name=float:LO:HI[:log]   name=int:LO:HI[:log]   name=A,B,C (categorical)   name=bool
 * each optionally followed by @PARENT=V1|V2 (a condition: swept only while PARENT holds one).
 * Writes the parameter's name into name_out. HONE_EINVAL with a message when malformed. */
int cli_param_parse(const char *spec, char *name_out, size_t namelen, json_t **entry, char *err,
                    size_t errlen);

/* ---------------------------------------------------------------- output (out.c) */

typedef struct cli_ctx {
    hone_rest *rest;
    const char *url;
    int json; /* --json: machine output */
    cli_args *a;
    const char *bin_dir; /* where the hone executable lives (for local/demo) */
    volatile sig_atomic_t *stop;
} cli_ctx;

/* escape.c: server text made safe for a terminal (C0/C1 controls, DEL, bidi controls, line
 * separators and non-UTF-8 bytes written as \x1b or \u202e escapes; idempotent). cli_escape
 * writes at most cap bytes with the NUL and returns buf; cli_escape_dup returns a malloc'd copy;
 * cli_json_escape escapes every string and key of v in place (text output only, never --json). */
int cli_needs_escape(const char *s);
const char *cli_escape(const char *s, char *buf, size_t cap);
char *cli_escape_dup(const char *s);
void cli_json_escape(json_t *v);
/* hone_rest_error_text, escaped for the terminal. */
void cli_error_text(const hone_rest_resp *resp, char *buf, size_t cap);

/* Calls the controller. On a 2xx answer returns 0 with resp filled (its strings escaped for the
 * terminal, unless --json). Otherwise prints
 * "error: <message> (field: x)" and returns 1 (resp cleared). */
int cli_call(cli_ctx *c, const char *method, const char *path, const json_t *body,
             hone_rest_resp *resp);
/* Prints v as indented JSON on stdout. */
void cli_print_json(const json_t *v);
/* Prints a table: ncols headers, rows as arrays of strings (cells may be NULL → "-"). */
void cli_print_table(const char *const *headers, int ncols, char ***rows, int nrows);
/* Prints one row per object of arr, column j from the dotted key keys[j]. */
void cli_print_list(const json_t *arr, const char *const *headers, const char *const *keys,
                    int ncols);
/* GET path and every later page (limit/offset, following next_offset): the first page's object
 * with each later page's `member` (NULL: every array or object member) appended or merged in;
 * NULL after printing why. */
json_t *cli_get_all(cli_ctx *c, const char *path, const char *member);
/* GETs path and prints the answer: as JSON with --json, else the array under `member` as a
 * table (see cli_print_list). Returns 0, or 1 after printing the server's error. */
int cli_get_list(cli_ctx *c, const char *path, const char *member, const char *const *headers,
                 const char *const *keys, int ncols);
/* GETs path and prints the object: as JSON with --json, else as key: value lines. Returns 0, or 1
 * after printing the server's error. */
int cli_get_show(cli_ctx *c, const char *path);
/* obj["a"]["b"] for "a.b" (NULL when absent). */
const json_t *cli_path_get(const json_t *obj, const char *dotted);
/* Formats a JSON scalar for a table cell into buf ("-" for null/absent). */
const char *cli_cell(const json_t *v, char *buf, size_t len);
/* Prints "key: value" lines for an object (nested objects indented). */
void cli_print_kv(const json_t *obj, int indent);
/* A progress bar on stderr for the transfers of c->rest (uploads, downloads) while it is set:
 * shown when stderr is a terminal and --json is not given, or when HONE_PROGRESS=1. `what` names
 * the transfer ("upload", "download"); cli_progress_end prints the last state and a newline. */
typedef struct cli_progress {
    const char *what;
    double t0, last;
    int64_t done, total;
    int upload, shown;
} cli_progress;
void cli_progress_begin(cli_ctx *c, cli_progress *p, const char *what, int upload);
void cli_progress_end(cli_ctx *c, cli_progress *p);
/* Seconds as "1h02m", "3m05s", "42s". */
void cli_fmt_seconds(double s, char *buf, size_t len);

/* --json: stderr is held from _begin and handed back by _end as one JSON object ({"error",
 * "field", "hint", "usage", "exit"}; "warning" for what a command that succeeded said). _end
 * returns rc unchanged. */
void cli_json_errors_begin(void);
int cli_json_errors_end(int rc);

/* ---------------------------------------------------------------- commands (cmd_*.c) */

typedef struct cli_command {
    const char *noun;
    const char *verb; /* NULL for one-word commands (local, demo) */
    int (*run)(cli_ctx *c);
    const cli_opt *opts;
    int nopts;
    int npos_min, npos_max;
    const char *usage; /* arguments after "hone noun verb" */
    const char *summary;
    int local; /* needs no controller URL handle (local, demo) */
} cli_command;

extern const cli_command cli_dataset_commands[];
extern const int cli_ndataset_commands;
extern const cli_command cli_experiment_commands[];
extern const int cli_nexperiment_commands;
extern const cli_command cli_job_commands[];
extern const int cli_njob_commands;
extern const cli_command cli_action_commands[]; /* cmd_action.c: job evaluate, job infer */
extern const int cli_naction_commands;
/* completion.c: a bash completion script for the commands of these tables. */
int cli_completion_bash(FILE *f, const cli_command *const *tabs, const int *ns, int ntabs);
extern const cli_command cli_server_commands[]; /* cmd_server.c: health, metrics, openapi */
extern const int cli_nserver_commands;
extern const cli_command cli_local_commands[];
extern const int cli_nlocal_commands;
/* cmd_user.c: login, logout, whoami, user create|list, key create|list|revoke */
extern const cli_command cli_user_commands[];
extern const int cli_nuser_commands;
/* The client config `hone login` writes: $HONE_CONFIG, else ~/.config/hone/config. */
int cli_config_path(char *buf, size_t len);
/* Its url and token (each empty when absent); HONE_ENOENT when there is no file. */
int cli_config_read(char *url, size_t urllen, char *token, size_t toklen);

/* Waits for a job to end, showing a progress line on `progress` (NULL: none; a TTY gets one
 * line rewritten with '\r', anything else a plain line every 10 s). Returns 0 when it ended
 * well (done, stopped, paused), 1 on failure, cancel, timeout or interrupt; *final gets the last
 * job JSON (new reference) when not NULL. */
int cli_job_wait(cli_ctx *c, const char *job_id, double timeout_s, FILE *progress, json_t **final);
/* The same with a budget rather than a timeout: its end is not an error and prints nothing (the
 * caller says what it does next); returns 1 with *final NULL then. */
int cli_job_wait_budget(cli_ctx *c, const char *job_id, double budget_s, FILE *progress,
                        json_t **final);
/* The metric a job is judged by: its "metric" member when set (the wait loop sets the
 * experiment's), an AutoML job's automl.metric, else val_map or val_accuracy by what it reports. */
const char *cli_job_metric(const json_t *job);
/* The metric of a job's experiment into buf ("" when it has none or the controller does not say).
 */
void cli_job_experiment_metric(cli_ctx *c, const json_t *job, char *buf, size_t len);
/* job_status.c and job_metrics.c: `hone job status`, `job trials`, `job metrics`. */
int cli_job_status(cli_ctx *c);
int cli_job_trials(cli_ctx *c);
int cli_job_metrics(cli_ctx *c);
/* One-line progress text for a job (automl or train) into buf. */
void cli_job_progress(const json_t *job, double elapsed, char *buf, size_t len);

/* ---------------------------------------------------------------- help, values, names */

/* help.c: `hone help` (every command), a command's usage, a noun's verbs, and the topics. */
void cli_usage_all(FILE *f, const cli_command *const *tabs, const int *ns, int ntabs);
void cli_usage_cmd(FILE *f, const cli_command *c);
void cli_list_verbs(FILE *f, const char *noun, const cli_command *const *tabs, const int *ns,
                    int ntabs);
typedef struct cli_help_topic {
    const char *name, *summary;
    int (*print)(FILE *f);
} cli_help_topic;
extern const cli_help_topic cli_help_topics[]; /* ends with a NULL name */
/* man.c: the hone(1) page from the same tables (`hone __man`, run at build time: cli/hone.1). */
int cli_man_page(FILE *f, const cli_command *const *tabs, const int *ns, int ntabs);
const cli_help_topic *cli_help_topic_find(const char *name);

/* values.c: the values an option takes (NULL-terminated; NULL: any), and the check of the ones
 * that are refused before sending (HONE_EINVAL with "--x must be a, b or c (got 'v'); did you
 * mean b?" in err). */
const char *const *cli_values_of(const char *opt);
int cli_values_check(const cli_args *a, char *err, size_t errlen);
extern const char *const cli_metric_names[];

/* resolve.c: names for ids. cli_resolve_args rewrites the command's dataset, experiment and job
 * arguments given by name to their ids (0, or 2 after printing the ids an ambiguous name
 * matches); cli_resolve_free frees what it put in place. cli_resolve_kind: "datasets" /
 * "experiments" / "jobs" (or the singular) → a kind for cli_resolve_list, which lists the
 * caller's objects of that kind (an empty array when the controller does not answer in time). */
int cli_resolve_args(cli_ctx *c, const cli_command *cmd);
void cli_resolve_free(void);
int cli_resolve_kind(const char *what);
json_t *cli_resolve_list(cli_ctx *c, int kind, long timeout_s);

/* ---------------------------------------------------------------- curves (curves.c) */

/* Learning curves as an SVG document (malloc'd; free it): series is an object {label: [{"epoch":
 * 1, metric: value, ...}, ...]} (the shape of GET /jobs/{id}/metrics per trial), one polyline per
 * label that has a finite value of metric (data-label="label"; one of a single point also gets a
 * circle, which a polyline of one point does not draw), the one named highlight (may be
 * NULL) drawn thicker and marked "(best)" in the legend. *ncurves / *npoints (may be NULL): the
 * curves drawn and the points on them. */
char *cli_curves_svg(const json_t *series, const char *metric, const char *title,
                     const char *highlight, int *ncurves, int *npoints);

/* ---------------------------------------------------------------- local stack (stack.c) */

typedef struct cli_stack cli_stack;

typedef struct cli_stack_opts {
    const char *data_dir;
    int port; /* 0 = any free port */
    int workers;
    const char *device; /* cpu | cuda | auto */
    int threads;        /* per worker (0 = trainer default) */
    const char *bin_dir;
    int quiet;               /* children's logs go to DATA_DIR/logs only */
    const char *extra_roots; /* extra data root for the controller config (e.g. the demo data) */
    /* --data-root folders as given (relative to the current folder): resolved, refused when
     * missing, and added to DATA_DIR/data_roots, which every start of the stack reads. */
    const char **data_roots;
    int n_data_roots;
    const char *storage; /* the workers' --storage: shared (NULL) or http */
    const char *trainer; /* hone-train for the workers (NULL: found as the other binaries) */
    /* GPUs `trainer --list-devices` reported (0: none, or --device cpu): worker i then runs with
     * --gpu i % gpus, so one worker per GPU by default and --workers N spread over them. */
    int gpus;
    /* Trials sharing each GPU (--pack): with gpus > 0 and pack > 1 the workers of GPU i share one
     * trainer server, --trainer-socket DATA_DIR/trainer-gpu<i>.sock; 1: each worker its own
     * trainer (as before packing). */
    int pack;
} cli_stack_opts;

/* Starts hone-controller and N hone-workers as children and waits for /readyz. Binaries are
 * found through $HONE_BIN_DIR, then beside/near the hone executable, then PATH. */
/* Writes the folder dir's contents to fd as a ustar archive (as `tar -C dir .`; links to files
 * stored as their files, links to folders, devices and names too long for ustar refused with the
 * path named in err). For `hone dataset upload FOLDER` (tar_write.c). */
int cli_tar_folder(const char *dir, int fd, char *err, size_t errlen);

int cli_stack_start(const cli_stack_opts *o, cli_stack **out, char *err, size_t errlen);
/* The stack's kept data roots (DATA_DIR/data_roots, with this start's --data-root): count. */
int cli_stack_roots(const cli_stack *s, char *const **roots);
const char *cli_stack_url(const cli_stack *s);
/* Nonzero while every child is alive. */
int cli_stack_alive(cli_stack *s, char *err, size_t errlen);
/* SIGTERM to all children, SIGKILL after a grace, and waits for them. */
void cli_stack_stop(cli_stack *s);
/* Finds an executable named name; writes its path. 0 or HONE_ENOENT. */
int cli_find_binary(const char *bin_dir, const char *name, const char *const *rel_dirs, char *out,
                    size_t outlen);

/* How many GPUs `trainer --list-devices` reports (its {"gpus": [...]}); 0 when it fails, hangs
 * (30 s) or answers something else. */
int cli_count_gpus(const char *trainer);

/* `hone local` / `hone demo` option handling shared by cmd_local.c and demo.c; 2 on a usage
 * error (printed). */
/* With --device cuda or auto, --pack N workers per GPU that hone-train lists (so->gpus; N default
 * 4, and 1 on the CPU) unless --workers is given, which wins: its workers share the GPUs
 * round-robin. */
int cli_local_stack_opts(cli_ctx *c, cli_stack_opts *so, int default_workers, int default_port);
int cli_demo_run(cli_ctx *c);

#endif
