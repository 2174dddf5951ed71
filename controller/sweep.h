/* sweep.c: the start-up sweep of the upload temp files a killed controller left behind, and the
 * removal of a file or folder tree that it and the upload path share. */
#ifndef HONE_CTL_SWEEP_H
#define HONE_CTL_SWEEP_H

#include "controller.h"

/* Removes every `.upload-*` in datasets/, artifacts/<job>/ and packed/<dataset>/ (logged as
 * `uploads_swept`); returns how many. Only before the controller listens: nothing is in flight. */
int ctl_sweep_uploads(hone_controller *c);
/* Removes path, a file or a whole folder (links not followed): HONE_OK, or HONE_EIO when some of
 * it stayed. */
int ctl_rm_tree(const char *path);

#endif
