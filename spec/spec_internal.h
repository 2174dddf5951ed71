/* spec/spec_internal.h: helpers shared by spec/'s own files; not part of the module's API. */
#ifndef HONE_SPEC_INTERNAL_H
#define HONE_SPEC_INTERNAL_H

#include "spec.h"

/* Every key's stored value through the same checker as set_text/set_json (HONE_EINVAL, field set).
 */
int spec__check_stored(const hone_spec *s, char *field, size_t fieldlen, char *err, size_t errlen);
/* Whether key k holds the same value in a and b. */
int spec__same_value(const hone_spec *a, const hone_spec *b, const hone_spec_key *k);

#endif
