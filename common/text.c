/* text.c: the UTF-8 decoder and the classes of code points that text shown to people must not
 * hold (text.h). The only copy: the controller's checks and the CLI's escapes both call it. */
#include "text.h"

long hone_utf8_next(const unsigned char *s, int *len)
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
        if ((s[i] & 0xc0) != 0x80) /* a NUL ends the string here too */
            return -1;
        cp = cp << 6 | (s[i] & 0x3f);
    }
    if (cp < min[n] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
        return -1;
    *len = n;
    return cp;
}

hone_text_class hone_text_classify(long cp)
{
    if (cp < 0x20 || (cp >= 0x7f && cp <= 0x9f))
        return HONE_TEXT_CONTROL;
    if ((cp >= 0x202a && cp <= 0x202e) || (cp >= 0x2066 && cp <= 0x2069) || cp == 0x200e ||
        cp == 0x200f || cp == 0x061c)
        return HONE_TEXT_BIDI;
    if (cp == 0x2028 || cp == 0x2029)
        return HONE_TEXT_LINE_SEP;
    if ((cp >= 0x200b && cp <= 0x200d) || cp == 0x2060 || cp == 0xfeff || cp == 0x180e)
        return HONE_TEXT_ZERO_WIDTH;
    return HONE_TEXT_PRINTABLE;
}

const char *hone_text_class_name(hone_text_class c)
{
    switch (c) {
    case HONE_TEXT_CONTROL:
        return "a control character";
    case HONE_TEXT_BIDI:
        return "a bidirectional control";
    case HONE_TEXT_LINE_SEP:
        return "a line separator";
    case HONE_TEXT_ZERO_WIDTH:
        return "a zero-width character";
    default:
        return "";
    }
}
