/* util.c: typed JSON accessors that never crash on a missing key, JSON text in and out,
 * wall-clock time, ids, the structured logger, the check of users' free text, and the 500 reply
 * to a store failure. Used by
 * every controller file; depends on nothing of the controller but its object. */
#ifndef HONE_CTL_UTIL_H
#define HONE_CTL_UTIL_H

#include <jansson.h>
#include <stddef.h>

#include "controller.h"
#include "http.h"

const char *jstr(const json_t *o, const char *key); /* NULL unless a string */
long long jint(const json_t *o, const char *key);   /* 0 unless a number */
double jnum(const json_t *o, const char *key);      /* NAN unless a number */
json_t *jparse(const char *text);                   /* NULL for NULL or bad JSON */
char *jdump(const json_t *v);                       /* compact, sorted, 17 digits; free() */
double ctl_now(void);                               /* unix seconds */
void ctl_time_str(double t, char *buf, size_t n);   /* RFC 3339 UTC */
/* prefix + "-" + 16 hex digits, never reused across restarts. */
void ctl_new_id(hone_controller *c, const char *prefix, char *buf, size_t n);
void ctl_log(hone_controller *c, const char *level, const char *event, json_t *fields /* stolen */);
/* Free text a user sets and others later print (names, descriptions): 1 when s is valid UTF-8
 * without C0 or C1 control characters, DEL, bidi embeddings, overrides, isolates or marks
 * (U+202A-202E, U+2066-2069, U+200E, U+200F, U+061C) or line separators (U+2028, U+2029);
 * allow_newline lets LF and TAB through (descriptions). Otherwise 0, and why says what and where.
 */
int ctl_text_ok(const char *s, int allow_newline, char *why, size_t n);
/* ctl_text_ok on value (NULL passes); answers 422 naming field and returns HONE_EINVAL if not. */
int ctl_text_check(hone_http_res *res, const char *field, const char *value, int allow_newline);
/* Answers 500 for a store failure and logs it (undoing the request's changes). Defined in
 * batch.c, which knows whether the request's changes are a savepoint of the report batch. */
void ctl_res_store_error(hone_controller *c, hone_http_res *res);

#endif
