/* escape: what the hone command prints from server data (names, descriptions, messages, log
 * lines) reaches a terminal only as printable text: C0 and C1 control characters, DEL, bidi
 * controls, line separators and bytes that are not UTF-8 are written as escapes (\x1b, \u202e),
 * so a row stored before the API refused them, or by an older server, cannot drive the terminal.
 * Backslashes are left alone, so escaping twice changes nothing. --json output never comes here. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

/* One UTF-8 sequence at s: its code point, or -1 when malformed (overlong, a surrogate, past
 * U+10FFFF, cut short); *len receives its length (1 for a malformed byte). */
static long utf8_next(const unsigned char *s, int *len)
{
    static const long min[] = {0, 0, 0x80, 0x800, 0x10000};
    int n = s[0] < 0x80             ? 1
            : (s[0] & 0xe0) == 0xc0 ? 2
            : (s[0] & 0xf0) == 0xe0 ? 3
            : (s[0] & 0xf8) == 0xf0 ? 4
                                    : 0;
    *len = 1;
    if (!n)
        return -1;
    long cp = n == 1 ? s[0] : s[0] & (0x7f >> n);
    for (int i = 1; i < n; i++) {
        if ((s[i] & 0xc0) != 0x80)
            return -1;
        cp = cp << 6 | (s[i] & 0x3f);
    }
    if (cp < min[n] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
        return -1;
    *len = n;
    return cp;
}

/* The escape for the sequence at s (written to out, at most 8 bytes with its NUL), or 0 when it
 * prints as it is; *len receives the sequence's length. */
static int escape_one(const unsigned char *s, int *len, char out[8])
{
    long cp = utf8_next(s, len);
    if (cp < 0)
        return snprintf(out, 8, "\\x%02x", s[0]);
    if (cp == '\n' || cp == '\t' || cp == '\r')
        return snprintf(out, 8, "\\%c", cp == '\n' ? 'n' : cp == '\t' ? 't' : 'r');
    if (cp < 0x20 || cp == 0x7f)
        return snprintf(out, 8, "\\x%02lx", (unsigned long)cp);
    if ((cp >= 0x80 && cp <= 0x9f) || (cp >= 0x202a && cp <= 0x202e) ||
        (cp >= 0x2066 && cp <= 0x2069) || cp == 0x200e || cp == 0x200f || cp == 0x061c ||
        cp == 0x2028 || cp == 0x2029)
        return snprintf(out, 8, "\\u%04lx", (unsigned long)cp);
    return 0;
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
