-- Hone controller store, migration 009: each worker's latest GPU telemetry (issue 9), as its
-- heartbeat carried it: a JSON array [{index, util, mem_used, mem_total}], NULL when the worker
-- has none (no NVML, a CPU worker, or not one heartbeat yet). gpus_at: when it came (epoch s).
ALTER TABLE workers ADD COLUMN gpus TEXT;
ALTER TABLE workers ADD COLUMN gpus_at REAL;
