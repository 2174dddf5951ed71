/* spec.c, spec_check.c: the trainer spec over spec/'s one schema (spec/spec.h): user overrides
 * flattened and checked, defaults, best_model's spec.yaml, AutoML spaces, the spec a job
 * resolves to and the create-time check of what it will train. Named ctl_spec.h, not spec.h:
 * controller/ and spec/ are both on the include path. Pure functions of their arguments: no
 * store, no controller object. */
#ifndef HONE_CTL_SPEC_H
#define HONE_CTL_SPEC_H

#include <jansson.h>
#include <stddef.h>

#include "spec.h"

/* Validates spec overrides (nested or dotted) into a flat object of dotted keys. On error returns
 * HONE_EINVAL and writes the offending field ("<prefix>.train.lr") and a message. */
int ctl_spec_flatten(const json_t *in, const char *prefix, json_t **flat, char *field,
                     size_t fieldlen, char *msg, size_t msglen);
/* A key hone-train understands, users may set and the network uses, or one spec/'s table sweeps
 * for it (network, for a resnet), so a search may sweep it. */
int ctl_spec_key_sweepable(const char *key, const char *network);
/* The default spec for a network as a flat object of every key (new reference). */
json_t *ctl_spec_defaults(const char *network);
/* A flat spec as the YAML a person reads (best_model/spec.yaml), written by spec/'s one emitter
 * (hone_spec_write_yaml: hone-train --spec reads it back to the same values); malloc'd, or NULL
 * with err naming the key that spec/ refuses. Leases carry the flat JSON itself. */
char *ctl_spec_to_yaml(const json_t *flat, char *err, size_t errlen);
/* What a resolved spec's AutoML space is sized by (ctl_spec_sizing): the images it trains on
 * (< 0: unknown) and what its default learning rate was sized by (1: not sized). */
typedef struct ctl_sizing {
    long long ntrain;
    double lr_factor;
    int batch_fit; /* the largest batch the heaviest trial of the space fits a worker at (0: any) */
} ctl_sizing;
/* AutoML spaces in search/search.h JSON shape for a network: the default swept set and all, with
 * train.batch_size's and train.lr's ranges sized by z (NULL: the table's ranges). */
json_t *ctl_space_default(const char *network, const ctl_sizing *z);
json_t *ctl_space_all(const char *network, const ctl_sizing *z);
/* What the spec checks know of a dataset, from its row's stats (unknown fields stay unknown). */
void ctl_spec_data(const json_t *dataset_row, hone_spec_data *d);
/* The flat spec a job hands to hone-train: network defaults < the dataset (data.path,
 * data.format) < experiment specs < job specs, then the keys neither specs set that are sized to
 * the dataset's stats (hone_spec_size: data.val_size, train.batch_size with train.lr,
 * train.epochs with its warm-up and step_epochs); rows and specs may be NULL. */
json_t *ctl_spec_resolve(const char *network, const json_t *dataset_row, const json_t *exp_specs,
                         const json_t *job_specs);
/* The images a resolved spec trains on in the dataset (its training part less the validation
 * split; data.train_limit not counted), or -1 when the dataset's counts are unknown. */
long long ctl_spec_ntrain(const json_t *flat, const json_t *dataset_row);
/* The sizing of a resolved spec's AutoML space: ctl_spec_ntrain, and the factor its train.lr was
 * sized by (1 unless it is the network's default scaled for the sized batch). */
ctl_sizing ctl_spec_sizing(const json_t *flat, const json_t *dataset_row);
/* The create-time check of what jobs of an experiment will train, as hone-train will check it
 * when it loads the data: the resolved spec (ctl_spec_resolve, sized to the data) through
 * hone_spec_check against the dataset's stats; with an AutoML space (NULL: none) also the trials'
 * schedule length from settings, each swept value in its key's range, a swept train.batch_size not
 * entirely above the training images, and the cross-key rules at every corner of the space. 0 or
 * HONE_EINVAL with field ("specs.model.hidden", "train_datasets" for what the dataset sets,
 * "automl_settings.automl_hyperparameters" when only a trial the space may draw fails) and message.
 */
int ctl_spec_check_create(const char *network, const json_t *dataset_row, const json_t *exp_specs,
                          const json_t *job_specs, const json_t *settings, const json_t *space,
                          char *field, size_t fieldlen, char *msg, size_t msglen);

#endif
