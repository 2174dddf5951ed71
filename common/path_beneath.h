/* path_beneath.c: opening and walking files beneath a folder without following a symbolic link
 * out of it, for every read of a path that a user could have changed since it was checked (a
 * dataset's folder, its files, an inference folder). Linux only: openat2(2) where the kernel has
 * it, a per-component O_NOFOLLOW walk elsewhere. Never follows a link out of the folder. */
#ifndef HONE_PATH_BENEATH_H
#define HONE_PATH_BENEATH_H

#include <sys/stat.h>

/* hone_beneath_open's how: follow no symbolic link at all, not even one that stays beneath. */
#define HONE_BENEATH_NO_LINKS 1

/* Opens rel ('/'-separated, relative; "" or "." is the folder itself) beneath the folder rootfd
 * with flags (O_RDONLY, O_DIRECTORY, O_NONBLOCK...; O_CLOEXEC is added). Never followed: a
 * symbolic link that leads out of rootfd (absolute, or '..' past it), a magic link
 * (/proc/self/fd/N), a '..' component (refused before any lookup). A link that stays beneath is
 * followed only without HONE_BENEATH_NO_LINKS and only where the kernel checks it (openat2's
 * RESOLVE_BENEATH, Linux 5.6); the fallback walk refuses every link. *fd: the new descriptor.
 * Returns HONE_OK; HONE_ENOENT (no such file); HONE_EPERM (a link refused, or a path leaving the
 * folder: errno ELOOP or EXDEV); HONE_EINVAL (rel absolute or with '..'); HONE_EIO (errno). */
int hone_beneath_open(int rootfd, const char *rel, int flags, int how, int *fd);

/* Tests only: non-zero makes hone_beneath_open take the per-component walk, as on a kernel
 * without openat2. */
void hone_beneath_force_walk(int on);

/* One entry of hone_beneath_walk: dirfd is its folder (open, borrowed), name its name there, rel
 * its path below the walk's root, st its own lstat (fstatat AT_SYMLINK_NOFOLLOW: a link is
 * S_ISLNK and is never followed by the walk). Returns 0 to go on (a folder: its entries are
 * visited next, while depth allows), 1 to skip a folder's entries, < 0 to stop the walk. */
typedef int (*hone_beneath_visit)(void *ud, int dirfd, const char *name, const char *rel,
                                  const struct stat *st);

/* Walks the folder dirfd (borrowed) depth first, each folder's entries in bytewise name order,
 * names starting with '.' left out, folders at most max_depth below dirfd entered. Subfolders are
 * opened from their parent's descriptor with O_NOFOLLOW | O_DIRECTORY: the walk never leaves
 * dirfd, whatever is renamed or linked meanwhile. Returns HONE_OK, visit's negative value, or
 * HONE_EIO when a folder cannot be read (errno kept). */
int hone_beneath_walk(int dirfd, int max_depth, hone_beneath_visit visit, void *ud);

#endif
