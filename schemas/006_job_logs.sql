-- Hone controller store, migration 006: job logs as a live stream (issue 11, "Watching"). Each
-- epoch report carries the trainer's stderr lines since the previous report; they are stored
-- here with the report (same transaction), one row per line. A replayed report of a stored epoch
-- stores nothing (its lines are written only with the epoch's first report, and (job_id, epoch,
-- n) is unique). seq is the event id of GET /jobs/{id}/logs/stream: AUTOINCREMENT, so a later
-- line always has a larger seq and a seq is never reused.
CREATE TABLE job_logs (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    job_id TEXT NOT NULL REFERENCES jobs(id) ON DELETE CASCADE,
    epoch INTEGER NOT NULL,
    n INTEGER NOT NULL,   -- the line's place in its report
    line TEXT NOT NULL,
    created REAL NOT NULL,
    UNIQUE (job_id, epoch, n)
);
