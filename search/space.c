/* Search spaces: parsing from and printing to JSON, the unit-cube mapping the models see, sampling
 * and configs as JSON, and conditional parameters (active only for some values of a categorical or
 * bool parent). Every parse error names the parameter it is about; nothing here does I/O.
 *
 * An inactive parameter holds its fixed value (its "default", else the middle of its range / its
 * first value) everywhere a config is made (sampling, the unit mapping, configs read from JSON),
 * so equal trials compare equal, replays stay exact and the models see a constant there. A space
 * without conditions behaves exactly as before conditions existed: same draws, same values. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "space_internal.h"

typedef struct param {
    char *name;
    hone_param_type type;
    double lo, hi; /* float, int */
    int log;
    double step;    /* int: values are lo + k * step (1 when not given) */
    json_t *values; /* categorical: the array of choices (owned reference) */
    int ncat;       /* categorical: len(values); bool: 2 */
    int has_default;
    double def; /* value form */
    /* conditions: active only when every parent is active and holds one of its allowed values */
    int ncond;
    struct cond {
        int parent;        /* index of a categorical or bool parameter */
        unsigned char *ok; /* [parent's ncat]: 1 for an allowed value */
    } * cond;
    json_t *jcond; /* the "condition" object until resolved at the end of the parse (owned) */
} param;

struct hone_space {
    int n;
    param *p;
    int nconds; /* parameters with a condition; 0: the space behaves as one without them */
};

static const char *type_names[] = {"float", "int", "categorical", "bool"};

static void set_err(char *err, size_t errlen, const char *fmt, ...)
{
    if (!err || errlen == 0)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

static int json_num(const json_t *j, double *out)
{
    if (json_is_integer(j)) {
        *out = (double)json_integer_value(j);
        return 1;
    }
    if (json_is_real(j)) {
        *out = json_real_value(j);
        return isfinite(*out);
    }
    return 0;
}

static int json_int(const json_t *j, double *out)
{
    double v;
    if (!json_num(j, &v) || v != floor(v) || fabs(v) > 9007199254740992.0)
        return 0;
    *out = v;
    return 1;
}

/* Index of value j among a categorical's choices, or -1. */
static int cat_index(const param *p, const json_t *j)
{
    for (int c = 0; c < p->ncat; c++)
        if (json_equal(json_array_get(p->values, c), j))
            return c;
    return -1;
}

/* Reads a value of the parameter's type from JSON into value form; 0 on success, else writes a
 * message (naming the parameter) and returns HONE_EINVAL. `what` is "default" or "value". */
static int param_value_from_json(const param *p, const json_t *j, double *out, const char *what,
                                 char *err, size_t errlen)
{
    double v = 0;
    switch (p->type) {
    case HONE_PARAM_FLOAT:
        if (!json_num(j, &v)) {
            set_err(err, errlen, "parameter '%s': %s must be a number", p->name, what);
            return HONE_EINVAL;
        }
        break;
    case HONE_PARAM_INT:
        if (!json_int(j, &v)) {
            set_err(err, errlen, "parameter '%s': %s must be an integer", p->name, what);
            return HONE_EINVAL;
        }
        break;
    case HONE_PARAM_BOOL:
        if (!json_is_boolean(j)) {
            set_err(err, errlen, "parameter '%s': %s must be true or false", p->name, what);
            return HONE_EINVAL;
        }
        *out = json_is_true(j) ? 1.0 : 0.0;
        return 0;
    case HONE_PARAM_CATEGORICAL: {
        int c = cat_index(p, j);
        if (c < 0) {
            set_err(err, errlen, "parameter '%s': %s is not one of its values", p->name, what);
            return HONE_EINVAL;
        }
        *out = c;
        return 0;
    }
    }
    if (v < p->lo || v > p->hi) {
        set_err(err, errlen, "parameter '%s': %s %g is outside [%g, %g]", p->name, what, v, p->lo,
                p->hi);
        return HONE_ERANGE;
    }
    if (p->type == HONE_PARAM_INT && fmod(v - p->lo, p->step) != 0) {
        set_err(err, errlen, "parameter '%s': %s %g is not min + a multiple of step %g", p->name,
                what, v, p->step);
        return HONE_ERANGE;
    }
    *out = v;
    return 0;
}

static int parse_type(const char *t, hone_param_type *out)
{
    for (int i = 0; i < (int)HONE_ARRAY_LEN(type_names); i++)
        if (strcmp(t, type_names[i]) == 0) {
            *out = (hone_param_type)i;
            return 0;
        }
    return HONE_EINVAL;
}

static int parse_param(param *p, json_t *def, char *err, size_t errlen)
{
    const char *name = p->name;
    if (!json_is_object(def)) {
        set_err(err, errlen, "parameter '%s': must be an object with a \"type\"", name);
        return HONE_EINVAL;
    }
    json_t *jt = json_object_get(def, "type");
    if (!json_is_string(jt)) {
        set_err(err, errlen, "parameter '%s': missing \"type\" (float, int, categorical, bool)",
                name);
        return HONE_EINVAL;
    }
    if (parse_type(json_string_value(jt), &p->type) != 0) {
        set_err(err, errlen, "parameter '%s': unknown type '%s' (float, int, categorical, bool)",
                name, json_string_value(jt));
        return HONE_EINVAL;
    }
    int numeric = p->type == HONE_PARAM_FLOAT || p->type == HONE_PARAM_INT;
    const char *key;
    json_t *v;
    json_object_foreach(def, key, v)
    {
        int known = strcmp(key, "type") == 0 || strcmp(key, "default") == 0 ||
                    strcmp(key, "condition") == 0 ||
                    (numeric && (strcmp(key, "min") == 0 || strcmp(key, "max") == 0 ||
                                 strcmp(key, "log") == 0)) ||
                    (p->type == HONE_PARAM_INT && strcmp(key, "step") == 0) ||
                    (p->type == HONE_PARAM_CATEGORICAL && strcmp(key, "values") == 0);
        if (!known) {
            set_err(err, errlen, "parameter '%s': unknown key '%s' for type %s", name, key,
                    type_names[p->type]);
            return HONE_EINVAL;
        }
    }
    if (numeric) {
        int is_int = p->type == HONE_PARAM_INT;
        json_t *jmin = json_object_get(def, "min"), *jmax = json_object_get(def, "max");
        if (!jmin || !jmax) {
            set_err(err, errlen, "parameter '%s': needs \"min\" and \"max\"", name);
            return HONE_EINVAL;
        }
        if (!(is_int ? json_int(jmin, &p->lo) : json_num(jmin, &p->lo)) ||
            !(is_int ? json_int(jmax, &p->hi) : json_num(jmax, &p->hi))) {
            set_err(err, errlen, "parameter '%s': \"min\" and \"max\" must be %s", name,
                    is_int ? "integers" : "numbers");
            return HONE_EINVAL;
        }
        if (p->lo > p->hi) {
            set_err(err, errlen, "parameter '%s': min (%g) > max (%g)", name, p->lo, p->hi);
            return HONE_EINVAL;
        }
        if (!is_int && p->lo == p->hi) {
            set_err(err, errlen, "parameter '%s': empty range (min == max == %g)", name, p->lo);
            return HONE_EINVAL;
        }
        json_t *jlog = json_object_get(def, "log");
        if (jlog && !json_is_boolean(jlog)) {
            set_err(err, errlen, "parameter '%s': \"log\" must be true or false", name);
            return HONE_EINVAL;
        }
        p->log = jlog && json_is_true(jlog);
        if (p->log && p->lo <= 0) {
            set_err(err, errlen, "parameter '%s': log scale needs min > 0 (got %g)", name, p->lo);
            return HONE_EINVAL;
        }
        p->step = 1;
        json_t *jstep = json_object_get(def, "step");
        if (jstep && (!json_int(jstep, &p->step) || p->step < 1)) {
            set_err(err, errlen, "parameter '%s': \"step\" must be an integer >= 1", name);
            return HONE_EINVAL;
        }
        if (is_int) /* the largest value on the grid */
            p->hi = p->lo + p->step * floor((p->hi - p->lo) / p->step);
    } else if (p->type == HONE_PARAM_CATEGORICAL) {
        json_t *vals = json_object_get(def, "values");
        if (!json_is_array(vals) || json_array_size(vals) == 0) {
            set_err(err, errlen, "parameter '%s': categorical needs a non-empty \"values\" array",
                    name);
            return HONE_EINVAL;
        }
        size_t i, j;
        for (i = 0; i < json_array_size(vals); i++) {
            json_t *a = json_array_get(vals, i);
            if (json_is_object(a) || json_is_array(a) || json_is_null(a)) {
                set_err(err, errlen, "parameter '%s': values must be strings, numbers or booleans",
                        name);
                return HONE_EINVAL;
            }
            for (j = 0; j < i; j++)
                if (json_equal(a, json_array_get(vals, j))) {
                    set_err(err, errlen, "parameter '%s': value #%zu repeats value #%zu", name, i,
                            j);
                    return HONE_EINVAL;
                }
        }
        p->values = json_incref(vals);
        p->ncat = (int)json_array_size(vals);
    } else {
        p->ncat = 2;
    }
    json_t *jdef = json_object_get(def, "default");
    if (jdef) {
        int rc = param_value_from_json(p, jdef, &p->def, "default", err, errlen);
        if (rc != 0)
            return rc;
        p->has_default = 1;
    }
    json_t *jc = json_object_get(def, "condition");
    if (jc) {
        if (!json_is_object(jc) || json_object_size(jc) == 0) {
            set_err(err, errlen,
                    "parameter '%s': \"condition\" must be an object of parent parameters and "
                    "their values, e.g. {\"optimizer\": [\"sgd\"]}",
                    name);
            return HONE_EINVAL;
        }
        p->jcond = json_incref(jc);
    }
    return 0;
}

static int param_index(const hone_space *s, const char *name)
{
    for (int i = 0; i < s->n; i++)
        if (strcmp(s->p[i].name, name) == 0)
            return i;
    return -1;
}

/* Resolves parameter i's "condition" against the parsed space: each parent a categorical or bool
 * parameter other than itself, each value one of the parent's. */
static int resolve_cond(hone_space *s, int i, char *err, size_t errlen)
{
    param *p = &s->p[i];
    const char *pname;
    json_t *vals;
    p->cond = hone_xcalloc(json_object_size(p->jcond), sizeof(*p->cond));
    json_object_foreach(p->jcond, pname, vals)
    {
        int j = param_index(s, pname);
        if (j < 0) {
            set_err(err, errlen,
                    "parameter '%s': condition on '%s', which is not a parameter of the space",
                    p->name, pname);
            return HONE_EINVAL;
        }
        if (j == i) {
            set_err(err, errlen, "parameter '%s': condition on itself", p->name);
            return HONE_EINVAL;
        }
        const param *q = &s->p[j];
        if (q->type != HONE_PARAM_CATEGORICAL && q->type != HONE_PARAM_BOOL) {
            set_err(err, errlen,
                    "parameter '%s': condition on '%s', which is %s (a condition needs a "
                    "categorical or bool parameter)",
                    p->name, pname, type_names[q->type]);
            return HONE_EINVAL;
        }
        if (!json_is_array(vals) || json_array_size(vals) == 0) {
            set_err(err, errlen,
                    "parameter '%s': condition on '%s' must be a non-empty array of its values",
                    p->name, pname);
            return HONE_EINVAL;
        }
        struct cond *c = &p->cond[p->ncond++];
        c->parent = j;
        c->ok = hone_xcalloc((size_t)q->ncat, 1);
        size_t k;
        json_t *v;
        json_array_foreach(vals, k, v)
        {
            double x;
            if (param_value_from_json(q, v, &x, "value", NULL, 0) != 0) {
                char *t = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);
                set_err(err, errlen,
                        "parameter '%s': condition value %.60s is not one of the values of '%s'",
                        p->name, t ? t : "?", pname);
                free(t);
                return HONE_EINVAL;
            }
            c->ok[(int)x] = 1;
        }
    }
    return 0;
}

/* Depth-first walk up the parents: 1 when a chain from i comes back to a parameter on the walk
 * (mark: 0 unseen, 1 on the walk, 2 known to end). The walk's names go into err. */
static int cond_cycle(const hone_space *s, int i, unsigned char *mark, char *err, size_t errlen)
{
    if (mark[i] == 2)
        return 0;
    if (mark[i] == 1) {
        set_err(err, errlen, "parameter '%s': its conditions form a cycle (through '%s')",
                s->p[i].name, s->p[i].name);
        return 1;
    }
    mark[i] = 1;
    for (int c = 0; c < s->p[i].ncond; c++)
        if (cond_cycle(s, s->p[i].cond[c].parent, mark, err, errlen)) {
            /* name the parameter that started the walk: the last one to report */
            set_err(err, errlen, "parameter '%s': its conditions form a cycle (through '%s')",
                    s->p[i].name, s->p[s->p[i].cond[c].parent].name);
            return 1;
        }
    mark[i] = 2;
    return 0;
}

static int resolve_conds(hone_space *s, char *err, size_t errlen)
{
    for (int i = 0; i < s->n; i++) {
        if (!s->p[i].jcond)
            continue;
        int rc = resolve_cond(s, i, err, errlen);
        if (rc != 0)
            return rc;
        s->nconds++;
    }
    unsigned char *mark = hone_xcalloc((size_t)s->n, 1);
    int rc = 0;
    for (int i = 0; i < s->n && rc == 0; i++)
        if (cond_cycle(s, i, mark, err, errlen))
            rc = HONE_EINVAL;
    free(mark);
    return rc;
}

int hone_space_parse(const char *json, hone_space **out, char *err, size_t errlen)
{
    json_error_t je;
    hone_space *s = NULL;
    int rc = HONE_EPARSE;
    *out = NULL;
    json_t *root = json_loads(json ? json : "", JSON_REJECT_DUPLICATES, &je);
    if (!root) {
        if (strstr(je.text, "duplicate"))
            set_err(err, errlen, "duplicate parameter or key name: %s", je.text);
        else
            set_err(err, errlen, "space is not valid JSON: %s (line %d, column %d)", je.text,
                    je.line, je.column);
        return HONE_EPARSE;
    }
    rc = HONE_EINVAL;
    if (!json_is_object(root)) {
        set_err(err, errlen, "space must be a JSON object of parameters");
        goto fail;
    }
    if (json_object_size(root) == 0) {
        set_err(err, errlen, "space has no parameters");
        goto fail;
    }
    s = hone_xcalloc(1, sizeof(*s));
    s->p = hone_xcalloc(json_object_size(root), sizeof(param));
    const char *name;
    json_t *def;
    json_object_foreach(root, name, def)
    {
        param *p = &s->p[s->n++];
        p->name = hone_xstrdup(name);
        if (name[0] == '\0') {
            if (s->n > 1)
                set_err(err, errlen, "parameter #%d (after '%s'): names must not be empty", s->n,
                        s->p[s->n - 2].name);
            else
                set_err(err, errlen, "parameter #1: names must not be empty");
            rc = HONE_EINVAL; /* set on every path: an earlier parameter may have left rc at 0 */
            goto fail;
        }
        rc = parse_param(p, def, err, errlen);
        if (rc != 0)
            goto fail;
    }
    rc = resolve_conds(s, err, errlen);
    if (rc != 0)
        goto fail;
    json_decref(root);
    *out = s;
    return 0;
fail:
    json_decref(root);
    hone_space_free(s);
    return rc;
}

/* Dumps with the fewest significant digits (15, 16 or 17) that read back to the same doubles, so
 * 0.3 prints as 0.3 and every value still round-trips exactly. */
static char *dump_exact(const json_t *root)
{
    for (int prec = 15; prec <= 17; prec++) {
        char *txt = json_dumps(root, JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(prec));
        if (!txt)
            abort(); /* jansson fails only on allocation */
        if (prec == 17)
            return txt;
        json_t *back = json_loads(txt, 0, NULL);
        int same = back && json_equal(back, root);
        json_decref(back);
        if (same)
            return txt;
        free(txt);
    }
    return NULL;
}

static json_t *num_json(const param *p, double v)
{
    if (p->type == HONE_PARAM_INT)
        return json_integer((json_int_t)v);
    return json_real(v);
}

/* One parameter's value (value form) as JSON. */
static json_t *value_json(const param *p, double v)
{
    switch (p->type) {
    case HONE_PARAM_BOOL:
        return json_boolean(v != 0.0);
    case HONE_PARAM_CATEGORICAL:
        return json_copy(json_array_get(p->values, (size_t)v));
    default:
        return num_json(p, v);
    }
}

char *hone_space_to_json(const hone_space *s)
{
    json_t *root = json_object();
    for (int i = 0; i < s->n; i++) {
        const param *p = &s->p[i];
        json_t *o = json_object();
        json_object_set_new(o, "type", json_string(type_names[p->type]));
        if (p->type == HONE_PARAM_FLOAT || p->type == HONE_PARAM_INT) {
            json_object_set_new(o, "min", num_json(p, p->lo));
            json_object_set_new(o, "max", num_json(p, p->hi));
            if (p->log)
                json_object_set_new(o, "log", json_true());
            if (p->type == HONE_PARAM_INT && p->step != 1)
                json_object_set_new(o, "step", num_json(p, p->step));
        }
        if (p->type == HONE_PARAM_CATEGORICAL)
            json_object_set_new(o, "values", json_deep_copy(p->values));
        if (p->has_default)
            json_object_set_new(o, "default", value_json(p, p->def));
        if (p->ncond > 0) {
            json_t *jc = json_object();
            for (int c = 0; c < p->ncond; c++) {
                const param *q = &s->p[p->cond[c].parent];
                json_t *vals = json_array();
                for (int k = 0; k < q->ncat; k++)
                    if (p->cond[c].ok[k])
                        json_array_append_new(vals, value_json(q, k));
                json_object_set_new(jc, q->name, vals);
            }
            json_object_set_new(o, "condition", jc);
        }
        json_object_set_new(root, p->name, o);
    }
    char *txt = dump_exact(root);
    json_decref(root);
    return txt;
}

void hone_space_free(hone_space *s)
{
    if (!s)
        return;
    for (int i = 0; i < s->n; i++) {
        free(s->p[i].name);
        json_decref(s->p[i].values);
        json_decref(s->p[i].jcond);
        for (int c = 0; c < s->p[i].ncond; c++)
            free(s->p[i].cond[c].ok);
        free(s->p[i].cond);
    }
    free(s->p);
    free(s);
}

int hone_space_nparams(const hone_space *s)
{
    return s->n;
}

const char *hone_space_param_name(const hone_space *s, int i)
{
    return s->p[i].name;
}

hone_param_type hone_space_param_type(const hone_space *s, int i)
{
    return s->p[i].type;
}

int space__ncat(const hone_space *s, int i)
{
    return s->p[i].ncat;
}

double space__nint(const hone_space *s, int i)
{
    const param *p = &s->p[i];
    return p->type == HONE_PARAM_INT ? floor((p->hi - p->lo) / p->step) + 1 : 0;
}

static double clamp01(double u)
{
    return u < 0 ? 0 : (u > 1 ? 1 : u);
}

/* Ints map to equal-width bins of [0,1] (in log space where asked: the bin of k spans
 * [log(k-step/2), log(k+step/2)]), so uniform unit samples give every value of the grid its fair
 * share, the two ends included. */
static double int_unit_lo(const param *p)
{
    double h = p->step / 2;
    return p->log ? log(p->lo - h > 0 ? p->lo - h : p->lo * 0.5) : p->lo - h;
}

static double int_unit_hi(const param *p)
{
    return p->log ? log(p->hi + p->step / 2) : p->hi + p->step / 2;
}

static double param_to_unit(const param *p, double v)
{
    switch (p->type) {
    case HONE_PARAM_FLOAT:
        if (p->log)
            return clamp01((log(v) - log(p->lo)) / (log(p->hi) - log(p->lo)));
        return clamp01((v - p->lo) / (p->hi - p->lo));
    case HONE_PARAM_INT: {
        double a = int_unit_lo(p), b = int_unit_hi(p);
        return clamp01(((p->log ? log(v) : v) - a) / (b - a));
    }
    default:
        return clamp01((v + 0.5) / p->ncat);
    }
}

static double param_from_unit(const param *p, double u)
{
    u = clamp01(u);
    double v;
    switch (p->type) {
    case HONE_PARAM_FLOAT:
        if (p->log)
            v = exp(log(p->lo) + u * (log(p->hi) - log(p->lo)));
        else
            v = p->lo + u * (p->hi - p->lo);
        return v < p->lo ? p->lo : (v > p->hi ? p->hi : v);
    case HONE_PARAM_INT: {
        double a = int_unit_lo(p), b = int_unit_hi(p);
        double t = a + u * (b - a);
        v = p->lo + p->step * floor(((p->log ? exp(t) : t) - p->lo) / p->step + 0.5);
        return v < p->lo ? p->lo : (v > p->hi ? p->hi : v);
    }
    default:
        v = floor(u * p->ncat);
        return v > p->ncat - 1 ? p->ncat - 1 : v;
    }
}

void hone_space_to_unit(const hone_space *s, const double *values, double *unit)
{
    for (int i = 0; i < s->n; i++)
        unit[i] = param_to_unit(&s->p[i], values[i]);
}

void hone_space_from_unit(const hone_space *s, const double *unit, double *values)
{
    for (int i = 0; i < s->n; i++)
        values[i] = param_from_unit(&s->p[i], unit[i]);
    hone_space_fix_inactive(s, values);
}

/* One draw per parameter, inactive ones included, so a parameter's draw does not depend on which
 * others are active (and a space without conditions draws exactly as it always did). */
void hone_space_sample(const hone_space *s, hone_rng *r, double *values)
{
    for (int i = 0; i < s->n; i++)
        values[i] = param_from_unit(&s->p[i], hone_rng_uniform(r));
    hone_space_fix_inactive(s, values);
}

/* The value a parameter holds by default, and always while it is inactive. */
static double param_fixed(const param *p)
{
    if (p->has_default)
        return p->def;
    if (p->type == HONE_PARAM_FLOAT || p->type == HONE_PARAM_INT)
        return param_from_unit(p, 0.5);
    return 0;
}

void hone_space_default(const hone_space *s, double *values)
{
    for (int i = 0; i < s->n; i++)
        values[i] = param_fixed(&s->p[i]);
    hone_space_fix_inactive(s, values);
}

/* Conditions form no cycle (the parse refuses one), so the walk up the parents ends. */
int hone_space_active(const hone_space *s, const double *values, int i)
{
    const param *p = &s->p[i];
    for (int c = 0; c < p->ncond; c++) {
        int j = p->cond[c].parent;
        double v = values[j];
        if (!(v >= 0 && v < s->p[j].ncat) || !p->cond[c].ok[(int)v] ||
            !hone_space_active(s, values, j))
            return 0;
    }
    return 1;
}

int hone_space_has_conditions(const hone_space *s)
{
    return s->nconds > 0;
}

/* Activity is decided on the values as given: a parent that is itself inactive makes its children
 * inactive whatever it holds, so fixing it first or last gives the same result. */
void hone_space_fix_inactive(const hone_space *s, double *values)
{
    if (s->nconds == 0)
        return;
    unsigned char *act = hone_xmalloc((size_t)s->n);
    for (int i = 0; i < s->n; i++)
        act[i] = (unsigned char)hone_space_active(s, values, i);
    for (int i = 0; i < s->n; i++)
        if (!act[i])
            values[i] = param_fixed(&s->p[i]);
    free(act);
}

int hone_space_has_defaults(const hone_space *s)
{
    for (int i = 0; i < s->n; i++)
        if (!s->p[i].has_default)
            return 0;
    return 1;
}

int space__nfeat(const hone_space *s)
{
    int d = 0;
    for (int i = 0; i < s->n; i++)
        d += s->p[i].type == HONE_PARAM_CATEGORICAL && s->p[i].ncat >= 3 ? s->p[i].ncat : 1;
    return d;
}

/* An inactive parameter's features are those of its fixed value, the same for every config in
 * which it is inactive: the kernel then measures no distance along a dimension that cannot matter
 * there, and the parent's own dimension tells those configs from the ones where it is active. */
void space__features(const hone_space *s, const double *values, double *feat)
{
    int d = 0;
    for (int i = 0; i < s->n; i++) {
        const param *p = &s->p[i];
        double v = values[i];
        if (p->ncond > 0 && !hone_space_active(s, values, i))
            v = param_fixed(p);
        if (p->type == HONE_PARAM_CATEGORICAL && p->ncat >= 3) {
            for (int c = 0; c < p->ncat; c++)
                feat[d++] = c == (int)v ? 1.0 : 0.0;
        } else if (p->type == HONE_PARAM_CATEGORICAL || p->type == HONE_PARAM_BOOL) {
            feat[d++] = v != 0.0 ? 1.0 : 0.0;
        } else {
            feat[d++] = param_to_unit(p, v);
        }
    }
}

int space__same(const hone_space *s, const double *a, const double *b)
{
    for (int i = 0; i < s->n; i++) {
        const param *p = &s->p[i];
        if (p->ncond > 0) { /* inactive in both: the same trial whatever the values hold */
            int aa = hone_space_active(s, a, i), ab = hone_space_active(s, b, i);
            if (aa != ab)
                return 0;
            if (!aa)
                continue;
        }
        if (p->type == HONE_PARAM_FLOAT) {
            if (fabs(param_to_unit(p, a[i]) - param_to_unit(p, b[i])) > 1e-12)
                return 0;
        } else if (a[i] != b[i]) {
            return 0;
        }
    }
    return 1;
}

char *hone_space_config_to_json(const hone_space *s, const double *values)
{
    json_t *root = json_object();
    for (int i = 0; i < s->n; i++)
        if (s->p[i].ncond == 0 || hone_space_active(s, values, i))
            json_object_set_new(root, s->p[i].name, value_json(&s->p[i], values[i]));
    char *txt = dump_exact(root);
    json_decref(root);
    return txt;
}

int hone_space_config_from_json(const hone_space *s, const char *json, double *values, char *err,
                                size_t errlen)
{
    json_error_t je;
    int rc = HONE_EINVAL;
    json_t *root = json_loads(json ? json : "", JSON_REJECT_DUPLICATES, &je);
    if (!root) {
        set_err(err, errlen, "config is not valid JSON: %s", je.text);
        return HONE_EPARSE;
    }
    if (!json_is_object(root)) {
        set_err(err, errlen, "config must be a JSON object");
        goto fail;
    }
    const char *key;
    json_t *v;
    json_object_foreach(root, key, v)
    {
        int found = 0;
        for (int i = 0; i < s->n && !found; i++)
            found = strcmp(s->p[i].name, key) == 0;
        if (!found) {
            set_err(err, errlen, "parameter '%s': not in the search space", key);
            goto fail;
        }
    }
    for (int i = 0; i < s->n; i++) {
        json_t *j = json_object_get(root, s->p[i].name);
        if (!j) {
            values[i] = param_fixed(&s->p[i]); /* fine only if inactive: checked below */
            continue;
        }
        rc = param_value_from_json(&s->p[i], j, &values[i], "value", err, errlen);
        if (rc != 0)
            goto fail;
    }
    /* an active parameter must be given; an inactive one may be, and holds its fixed value */
    for (int i = 0; i < s->n; i++) {
        if (!json_object_get(root, s->p[i].name) && hone_space_active(s, values, i)) {
            set_err(err, errlen, "parameter '%s': missing from the config", s->p[i].name);
            rc = HONE_EINVAL; /* an earlier parameter's success left rc at 0 */
            goto fail;
        }
    }
    hone_space_fix_inactive(s, values);
    rc = 0;
fail:
    json_decref(root);
    return rc;
}
