/* replay: the epochs a resumed job's own metrics.jsonl holds past the acknowledged one
 * (replay.c). Reads one file; talks to nobody. */
#ifndef HONE_WORKER_REPLAY_H
#define HONE_WORKER_REPLAY_H

#include <jansson.h>

/* The epoch lines (JSON objects, last one per epoch) that the trainer appended to
 * out_dir/metrics.jsonl for epochs after..upto (upto <= 0: no limit), in order and without gaps:
 * the list ends before the first epoch missing from the file. A resumed job reports them before
 * starting the trainer, since its checkpoint may be ahead of the last acknowledged epoch. Returns a
 * new array (empty when there is no file). */
json_t *hone_worker_unreported_epochs(const char *out_dir, int after, int upto);

#endif
