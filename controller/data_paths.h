/* data_paths.c: a stored folder (a dataset's path, an inference folder, a dataset's packed
 * folder) opened again at every read, beneath the trusted root it was checked against when it was
 * created, so that a folder replaced by a symbolic link since (to /etc, to the data dir, to
 * another dataset) is refused instead of followed. */
#ifndef HONE_CTL_DATA_PATHS_H
#define HONE_CTL_DATA_PATHS_H

#include <jansson.h>
#include <stddef.h>

#include "controller.h"

/* Opens the folder path (absolute and resolved when it was stored) beneath the longest of the
 * data roots and the data dir (trusted, admin-configured; their own links are followed) that
 * holds it, following no link below that root. *fd: an O_DIRECTORY descriptor (the caller closes
 * it). HONE_ENOENT: it is gone; HONE_EPERM: a link on the way, or beneath no root any more (msg
 * names the path and why); HONE_EIO otherwise. Reads cfg only: thread-pool safe. */
int ctl_data_open(const hone_controller_config *cfg, const char *path, int *fd, char *msg,
                  size_t msglen);
/* <data_dir>/packed/<id> the same way (no link below the data dir). */
int ctl_packed_open(const hone_controller_config *cfg, const char *id, int *fd, char *msg,
                    size_t msglen);
/* At lease time, on the loop (a few opens of folders, like the lease's mkdir): the folders job
 * will read (flat's data.path, its dataset's and its experiment's dataset's paths, an inference
 * folder, evaluate's data.path) still open as ctl_data_open does. HONE_EPERM with msg naming the
 * first that does not; a folder that is gone is left to the trainer to report, as before. */
int ctl_job_paths_check(hone_controller *c, const json_t *job, const json_t *flat, char *msg,
                        size_t msglen);

#endif
