/* spec/spec_json.c: views of the key table for the outside: the JSON Schema of a specs object
 * (schemas/spec.schema.json, served at GET /api/v1/schemas/spec) and the AutoML search spaces
 * (automl-defaults). Everything here is derived from the table; nothing is listed twice. */
#include <stdio.h>
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
            if (!w->values || (w->values >> i & 1u))
                json_array_append_new(vals, json_string(k->choices[i]));
        return json_pack("{s:s,s:o}", "type", "categorical", "values", vals);
    }
    return json_pack("{s:s}", "type", "bool");
}

/* The networks a key may be swept for. */
static unsigned sweep_nets(const hone_spec_key *k)
{
    return k->sweep.type ? (k->sweep.nets ? k->sweep.nets : k->networks) : 0;
}

int hone_spec_key_sweepable(const hone_spec_key *k, const char *network)
{
    int net = hone_spec_network_index(network);
    if (!k || net < 0)
        return 0;
    return k->user ? (k->networks >> net & 1u) != 0 : (sweep_nets(k) >> net & 1u) != 0;
}

int hone_spec_sweep_check(const hone_spec_key *k, const json_t *param, const char *network,
                          char *err, size_t errlen)
{
    const char *type = json_string_value(json_object_get(param, "type"));
    json_t *vals = json_object_get(param, "values"), *v;
    size_t i;
    /* a key users set may take any value of its own (a default set's narrower choice is advice);
     * one the controller sets (network) only what its sweep allows */
    if (k->user || !k->sweep.values || !type || strcmp(type, "categorical") || !json_is_array(vals))
        return HONE_OK; /* the space's own parse names what else is wrong */
    json_array_foreach(vals, i, v)
    {
        int ok = 0;
        for (int c = 0; k->choices[c] && !ok; c++)
            ok = (k->sweep.values >> c & 1u) && json_is_string(v) &&
                 !strcmp(json_string_value(v), k->choices[c]);
        if (!ok) {
            char list[128] = "", *t = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);
            for (int c = 0; k->choices[c]; c++)
                if (k->sweep.values >> c & 1u) {
                    size_t l = strlen(list);
                    snprintf(list + l, sizeof list - l, "%s%s", l ? ", " : "", k->choices[c]);
                }
            snprintf(err, errlen, "%s: a %s experiment's search may set it to %s only, not %.60s",
                     k->name, network, list, t ? t : "?");
            free(t);
            return HONE_EINVAL;
        }
    }
    return HONE_OK;
}

/* A condition "parent=v1|v2" as the space's {"parent": [v1, v2]}, values typed as the parent's
 * (NULL when the table's text is malformed: tests/spec checks every one parses). */
static json_t *when_json(const char *when, char *parent, size_t plen)
{
    const char *eq = strchr(when, '=');
    if (!eq || (size_t)(eq - when) >= plen)
        return NULL;
    snprintf(parent, plen, "%.*s", (int)(eq - when), when);
    const hone_spec_key *pk = hone_spec_key_find(parent);
    if (!pk || (pk->type != HONE_SPEC_ENUM && pk->type != HONE_SPEC_BOOL))
        return NULL;
    json_t *vals = json_array();
    for (const char *v = eq + 1; *v;) {
        const char *bar = strchr(v, '|');
        size_t n = bar ? (size_t)(bar - v) : strlen(v);
        char one[32];
        snprintf(one, sizeof one, "%.*s", (int)n, v);
        if (pk->type == HONE_SPEC_BOOL)
            json_array_append_new(vals, json_boolean(!strcmp(one, "true")));
        else
            json_array_append_new(vals, json_string(one));
        v += n + (bar ? 1 : 0);
    }
    json_t *c = json_object();
    json_object_set_new(c, parent, vals);
    return c;
}

void hone_spec_space_conditions(json_t *space)
{
    const char *name;
    json_t *p;
    json_object_foreach(space, name, p)
    {
        const hone_spec_key *k = hone_spec_key_find(name);
        char parent[64];
        if (!k || !k->sweep.when || !json_is_object(p))
            continue;
        json_t *c = when_json(k->sweep.when, parent, sizeof parent);
        if (c && json_object_get(space, parent))
            json_object_set_new(p, "condition", c);
        else {
            json_decref(c);
            json_object_del(p, "condition");
        }
    }
}

json_t *hone_spec_space(const char *network, int all)
{
    int net = hone_spec_network_index(network);
    if (net < 0)
        return NULL;
    json_t *s = json_object();
    for (size_t i = 0; i < hone_spec_nkeys(); i++) {
        const hone_spec_key *k = hone_spec_key_at(i);
        if ((all || (k->sweep.swept >> net & 1u)) && (sweep_nets(k) >> net & 1u))
            json_object_set_new(s, k->name, sweep_param(k, net));
    }
    hone_spec_space_conditions(s);
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
            if (sweep_nets(k) >> n & 1u)
                json_object_set_new(sw, hone_spec_networks[n], sweep_param(k, n));
        json_t *by = json_array();
        for (int n = 0; n < HONE_SPEC_NNETS; n++)
            if (k->sweep.swept >> n & sweep_nets(k) >> n & 1u)
                json_array_append_new(by, json_string(hone_spec_networks[n]));
        json_object_set_new(sw, "swept_by_default", by);
        char parent[64];
        json_t *c = k->sweep.when ? when_json(k->sweep.when, parent, sizeof parent) : NULL;
        if (c) /* the condition a space that sweeps the parent too gives it */
            json_object_set_new(sw, "condition", c);
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
