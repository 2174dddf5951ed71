-- Hone controller store, migration 013 (issue 30): fine-tuning from a parent job. from_job: the
-- done train job or AutoML job (its best_model/) whose model a train or AutoML job starts from
-- (REST parent_job_id; NULL: random weights). The trials of an AutoML job start from their
-- search's from_job. Only the id is kept: where the model lies is worked out by the controller
-- at every lease, never taken from a user.
ALTER TABLE jobs ADD COLUMN from_job TEXT REFERENCES jobs(id);
CREATE INDEX jobs_by_from_job ON jobs (from_job) WHERE from_job IS NOT NULL;
