/* kernels/dispatch.h: what the files of the public hone_k_* API share (dispatch.c: contexts,
 * memory, graphs, dense and convolution; dispatch_layers.c: pooling, elementwise, batch norm;
 * dispatch_half.c: the bf16 NHWC ops; dispatch_train.c: losses, data on the device, optimisers,
 * reductions). Each validates its arguments, then calls the op in the context's backend table. */
#ifndef HONE_KERNELS_DISPATCH_H
#define HONE_KERNELS_DISPATCH_H

#include "backend.h"

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (!(cond))                                                                               \
            return HONE_EINVAL;                                                                    \
    } while (0)

/* d's sizes are positive and its output side is hone_conv_desc_init's (dispatch.c). */
int dispatch__conv_desc_ok(const hone_conv_desc *d);

#endif
