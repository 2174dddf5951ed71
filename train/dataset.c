/* train/dataset.c: loads MNIST-family IDX files (plain or gzipped) into float images, checks that
 * images and labels agree and that the spec fits this data (spec/'s size limits, the validation
 * split), takes the validation split from the end of the training file, applies
 * train_limit/test_limit, and normalises every part with the training part's statistics. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "dataset.h"

static int open_idx(const char *dir, const char *stem, hone_data_idx **out, char *err,
                    size_t errlen)
{
    char path[1200];
    snprintf(path, sizeof(path), "%s/%s", dir, stem);
    int rc = hone_data_idx_read_file(path, out, err, errlen);
    if (rc != HONE_ENOENT)
        return rc;
    snprintf(path, sizeof(path), "%s/%s.gz", dir, stem);
    rc = hone_data_idx_read_file(path, out, err, errlen);
    if (rc == HONE_ENOENT && err)
        snprintf(err, errlen,
                 "data.path: %s/%s[.gz] not found (install dataset-fashion-mnist or set data.path)",
                 dir, stem);
    return rc;
}

/* Reads one images+labels pair into part (first `take` images starting at `from`). */
static void fill_part(const hone_data_idx *im, const hone_data_idx *lb, int from, int take,
                      data_part *p)
{
    size_t row = im->count / (size_t)im->dims[0];
    p->n = take;
    p->x = hone_xmalloc(sizeof(float) * row * (size_t)(take ? take : 1));
    p->y = hone_xmalloc(sizeof(int32_t) * (size_t)(take ? take : 1));
    for (int i = 0; i < take; i++) {
        const uint8_t *src = im->data + (size_t)(from + i) * row;
        for (size_t j = 0; j < row; j++)
            p->x[(size_t)i * row + j] = (float)src[j] * (1.0f / 255.0f);
        p->y[i] = lb->data[from + i];
    }
}

static int check_pair(const hone_data_idx *im, const hone_data_idx *lb, const char *what, char *err,
                      size_t errlen)
{
    if (im->ndims != 3 || lb->ndims != 1 || im->dims[0] != lb->dims[0]) {
        snprintf(err, errlen, "data: %s images/labels shapes do not match (%d images, %d labels)",
                 what, im->dims[0], lb->dims[0]);
        return HONE_EPARSE;
    }
    return HONE_OK;
}

int dataset_load(const hone_train_spec *spec, dataset *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof(*out));
    hone_data_idx *tri = NULL, *trl = NULL, *tei = NULL, *tel = NULL;
    const char *dir = spec->data.path;
    int rc;
    if ((rc = open_idx(dir, "train-images-idx3-ubyte", &tri, err, errlen)) < 0 ||
        (rc = open_idx(dir, "train-labels-idx1-ubyte", &trl, err, errlen)) < 0 ||
        (rc = open_idx(dir, "t10k-images-idx3-ubyte", &tei, err, errlen)) < 0 ||
        (rc = open_idx(dir, "t10k-labels-idx1-ubyte", &tel, err, errlen)) < 0)
        goto fail;
    if ((rc = check_pair(tri, trl, "training", err, errlen)) < 0 ||
        (rc = check_pair(tei, tel, "test", err, errlen)) < 0)
        goto fail;
    if (tri->dims[1] != tei->dims[1] || tri->dims[2] != tei->dims[2]) {
        snprintf(err, errlen, "data: training and test images differ in size");
        rc = HONE_EPARSE;
        goto fail;
    }
    int total = tri->dims[0], val = spec->data.val_size;
    int maxl = 0;
    for (size_t i = 0; i < trl->count; i++)
        maxl = trl->data[i] > maxl ? trl->data[i] : maxl;
    for (size_t i = 0; i < tel->count; i++)
        maxl = tel->data[i] > maxl ? tel->data[i] : maxl;
    /* the size limits and the validation split against this data, before anything is allocated:
     * the controller checked the same facts (its dataset stats) at create time */
    hone_spec_data facts = {total, tei->dims[0], 1, tri->dims[1], tri->dims[2], maxl + 1};
    char field[64];
    if (hone_spec_check(spec, &facts, field, sizeof field, err, errlen) != HONE_OK) {
        rc = HONE_ERANGE;
        goto fail;
    }
    int ntrain = total - val;
    if (spec->data.train_limit > 0 && spec->data.train_limit < ntrain)
        ntrain = spec->data.train_limit;
    int ntest = tei->dims[0];
    if (spec->data.test_limit > 0 && spec->data.test_limit < ntest)
        ntest = spec->data.test_limit;
    out->c = 1;
    out->h = tri->dims[1];
    out->w = tri->dims[2];
    out->classes = maxl + 1;
    fill_part(tri, trl, 0, ntrain, &out->train);
    fill_part(tri, trl, total - val, val, &out->val);
    fill_part(tei, tel, 0, ntest, &out->test);

    size_t row = (size_t)out->h * out->w, nt = (size_t)ntrain * row;
    double s = 0, s2 = 0;
    for (size_t i = 0; i < nt; i++)
        s += out->train.x[i];
    double mean = s / (double)nt;
    for (size_t i = 0; i < nt; i++)
        s2 += (out->train.x[i] - mean) * (out->train.x[i] - mean);
    double sd = sqrt(s2 / (double)nt);
    float m = (float)mean, inv = (float)(1.0 / (sd > 1e-6 ? sd : 1.0));
    data_part *parts[3] = {&out->train, &out->val, &out->test};
    for (int p = 0; p < 3; p++)
        for (size_t i = 0; i < (size_t)parts[p]->n * row; i++)
            parts[p]->x[i] = (parts[p]->x[i] - m) * inv;
    rc = HONE_OK;
fail:
    hone_data_idx_free(tri);
    hone_data_idx_free(trl);
    hone_data_idx_free(tei);
    hone_data_idx_free(tel);
    if (rc < 0)
        dataset_free(out);
    return rc;
}

void dataset_free(dataset *d)
{
    data_part *parts[3] = {&d->train, &d->val, &d->test};
    for (int p = 0; p < 3; p++) {
        free(parts[p]->x);
        free(parts[p]->y);
        parts[p]->x = NULL;
        parts[p]->y = NULL;
    }
}
