/* test_common_text: the one UTF-8 decoder and the classes of unprintable code points (text.h) that
 * the controller's name checks and the CLI's escapes share: valid sequences of every length,
 * each kind of malformed one, and the edges of every class. */
#include <string.h>

#include "../lib/check.h"
#include "text.h"

static long one(const char *s, int *len)
{
    return hone_utf8_next((const unsigned char *)s, len);
}

int main(void)
{
    int len;
    CHECK(one("A", &len) == 'A' && len == 1);
    CHECK(one("\xc3\xa9", &len) == 0xe9 && len == 2);            /* é */
    CHECK(one("\xe2\x80\xae", &len) == 0x202e && len == 3);      /* RLO */
    CHECK(one("\xf0\x9f\x98\x80", &len) == 0x1f600 && len == 4); /* emoji */
    CHECK(one("\x80", &len) == -1 && len == 1);                  /* a lone continuation byte */
    CHECK(one("\xc0\xaf", &len) == -1 && len == 1);              /* overlong '/' */
    CHECK(one("\xed\xa0\x80", &len) == -1);                      /* a surrogate */
    CHECK(one("\xf4\x90\x80\x80", &len) == -1);                  /* past U+10FFFF */
    CHECK(one("\xe2\x80", &len) == -1);                          /* cut short by the NUL */
    CHECK(one("\xff", &len) == -1);

    CHECK(hone_text_classify('a') == HONE_TEXT_PRINTABLE);
    CHECK(hone_text_classify(0x00) == HONE_TEXT_CONTROL &&
          hone_text_classify(0x1b) == HONE_TEXT_CONTROL);
    CHECK(hone_text_classify('\n') == HONE_TEXT_CONTROL &&
          hone_text_classify(0x1f) == HONE_TEXT_CONTROL);
    CHECK(hone_text_classify(0x20) == HONE_TEXT_PRINTABLE &&
          hone_text_classify(0x7e) == HONE_TEXT_PRINTABLE);
    CHECK(hone_text_classify(0x7f) == HONE_TEXT_CONTROL &&
          hone_text_classify(0x9f) == HONE_TEXT_CONTROL);
    CHECK(hone_text_classify(0xa0) == HONE_TEXT_PRINTABLE);
    CHECK(hone_text_classify(0x202a) == HONE_TEXT_BIDI &&
          hone_text_classify(0x202e) == HONE_TEXT_BIDI);
    CHECK(hone_text_classify(0x2066) == HONE_TEXT_BIDI &&
          hone_text_classify(0x2069) == HONE_TEXT_BIDI);
    CHECK(hone_text_classify(0x200e) == HONE_TEXT_BIDI &&
          hone_text_classify(0x061c) == HONE_TEXT_BIDI);
    CHECK(hone_text_classify(0x202f) == HONE_TEXT_PRINTABLE &&
          hone_text_classify(0x2065) == HONE_TEXT_PRINTABLE);
    CHECK(hone_text_classify(0x2028) == HONE_TEXT_LINE_SEP &&
          hone_text_classify(0x2029) == HONE_TEXT_LINE_SEP);
    CHECK(hone_text_classify(0x200b) == HONE_TEXT_ZERO_WIDTH &&
          hone_text_classify(0xfeff) == HONE_TEXT_ZERO_WIDTH);
    CHECK(hone_text_classify(0x05d0) ==
          HONE_TEXT_PRINTABLE); /* a Hebrew letter is text, not a control */
    CHECK(!strcmp(hone_text_class_name(HONE_TEXT_BIDI), "a bidirectional control"));
    CHECK(!strcmp(hone_text_class_name(HONE_TEXT_PRINTABLE), ""));
    return failures != 0;
}
