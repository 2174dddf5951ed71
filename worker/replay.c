/* replay: the epoch lines a resumed job's own metrics.jsonl holds past the last acknowledged epoch
 * (checkpointed by the trainer, never acknowledged by the controller), for job.c to report before
 * the trainer goes on. Reads one file; talks to nobody. */
#include "replay.h"

#include "hone.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Growable list of epoch lines by epoch - after - 1 (NULL where the file has none). */
typedef struct epoch_lines {
    json_t **v;
    size_t n;
} epoch_lines;

static void epoch_lines_put(epoch_lines *L, size_t i, json_t *line)
{
    if (i >= L->n) {
        size_t n = L->n ? L->n : 16;
        while (n <= i)
            n *= 2;
        L->v = hone_xrealloc(L->v, n * sizeof(json_t *));
        memset(L->v + L->n, 0, (n - L->n) * sizeof(json_t *));
        L->n = n;
    }
    json_decref(L->v[i]);
    L->v[i] = line;
}

json_t *hone_worker_unreported_epochs(const char *out_dir, int after, int upto)
{
    json_t *out = json_array();
    epoch_lines L = {0};
    char path[4096 + 32], *buf = NULL;
    size_t cap = 0;
    ssize_t len;
    FILE *f;

    snprintf(path, sizeof(path), "%s/metrics.jsonl", out_dir);
    f = fopen(path, "r");
    if (!f)
        return out;
    /* hone-train appends one line per epoch (checkpoint first, then the line) and one per
     * run's end ("event"); a line cut short by a kill does not parse and is skipped. */
    while ((len = getline(&buf, &cap, f)) > 0) {
        json_t *j = json_loadb(buf, (size_t)len, 0, NULL);
        json_t *ep = json_object_get(j, "epoch");
        json_int_t e = json_is_integer(ep) ? json_integer_value(ep) : 0;
        if (!json_is_object(j) || json_object_get(j, "event") || e <= after || e > 100000 ||
            (upto > 0 && e > upto)) {
            json_decref(j);
            continue;
        }
        epoch_lines_put(&L, (size_t)(e - after - 1), j); /* a later line for an epoch wins */
    }
    free(buf);
    fclose(f);
    for (size_t i = 0; i < L.n && L.v[i]; i++)
        json_array_append(out, L.v[i]);
    for (size_t i = 0; i < L.n; i++)
        json_decref(L.v[i]);
    free(L.v);
    return out;
}
