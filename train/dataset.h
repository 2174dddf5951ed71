/* train/dataset.h (private): an image-classification dataset in host memory, split into train,
 * validation and test parts and normalised with the training part's mean and deviation. */
#ifndef HONE_TRAIN_DATASET_H
#define HONE_TRAIN_DATASET_H

#include "train.h"

typedef struct {
    float *x;   /* [n, c*h*w] */
    int32_t *y; /* [n] */
    int n;
} data_part;

typedef struct {
    int c, h, w, classes;
    data_part train, val, test;
} dataset;

/* Loads {train,t10k}-{images-idx3,labels-idx1}-ubyte[.gz] from spec->data.path. */
int dataset_load(const hone_train_spec *spec, dataset *out, char *err, size_t errlen);
void dataset_free(dataset *d);

#endif
