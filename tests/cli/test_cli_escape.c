/* test_cli_escape: the CLI's escaper (cli/escape.c): C0 controls, DEL, C1 controls, bidi controls,
 * line separators and bytes that are not UTF-8 come out as \x1b / \u202e escapes; printable text
 * (accents, CJK, emoji, right-to-left letters, backslashes) comes out unchanged; escaping twice
 * changes nothing; a short buffer cuts at a whole character or escape; JSON strings and keys are
 * escaped in place. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "cli.h"

static void expect(const char *in, const char *want)
{
    char buf[256], again[256];
    cli_escape(in, buf, sizeof buf);
    if (strcmp(buf, want)) {
        fprintf(stderr, "escape(%s): got \"%s\", want \"%s\"\n", in, buf, want);
        failures++;
    }
    CHECK(!cli_needs_escape(buf));
    CHECK(!strcmp(cli_escape(buf, again, sizeof again), buf)); /* idempotent */
    char *d = cli_escape_dup(in);
    CHECK(!strcmp(d, want));
    free(d);
    CHECK(cli_needs_escape(in) == (strcmp(in, want) != 0));
}

int main(void)
{
    expect("plain name-1_2.3", "plain name-1_2.3");
    expect("caf\xc3\xa9 \xe6\xa8\xa1\xe5\x9e\x8b \xf0\x9f\x9a\x80 \xd7\xa8\xd7\xa9\xd7\xaa",
           "caf\xc3\xa9 \xe6\xa8\xa1\xe5\x9e\x8b \xf0\x9f\x9a\x80 \xd7\xa8\xd7\xa9\xd7\xaa");
    expect("a\\x1b\\u202e", "a\\x1b\\u202e"); /* backslashes as they are */
    expect("\x1b[31mred\x1b[0m", "\\x1b[31mred\\x1b[0m");
    expect("\x1b]0;title\x07", "\\x1b]0;title\\x07");
    expect("a\rb\nc\td", "a\\rb\\nc\\td");
    expect("x\x7fy\x01", "x\\x7fy\\x01");
    expect("a\xc2\x9b"
           "b\xc2\x85",
           "a\\u009bb\\u0085"); /* C1: CSI, NEL */
    expect("a\xe2\x80\xae"
           "b",
           "a\\u202eb"); /* RLO */
    expect("\xe2\x80\xaa\xe2\x81\xa6\xe2\x81\xa9", "\\u202a\\u2066\\u2069");
    expect("\xe2\x80\x8e\xe2\x80\x8f\xd8\x9c", "\\u200e\\u200f\\u061c");
    expect("\xe2\x80\xa8\xe2\x80\xa9", "\\u2028\\u2029");
    expect("bad\xff\xfe", "bad\\xff\\xfe");    /* not UTF-8 */
    expect("\xc0\xaf", "\\xc0\\xaf");          /* overlong */
    expect("\xed\xa0\x80", "\\xed\\xa0\\x80"); /* a surrogate */
    expect("cut\xe2\x80", "cut\\xe2\\x80");    /* cut short */
    /* a short buffer: whole characters and escapes only */
    char small[6];
    CHECK(!strcmp(cli_escape("ab\x1b"
                             "cd",
                             small, sizeof small),
                  "ab"));
    CHECK(!strcmp(cli_escape("\xc3\xa9\xc3\xa9\xc3\xa9", small, sizeof small), "\xc3\xa9\xc3\xa9"));
    CHECK(cli_escape("x", small, 0) == small);
    /* JSON in place: values at any depth and keys */
    json_t *j = json_loads("{\"name\":\"a\\u001b[2J\",\"k\\u202e\":[\"\\u0007\",1,{\"d\":\"ok\"}]}",
                           0, NULL);
    REQUIRE(j);
    cli_json_escape(j);
    char *s = json_dumps(j, JSON_COMPACT | JSON_SORT_KEYS);
    CHECK(s &&
          !strcmp(s, "{\"k\\\\u202e\":[\"\\\\x07\",1,{\"d\":\"ok\"}],\"name\":\"a\\\\x1b[2J\"}"));
    if (s && failures)
        fprintf(stderr, "json: %s\n", s);
    free(s);
    json_decref(j);
    if (failures)
        fprintf(stderr, "test_cli_escape: %d failure(s)\n", failures);
    return failures != 0;
}
