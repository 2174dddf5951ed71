/* Runner of the api/ server tests: starts the fixture server, runs every test in HTS_TESTS over
 * loopback, shuts down cleanly (ASan/LSan check the rest) and exits non-zero on any failure. */
#include <stdio.h>
#include "http_test_server.h"

int main(void)
{
#define HTS_ENTRY(name) {#name, test_##name},
    static const struct {
        const char *name;
        int (*fn)(void);
    } tests[] = {HTS_TESTS(HTS_ENTRY)};
    if (hts_start()) {
        fprintf(stderr, "server did not start\n");
        return 1;
    }
    int failed = 0;
    for (size_t i = 0; i < HONE_ARRAY_LEN(tests); i++) {
        int rc = tests[i].fn();
        printf("%s %s\n", rc ? "FAIL" : "ok  ", tests[i].name);
        fflush(stdout);
        failed += rc != 0;
    }
    failed += hts_stop();
    printf("%d failure(s) in %zu tests\n", failed, HONE_ARRAY_LEN(tests));
    return failed != 0;
}
