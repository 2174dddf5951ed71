/* tests/controller/test_joblog.c: reading a failure from a trainer's stderr tail (joblog.h)
 * without a server: the cause is the trainer's last own message, not the worker's exit line nor
 * lines after it; a trainer killed by a signal is named by the signal, not by an earlier info
 * line; a one-line error stays itself. The error_log keeps the last 20 lines within 4 KiB, whole
 * UTF-8 characters, control characters written \xNN. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "joblog.h"

static int cause_is(const char *tail, const char *want)
{
    char got[512];
    ctl_failure_cause(tail, got, sizeof got);
    if (strcmp(got, want) != 0)
        fprintf(stderr, "cause of [%s]: got [%s], want [%s]\n", tail ? tail : "(null)", got, want);
    return strcmp(got, want) == 0;
}

int main(void)
{
    CHECK(cause_is("hone-train: mlp on cpu, 10 parameters\n"
                   "hone-train: data.val_size: 5000 leaves no training images (the training file "
                   "has 90)\nhone-worker: trainer exited with status 1\n",
                   "data.val_size: 5000 leaves no training images (the training file has 90)"));
    CHECK(cause_is("hone-train: mlp on cpu, 10 parameters\n"
                   "hone-worker: trainer exited with status 139\n",
                   "the trainer was killed by signal 11 (Segmentation fault)"));
    CHECK(cause_is("hone-worker: cannot run /nope: No such file or directory\n",
                   "cannot run /nope: No such file or directory"));
    CHECK(cause_is("boom 1", "boom 1"));
    CHECK(cause_is("\n\n", ""));
    CHECK(cause_is(NULL, ""));
    CHECK(cause_is("hone-worker: trainer exited with status 2\n",
                   "the trainer exited with status 2 and wrote nothing"));

    /* 30 lines: the last 20 */
    char tail[4096] = "";
    for (int i = 1; i <= 30; i++)
        snprintf(tail + strlen(tail), sizeof tail - strlen(tail), "line %d\n", i);
    char *t = ctl_failure_tail(tail);
    REQUIRE(t);
    CHECK(!strncmp(t, "line 11\n", 8) && strstr(t, "line 30") && !strstr(t, "line 10\n"));
    CHECK(t[strlen(t) - 1] != '\n');
    free(t);
    /* one line longer than 4 KiB keeps its last 4096 bytes, starting on a whole character */
    char *big = malloc(10001);
    REQUIRE(big);
    for (int i = 0; i < 10000; i += 2)
        memcpy(big + i, "\xc3\xa9", 2); /* é */
    big[10000] = '\0';
    t = ctl_failure_tail(big);
    REQUIRE(t);
    CHECK(strlen(t) == 4096 && (unsigned char)t[0] == 0xc3);
    free(t);
    free(big);
    /* control characters but newlines are escaped */
    t = ctl_failure_tail("a\tb\x1b[31mred\nnext\n");
    REQUIRE(t);
    CHECK(!strcmp(t, "a\\x09b\\x1b[31mred\nnext"));
    free(t);
    CHECK(ctl_failure_tail("") == NULL && ctl_failure_tail(NULL) == NULL);
    return failures != 0;
}
