/* Opening and walking beneath a folder (path_beneath.h): openat2(2) with RESOLVE_BENEATH |
 * RESOLVE_NO_MAGICLINKS (and RESOLVE_NO_SYMLINKS when no link may be followed) where the kernel
 * has it; elsewhere (ENOSYS, or EPERM from a seccomp filter that does not know it) one openat per
 * component with O_NOFOLLOW, which refuses every link. Must never follow a link out of the
 * folder, nor print or return bytes of a file it refused. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "hone.h"
#include "path_beneath.h"

static int walk_only; /* 1: the kernel has no openat2 (or a test says so) */

void hone_beneath_force_walk(int on)
{
    __atomic_store_n(&walk_only, on ? 1 : 0, __ATOMIC_RELAXED);
}

static int code_of(int e)
{
    if (e == ENOENT)
        return HONE_ENOENT;
    if (e == ELOOP || e == EXDEV)
        return HONE_EPERM;
    return HONE_EIO;
}

/* rel names no '..' component and is not absolute. */
static int rel_ok(const char *rel)
{
    if (rel[0] == '/')
        return 0;
    for (const char *s = rel; (s = strstr(s, "..")); s += 2)
        if ((s == rel || s[-1] == '/') && (s[2] == '/' || s[2] == '\0'))
            return 0;
    return 1;
}

/* One openat per component from rootfd: folders with O_DIRECTORY | O_NOFOLLOW, the last with
 * flags | O_NOFOLLOW. A link anywhere is refused (ELOOP; with O_DIRECTORY the kernel may say
 * ENOTDIR instead, so a refused component is looked at once more). */
static int walk_open(int rootfd, const char *rel, int flags, int *out)
{
    char buf[PATH_MAX], *save = NULL, *comp;
    int cur = rootfd, rc = HONE_OK;
    if (strlen(rel) >= sizeof buf) {
        errno = ENAMETOOLONG;
        return HONE_EIO;
    }
    strcpy(buf, rel);
    comp = strtok_r(buf, "/", &save);
    if (!comp) /* the folder itself */
        comp = ".";
    while (comp) {
        char *next = strtok_r(NULL, "/", &save);
        int last = next == NULL, fd;
        if (!strcmp(comp, ".") && !last) {
            comp = next;
            continue;
        }
        fd = openat(cur, comp, (last ? flags : O_RDONLY | O_DIRECTORY) | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0) {
            int e = errno;
            struct stat st;
            if ((e == ENOTDIR || e == ELOOP) && !fstatat(cur, comp, &st, AT_SYMLINK_NOFOLLOW) &&
                S_ISLNK(st.st_mode))
                e = ELOOP;
            errno = e;
            rc = code_of(e);
            break;
        }
        if (cur != rootfd)
            close(cur);
        cur = fd;
        comp = next;
    }
    if (rc) {
        int e = errno;
        if (cur != rootfd)
            close(cur);
        errno = e;
        return rc;
    }
    if (cur == rootfd) { /* "." alone: a descriptor of its own */
        cur = openat(rootfd, ".", flags | O_CLOEXEC);
        if (cur < 0)
            return code_of(errno);
    }
    *out = cur;
    return HONE_OK;
}

int hone_beneath_open(int rootfd, const char *rel, int flags, int how, int *fd)
{
    *fd = -1;
    if (!rel_ok(rel)) {
        errno = EXDEV;
        return HONE_EINVAL;
    }
    if (!__atomic_load_n(&walk_only, __ATOMIC_RELAXED)) {
        struct open_how oh = {
            .flags = (unsigned long long)(flags | O_CLOEXEC),
            .resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS |
                       (how & HONE_BENEATH_NO_LINKS ? RESOLVE_NO_SYMLINKS : 0),
        };
        long r = syscall(SYS_openat2, rootfd, rel[0] ? rel : ".", &oh, sizeof oh);
        if (r >= 0) {
            *fd = (int)r;
            return HONE_OK;
        }
        if (errno != ENOSYS && errno != EPERM)
            return code_of(errno);
        hone_beneath_force_walk(1); /* no openat2 here: walk from now on */
    }
    return walk_open(rootfd, rel, flags, fd);
}

static int cmp_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The names in the folder fd (borrowed), dot entries left out, sorted; *n of them. */
static int names_of(int fd, char ***names, size_t *n)
{
    int dup_fd = openat(fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    DIR *d = dup_fd >= 0 ? fdopendir(dup_fd) : NULL;
    struct dirent *e;
    size_t cap = 0;
    *names = NULL;
    *n = 0;
    if (!d) {
        if (dup_fd >= 0)
            close(dup_fd);
        return HONE_EIO;
    }
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        if (*n == cap) {
            cap = cap ? 2 * cap : 64;
            *names = hone_xrealloc(*names, cap * sizeof(char *));
        }
        (*names)[(*n)++] = hone_xstrdup(e->d_name);
    }
    closedir(d);
    if (*n)
        qsort(*names, *n, sizeof(char *), cmp_name);
    return HONE_OK;
}

static int walk_dir(int fd, const char *rel, int depth, int max_depth, hone_beneath_visit visit,
                    void *ud)
{
    char **names, sub[PATH_MAX];
    size_t n;
    int rc = names_of(fd, &names, &n);
    for (size_t i = 0; rc == HONE_OK && i < n; i++) {
        struct stat st;
        if (snprintf(sub, sizeof sub, "%s%s%s", rel, *rel ? "/" : "", names[i]) >= (int)sizeof sub)
            continue;
        if (fstatat(fd, names[i], &st, AT_SYMLINK_NOFOLLOW))
            continue; /* gone since the listing */
        int v = visit(ud, fd, names[i], sub, &st);
        if (v < 0) {
            rc = v;
            break;
        }
        if (v == 0 && S_ISDIR(st.st_mode) && depth < max_depth) {
            int cfd = openat(fd, names[i], O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
            if (cfd < 0)
                continue; /* replaced by a link or a file since its fstatat: not entered */
            rc = walk_dir(cfd, sub, depth + 1, max_depth, visit, ud);
            close(cfd);
        }
    }
    for (size_t i = 0; i < n; i++)
        free(names[i]);
    free(names);
    return rc;
}

int hone_beneath_walk(int dirfd, int max_depth, hone_beneath_visit visit, void *ud)
{
    return walk_dir(dirfd, "", 0, max_depth, visit, ud);
}
