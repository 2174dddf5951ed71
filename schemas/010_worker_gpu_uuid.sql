-- Hone controller store, migration 010: the GPU a worker trains on, by UUID ("GPU-...", as
-- nvidia-smi prints it), and its host, as it registered them (issue 9). Workers naming one UUID
-- share that GPU (hone local --pack); the scheduler spreads train jobs over GPUs by it. NULL for
-- CPU workers and workers that did not say (each its own group).
ALTER TABLE workers ADD COLUMN gpu_uuid TEXT;
ALTER TABLE workers ADD COLUMN host TEXT;
CREATE INDEX workers_by_gpu ON workers (gpu_uuid) WHERE gpu_uuid IS NOT NULL;
