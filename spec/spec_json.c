/* spec/spec_json.c: views of the key table for the outside: the JSON Schema of a specs object
 * (schemas/spec.schema.json, served at GET /api/v1/schemas/spec) and the AutoML search spaces
 * (automl-defaults). Everything here is derived from the table; nothing is listed twice. */
#include <stdlib.h>
#include <string.h>

#include "spec_internal.h"

static json_t *sweep_param(const hone_spec_key *k, int net)
{
    const hone_spec_sweep *w = &k->sweep;
    if (!strcmp(w->type, "float"))
        return json_pack("{s:s,s:f,s:f,s:b}", "type", "float", "min", w->lo[net], "max", w->hi[net],
                         "log", w->log);
    if (!strcmp(w->type, "int")) {
        json_t *p = json_pack("{s:s,s:I,s:I,s:b}", "type", "int", "min", (json_int_t)w->lo[net],
                              "max", (json_int_t)w->hi[net], "log", w->log);
        if (w->step > 1)
            json_object_set_new(p, "step", json_integer(w->step));
        return p;
    }
    if (!strcmp(w->type, "categorical")) {
        json_t *vals = json_array();
        for (int i = 0; k->choices && k->choices[i]; i++)
            json_array_append_new(vals, json_string(k->choices[i]));
        return json_pack("{s:s,s:o}", "type", "categorical", "values", vals);
    }
    return json_pack("{s:s}", "type", "bool");
}

json_t *hone_spec_space(const char *network, int all)
{
    int net = hone_spec_network_index(network);
    if (net < 0)
        return NULL;
    json_t *s = json_object();
    for (size_t i = 0; i < hone_spec_nkeys(); i++) {
        const hone_spec_key *k = hone_spec_key_at(i);
        if (k->sweep.type && (all || (k->sweep.swept >> net & 1u)) && (k->networks >> net & 1u))
            json_object_set_new(s, k->name, sweep_param(k, net));
    }
    return s;
}

static json_t *key_schema(const hone_spec_key *k)
{
    json_t *o = json_object(), *nets = json_array();
    hone_spec d[HONE_SPEC_NNETS];
    for (int n = 0; n < HONE_SPEC_NNETS; n++)
        hone_spec_defaults(&d[n], hone_spec_networks[n]);
    switch (k->type) {
    case HONE_SPEC_INT:
        json_object_set_new(o, "type", json_string("integer"));
        json_object_set_new(o, "minimum", json_integer(k->imin));
        json_object_set_new(o, "maximum", json_integer(k->imax));
        break;
    case HONE_SPEC_NUM:
        json_object_set_new(o, "type", json_string("number"));
        json_object_set_new(o, "minimum", json_real(k->min));
        json_object_set_new(o, "maximum", json_real(k->max));
        break;
    case HONE_SPEC_BOOL:
        json_object_set_new(o, "type", json_string("boolean"));
        break;
    case HONE_SPEC_ENUM: {
        json_t *e = json_array();
        for (int i = 0; k->choices[i]; i++)
            json_array_append_new(e, json_string(k->choices[i]));
        json_object_set_new(o, "type", json_string("string"));
        json_object_set_new(o, "enum", e);
        break;
    }
    case HONE_SPEC_STR:
        json_object_set_new(o, "type", json_string("string"));
        json_object_set_new(o, "maxLength", json_integer((json_int_t)k->size - 1));
        break;
    }
    json_object_set_new(o, "description", json_string(k->doc));
    json_object_set_new(o, "default", hone_spec_get_json(&d[0], k->name));
    if (!k->user)
        json_object_set_new(o, "readOnly", json_true()); /* set by the controller */
    for (int n = 0; n < HONE_SPEC_NNETS; n++)
        if (k->networks >> n & 1u)
            json_array_append_new(nets, json_string(hone_spec_networks[n]));
    json_object_set_new(o, "x-hone-networks", nets);
    int differs = 0;
    for (int n = 1; n < HONE_SPEC_NNETS; n++)
        differs |= !spec__same_value(&d[0], &d[n], k);
    if (differs) {
        json_t *by = json_object();
        for (int n = 0; n < HONE_SPEC_NNETS; n++)
            json_object_set_new(by, hone_spec_networks[n], hone_spec_get_json(&d[n], k->name));
        json_object_set_new(o, "x-hone-default-by-network", by);
    }
    if (k->sweep.type) {
        json_t *sw = json_object();
        for (int n = 0; n < HONE_SPEC_NNETS; n++)
            if (k->networks >> n & 1u)
                json_object_set_new(sw, hone_spec_networks[n], sweep_param(k, n));
        json_t *by = json_array();
        for (int n = 0; n < HONE_SPEC_NNETS; n++)
            if (k->sweep.swept >> n & k->networks >> n & 1u)
                json_array_append_new(by, json_string(hone_spec_networks[n]));
        json_object_set_new(sw, "swept_by_default", by);
        json_object_set_new(o, "x-hone-sweep", sw);
    }
    return o;
}

json_t *hone_spec_json_schema(void)
{
    json_t *root = json_object(), *props = json_object(), *defs = json_object();
    json_t *sections = json_object();
    json_object_set_new(root, "$schema",
                        json_string("https://json-schema.org/draft/2020-12/schema"));
    json_object_set_new(root, "title", json_string("Hone trainer spec"));
    json_object_set_new(
        root, "description",
        json_string("The keys of a hone-train spec, as experiment and job `specs` (dotted keys, "
                    "e.g. {\"train.lr\": 0.1}, or nested, e.g. {\"train\": {\"lr\": 0.1}}) and as "
                    "hone-train's YAML. Generated from spec/spec.c by hone-spec-schema; do not "
                    "edit. readOnly keys are set by the controller from the experiment and its "
                    "dataset. Besides each key's own range, a spec must satisfy x-hone-rules."));
    json_object_set_new(root, "type", json_string("object"));
    for (size_t i = 0; i < hone_spec_nkeys(); i++) {
        const hone_spec_key *k = hone_spec_key_at(i);
        char ref[128];
        snprintf(ref, sizeof ref, "#/$defs/%s", k->name);
        json_object_set_new(defs, k->name, key_schema(k));
        json_object_set_new(props, k->name, json_pack("{s:s}", "$ref", ref));
        const char *dot = strchr(k->name, '.');
        if (!dot)
            continue;
        char section[32];
        snprintf(section, sizeof section, "%.*s", (int)(dot - k->name), k->name);
        json_t *sec = json_object_get(sections, section);
        if (!sec) {
            sec = json_pack("{s:s,s:{},s:b}", "type", "object", "properties",
                            "additionalProperties", 0);
            json_object_set_new(sections, section, sec);
        }
        json_object_set_new(json_object_get(sec, "properties"), dot + 1,
                            json_pack("{s:s}", "$ref", ref));
    }
    json_object_update(props, sections); /* the nested form after the dotted one */
    json_decref(sections);
    json_object_set_new(root, "properties", props);
    json_object_set_new(root, "additionalProperties", json_false());
    json_object_set_new(
        root, "x-hone-rules",
        json_pack("[s,s,s,s,s,s]", "train.min_lr <= train.lr",
                  "train.warmup_epochs <= train.epochs",
                  "a key whose x-hone-networks omit the network keeps its default",
                  "data.val_size < the images in the dataset's training file",
                  "trainable parameters <= x-hone-limits.max_params",
                  "estimated device memory (weights, gradients, optimiser state, activations at "
                  "the batch size, the dataset) <= x-hone-limits.max_bytes"));
    json_object_set_new(root, "x-hone-limits",
                        json_pack("{s:I,s:I}", "max_params", (json_int_t)HONE_SPEC_MAX_PARAMS,
                                  "max_bytes", (json_int_t)HONE_SPEC_MAX_BYTES));
    json_object_set_new(root, "$defs", defs);
    return root;
}

/* Indented, in table order, with the fewest digits (15, 16 or 17) that read back exactly. */
char *hone_spec_json_schema_text(void)
{
    json_t *root = hone_spec_json_schema();
    char *txt = NULL;
    for (int prec = 15; prec <= 17 && !txt; prec++) {
        txt = json_dumps(root, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(prec));
        json_t *back = txt ? json_loads(txt, 0, NULL) : NULL;
        if (prec < 17 && !(back && json_equal(back, root))) {
            free(txt);
            txt = NULL;
        }
        json_decref(back);
    }
    json_decref(root);
    if (!txt)
        abort(); /* jansson fails only on allocation */
    size_t n = strlen(txt);
    char *out = hone_xmalloc(n + 2);
    memcpy(out, txt, n);
    out[n] = '\n';
    out[n + 1] = '\0';
    free(txt);
    return out;
}
