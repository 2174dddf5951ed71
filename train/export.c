/* train/export.c: hone-train --export: a trained model (model.bin, model.json, spec.yaml) as an
 * ONNX model (IR version 8, opset 17) written with protobuf-c from train/onnx.proto. The model
 * takes float32 pixels NCHW in 0..255 ("pixels", [N, c, h, w]: the image at the model's input
 * size, channels in the order data/ decodes them: grey, or R G B) and gives the logits ("logits",
 * [N, classes]); its first nodes are the training part's normalisation, (pixels / 255 - mean) /
 * std per channel, as hone-train computes it. Layers map one to one: Conv, Gemm (Flatten before
 * the first one after an image-shaped tensor), BatchNormalization in inference form (running
 * statistics, not folded into the conv), Relu, MaxPool (with pads for the ResNet stem),
 * GlobalAveragePool, Add + Relu for a residual join; dropout is left out (the identity at
 * inference). Class names, mean and std go into the model's metadata_props as JSON.
 * detectnet_v2 gives two outputs instead of logits, DeepStream's DetectNet_v2 pair: "coverage"
 * ([N, classes, gh, gw], the sigmoid of the head's first classes channels) and "bbox" ([N, 4 *
 * classes, gh, gw], the box offsets), with the decoding in metadata_props "detect"; the
 * clustering stays with the consumer (as in TAO's export). */
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "net.h"
#include "onnx.pb-c.h"

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "export.c writes raw_data as the host's floats: little-endian hosts only"
#endif

#define ONNX_IR_VERSION 8
#define ONNX_OPSET 17

/* The graph being built; every allocation is kept in `keep` and freed together. */
typedef struct {
    void **keep;
    size_t nkeep, capkeep;
    Onnx__NodeProto **nodes;
    size_t nnodes, capnodes;
    Onnx__TensorProto **inits;
    size_t ninits, capinits;
    int seq;
} graph;

static void grow(void ***v, size_t *n, size_t *cap, void *p)
{
    if (*n == *cap) {
        *cap = *cap ? 2 * *cap : 64;
        *v = hone_xrealloc(*v, *cap * sizeof(void *));
    }
    (*v)[(*n)++] = p;
}

static void *keep(graph *g, void *p)
{
    grow(&g->keep, &g->nkeep, &g->capkeep, p);
    return p;
}

static void *alloc(graph *g, size_t bytes)
{
    return keep(g, hone_xcalloc(1, bytes ? bytes : 1));
}

static char *str(graph *g, const char *s)
{
    return keep(g, hone_xstrdup(s));
}

static char *fmt(graph *g, const char *f, ...) __attribute__((format(printf, 2, 3)));
static char *fmt(graph *g, const char *f, ...)
{
    char buf[128];
    va_list ap;
    va_start(ap, f);
    vsnprintf(buf, sizeof(buf), f, ap);
    va_end(ap);
    return str(g, buf);
}

static void graph_free(graph *g)
{
    for (size_t i = 0; i < g->nkeep; i++)
        free(g->keep[i]);
    free(g->keep);
    free(g->nodes);
    free(g->inits);
}

/* A float initializer named `name` of shape dims holding a copy of data. */
static const char *init_f(graph *g, const char *name, const float *data, const int64_t *dims,
                          int ndims)
{
    Onnx__TensorProto *t = alloc(g, sizeof(*t));
    onnx__tensor_proto__init(t);
    size_t count = 1;
    for (int i = 0; i < ndims; i++)
        count *= (size_t)dims[i];
    t->n_dims = (size_t)ndims;
    t->dims = alloc(g, sizeof(int64_t) * (size_t)ndims);
    memcpy(t->dims, dims, sizeof(int64_t) * (size_t)ndims);
    t->has_data_type = 1;
    t->data_type = ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT;
    t->name = str(g, name);
    t->has_raw_data = 1;
    t->raw_data.len = count * sizeof(float);
    t->raw_data.data = alloc(g, t->raw_data.len);
    memcpy(t->raw_data.data, data, t->raw_data.len);
    grow((void ***)&g->inits, &g->ninits, &g->capinits, t);
    return t->name;
}

/* A 1-D int64 initializer (Slice's starts, ends and axes). */
static const char *init_i64(graph *g, const char *name, const int64_t *data, int64_t n)
{
    Onnx__TensorProto *t = alloc(g, sizeof(*t));
    onnx__tensor_proto__init(t);
    t->n_dims = 1;
    t->dims = alloc(g, sizeof(int64_t));
    t->dims[0] = n;
    t->has_data_type = 1;
    t->data_type = ONNX__TENSOR_PROTO__DATA_TYPE__INT64;
    t->name = str(g, name);
    t->has_raw_data = 1;
    t->raw_data.len = (size_t)n * sizeof(int64_t);
    t->raw_data.data = alloc(g, t->raw_data.len);
    memcpy(t->raw_data.data, data, t->raw_data.len);
    grow((void ***)&g->inits, &g->ninits, &g->capinits, t);
    return t->name;
}

/* A node op(in[0..nin)) with one output: `out`, or a fresh name when NULL; returns the output. */
static Onnx__NodeProto *node(graph *g, const char *op, const char *const *in, int nin,
                             const char *out)
{
    Onnx__NodeProto *n = alloc(g, sizeof(*n));
    onnx__node_proto__init(n);
    int id = g->seq++;
    n->op_type = str(g, op);
    n->name = fmt(g, "%s_%d", op, id);
    n->n_input = (size_t)nin;
    n->input = alloc(g, sizeof(char *) * (size_t)nin);
    for (int i = 0; i < nin; i++)
        n->input[i] = str(g, in[i]);
    n->n_output = 1;
    n->output = alloc(g, sizeof(char *));
    n->output[0] = out ? str(g, out) : fmt(g, "t%d", id);
    grow((void ***)&g->nodes, &g->nnodes, &g->capnodes, n);
    return n;
}

static Onnx__AttributeProto *attr(graph *g, Onnx__NodeProto *n, const char *name,
                                  Onnx__AttributeProto__AttributeType type)
{
    Onnx__AttributeProto *a = alloc(g, sizeof(*a));
    onnx__attribute_proto__init(a);
    a->name = str(g, name);
    a->has_type = 1;
    a->type = type;
    Onnx__AttributeProto **v = alloc(g, sizeof(*v) * (n->n_attribute + 1));
    if (n->n_attribute)
        memcpy(v, n->attribute, sizeof(*v) * n->n_attribute);
    v[n->n_attribute++] = a;
    n->attribute = v;
    return a;
}

static void attr_int(graph *g, Onnx__NodeProto *n, const char *name, int64_t v)
{
    Onnx__AttributeProto *a = attr(g, n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT);
    a->has_i = 1;
    a->i = v;
}

static void attr_float(graph *g, Onnx__NodeProto *n, const char *name, float v)
{
    Onnx__AttributeProto *a = attr(g, n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT);
    a->has_f = 1;
    a->f = v;
}

/* An INTS attribute of `count` copies of v (kernel_shape, strides, pads). */
static void attr_ints(graph *g, Onnx__NodeProto *n, const char *name, int64_t v, int count)
{
    Onnx__AttributeProto *a = attr(g, n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS);
    a->n_ints = (size_t)count;
    a->ints = alloc(g, sizeof(int64_t) * (size_t)count);
    for (int i = 0; i < count; i++)
        a->ints[i] = v;
}

static void window(graph *g, Onnx__NodeProto *n, const layer *L)
{
    attr_ints(g, n, "kernel_shape", L->r, 2);
    attr_ints(g, n, "strides", L->stride, 2);
    attr_ints(g, n, "pads", L->pad, 4);
}

/* A FLOAT tensor value [dims] with "N" for a dim of -1. */
static Onnx__ValueInfoProto *value(graph *g, const char *name, const int64_t *dims, int ndims)
{
    Onnx__ValueInfoProto *v = alloc(g, sizeof(*v));
    onnx__value_info_proto__init(v);
    v->name = str(g, name);
    Onnx__TypeProto *t = alloc(g, sizeof(*t));
    onnx__type_proto__init(t);
    Onnx__TypeProto__Tensor *tt = alloc(g, sizeof(*tt));
    onnx__type_proto__tensor__init(tt);
    Onnx__TensorShapeProto *s = alloc(g, sizeof(*s));
    onnx__tensor_shape_proto__init(s);
    s->n_dim = (size_t)ndims;
    s->dim = alloc(g, sizeof(*s->dim) * (size_t)ndims);
    for (int i = 0; i < ndims; i++) {
        Onnx__TensorShapeProto__Dimension *d = alloc(g, sizeof(*d));
        onnx__tensor_shape_proto__dimension__init(d);
        if (dims[i] < 0) {
            d->dim_param = str(g, "N");
        } else {
            d->has_dim_value = 1;
            d->dim_value = dims[i];
        }
        s->dim[i] = d;
    }
    tt->has_elem_type = 1;
    tt->elem_type = ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT;
    tt->shape = s;
    t->tensor_type = tt;
    v->type = t;
    return v;
}

/* The network's layers as nodes after the normalisation; the last one's output is `last`. */
static void build_layers(graph *g, const hone_net *net, const float *params, const float *state,
                         const char *last)
{
    const char **name = hone_xcalloc((size_t)net->nlayers, sizeof(char *));
    unsigned char *flat = hone_xcalloc((size_t)net->nlayers, 1); /* output is [N, features] */
    for (int i = 0; i < net->nlayers; i++) {
        const layer *L = &net->layers[i];
        const char *in = L->in >= 0 ? name[L->in] : "x";
        int in_flat = L->in >= 0 && flat[L->in];
        const char *out = i == net->nlayers - 1 ? last : NULL;
        char p[64];
        const char *args[5];
        Onnx__NodeProto *n = NULL;
        flat[i] = (unsigned char)in_flat;
        switch (L->kind) {
        case L_CONV: {
            int64_t wd[4] = {L->oc, L->c, L->r, L->r}, bd[1] = {L->oc};
            args[0] = in;
            snprintf(p, sizeof(p), "layer%d.weight", i);
            args[1] = init_f(g, p, params + L->w_off, wd, 4);
            if (L->bias) {
                snprintf(p, sizeof(p), "layer%d.bias", i);
                args[2] = init_f(g, p, params + L->b_off, bd, 1);
            }
            n = node(g, "Conv", args, L->bias ? 3 : 2, out);
            window(g, n, L);
            attr_int(g, n, "group", 1);
            break;
        }
        case L_DENSE: {
            int64_t cin = (int64_t)L->c * L->h * L->w;
            int64_t wd[2] = {L->oc, cin}, bd[1] = {L->oc};
            if (!in_flat) {
                const char *a[1] = {in};
                Onnx__NodeProto *f = node(g, "Flatten", a, 1, NULL);
                attr_int(g, f, "axis", 1);
                in = f->output[0];
            }
            args[0] = in;
            snprintf(p, sizeof(p), "layer%d.weight", i);
            args[1] = init_f(g, p, params + L->w_off, wd, 2);
            snprintf(p, sizeof(p), "layer%d.bias", i);
            args[2] = init_f(g, p, params + L->b_off, bd, 1);
            n = node(g, "Gemm", args, 3, out);
            attr_int(g, n, "transB", 1);
            flat[i] = 1;
            break;
        }
        case L_RELU:
            n = node(g, "Relu", &in, 1, out);
            break;
        case L_POOL:
            n = node(g, "MaxPool", &in, 1, out);
            window(g, n, L);
            break;
        case L_BN: {
            int64_t cd[1] = {L->c};
            const float *st = state + L->s_off;
            args[0] = in;
            snprintf(p, sizeof(p), "layer%d.scale", i);
            args[1] = init_f(g, p, params + L->b_off, cd, 1);
            snprintf(p, sizeof(p), "layer%d.bias", i);
            args[2] = init_f(g, p, params + L->b_off + L->c, cd, 1);
            snprintf(p, sizeof(p), "layer%d.running_mean", i);
            args[3] = init_f(g, p, st, cd, 1);
            snprintf(p, sizeof(p), "layer%d.running_var", i);
            args[4] = init_f(g, p, st + L->c, cd, 1);
            n = node(g, "BatchNormalization", args, 5, out);
            attr_float(g, n, "epsilon", NET_BN_EPS);
            break;
        }
        case L_DROPOUT: /* the identity at inference */
            if (out) {
                n = node(g, "Identity", &in, 1, out);
            } else {
                name[i] = in;
                continue;
            }
            break;
        case L_ADD: {
            const char *a[2] = {in, L->in2 >= 0 ? name[L->in2] : "x"};
            Onnx__NodeProto *sum = node(g, "Add", a, 2, NULL);
            n = node(g, "Relu", (const char *const *)sum->output, 1, out);
            break;
        }
        case L_GAP:
            n = node(g, "GlobalAveragePool", &in, 1, out);
            flat[i] = 0;
            break;
        }
        name[i] = n->output[0];
    }
    free(name);
    free(flat);
}

/* model.json's class names, mean and std as metadata_props (JSON values). */
static void metadata(graph *g, Onnx__ModelProto *m, const char *model_dir, int c)
{
    char path[1100];
    snprintf(path, sizeof(path), "%s/model.json", model_dir);
    json_t *j = json_load_file(path, 0, NULL);
    static const char *keys[] = {"class_names", "mean", "std"};
    m->n_metadata_props = 0;
    m->metadata_props = alloc(g, sizeof(*m->metadata_props) * 4);
    for (size_t i = 0; j && i < sizeof(keys) / sizeof(keys[0]); i++) {
        json_t *v = json_object_get(j, keys[i]);
        char *s = v ? json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY) : NULL;
        if (!s)
            continue;
        Onnx__StringStringEntryProto *e = alloc(g, sizeof(*e));
        onnx__string_string_entry_proto__init(e);
        e->key = str(g, keys[i]);
        e->value = keep(g, s);
        m->metadata_props[m->n_metadata_props++] = e;
    }
    json_decref(j);
    Onnx__StringStringEntryProto *e = alloc(g, sizeof(*e));
    onnx__string_string_entry_proto__init(e);
    e->key = str(g, "input");
    e->value = fmt(g, "float32 pixels NCHW in 0..255, %s", c == 1 ? "grey" : "R G B");
    m->metadata_props[m->n_metadata_props++] = e;
}

/* How a detector's outputs decode into boxes, as metadata_props "detect" (JSON): the grid
 * (detect.h's encoding) and the spec's postprocessing, so that a consumer can do what --infer does.
 */
static void detect_metadata(graph *g, Onnx__ModelProto *m, const hone_train_spec *s)
{
    hone_det_grid_opts go;
    hone_det_grid_defaults(&go);
    json_t *j = json_pack(
        "{s:i, s:f, s:f, s:f, s:s, s:f, s:f, s:f, s:s}", "stride", s->detect.stride, "offset",
        (double)go.offset, "bbox_norm", s->detect.bbox_norm, "cov_threshold",
        s->detect.cov_threshold, "cluster", s->detect.cluster, "eps", s->detect.eps, "min_samples",
        s->detect.min_samples, "nms_iou", s->detect.nms_iou, "decode",
        "class c at cell (gy, gx) where coverage[c] >= cov_threshold: cx = gx * stride + offset, "
        "cy = gy * stride + offset, x1 = cx - bbox[4c] * bbox_norm, y1 = cy - bbox[4c+1] * "
        "bbox_norm, x2 = cx + bbox[4c+2] * bbox_norm, y2 = cy + bbox[4c+3] * bbox_norm, score "
        "coverage[c]; then clustered (dbscan) or nms per class, as hone-train --infer");
    char *v = j ? json_dumps(j, JSON_COMPACT) : NULL;
    json_decref(j);
    if (!v)
        return;
    Onnx__StringStringEntryProto *e = alloc(g, sizeof(*e));
    onnx__string_string_entry_proto__init(e);
    e->key = str(g, "detect");
    e->value = keep(g, v);
    Onnx__StringStringEntryProto **p = alloc(g, sizeof(*p) * (m->n_metadata_props + 1));
    memcpy(p, m->metadata_props, sizeof(*p) * m->n_metadata_props);
    p[m->n_metadata_props++] = e;
    m->metadata_props = p;
}

static int write_file(const char *path, const uint8_t *buf, size_t len, char *err, size_t errlen)
{
    char tmp[1200];
    snprintf(tmp, sizeof(tmp), "%s.tmp", path);
    FILE *f = fopen(tmp, "wb");
    if (!f) {
        snprintf(err, errlen, "%.400s: %s", tmp, strerror(errno));
        return HONE_EIO;
    }
    int ok = fwrite(buf, 1, len, f) == len;
    ok = (fclose(f) == 0) && ok;
    if (!ok || rename(tmp, path) != 0) {
        snprintf(err, errlen, "%.400s: %s", ok ? path : tmp, strerror(errno));
        unlink(tmp);
        return HONE_EIO;
    }
    return HONE_OK;
}

int hone_train_export(const hone_train_opts *o, const char *model_dir, const char *path,
                      size_t *bytes, char *err, size_t errlen)
{
    hone_trainer *t = NULL;
    const hone_net *net = NULL;
    float *params = NULL, *state = NULL, *norm = NULL;
    uint8_t *buf = NULL;
    graph g = {0};
    int c, h, w, k;
    int detect = !strcmp(o->spec->network, "detectnet_v2");
    int rc = hone_trainer_open_model(o, model_dir, 0, &t, err, errlen);
    if (rc < 0)
        goto fail;
    hone_trainer_shape(t, &c, &h, &w, &k);
    if ((rc = hone_trainer_snapshot(t, &net, &params, &state, &norm)) < 0) {
        snprintf(err, errlen, "reading the model's weights: %s", hone_strerror(rc));
        goto fail;
    }
    /* x = (pixels * (1/255) - mean) * (1/std), the ops and constants of hone_k_gather_images */
    float scale = 1.0f / 255.0f;
    int64_t one[1] = {1}, cd[4] = {1, c, 1, 1};
    const char *a[2] = {"pixels", init_f(&g, "norm.scale", &scale, one, 1)};
    const char *m = node(&g, "Mul", a, 2, NULL)->output[0];
    const char *b[2] = {m, init_f(&g, "norm.mean", norm, cd, 4)};
    const char *cen = node(&g, "Sub", b, 2, NULL)->output[0];
    const char *d[2] = {cen, init_f(&g, "norm.inv_std", norm + c, cd, 4)};
    node(&g, "Mul", d, 2, "x");
    build_layers(&g, net, params, state, detect ? "head" : "logits");
    /* detectnet_v2: the head's 5 * classes channels split as the trainer reads them
     * (detect_train_boxes): the first classes are the coverage logits (their sigmoid is the
     * coverage), the other 4 * classes the box offsets (class c's at 4c .. 4c + 3) */
    int64_t gh = net->layers[net->nlayers - 1].oh, gw = net->layers[net->nlayers - 1].ow;
    if (detect) {
        int64_t zero = 0, kk = k, k5 = 5 * (int64_t)k, axis = 1;
        const char *cs[4] = {"head", init_i64(&g, "split.cov_start", &zero, 1),
                             init_i64(&g, "split.cov_end", &kk, 1),
                             init_i64(&g, "split.axis", &axis, 1)};
        const char *cov = node(&g, "Slice", cs, 4, NULL)->output[0];
        node(&g, "Sigmoid", &cov, 1, "coverage");
        const char *bs[4] = {"head", init_i64(&g, "split.bbox_start", &kk, 1),
                             init_i64(&g, "split.bbox_end", &k5, 1), "split.axis"};
        node(&g, "Slice", bs, 4, "bbox");
    }

    Onnx__GraphProto gr = ONNX__GRAPH_PROTO__INIT;
    gr.name = "hone";
    gr.n_node = g.nnodes;
    gr.node = g.nodes;
    gr.n_initializer = g.ninits;
    gr.initializer = g.inits;
    int64_t in_dims[4] = {-1, c, h, w}, out_dims[2] = {-1, k};
    int64_t cov_dims[4] = {-1, k, gh, gw}, bbox_dims[4] = {-1, 4 * (int64_t)k, gh, gw};
    Onnx__ValueInfoProto *in = value(&g, "pixels", in_dims, 4);
    Onnx__ValueInfoProto *outs[2] = {value(&g, "logits", out_dims, 2), NULL};
    if (detect) {
        outs[0] = value(&g, "coverage", cov_dims, 4);
        outs[1] = value(&g, "bbox", bbox_dims, 4);
    }
    gr.n_input = 1;
    gr.n_output = detect ? 2 : 1;
    gr.input = &in;
    gr.output = outs;
    Onnx__OperatorSetIdProto opset = ONNX__OPERATOR_SET_ID_PROTO__INIT, *opsets = &opset;
    opset.domain = "";
    opset.has_version = 1;
    opset.version = ONNX_OPSET;
    Onnx__ModelProto mp = ONNX__MODEL_PROTO__INIT;
    mp.has_ir_version = 1;
    mp.ir_version = ONNX_IR_VERSION;
    mp.producer_name = "hone-train";
    mp.producer_version = "1";
    mp.graph = &gr;
    mp.n_opset_import = 1;
    mp.opset_import = &opsets;
    metadata(&g, &mp, model_dir, c);
    if (detect)
        detect_metadata(&g, &mp, o->spec);
    size_t len = onnx__model_proto__get_packed_size(&mp);
    buf = hone_xmalloc(len ? len : 1);
    if (onnx__model_proto__pack(&mp, buf) != len) {
        snprintf(err, errlen, "packing the ONNX model failed");
        rc = HONE_EIO;
        goto fail;
    }
    if ((rc = write_file(path, buf, len, err, errlen)) < 0)
        goto fail;
    if (bytes)
        *bytes = len;
    rc = HONE_OK;
fail:
    free(buf);
    graph_free(&g);
    free(params);
    free(state);
    free(norm);
    hone_trainer_free(t);
    return rc;
}
