-- Hone controller store, migration 002: worker credentials. A worker proves who it is with the
-- secret issued at registration; only its SHA-256 is kept. Workers registered before this migration
-- have none and must register again.
ALTER TABLE workers ADD COLUMN secret_hash TEXT;
