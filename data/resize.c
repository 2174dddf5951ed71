/* data/resize.c: image resizing for packing (hone_data_resize): separable, one axis at a time,
 * area averaging where an axis shrinks and linear interpolation where it grows, half-integer
 * pixel centres. Pure arithmetic on caller buffers: no files, never fails. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "data_internal.h"

/* The taps of one axis: output pixel i reads count[i] source pixels from start[i] on, weighted
 * by w[i * maxt + k] (the weights of one output pixel sum to 1). */
typedef struct axis {
    int maxt;
    int *start, *count;
    float *w;
} axis;

static void axis_init(axis *a, int in, int out)
{
    double s = (double)in / out;
    a->maxt = in > out ? (int)ceil(s) + 1 : 2;
    a->start = hone_xmalloc(sizeof(int) * (size_t)out);
    a->count = hone_xmalloc(sizeof(int) * (size_t)out);
    a->w = hone_xcalloc((size_t)out * (size_t)a->maxt, sizeof(float));
    for (int i = 0; i < out; i++) {
        float *w = a->w + (size_t)i * a->maxt;
        if (in == out) { /* copy: weight exactly 1 */
            a->start[i] = i;
            a->count[i] = 1;
            w[0] = 1.0f;
        } else if (in > out) { /* area: the overlap of [i*s, (i+1)*s) with each [j, j+1) */
            double lo = i * s, hi = (i + 1) * s;
            int j0 = (int)floor(lo), j1 = (int)ceil(hi);
            if (j1 > in)
                j1 = in;
            a->start[i] = j0;
            a->count[i] = j1 - j0;
            for (int j = j0; j < j1; j++) {
                double l = j > lo ? j : lo, r = j + 1 < hi ? j + 1 : hi;
                w[j - j0] = (float)((r - l) / s);
            }
        } else { /* linear: centre (i + 0.5) * s - 0.5, clamped to the edge pixels */
            double x = (i + 0.5) * s - 0.5;
            if (x < 0)
                x = 0;
            if (x > in - 1)
                x = in - 1;
            int j = (int)floor(x);
            double f = x - j;
            a->start[i] = j;
            if (j + 1 < in && f > 0) {
                a->count[i] = 2;
                w[0] = (float)(1 - f);
                w[1] = (float)f;
            } else {
                a->count[i] = 1;
                w[0] = 1.0f;
            }
        }
    }
}

static void axis_free(axis *a)
{
    free(a->start);
    free(a->count);
    free(a->w);
}

static uint8_t to_u8(float v)
{
    v += 0.5f;
    return v <= 0 ? 0 : v >= 255 ? 255 : (uint8_t)v;
}

void hone_data_resize(const uint8_t *src, int sw, int sh, int c, uint8_t *dst, int dw, int dh)
{
    if (sw == dw && sh == dh) {
        memcpy(dst, src, (size_t)sw * (size_t)sh * (size_t)c);
        return;
    }
    axis ax, ay;
    axis_init(&ax, sw, dw);
    axis_init(&ay, sh, dh);
    size_t trow = (size_t)dw * (size_t)c; /* one row after the horizontal pass */
    float *tmp = hone_xmalloc(sizeof(float) * trow * (size_t)sh);
    for (int y = 0; y < sh; y++) {
        const uint8_t *s = src + (size_t)y * sw * c;
        float *t = tmp + (size_t)y * trow;
        for (int x = 0; x < dw; x++) {
            const float *w = ax.w + (size_t)x * ax.maxt;
            for (int ch = 0; ch < c; ch++) {
                float v = 0;
                for (int k = 0; k < ax.count[x]; k++)
                    v += w[k] * s[(size_t)(ax.start[x] + k) * c + ch];
                t[(size_t)x * c + ch] = v;
            }
        }
    }
    for (int y = 0; y < dh; y++) {
        const float *w = ay.w + (size_t)y * ay.maxt;
        uint8_t *d = dst + (size_t)y * trow;
        for (size_t i = 0; i < trow; i++) {
            float v = 0;
            for (int k = 0; k < ay.count[y]; k++)
                v += w[k] * tmp[(size_t)(ay.start[y] + k) * trow + i];
            d[i] = to_u8(v);
        }
    }
    free(tmp);
    axis_free(&ax);
    axis_free(&ay);
}
