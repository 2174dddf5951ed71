/* The controller's store, in two layers. Below, store.c: one SQLite connection opened with the
 * durability settings, the migrations, a cache of prepared statements keyed by their SQL, and the
 * generic db_* helpers that bind by a type string and return rows as JSON. Above, store_*.c: one
 * function per statement (or per pair that always goes together), named for what it does and
 * grouped by table, so that routes, the scheduler and the AutoML driver call functions, not SQL.
 * The store never opens a transaction on its own: callers own them (db_begin / db_commit, or the
 * report batch's savepoint), and a store_* function joins whatever is open. Loop thread only. */
#ifndef HONE_STORE_H
#define HONE_STORE_H

#include <jansson.h>

#include "hone.h"

/* One connection and its prepared statements, cached by SQL text (SQLITE_PREPARE_PERSISTENT):
 * each distinct statement is parsed once. Opaque: only store.c sees SQLite. */
typedef struct ctl_db ctl_db;

/* ---- store.c: the generic layer ---- */
/* Bind types: 's' const char * (NULL binds null), 'i' int, 'I' long long, 'd' double (a
 * non-finite one binds null). */
int db_open(const char *path, ctl_db **out, int *version);
void db_close(ctl_db *db);       /* finalizes the cached statements, closes, frees; NULL is fine */
int db_cached(const ctl_db *db); /* statements in the cache (tests) */
const char *db_errmsg(ctl_db *db); /* the last SQLite error message */
int db_begin(ctl_db *db);          /* BEGIN IMMEDIATE; refused inside an open transaction */
int db_commit(ctl_db *db);         /* rolls back when the commit fails */
void db_rollback(ctl_db *db);      /* no-op outside a transaction */
/* The savepoint "report": one request's changes inside the report batch (batch.c). */
int db_savepoint(ctl_db *db);
int db_savepoint_release(ctl_db *db); /* its changes join the open transaction */
void db_savepoint_undo(ctl_db *db);   /* its changes are dropped (rolled back to, then released) */
/* Runs one statement; returns the number of changed rows (>= 0) or HONE_ESQL. */
int db_run(ctl_db *db, const char *sql, const char *types, ...);
/* Same, for a statement whose changed-row count does not matter: HONE_OK or HONE_ESQL. */
int db_exec(ctl_db *db, const char *sql, const char *types, ...);
/* First row as a JSON object {column: value} (TEXT -> string, INTEGER -> integer, REAL -> real,
 * NULL -> null); HONE_ENOENT when no row. */
int db_row(ctl_db *db, json_t **out, const char *sql, const char *types, ...);
/* All rows as a JSON array of such objects. */
int db_rows(ctl_db *db, json_t **out, const char *sql, const char *types, ...);

/* Conventions below: `int` functions return HONE_OK or a negative HONE_E* code, except where a
 * comment says they return the number of rows changed (>= 0, or HONE_ESQL). Row getters write a
 * new reference (json object, or array of objects) to *row / *rows and return HONE_ENOENT when
 * a single row is missing. Times are unix seconds (double). */

/* ---- store_workers.c: table workers ---- */
/* gpu_uuid, host: NULL when the worker did not say (a CPU worker, an older hone-worker). */
int store_worker_insert(ctl_db *db, const char *id, const char *name, const char *resources,
                        const char *artifact_dir, const char *gpu_uuid, const char *host,
                        double now, const char *secret_hash);
/* The worker's {gpu_uuid} (null for none); HONE_ENOENT for an unknown worker. */
int store_worker_gpu(ctl_db *db, const char *id, json_t **row);
/* Running jobs (leases) per GPU: [{grp, n}], grp the worker's gpu_uuid or, for a worker without
 * one, "#" and its id (each such worker its own group). Only groups with a running job. */
int store_running_by_gpu(ctl_db *db, json_t **rows);
/* last_seen = now; rows changed: 0 for an unknown worker. */
int store_worker_touch(ctl_db *db, const char *id, double now);
/* The worker's latest heartbeat telemetry (gpus: JSON text, NULL = none) at now. */
int store_worker_gpus_set(ctl_db *db, const char *id, const char *gpus, double now);
/* {secret_hash} of a worker (auth.c). */
int store_worker_secret(ctl_db *db, const char *id, json_t **row);
/* Every worker without its credential: id, name, resources, artifact_dir, registered, last_seen,
 * gpus (JSON text or null), gpus_at, gpu_uuid, host. */
int store_workers_list(ctl_db *db, json_t **rows);
/* Workers seen after `since`. */
int store_workers_count_live(ctl_db *db, double since, int *n);

/* ---- store_jobs.c: table jobs, one job at a time ---- */
/* A queued job of an experiment (a train job, or an AutoML job with epochs 0), waiting for the
 * convert job convert_id (NULL: none) to be done before it (or its trials) may be leased. */
int store_job_insert(ctl_db *db, const char *id, const char *experiment_id, const char *action,
                     const char *name, const char *specs, int epochs, double now,
                     const char *convert_id);
/* An evaluate or inference job (actions.c), queued, with its config (and dataset, when given). */
int store_action_insert(ctl_db *db, const char *id, const char *experiment_id, const char *action,
                        const char *name, const char *config, const char *dataset_id, double now);
int store_job_get(ctl_db *db, const char *id, json_t **row); /* the whole row */
/* The same, only when owner (a user id) owns it (owner NULL: anyone's); HONE_ENOENT otherwise. */
int store_job_get_owned(ctl_db *db, const char *id, const char *owner, json_t **row);
/* Fine-tuning: the job whose model job id starts from (from_job); whether worker_id runs a job
 * starting from model_id's model (a row, else HONE_ENOENT). */
int store_job_set_from(ctl_db *db, const char *id, const char *from_job);
int store_worker_finetune_running(ctl_db *db, const char *worker_id, const char *model_id,
                                  json_t **row);
/* The columns a report needs, with the experiment's metric as exp_metric (the hot path). */
int store_job_report_row(ctl_db *db, const char *id, json_t **row);
/* The queued job to lease next (train, convert, evaluate, inference, export; skipping jobs whose
 * convert job is not done yet), fair between owners: among owners under max_running running jobs
 * (0: no cap; admins have none), the one with the fewest running for its weight (weights: JSON
 * {user name: weight}, NULL: all 1), then the earliest virtual start (the later of vclock and the
 * owner's finish in finish, JSON {owner id: finish}), then the longest waiting; that owner's
 * oldest job (queued_at, then insertion), with columns fair_start and fair_finish (its virtual
 * start and start + 1/weight). HONE_ENOENT when none. */
int store_job_next_queued(ctl_db *db, const char *weights, int max_running, double vclock,
                          const char *finish, json_t **row);
/* How many of owner's jobs are queued (trials and convert jobs included). */
int store_jobs_queued_count(ctl_db *db, const char *owner, int *n);
/* Jobs filtered by each non-NULL argument (top: no trials), oldest first, at most limit after
 * skipping offset. */
int store_jobs_list(ctl_db *db, json_t **rows, const char *owner, const char *experiment_id,
                    const char *status, const char *parent_id, const char *action, int top,
                    int limit, int offset);
/* Rows {action, status, n}: jobs counted by action and status (/metrics). */
int store_jobs_count_by_status(ctl_db *db, json_t **rows);
/* A fresh epoch: epoch, best metric and epoch (when better), result.last = last (JSON text), the
 * lease extended to lease_expires, the decision sent. */
int store_job_report_epoch(ctl_db *db, const char *id, int epoch, int better, double metric,
                           const char *last, double lease_expires, const char *decision);
/* A repeated epoch: only the decision sent. */
int store_job_set_decision(ctl_db *db, const char *id, const char *decision);
int store_job_cancel(ctl_db *db, const char *id, double now); /* canceled, finished now */
/* A running train job is told through heartbeat and report replies (control column). */
int store_job_request_cancel(ctl_db *db, const char *id);
int store_job_request_pause(ctl_db *db, const char *id);
int store_job_pause(ctl_db *db, const char *id); /* paused now, resumable once it has an epoch */
/* A paused train job back to the end of the queue, control and last decision cleared. */
int store_job_resume(ctl_db *db, const char *id);
/* A failed trainer retried: back to the queue (resuming from its checkpoint), one more attempt,
 * error and log_tail = log_tail, result (JSON text). */
int store_job_retry(ctl_db *db, const char *id, double now, const char *log_tail,
                    const char *result);
/* A train job ends with status (paused: not finished, resumable); failed counts an attempt and
 * sets error = log_tail; log_tail NULL keeps the stored one; result is JSON text. The lease is
 * cleared here, its row ended by store_lease_end. */
int store_job_end(ctl_db *db, const char *id, const char *status, int stopped_early, double now,
                  int failed, const char *log_tail, const char *result);

/* ---- store_converts.c: convert jobs (job rows with action 'convert' and a dataset_id) ---- */
/* A queued convert job of a dataset; config is its JSON text {input_size, channels, out}. */
int store_convert_insert(ctl_db *db, const char *id, const char *dataset_id, const char *config,
                         double now);
/* The newest convert job of the dataset at that size and channels that is queued, running or
 * done (the one to reuse); HONE_ENOENT when none is. */
int store_convert_find(ctl_db *db, const char *dataset_id, int size, int channels, json_t **row);
/* A progress report: result.progress = progress (JSON text), the lease extended, the decision. */
int store_convert_progress(ctl_db *db, const char *id, const char *progress, double lease_expires,
                           const char *decision);
/* Jobs waiting for the convert job, trials left out (their AutoML job stands for them): train
 * jobs queued or paused, AutoML jobs running or paused (whole rows). */
int store_convert_waiting(ctl_db *db, const char *convert_id, json_t **rows);
/* {id} of a queued or running convert job of the dataset; HONE_ENOENT when none is. */
int store_converts_active(ctl_db *db, const char *dataset_id, json_t **row);
/* Removes the dataset's convert jobs (with their leases); rows changed. */
int store_converts_delete(ctl_db *db, const char *dataset_id);

/* ---- store_leases.c: the live lease on the job row, and table leases (history) ---- */
/* A queued job to worker_id until lease_expires, with its resolved spec; a lease row. HONE_ESTATE
 * when the job is no longer queued. */
int store_lease_grant(ctl_db *db, const char *job_id, const char *worker_id, double now,
                      double lease_expires, const char *spec_yaml);
int store_lease_extend(ctl_db *db, const char *job_id, double lease_expires);
/* A job whose lease lapsed (its latest lease ended 'expired') and that is still queued goes back
 * to the worker that last held it, with a new lease row. Any other end (released, paused, failed
 * and retried, done) is final for that worker: a late heartbeat or report must not take the job
 * back. Rows changed (1: taken back), or HONE_ESQL. */
int store_lease_reattach(ctl_db *db, const char *job_id, const char *worker_id,
                         double lease_expires, double now);
/* A lapsed lease: the running job back to the queue (resuming from its checkpoint), its lease row
 * ended 'expired'. */
int store_lease_expire(ctl_db *db, const char *job_id, double now);
/* The job's open lease row ended now for reason (the job's end status). */
int store_lease_end(ctl_db *db, const char *job_id, double now, const char *reason);
/* Running train jobs whose lease ended before now (whole rows). */
int store_leases_lapsed(ctl_db *db, double now, json_t **rows);
/* Every running train job's lease to lease_expires (after a restart). */
int store_leases_extend_all(ctl_db *db, double lease_expires);
/* Lease rows of an AutoML job's running trials ended 'canceled'. */
int store_leases_cancel_trials(ctl_db *db, const char *automl_id, double now);

/* ---- store_metrics.c: table metrics, per-epoch reports (idempotent by job and epoch) ---- */
/* Rows changed: 1 for a fresh epoch, 0 for one already stored. */
int store_metrics_append(ctl_db *db, const char *job_id, int epoch, const char *data, double now);
int store_metrics_list(ctl_db *db, const char *job_id, json_t **rows); /* {epoch, data} */
/* The same, at most limit epochs after skipping offset (a page of GET .../metrics). */
int store_metrics_page(ctl_db *db, const char *job_id, int limit, int offset, json_t **rows);
int store_metrics_data_list(ctl_db *db, const char *job_id, json_t **rows); /* {data} */
/* Rows {seq (the rowid), job_id, trial, epoch, data} of the job and its trials after seq `after`,
 * at most limit, in seq order (the metrics stream). */
int store_metrics_since(ctl_db *db, const char *job_id, long long after, int limit, json_t **rows);
/* An AutoML job's trials' epochs: n (all), spe (mean trainer seconds per epoch), recent (those
 * stored after `since`), first (when the first was stored). */
int store_metrics_trials_summary(ctl_db *db, const char *automl_id, double since, json_t **row);
/* {n, spe}: the epochs an experiment's jobs reported and their mean trainer seconds (a budget's
 * first estimate of an epoch when none is given). */
int store_metrics_experiment_spe(ctl_db *db, const char *experiment_id, json_t **row);

/* ---- store_logs.c: table job_logs, the trainer's lines that came with epoch reports ---- */
/* Rows changed: 1 for a fresh line, 0 for one already stored (job, epoch, n). */
int store_logs_append(ctl_db *db, const char *job_id, int epoch, int n, const char *line,
                      double now);
/* Rows {seq, job_id, trial, epoch, n, line} of the job and its trials after seq `after`, at most
 * limit, in seq order (GET .../logs and the logs stream). */
int store_logs_since(ctl_db *db, const char *job_id, long long after, int limit, json_t **rows);
/* A line of the controller's own about the job (epoch 0: no report carried it). */
int store_logs_add(ctl_db *db, const char *job_id, const char *line, double now);
/* {line}: the job's last line that came with a report (from the trainer: n < 1000, not an
 * epoch's own line); HONE_ENOENT when none did. */
int store_logs_last_reported(ctl_db *db, const char *job_id, json_t **row);

/* ---- store_automl.c: AutoML job rows and their event log (table automl_events) ---- */
/* Fixes the job's space and options (automl, JSON text) and marks it running. */
int store_automl_start(ctl_db *db, const char *id, const char *automl, double now);
int store_automl_resume(ctl_db *db, const char *id); /* running again, control cleared */
/* The job ends: status, result (JSON text), best metric and epoch, error (NULL: none). */
int store_automl_finish(ctl_db *db, const char *id, const char *status, double now,
                        const char *result, double best_metric, int best_epoch, const char *error);
/* The trials' errors ({error}) of the trials of automl_id that failed, oldest first. */
int store_trials_failed_errors(ctl_db *db, const char *automl_id, json_t **rows);
/* The job's error, and its log_tail where tail is not NULL (the failure's last lines). */
int store_job_set_error(ctl_db *db, const char *id, const char *error, const char *tail);
/* Rows {id}: running and paused AutoML jobs, oldest first (the searches to rebuild). */
int store_automl_list_live(ctl_db *db, json_t **rows);
/* Rows {id}: running AutoML jobs (to step after a restart). */
int store_automl_list_running(ctl_db *db, json_t **rows);
/* Appends an event with the next seq of the job (metric: NAN binds null; data may be NULL). */
int store_automl_event_append(ctl_db *db, const char *job_id, const char *kind, int trial,
                              int epoch, double metric, const char *data, double now);
int store_automl_events(ctl_db *db, const char *job_id, json_t **rows); /* in seq order */

/* ---- store_trials.c: the trials of an AutoML job (job rows with parent_id) ---- */
int store_trial_insert(ctl_db *db, const char *id, const char *experiment_id, const char *automl_id,
                       const char *name, int trial, const char *config, int epochs, double now);
/* A paused trial queued again to run until `epochs` from its checkpoint; rows changed. */
int store_trial_requeue(ctl_db *db, const char *automl_id, int trial, int epochs, double now);
/* The trial with the best best_metric (ties: lowest trial number); done_only: among those that
 * finished their whole schedule (status done: their test pass and model.bin). */
int store_trial_best(ctl_db *db, const char *automl_id, int maximize, int done_only, json_t **row);
int store_trials_list(ctl_db *db, const char *automl_id, json_t **rows); /* {id, trial} by trial */
int store_trials_ids(ctl_db *db, const char *automl_id, json_t **rows);  /* {id} */
/* Trials queued or running (leased). */
int store_trials_count_active(ctl_db *db, const char *automl_id, int *n);
/* Rows {status, n, se, last}: trials counted by status, with how many stopped early and the
 * highest trial number. */
int store_trials_count_by_status(ctl_db *db, const char *automl_id, json_t **rows);
/* Every queued, paused or running trial canceled now, its lease cleared. */
int store_trials_cancel(ctl_db *db, const char *automl_id, double now);
/* Every paused or queued trial stopped early now (the search is done). */
int store_trials_stop_waiting(ctl_db *db, const char *automl_id, double now);

/* ---- store_datasets.c: table datasets ---- */
/* Ownership (migration 007): every getter and list of datasets, experiments and jobs that a route
 * calls takes owner, a user id: rows of other users are not found (HONE_ENOENT, so the route
 * answers 404) and not listed. NULL: every user's (admins, workers, the scheduler). */
int store_dataset_insert(ctl_db *db, const char *id, const char *name, const char *type,
                         const char *format, const char *path, const char *description,
                         const char *stats, const char *owner, double now);
int store_dataset_get(ctl_db *db, const char *id, const char *owner, json_t **row);
/* oldest first */
int store_datasets_list(ctl_db *db, const char *owner, json_t **rows, int limit, int offset);
/* HONE_OK, or HONE_ENOENT when not (or not owner's) */
int store_dataset_exists(ctl_db *db, const char *id, const char *owner);
/* {experiment_id} of an experiment that uses the dataset; HONE_ENOENT when none does. */
int store_dataset_used_by(ctl_db *db, const char *id, json_t **row);
int store_dataset_delete(ctl_db *db, const char *id); /* rows changed: 0 for an unknown id */
/* HONE_OK when a dataset's path is path or lies below it (HONE_ENOENT when none does): an uploaded
 * folder goes with its dataset only when no other dataset names it (sweep.c). */
int store_dataset_path_used(ctl_db *db, const char *path);

/* ---- store_dataset_files.c: table dataset_files (served files' hashes) ---- */
/* {kind, name, bytes, mtime, sha256} of every hashed file of the dataset. */
int store_dataset_files_list(ctl_db *db, const char *dataset_id, json_t **rows);
/* Inserts or replaces one file's hash (kind "file" or "packed"). */
int store_dataset_file_put(ctl_db *db, const char *dataset_id, const char *kind, const char *name,
                           int64_t bytes, double mtime, const char *sha256);
/* HONE_OK when worker_id runs a job that reads the dataset (a job of an experiment that uses it,
 * or its convert job); HONE_ENOENT when not. */
int store_dataset_leased_to(ctl_db *db, const char *dataset_id, const char *worker_id);
/* {id, config} of the evaluate, inference and export jobs leased to worker_id and running (their
 * parent's model is theirs to read). */
int store_worker_actions_running(ctl_db *db, const char *worker_id, json_t **rows);
/* {id, config} of the running convert jobs of the dataset leased to worker_id. */
int store_dataset_convert_leased(ctl_db *db, const char *dataset_id, const char *worker_id,
                                 json_t **rows);

/* ---- store_experiments.c: tables experiments and experiment_datasets ---- */
/* JSON members (train_datasets, specs, automl_settings) as JSON text. */
int store_experiment_insert(ctl_db *db, const char *id, const char *name, const char *network,
                            const char *train_datasets, const char *eval_dataset,
                            const char *metric, const char *specs, const char *automl_settings,
                            const char *description, const char *owner, double now);
/* Every member but the network (which never changes) and the creation time. */
int store_experiment_update(ctl_db *db, const char *id, const char *name,
                            const char *train_datasets, const char *eval_dataset,
                            const char *metric, const char *specs, const char *automl_settings,
                            const char *description);
int store_experiment_get(ctl_db *db, const char *id, const char *owner, json_t **row);
int store_experiment_network(ctl_db *db, const char *id, json_t **row); /* {network} */
/* oldest first */
int store_experiments_list(ctl_db *db, const char *owner, json_t **rows, int limit, int offset);
/* {id} of a job of the experiment; HONE_ENOENT when it has none. */
int store_experiment_used_by(ctl_db *db, const char *id, json_t **row);
int store_experiment_delete(ctl_db *db, const char *id); /* rows changed: 0 for an unknown id */
/* The experiment uses the dataset for training, or (eval) for evaluation; once per role. */
int store_experiment_dataset_add(ctl_db *db, const char *id, const char *dataset_id, int eval);
int store_experiment_datasets_clear(ctl_db *db, const char *id); /* before they are added again */

/* ---- store_users.c: tables users, api_keys, tokens (hashes only; auth.c hashes) ---- */
/* Users: {id, name, role ('admin'|'user'), created, disabled (null, or when)}. The built-in
 * 'admin' exists from migration 007. Names are unique ignoring ASCII case (migration 012). */
int store_user_insert(ctl_db *db, const char *id, const char *name, const char *role, double now);
int store_user_get(ctl_db *db, const char *id, json_t **row);
int store_user_by_name(ctl_db *db, const char *name, json_t **row); /* ignoring ASCII case */
int store_users_list(ctl_db *db, json_t **rows, int limit, int offset);
/* Disables the user (when: a time; its keys and tokens are refused while it is, auth.c), or
 * enables it (when NAN) and deletes the tokens from before (its keys work again, the tokens do
 * not: it logs in anew). Rows changed: 0 for an unknown user. */
int store_user_disable(ctl_db *db, const char *id, double when);
/* Where a new key comes from (migration 012): who made it ("admin" for the admin key), the key
 * it was minted with (NULL: the admin key), the SHA-256 of the admin key at the root of its chain
 * (NULL: none, or no auth configured). */
typedef struct store_key_origin {
    const char *created_by, *parent_key, *admin_key;
} store_key_origin;
/* An API key of a user: its id, a non-secret prefix for lists, the SHA-256 (hex) of the key. */
int store_key_insert(ctl_db *db, const char *id, const char *user_id, const char *prefix,
                     const char *key_hash, double now, const store_key_origin *from);
/* A user's keys without their hashes: id, user_id, prefix, created, last_used, revoked,
 * created_by, parent_key. */
int store_keys_list(ctl_db *db, const char *user_id, json_t **rows, int limit, int offset);
int store_keys_live(ctl_db *db, const char *user_id, int *n); /* keys not revoked */
/* {id, user_id, revoked, admin_key, name, role, disabled} of the key with that hash. */
int store_key_by_hash(ctl_db *db, const char *key_hash, json_t **row);
int store_key_touch(ctl_db *db, const char *id, double now); /* last_used = now */
/* Revokes user_id's key id and every key minted below it, whoever owns them (kept, revoked =
 * now), and deletes the tokens made from any of them; rows changed (the key and those below): 0
 * when the user has no such key. */
int store_key_revoke(ctl_db *db, const char *user_id, const char *id, double now);
/* A login token, made from API key key_id or (key_id NULL) from the admin key whose SHA-256 is
 * admin_key (NULL: with no auth configured). */
int store_token_insert(ctl_db *db, const char *token_hash, const char *user_id, const char *key_id,
                       const char *admin_key, double now, double expires);
/* {user_id, key_id, admin_key, expires, name, role, disabled, key_revoked, key_admin_key} of the
 * token with that hash (key_*: its key's, null for the admin key's tokens). */
int store_token_get(ctl_db *db, const char *token_hash, json_t **row);
int store_tokens_expire(ctl_db *db, double now); /* deletes tokens past their time */
/* Keeps the newest `keep` tokens made from key_id (or, key_id NULL, from the admin key admin_key)
 * and deletes the others. */
int store_tokens_trim(ctl_db *db, const char *key_id, const char *admin_key, int keep);

#endif
