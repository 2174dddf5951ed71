-- Hone controller store, migration 008: the SHA-256 of each file a dataset serves to workers that
-- share no disk with the controller (issue 10, GET /datasets/{id}/files). Hashing a file is slow,
-- so its hash is kept with the size and mtime it was computed at; a file whose size or mtime
-- changed is hashed again. kind: 'file' (a file of the dataset's folder, name relative to it) or
-- 'packed' (a packed file of a convert job, in <data_dir>/packed/<dataset id>/).
CREATE TABLE dataset_files (
    dataset_id TEXT NOT NULL REFERENCES datasets(id) ON DELETE CASCADE,
    kind TEXT NOT NULL CHECK (kind IN ('file', 'packed')),
    name TEXT NOT NULL,
    bytes INTEGER NOT NULL,
    mtime REAL NOT NULL,
    sha256 TEXT NOT NULL,
    PRIMARY KEY (dataset_id, kind, name)
);
