/* routes_*.c (and dataset_upload.c): the REST handlers by resource, registered on the controller's
 * HTTP server, and the API views of rows that more than one resource shows. */
#ifndef HONE_CTL_ROUTES_H
#define HONE_CTL_ROUTES_H

#include <jansson.h>

#include "controller.h"

int ctl_routes_datasets(hone_controller *c);
int ctl_routes_dataset_upload(hone_controller *c); /* dataset_upload.c */
int ctl_routes_experiments(hone_controller *c);
int ctl_routes_jobs(hone_controller *c);
int ctl_routes_workers(hone_controller *c);
int ctl_routes_artifacts(hone_controller *c);
json_t *ctl_dataset_json(const json_t *row);
json_t *ctl_experiment_json(const json_t *row);

#endif
