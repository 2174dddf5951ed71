/* sweep.c: the start-up sweep of the upload temp files a killed controller left behind. */
#ifndef HONE_CTL_SWEEP_H
#define HONE_CTL_SWEEP_H

#include "controller.h"

/* Removes every `.upload-*` in datasets/, artifacts/<job>/ and packed/<dataset>/ (logged as
 * `uploads_swept`); returns how many. Only before the controller listens: nothing is in flight. */
int ctl_sweep_uploads(hone_controller *c);

#endif
