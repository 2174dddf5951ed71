/* sweep.c: the start-up sweep of the upload temp files a killed controller left behind, and the
 * removal of a file or folder tree that it and the upload path share. */
#ifndef HONE_CTL_SWEEP_H
#define HONE_CTL_SWEEP_H

#include "controller.h"

/* Removes every `.upload-*` in datasets/, artifacts/<job>/ and packed/<dataset>/ (logged as
 * `uploads_swept`); returns how many. Only before the controller listens: nothing is in flight. */
int ctl_sweep_uploads(hone_controller *c);
/* After a dataset's row is gone (committed): removes its packed folder (<data_dir>/packed/<id>)
 * and, only when path is its upload folder (<data_dir>/datasets/<id>, made by
 * POST /datasets:upload) and no other dataset names it, that folder; never a registered
 * folder. Both are renamed to `.upload-rm-<id>` at once, on the loop (so a kill during the
 * removal leaves them to the start-up sweep), then removed on the thread pool; done(ud) on the
 * loop when finished (done may be NULL). */
void ctl_dataset_files_remove(hone_controller *c, const char *id, const char *path,
                              void (*done)(void *ud), void *ud);
/* Removes path, a file or a whole folder (links not followed): HONE_OK, or HONE_EIO when some of
 * it stayed. */
int ctl_rm_tree(const char *path);

#endif
