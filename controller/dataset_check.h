/* dataset_check.c: where a dataset may come from and whether its files are what they claim.
 * Pure file checks (thread-pool safe): no store, no controller. */
#ifndef HONE_CTL_DATASET_CHECK_H
#define HONE_CTL_DATASET_CHECK_H

#include <jansson.h>
#include <stddef.h>

/* Resolves path inside one of roots (realpath, no '..' component, no symlink escape); writes the
 * resolved path. HONE_EINVAL with msg on refusal. */
int ctl_path_confine(char *const *roots, int nroots, const char *path, char *resolved, size_t n,
                     char *msg, size_t msglen);
/* For users (not admins): a resolved path must not be the controller's data_dir itself, nor a
 * folder above it, nor anything inside it (an allow-list: users reach the data dir only through
 * uploads; it holds the store and every user's uploads, packed files and artifacts). HONE_EINVAL
 * with msg on refusal. */
int ctl_path_private(const char *data_dir, const char *resolved, char *msg, size_t msglen);
/* Checks the dataset files and returns their stats (new reference). */
int ctl_dataset_inspect(const char *format, const char *dir, json_t **stats, char *msg,
                        size_t msglen);
/* A KITTI dataset with its class map (a JSON array of names; NULL: the classes found, sorted).
 * HONE_EPARSE with msg naming the folder and its first problems (file:line: why). */
int ctl_dataset_inspect_kitti(const char *dir, const json_t *classes, json_t **stats, char *msg,
                              size_t msglen);
/* A COCO dataset (data/data.h's layouts). HONE_EPARSE with msg naming the folder and its first
 * problems (JSON file: annotation|image|category id: why). */
int ctl_dataset_inspect_coco(const char *dir, json_t **stats, char *msg, size_t msglen);

/* No format given: guesses it from dir's shape (data/guess.h) into *format, and the type with it
 * into *type unless the user gave one (type_given), which the guess must then fit. HONE_EINVAL with
 * msg (what was seen, and the fix: give format) otherwise. Lists folders: a check thread's work. */
int ctl_dataset_guess(const char *dir, const char *type_given, const char **format,
                      const char **type, char *msg, size_t msglen);

#endif
