-- Hone controller store, migration 005: export jobs (issue 11, TAO's action name): hone-train
-- --export of the model of a done train job or of an AutoML job's best_model/ as ONNX, the job's
-- artifact model.onnx; config as evaluate's. Only the CHECK on action changes, so jobs is rebuilt
-- as 004 did (foreign keys are off while migrations run).
CREATE TABLE jobs_new (
    id TEXT PRIMARY KEY,
    experiment_id TEXT REFERENCES experiments(id),
    parent_id TEXT REFERENCES jobs(id),
    action TEXT NOT NULL CHECK (action IN ('train', 'automl', 'convert', 'evaluate',
                                          'inference', 'export')),
    name TEXT NOT NULL DEFAULT '',
    status TEXT NOT NULL CHECK (status IN ('queued', 'running', 'paused', 'done', 'failed',
                                           'canceled', 'stopped')),
    trial INTEGER,
    config TEXT,                           -- trial overrides; convert: {input_size, channels, out};
                                           -- evaluate, inference, export: {parent_job_id, model_dir, sets, folder}
    specs TEXT NOT NULL DEFAULT '{}',
    spec_yaml TEXT,
    epochs_target INTEGER NOT NULL DEFAULT 0,
    epoch INTEGER NOT NULL DEFAULT 0,
    resume INTEGER NOT NULL DEFAULT 0,
    attempts INTEGER NOT NULL DEFAULT 0,
    worker_id TEXT,
    last_worker_id TEXT,
    lease_expires REAL,
    control TEXT,
    last_decision TEXT,
    stopped_early INTEGER NOT NULL DEFAULT 0,
    best_metric REAL,
    best_epoch INTEGER,
    result TEXT NOT NULL DEFAULT '{}',
    automl TEXT,
    error TEXT,
    log_tail TEXT,
    created REAL NOT NULL,
    queued_at REAL,
    started REAL,
    finished REAL,
    dataset_id TEXT,                       -- convert jobs: the dataset packed
    convert_id TEXT                        -- train / AutoML jobs and trials: the convert waited for
);
INSERT INTO jobs_new (id, experiment_id, parent_id, action, name, status, trial, config, specs,
                      spec_yaml, epochs_target, epoch, resume, attempts, worker_id, last_worker_id,
                      lease_expires, control, last_decision, stopped_early, best_metric,
                      best_epoch, result, automl, error, log_tail, created, queued_at, started,
                      finished, dataset_id, convert_id)
    SELECT id, experiment_id, parent_id, action, name, status, trial, config, specs, spec_yaml,
           epochs_target, epoch, resume, attempts, worker_id, last_worker_id, lease_expires,
           control, last_decision, stopped_early, best_metric, best_epoch, result, automl, error,
           log_tail, created, queued_at, started, finished, dataset_id, convert_id FROM jobs;
DROP TABLE jobs;
ALTER TABLE jobs_new RENAME TO jobs;
CREATE INDEX jobs_by_status ON jobs (status, queued_at);
CREATE INDEX jobs_by_parent ON jobs (parent_id, trial);
CREATE INDEX jobs_by_experiment ON jobs (experiment_id);
CREATE UNIQUE INDEX jobs_trial_unique ON jobs (parent_id, trial) WHERE trial IS NOT NULL;
CREATE INDEX jobs_by_dataset ON jobs (dataset_id) WHERE dataset_id IS NOT NULL;
CREATE INDEX jobs_by_convert ON jobs (convert_id) WHERE convert_id IS NOT NULL;
