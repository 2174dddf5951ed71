/* train/pretrained.c: model.pretrained: a fresh run starts from another model's weights, as a TAO
 * user starts from a pretrained backbone. The model folder (model.bin, model.json, spec.yaml as
 * hone_train_run writes them) is read whole and verified; its network is rebuilt from its own
 * spec and input shape, and net_copy.c copies the layers spec/'s hone_layers_fit picks: of the
 * same network every layer whose shape agrees (all but a last layer of another class count, or
 * but a first convolution of other channels), else the leading ones (a ResNet-18 classifier of
 * inputs over 64 px gives detectnet_v2 its stem and first three stages). The run's log names the
 * layers copied and those initialised fresh. A run resumed from its checkpoint skips it (loop.c).
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>

#include "trainer.h"

/* The layers with parameters, as the log names them: "conv 3", "dense 20". */
static const char *kind_name(int kind)
{
    switch (kind) {
    case L_CONV:
        return "conv";
    case L_DENSE:
        return "dense";
    case L_BN:
        return "bn";
    default:
        return NULL;
    }
}

/* Which layers holding parameters came from the model and which start fresh (a new head when the
 * class counts differ, a layer of another shape), two lines of the run's log. */
static void log_layers(hone_trainer *t, const unsigned char *done, int src_classes)
{
    const hone_net *n = t->net;
    for (int pass = 1; pass >= 0; pass--) {
        char line[1600];
        size_t off = 0;
        int count = 0;
        for (int i = 0; i < n->nlayers; i++) {
            const char *k = kind_name(n->layers[i].kind);
            if (!k || done[i] != pass)
                continue;
            if (off + 40 < sizeof line)
                off += (size_t)snprintf(line + off, sizeof line - off, "%s%s %d", count ? ", " : "",
                                        k, i);
            else if (off + 5 < sizeof line && line[off - 1] != '.')
                off += (size_t)snprintf(line + off, sizeof line - off, ", ...");
            count++;
        }
        if (!count)
            continue;
        const layer *last = &n->layers[n->nlayers - 1];
        char head[128] = "";
        if (!pass && !done[n->nlayers - 1] && last->oc != src_classes)
            snprintf(head, sizeof head, " (a new head: the model has %d classes, this run %d)",
                     src_classes, last->oc);
        fprintf(t->log, "hone-train: model.pretrained: layers %s (%d): %s%s\n",
                pass ? "copied" : "initialised fresh, their shapes differ", count, line, head);
    }
}

int trainer_load_pretrained(hone_trainer *t, const char *dir, char *err, size_t errlen)
{
    char path[1100];
    hone_train_spec src;
    ckpt c = {0};
    json_t *j = NULL;
    int ch, h, w, classes, layers = 0, rc;
    unsigned char *done = NULL;
    size_t copied = 0;
    snprintf(path, sizeof(path), "%s/spec.yaml", dir);
    char why[400] = "";
    if ((rc = hone_train_spec_load_file(&src, path, why, sizeof(why))) < 0) {
        snprintf(err, errlen, "model.pretrained: %s", why);
        return rc;
    }
    snprintf(path, sizeof(path), "%s/model.json", dir);
    json_error_t je;
    if (!(j = json_load_file(path, 0, &je)) ||
        json_unpack(j, "{s:i, s:i, s:i, s:i}", "channels", &ch, "height", &h, "width", &w,
                    "classes", &classes) < 0 ||
        ch < 1 || h < 1 || w < 1 || classes < 1) {
        snprintf(err, errlen, "model.pretrained: %s: %s", path,
                 j ? "not a model description" : je.text);
        rc = j ? HONE_EPARSE : HONE_EIO;
        goto fail;
    }
    snprintf(path, sizeof(path), "%s/model.bin", dir);
    if ((rc = ckpt_read(path, &c, why, sizeof(why))) < 0) {
        snprintf(err, errlen, "model.pretrained: %s", why);
        goto fail;
    }
    done = hone_xcalloc((size_t)t->net->nlayers + 1, 1);
    rc = net_copy_prefix(t->net, &src, ch, h, w, classes, c.params, c.nparams, c.state, c.nstate,
                         done, &layers, &copied);
    if (rc == HONE_OK && copied == 0) /* no layer with parameters agrees */
        rc = HONE_EINVAL;
    if (rc == HONE_EINVAL)
        snprintf(err, errlen,
                 "model.pretrained: %s: no layer with parameters of its %s fits this %s (their "
                 "kinds, channels, kernels or input sizes differ)",
                 dir, src.network, t->spec->network);
    else if (rc == HONE_EPARSE)
        snprintf(err, errlen,
                 "model.pretrained: %s: its weights are not of the %s its spec.yaml names", dir,
                 src.network);
    else if (rc < 0)
        snprintf(err, errlen, "model.pretrained: %s: %s", dir, hone_strerror(rc));
    if (rc < 0)
        goto fail;
    fprintf(t->log,
            "hone-train: model.pretrained: copied %d of %d layers (%zu parameters) from %s\n",
            layers, t->net->nlayers, copied, dir);
    log_layers(t, done, classes);
fail:
    free(done);
    ckpt_free(&c);
    json_decref(j);
    return rc;
}
