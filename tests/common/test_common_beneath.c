/* common/path_beneath.c: opens beneath a folder refuse every link out of it ('..', absolute,
 * through a linked folder), refuse every link with HONE_BENEATH_NO_LINKS, follow a link that
 * stays inside only through openat2; the per-component walk (a kernel without openat2) refuses
 * every link; the confined walk lists links as links and never enters a linked folder. Each case
 * runs with openat2 and with the walk. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "hone.h"
#include "path_beneath.h"

static char top[256];

static void put(const char *rel, const char *text)
{
    char p[512];
    snprintf(p, sizeof p, "%s/%s", top, rel);
    FILE *f = fopen(p, "w");
    REQUIRE(f);
    fputs(text, f);
    fclose(f);
}

static void sub(const char *rel)
{
    char p[512];
    snprintf(p, sizeof p, "%s/%s", top, rel);
    REQUIRE(mkdir(p, 0755) == 0);
}

static void link_to(const char *target, const char *rel)
{
    char p[512];
    snprintf(p, sizeof p, "%s/%s", top, rel);
    REQUIRE(symlink(target, p) == 0);
}

/* rc of opening rel beneath root/, and the first bytes read when it opened. */
static int try_open(int rootfd, const char *rel, int how, char *got, size_t n)
{
    int fd = -1, rc = hone_beneath_open(rootfd, rel, O_RDONLY, how, &fd);
    got[0] = 0;
    if (rc == HONE_OK) {
        ssize_t r = read(fd, got, n - 1);
        got[r > 0 ? r : 0] = 0;
        close(fd);
    }
    CHECK(rc == HONE_OK ? fd >= 0 : fd == -1);
    return rc;
}

typedef struct seen {
    char names[32][64];
    int links[32];
    int n;
} seen;

static int visit(void *ud, int dirfd, const char *name, const char *rel, const struct stat *st)
{
    seen *s = ud;
    (void)dirfd, (void)name;
    if (s->n < 32) {
        snprintf(s->names[s->n], sizeof s->names[0], "%s", rel);
        s->links[s->n++] = S_ISLNK(st->st_mode);
    }
    return 0;
}

static void cases(int walk_only)
{
    char root[300], got[64];
    hone_beneath_force_walk(walk_only);
    snprintf(root, sizeof root, "%s/root", top);
    int rootfd = open(root, O_RDONLY | O_DIRECTORY);
    REQUIRE(rootfd >= 0);
    CHECK(try_open(rootfd, "a/b.txt", 0, got, sizeof got) == HONE_OK && !strcmp(got, "inside"));
    CHECK(try_open(rootfd, "./a//b.txt", HONE_BENEATH_NO_LINKS, got, sizeof got) == HONE_OK);
    CHECK(try_open(rootfd, "out", 0, got, sizeof got) == HONE_EPERM && !got[0]);
    CHECK(try_open(rootfd, "abs", 0, got, sizeof got) == HONE_EPERM && !got[0]);
    CHECK(try_open(rootfd, "outdir/secret", 0, got, sizeof got) == HONE_EPERM && !got[0]);
    CHECK(try_open(rootfd, "a/up", 0, got, sizeof got) == HONE_EPERM && !got[0]);
    CHECK(try_open(rootfd, "../secret", 0, got, sizeof got) == HONE_EINVAL && !got[0]);
    CHECK(try_open(rootfd, "/etc/hostname", 0, got, sizeof got) == HONE_EINVAL);
    CHECK(try_open(rootfd, "a/nothing", 0, got, sizeof got) == HONE_ENOENT);
    /* a link that stays inside: followed by openat2 only, never with NO_LINKS */
    CHECK(try_open(rootfd, "in", 0, got, sizeof got) == (walk_only ? HONE_EPERM : HONE_OK));
    CHECK(try_open(rootfd, "in", HONE_BENEATH_NO_LINKS, got, sizeof got) == HONE_EPERM);
    CHECK(try_open(rootfd, "indir/b.txt", HONE_BENEATH_NO_LINKS, got, sizeof got) == HONE_EPERM);
    /* the folder itself, and a folder beneath */
    int fd = -1;
    CHECK(hone_beneath_open(rootfd, "", O_RDONLY | O_DIRECTORY, 0, &fd) == HONE_OK && fd >= 0);
    close(fd);
    CHECK(hone_beneath_open(rootfd, "a", O_RDONLY | O_DIRECTORY, HONE_BENEATH_NO_LINKS, &fd) ==
              HONE_OK &&
          fd >= 0);
    close(fd);
    CHECK(hone_beneath_open(rootfd, "outdir", O_RDONLY | O_DIRECTORY, HONE_BENEATH_NO_LINKS, &fd) ==
          HONE_EPERM);
    /* the walk: sorted, links as links, linked folders not entered */
    seen s = {0};
    CHECK(hone_beneath_walk(rootfd, 8, visit, &s) == HONE_OK);
    static const char *const want[] = {"a",  "a/b.txt", "a/up", "abs",
                                       "in", "indir",   "out",  "outdir"};
    static const int want_link[] = {0, 0, 1, 1, 1, 1, 1, 1};
    CHECK(s.n == 8);
    for (int i = 0; i < s.n && i < 8; i++) {
        CHECK(!strcmp(s.names[i], want[i]));
        CHECK(s.links[i] == want_link[i]);
    }
    close(rootfd);
}

int main(void)
{
    snprintf(top, sizeof top, "/tmp/hone-beneath-XXXXXX");
    REQUIRE(mkdtemp(top));
    sub("root");
    sub("root/a");
    sub("outside");
    put("root/a/b.txt", "inside");
    put("root/.hidden", "dot files are left out of walks");
    put("outside/secret", "root:x:0:0");
    link_to("../outside/secret", "root/out");
    char abs[400];
    snprintf(abs, sizeof abs, "%s/outside/secret", top);
    link_to(abs, "root/abs");
    link_to("../outside", "root/outdir");
    link_to("../../outside/secret", "root/a/up");
    link_to("a/b.txt", "root/in");
    link_to("a", "root/indir");
    cases(0);
    cases(1);
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", top);
    CHECK(system(cmd) == 0);
    return failures ? 1 : 0;
}
