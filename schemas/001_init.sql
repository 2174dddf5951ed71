-- Hone controller store, migration 001: the first schema. Applied once, in one transaction, by the
-- controller (controller/store.c); never edit a released migration, add 002_*.sql instead.
CREATE TABLE datasets (
    id TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    type TEXT NOT NULL,
    format TEXT NOT NULL,
    path TEXT NOT NULL,
    description TEXT NOT NULL DEFAULT '',
    stats TEXT NOT NULL DEFAULT '{}',
    created REAL NOT NULL
);

CREATE TABLE experiments (
    id TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    network TEXT NOT NULL,
    train_datasets TEXT NOT NULL,          -- JSON array of dataset ids
    eval_dataset TEXT REFERENCES datasets(id),
    metric TEXT NOT NULL,
    specs TEXT NOT NULL DEFAULT '{}',      -- base spec overrides, dotted keys (JSON object)
    automl_settings TEXT NOT NULL DEFAULT '{}',
    description TEXT NOT NULL DEFAULT '',
    created REAL NOT NULL
);

-- Which datasets an experiment uses: a dataset in use cannot be deleted (foreign key).
CREATE TABLE experiment_datasets (
    experiment_id TEXT NOT NULL REFERENCES experiments(id) ON DELETE CASCADE,
    dataset_id TEXT NOT NULL REFERENCES datasets(id),
    role TEXT NOT NULL,
    PRIMARY KEY (experiment_id, dataset_id, role)
);

-- Train jobs, AutoML jobs and trials (train jobs with parent_id and trial). The lease lives on the
-- job row (worker_id, lease_expires) so granting and expiring it is one row update.
CREATE TABLE jobs (
    id TEXT PRIMARY KEY,
    experiment_id TEXT NOT NULL REFERENCES experiments(id),
    parent_id TEXT REFERENCES jobs(id),
    action TEXT NOT NULL CHECK (action IN ('train', 'automl')),
    name TEXT NOT NULL DEFAULT '',
    status TEXT NOT NULL CHECK (status IN ('queued', 'running', 'paused', 'done', 'failed',
                                           'canceled', 'stopped')),
    trial INTEGER,
    config TEXT,                           -- trial overrides, dotted keys (JSON object)
    specs TEXT NOT NULL DEFAULT '{}',      -- job-level spec overrides (JSON object)
    spec_yaml TEXT,                        -- resolved spec handed to the trainer
    epochs_target INTEGER NOT NULL DEFAULT 0,
    epoch INTEGER NOT NULL DEFAULT 0,      -- last epoch reported
    resume INTEGER NOT NULL DEFAULT 0,
    attempts INTEGER NOT NULL DEFAULT 0,
    worker_id TEXT,
    last_worker_id TEXT,
    lease_expires REAL,
    control TEXT,                          -- requested: 'pause' | 'cancel'
    last_decision TEXT,                    -- last decision replied to a report
    stopped_early INTEGER NOT NULL DEFAULT 0,
    best_metric REAL,
    best_epoch INTEGER,
    result TEXT NOT NULL DEFAULT '{}',
    automl TEXT,                           -- automl jobs: {"space": ..., "opts": ...}
    error TEXT,
    log_tail TEXT,
    created REAL NOT NULL,
    queued_at REAL,
    started REAL,
    finished REAL
);
CREATE INDEX jobs_by_status ON jobs (status, queued_at);
CREATE INDEX jobs_by_parent ON jobs (parent_id, trial);
CREATE INDEX jobs_by_experiment ON jobs (experiment_id);
CREATE UNIQUE INDEX jobs_trial_unique ON jobs (parent_id, trial) WHERE trial IS NOT NULL;

-- Per-epoch metrics; a repeated report of the same epoch changes nothing.
CREATE TABLE metrics (
    job_id TEXT NOT NULL REFERENCES jobs(id) ON DELETE CASCADE,
    epoch INTEGER NOT NULL,
    data TEXT NOT NULL,
    created REAL NOT NULL,
    PRIMARY KEY (job_id, epoch)
);

-- The ordered log an AutoML search is rebuilt from after a restart (search/search.h replay).
CREATE TABLE automl_events (
    job_id TEXT NOT NULL REFERENCES jobs(id) ON DELETE CASCADE,
    seq INTEGER NOT NULL,
    kind TEXT NOT NULL CHECK (kind IN ('new', 'resume', 'report', 'end')),
    trial INTEGER NOT NULL,
    epoch INTEGER,
    metric REAL,
    data TEXT,
    created REAL NOT NULL,
    PRIMARY KEY (job_id, seq)
);

CREATE TABLE workers (
    id TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    resources TEXT NOT NULL DEFAULT '{}',
    artifact_dir TEXT,
    registered REAL NOT NULL,
    last_seen REAL NOT NULL
);

-- History of leases granted (the live lease is on jobs).
CREATE TABLE leases (
    id INTEGER PRIMARY KEY,
    job_id TEXT NOT NULL REFERENCES jobs(id) ON DELETE CASCADE,
    worker_id TEXT NOT NULL,
    granted REAL NOT NULL,
    ended REAL,
    end_reason TEXT
);
CREATE INDEX leases_by_job ON leases (job_id);
