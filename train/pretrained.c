/* train/pretrained.c: model.pretrained: a fresh run starts from another model's weights, as a TAO
 * user starts from a pretrained backbone. The model folder (model.bin, model.json, spec.yaml as
 * hone_train_run writes them) is read whole and verified; its network is rebuilt from its own
 * spec and input shape, and net.c copies every layer from the first that agrees with the new
 * network (a ResNet-18 classifier of inputs over 64 px gives detectnet_v2 its stem and first three
 * stages; the same network all but a last layer of another class count). */
#include <jansson.h>
#include <stdio.h>

#include "trainer.h"

int trainer_load_pretrained(hone_trainer *t, const char *dir, char *err, size_t errlen)
{
    char path[1100];
    hone_train_spec src;
    ckpt c = {0};
    json_t *j = NULL;
    int ch, h, w, classes, layers = 0, rc;
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
    rc = net_copy_prefix(t->net, &src, ch, h, w, classes, c.params, c.nparams, c.state, c.nstate,
                         &layers, &copied);
    if (rc == HONE_OK && layers == 0)
        rc = HONE_EINVAL;
    if (rc == HONE_EINVAL)
        snprintf(err, errlen,
                 "model.pretrained: %s: no layer of its %s fits this %s from the first on", dir,
                 src.network, t->spec->network);
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
fail:
    ckpt_free(&c);
    json_decref(j);
    return rc;
}
