/* guess: a dataset folder's format from its shape, when the user did not name one. Used by the
 * controller's dataset check (on its check threads: it lists folders) for `POST /datasets` and
 * uploads alike. Reads folder listings only: no file is opened. */
#ifndef HONE_DATA_GUESS_H
#define HONE_DATA_GUESS_H

#include <stddef.h>

/* The format dir looks like, one of:
 *   "idx"           IDX files at its top (train-images-idx3-ubyte[.gz] and the like)
 *   "kitti"         images/ + labels/, or train/ (val/, test/) each holding both
 *   "coco"          annotations.json (or any single *.json) + images/, or annotations/ holding
 *                   instances_*.json
 *   "image_folder"  class folders of images, or train/ (val/, test/) of class folders
 * into *format (a static string). HONE_EINVAL when none or several fit, with what was seen (and,
 * for several, which) in seen; HONE_ENOENT / HONE_EIO when dir cannot be listed. */
int hone_data_guess_format(const char *dir, const char **format, char *seen, size_t seenlen);

/* The dataset type a format belongs to: "object_detection" for kitti and coco, else
 * "image_classification". */
const char *hone_data_format_type(const char *format);

#endif
