/* spec/spec_size.c: the defaults sized to the data (spec.h, "defaults sized to the data"): the
 * validation split, the batch size and the schedule's length that a spec gets when it does not set
 * them, from the image counts the controller knows of the dataset; and the AutoML range of
 * train.batch_size for those counts. Pure: numbers in, numbers out. */
#include <math.h>
#include <string.h>

#include "spec_internal.h"

/* The largest power of two p with p * per <= n; 0 when n < per. */
static long long pow2_within(long long n, long long per)
{
    long long p = 0;
    while ((p ? 2 * p : 1) <= n / per)
        p = p ? 2 * p : 1;
    return p;
}

uint64_t hone_spec_key_bit(const char *name)
{
    const hone_spec_key *k = hone_spec_key_find(name);
    return k ? 1ull << (size_t)(k - hone_spec_key_at(0)) : 0;
}

long long hone_spec_sized_val(long long train_images)
{
    if (train_images <= 0)
        return 0;
    long long v = train_images * HONE_SPEC_VAL_PERCENT / 100;
    long long floor =
        train_images / 5 < HONE_SPEC_VAL_FLOOR ? train_images / 5 : HONE_SPEC_VAL_FLOOR;
    if (v < floor)
        v = floor;
    return v > HONE_SPEC_VAL_CAP ? HONE_SPEC_VAL_CAP : v;
}

int hone_spec_sized_batch(const char *network, long long ntrain)
{
    hone_spec def;
    hone_spec_defaults(&def, network);
    long long b = pow2_within(ntrain, HONE_SPEC_EPOCH_STEPS);
    if (b < HONE_SPEC_MIN_BATCH)
        b = HONE_SPEC_MIN_BATCH;
    if (b > def.train.batch_size)
        b = def.train.batch_size;
    if (ntrain >= 1 && b > ntrain)
        b = ntrain;
    return (int)b;
}

double hone_spec_sized_lr_factor(const char *network, int batch)
{
    hone_spec def;
    hone_spec_defaults(&def, network);
    if (batch <= 0 || batch >= def.train.batch_size)
        return 1.0;
    return sqrt((double)batch / def.train.batch_size);
}

int hone_spec_batch_range(const char *network, long long ntrain, int *lo, int *hi)
{
    int net = hone_spec_network_index(network);
    const hone_spec_key *k = hone_spec_key_find("train.batch_size");
    if (net < 0 || !k->sweep.type)
        return 0;
    long long l = (long long)k->sweep.lo[net], h = (long long)k->sweep.hi[net];
    if (ntrain >= 0) {
        /* the top gives at least ~25 steps an epoch, the bottom ~100 */
        long long top = pow2_within(ntrain, HONE_SPEC_EPOCH_STEPS / 2);
        long long bottom = pow2_within(ntrain, HONE_SPEC_EPOCH_STEPS * 2);
        if (top < HONE_SPEC_MIN_BATCH)
            top = HONE_SPEC_MIN_BATCH;
        if (bottom < HONE_SPEC_MIN_BATCH / 2)
            bottom = HONE_SPEC_MIN_BATCH / 2;
        h = top < h ? top : h;
        h = ntrain < h ? ntrain : h; /* hone-train's batch is at most the set */
        l = bottom < l ? bottom : l;
        if (l >= h)
            l = h / 2;
    }
    *lo = (int)l;
    *hi = (int)h;
    return l >= 1 && l < h;
}

void hone_spec_size(hone_spec *s, const hone_spec_data *d, long long val_images, uint64_t given)
{
    if (!d || d->train_images < 0)
        return;
    long long n = d->train_images, val;
    if (val_images > 0) {
        val = val_images; /* the val/ folder: hone-train validates on it */
        if (!(given & hone_spec_key_bit("data.val_size")))
            s->data.val_size = (int)val_images;
    } else {
        if (!(given & hone_spec_key_bit("data.val_size")))
            s->data.val_size = (int)hone_spec_sized_val(n);
        val = s->data.val_size;
    }
    long long ntrain = n - val;
    if (ntrain < 1)
        return; /* hone_spec_check refuses it, naming data.val_size */
    if (!(given & hone_spec_key_bit("train.batch_size"))) {
        s->train.batch_size = hone_spec_sized_batch(s->network, ntrain);
        /* the default learning rate is the default batch's: a smaller batch takes it down by
         * the square root of the ratio (the full rate diverges at batch 8), never below a
         * train.min_lr the user set (one above the default is refused as it is) */
        double lr = s->train.lr * hone_spec_sized_lr_factor(s->network, s->train.batch_size);
        if (!(given & hone_spec_key_bit("train.lr")) && s->train.min_lr <= s->train.lr)
            s->train.lr = lr < s->train.min_lr ? s->train.min_lr : lr;
    }
    if (given & hone_spec_key_bit("train.epochs"))
        return;
    long long batch = s->train.batch_size < ntrain ? s->train.batch_size : ntrain;
    long long steps = ntrain / batch; /* as train/loop.c */
    if (steps * s->train.epochs >= HONE_SPEC_RUN_STEPS)
        return;
    long long e = (HONE_SPEC_RUN_STEPS + steps - 1) / steps;
    if (e > HONE_SPEC_MAX_SIZED_EPOCHS)
        e = HONE_SPEC_MAX_SIZED_EPOCHS;
    if (e <= s->train.epochs)
        return;
    /* the schedule keeps its shape: warm-up and step decays at the same fractions of the run */
    double f = (double)e / s->train.epochs;
    s->train.epochs = (int)e;
    if (!(given & hone_spec_key_bit("train.warmup_epochs")))
        s->train.warmup_epochs *= f;
    if (!(given & hone_spec_key_bit("train.step_epochs"))) {
        long long st = llround(s->train.step_epochs * f);
        s->train.step_epochs = (int)(st < 1 ? 1 : st > 100000 ? 100000 : st);
    }
}

json_t *hone_spec_space_sized(const char *network, int all, long long ntrain, double lr_factor)
{
    json_t *sp = hone_spec_space(network, all);
    json_t *p = json_object_get(sp, "train.batch_size");
    int lo, hi;
    /* the learning rates swept follow the default's */
    json_t *lr = json_object_get(sp, "train.lr");
    double f = lr_factor;
    if (lr && f > 0.0 && f < 1.0) {
        json_object_set_new(lr, "min",
                            json_real(json_number_value(json_object_get(lr, "min")) * f));
        json_object_set_new(lr, "max",
                            json_real(json_number_value(json_object_get(lr, "max")) * f));
    }
    if (!p || ntrain < 0)
        return sp;
    if (!hone_spec_batch_range(network, ntrain, &lo, &hi)) {
        json_object_del(sp, "train.batch_size"); /* one batch: nothing to sweep */
        return sp;
    }
    json_object_set_new(p, "min", json_integer(lo));
    json_object_set_new(p, "max", json_integer(hi));
    return sp;
}
