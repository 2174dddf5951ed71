-- Hone controller store, migration 007: users, API keys, login tokens and ownership (issue 10).
-- Keys and tokens are long random secrets, so only their SHA-256 is kept (no slow hash needed: a
-- 256-bit secret cannot be guessed from its hash). The admin's key lives in the config (or
-- HONE_ADMIN_KEY), never here; the built-in user 'admin' is who it stands for, and who owns
-- every row that existed before this migration.
CREATE TABLE users (
    id TEXT PRIMARY KEY,
    name TEXT NOT NULL UNIQUE,
    role TEXT NOT NULL CHECK (role IN ('admin', 'user')),
    created REAL NOT NULL
);
INSERT INTO users (id, name, role, created) VALUES ('admin', 'admin', 'admin', 0);

CREATE TABLE api_keys (
    id TEXT PRIMARY KEY,
    user_id TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    prefix TEXT NOT NULL,        -- the key's first characters, for telling keys apart in lists
    key_hash TEXT NOT NULL UNIQUE,
    created REAL NOT NULL,
    last_used REAL,
    revoked REAL                 -- when it was revoked; NULL: live
);
CREATE INDEX api_keys_by_user ON api_keys (user_id, created);

-- A token is what `hone login` keeps: made from a key (key_id NULL: the admin key), ended by the
-- key's revocation (its tokens are deleted with it) or by time.
CREATE TABLE tokens (
    token_hash TEXT PRIMARY KEY,
    user_id TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    key_id TEXT REFERENCES api_keys(id) ON DELETE CASCADE,
    created REAL NOT NULL,
    expires REAL NOT NULL
);
CREATE INDEX tokens_by_key ON tokens (key_id);

ALTER TABLE datasets ADD COLUMN owner TEXT NOT NULL DEFAULT 'admin';
ALTER TABLE experiments ADD COLUMN owner TEXT NOT NULL DEFAULT 'admin';
ALTER TABLE jobs ADD COLUMN owner TEXT NOT NULL DEFAULT 'admin';
CREATE INDEX datasets_by_owner ON datasets (owner, created);
CREATE INDEX experiments_by_owner ON experiments (owner, created);
CREATE INDEX jobs_by_owner ON jobs (owner, created);

-- A job belongs to whoever owns what it was made for: its experiment (train, AutoML, evaluate,
-- inference, export jobs and trials), else its dataset (a convert job). Set here, in the
-- statement's own transaction, so no code path that inserts a job can leave it with the default.
CREATE TRIGGER jobs_owner AFTER INSERT ON jobs
BEGIN
    UPDATE jobs SET owner = COALESCE(
        (SELECT owner FROM experiments WHERE id = NEW.experiment_id),
        (SELECT owner FROM datasets WHERE id = NEW.dataset_id),
        (SELECT owner FROM jobs WHERE id = NEW.parent_id),
        'admin')
    WHERE id = NEW.id;
END;
