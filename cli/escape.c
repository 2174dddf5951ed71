/* escape: what the hone command prints from server data (names, descriptions, messages, log
 * lines) reaches a terminal only as printable text: C0 and C1 control characters, DEL, bidi
 * controls, line separators and bytes that are not UTF-8 are written as escapes (\x1b, \u202e),
 * so a row stored before the API refused them, or by an older server, cannot drive the terminal.
 * Backslashes are left alone, so escaping twice changes nothing. --json output never comes here. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "text.h"

/* The escape for the sequence at s (written to out, at most 8 bytes with its NUL), or 0 when it
 * prints as it is; *len receives the sequence's length. */
static int escape_one(const unsigned char *s, int *len, char out[8])
{
    long cp = hone_utf8_next(s, len);
    if (cp < 0)
        return snprintf(out, 8, "\\x%02x", s[0]);
    if (cp == '\n' || cp == '\t' || cp == '\r')
        return snprintf(out, 8, "\\%c", cp == '\n' ? 'n' : cp == '\t' ? 't' : 'r');
    switch (hone_text_classify(cp)) {
    case HONE_TEXT_CONTROL: /* C0 and DEL as bytes, C1 as code points */
        return cp < 0x80 ? snprintf(out, 8, "\\x%02lx", (unsigned long)cp)
                         : snprintf(out, 8, "\\u%04lx", (unsigned long)cp);
    case HONE_TEXT_BIDI:
    case HONE_TEXT_LINE_SEP:
        return snprintf(out, 8, "\\u%04lx", (unsigned long)cp);
    default: /* zero-width characters print as nothing, but change nothing either */
        return 0;
    }
}

int cli_needs_escape(const char *s)
{
    char e[8];
    int len;
    for (const unsigned char *p = (const unsigned char *)s; *p; p += len)
        if (escape_one(p, &len, e))
            return 1;
    return 0;
}

const char *cli_escape(const char *s, char *buf, size_t cap)
{
    size_t n = 0;
    char e[8];
    int len;
    if (!cap)
        return buf;
    for (const unsigned char *p = (const unsigned char *)s; *p; p += len) {
        int k = escape_one(p, &len, e);
        const char *from = k ? e : (const char *)p;
        size_t m = k ? (size_t)k : (size_t)len;
        if (n + m >= cap)
            break; /* cut at a whole character or escape */
        memcpy(buf + n, from, m);
        n += m;
    }
    buf[n] = '\0';
    return buf;
}

char *cli_escape_dup(const char *s)
{
    size_t cap = strlen(s) * 4 + 1; /* one byte becomes at most four (\xNN) */
    return (char *)cli_escape(s, hone_xmalloc(cap), cap);
}

void cli_json_escape(json_t *v)
{
    if (json_is_string(v)) {
        if (cli_needs_escape(json_string_value(v))) {
            char *e = cli_escape_dup(json_string_value(v));
            json_string_set(v, e);
            free(e);
        }
    } else if (json_is_array(v)) {
        size_t i;
        json_t *x;
        json_array_foreach(v, i, x) cli_json_escape(x);
    } else if (json_is_object(v)) {
        const char *key;
        json_t *x, *bad = json_array();
        json_object_foreach(v, key, x)
        {
            cli_json_escape(x);
            if (cli_needs_escape(key))
                json_array_append_new(bad, json_string(key));
        }
        size_t i;
        json_array_foreach(bad, i, x)
        {
            const char *k = json_string_value(x);
            char *e = cli_escape_dup(k);
            json_object_set(v, e, json_object_get(v, k));
            json_object_del(v, k);
            free(e);
        }
        json_decref(bad);
    }
}
