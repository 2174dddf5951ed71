/* Shared error codes and allocation helpers for every Hone module.
 * Functions return 0 or a negative HONE_E* code; out-of-memory aborts (redis style) instead of
 * being threaded through every caller. No I/O beyond the abort message, hone_sha256_file and
 * hone_secret_read. */
#ifndef HONE_COMMON_H
#define HONE_COMMON_H

#include <stddef.h>

enum {
    HONE_OK = 0,
    HONE_EINVAL = -1,     /* bad argument or malformed input */
    HONE_ENOENT = -2,     /* no such object or file */
    HONE_EEXIST = -3,     /* already exists */
    HONE_ERANGE = -4,     /* value out of range */
    HONE_EIO = -5,        /* read/write failed */
    HONE_EPARSE = -6,     /* could not parse (JSON, YAML, IDX, spec) */
    HONE_ESTATE = -7,     /* operation not allowed in the current state */
    HONE_ENOTSUP = -8,    /* not supported (e.g. CUDA op without a GPU) */
    HONE_ECUDA = -9,      /* a CUDA or cuBLAS call failed */
    HONE_ESQL = -10,      /* SQLite failed */
    HONE_ELIMIT = -11,    /* a configured limit was exceeded */
    HONE_ETIMEDOUT = -12, /* timed out */
    HONE_ENUMERIC = -13,  /* numerical failure (non-finite, not positive definite) */
    HONE_EPERM = -14,     /* the caller may not do this (missing or wrong credential) */
};

/* Short English text for a HONE_E* code; never NULL. */
const char *hone_strerror(int code);

/* Seconds on the monotonic clock: what epochs, trainer runs, converts and the CLI's progress are
 * timed by (differences only; its zero is arbitrary). */
double hone_now(void);

/* Allocation that never returns NULL: prints a message and aborts when memory is exhausted. */
void *hone_xmalloc(size_t n);
void *hone_xcalloc(size_t count, size_t size);
void *hone_xrealloc(void *p, size_t n);
char *hone_xstrdup(const char *s);

/* SHA-256 of the file at path as 64 lower-case hex digits and a NUL (transfers are verified by it);
 * HONE_EIO when it cannot be read. */
int hone_sha256_file(const char *path, char out[65]);
/* The same from fd's current offset to its end (fd borrowed: read, not closed). */
int hone_sha256_fd(int fd, char out[65]);
/* The first line of path (NULL: stdin) without its line end, into out: HONE_OK; HONE_EIO when the
 * file cannot be opened (errno kept); HONE_EINVAL when it holds no line, an empty one, or one of
 * len - 1 bytes or more. *mode: the file's permission bits (0 for stdin), so that the caller can
 * warn when others may read it. */
int hone_secret_read(const char *path, char *out, size_t len, unsigned *mode);

/* The candidate closest to word by edit distance (adjacent swaps count one edit, case ignored)
 * when it is close enough to be a slip, or the one candidate word is a prefix of; else NULL.
 * cands: n entries, or fewer when a NULL ends them (pass SIZE_MAX for a NULL-terminated list).
 * What commands, options, enum values and spec keys say in their "did you mean" (suggest.c). */
const char *hone_suggest(const char *word, const char *const *cands, size_t n);

/* The version of every Hone program: CMake's project version (one place, CMakeLists.txt). */
const char *hone_version(void);

#define HONE_ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

#endif
