/* kinds/convert.c: the convert kind (TAO's dataset-convert): an image_folder or kitti dataset
 * packed once at one size and channel count by a worker (hone-pack; a KITTI set with its boxes),
 * reused by every job that trains at that size. Finding or creating one, the lease a worker gets,
 * its progress and end, the jobs that wait for it (not leased before it is done; failed with it
 * when it fails) and the data.packed of their specs. */
#ifndef HONE_CTL_CONVERT_H
#define HONE_CTL_CONVERT_H

#include <jansson.h>
#include <stddef.h>

#include "controller.h"

#define CTL_CONVERT_MIN_SIZE 8
#define CTL_CONVERT_MAX_SIZE 512

/* Whether datasets of this format are converted (image_folder, kitti). */
int ctl_convert_format(const char *format);
/* The channels an image folder packs to when 0 (its own) is asked: 3 when any image is colour,
 * else 1 (as hone_data_folder_pack decides). */
int ctl_convert_channels(const json_t *dataset_row, int channels);
/* The side and channels a job trains on from an image folder, from its resolved flat spec
 * (hone_spec_input_shape; data.channels 0: the folder's own). */
void ctl_convert_shape(const json_t *dataset_row, const json_t *flat, int *size, int *channels);
/* Inside the caller's transaction: the convert job of (dataset, size, channels) that is queued,
 * running or done, or a new queued one (*created = 1). channels is 1 or 3. */
int ctl_convert_ensure(hone_controller *c, const json_t *dataset_row, int size, int channels,
                       char *id_out, size_t idlen, int *created);
/* The "job" object of a convert job's lease reply (new reference): the dataset's folder, the size,
 * the channels and the packed file to write; for a KITTI set also format "kitti" and classes (the
 * dataset's class map, in its order). Creates <data_dir>/packed/<dataset id>/. */
json_t *ctl_convert_lease_job(hone_controller *c, const json_t *job);
/* Inside the caller's transaction: a convert job ends (a worker completed it, or its lease lapsed
 * after a cancel). done, or else failed / canceled, and then every job waiting for it fails. */
int ctl_convert_finish(hone_controller *c, const json_t *job, const char *status,
                       const char *log_tail, const json_t *final);
/* Inside the caller's transaction: a queued convert job was canceled; its waiting jobs fail. */
int ctl_convert_canceled(hone_controller *c, const json_t *job);
/* Sets data.packed in a job's flat spec from the convert job it waits for (none: unchanged). */
int ctl_convert_spec(hone_controller *c, const json_t *job, json_t *flat);
/* The dataset members of any job's API view: dataset_id, convert_job_id (jobs that wait for a
 * convert); a convert job's row adds its progress. */
void ctl_convert_json(json_t *o, const json_t *row);

#endif
