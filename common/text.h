/* text.h: UTF-8 and printable text, one decoder and one notion of "unprintable" for what refuses
 * text (the controller's names and descriptions) and what prints it (the CLI's escapes). Pure. */
#ifndef HONE_COMMON_TEXT_H
#define HONE_COMMON_TEXT_H

/* One UTF-8 sequence at s (NUL-terminated): its code point, or -1 when malformed (a bad lead or
 * continuation byte, overlong, a surrogate, past U+10FFFF, cut short); *len receives its length
 * in bytes (1 for a malformed byte). */
long hone_utf8_next(const unsigned char *s, int *len);

/* What a code point is, for text shown to people. */
typedef enum hone_text_class {
    HONE_TEXT_PRINTABLE = 0,
    HONE_TEXT_CONTROL,    /* C0 (tab and new line included), DEL, C1 */
    HONE_TEXT_BIDI,       /* U+202A-202E, U+2066-2069, U+200E/200F, U+061C: reorder what follows */
    HONE_TEXT_LINE_SEP,   /* U+2028, U+2029 */
    HONE_TEXT_ZERO_WIDTH, /* U+200B-200D, U+2060, U+FEFF, U+180E: print as nothing */
} hone_text_class;

hone_text_class hone_text_classify(long cp);
/* "a control character", "a bidirectional control", ... ("" for HONE_TEXT_PRINTABLE). */
const char *hone_text_class_name(hone_text_class c);

#endif
