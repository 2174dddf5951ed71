/* suggest: "did you mean X?" for every word a user types against a fixed list (commands,
 * options, enum values, spec keys), one edit distance for all of them. Pure: no I/O, no
 * allocation past a small stack buffer. */
#include <string.h>
#include <strings.h>

#include "hone.h"

#define SUGGEST_MAX 64 /* longer words are not compared (no suggestion) */

/* Optimal string alignment distance (Levenshtein plus adjacent swaps: "trian" is one edit from
 * "train"), case-insensitive, or SUGGEST_MAX + 1 when either word is too long. */
static int suggest_distance(const char *a, const char *b)
{
    size_t n = strlen(a), m = strlen(b);
    int d[3][SUGGEST_MAX + 1]; /* rows i-2, i-1, i (mod 3) */

    if (n > SUGGEST_MAX || m > SUGGEST_MAX)
        return SUGGEST_MAX + 1;
    for (size_t j = 0; j <= m; j++)
        d[0][j] = (int)j;
    for (size_t i = 1; i <= n; i++) {
        int *cur = d[i % 3], *prev = d[(i - 1) % 3], *pp = d[(i + 1) % 3];
        cur[0] = (int)i;
        for (size_t j = 1; j <= m; j++) {
            char x = a[i - 1], y = b[j - 1];
            int cost = (x | 0x20) == (y | 0x20) ? 0 : 1, v = prev[j] + 1;
            if (cur[j - 1] + 1 < v)
                v = cur[j - 1] + 1;
            if (prev[j - 1] + cost < v)
                v = prev[j - 1] + cost;
            if (i > 1 && j > 1 && (x | 0x20) == (b[j - 2] | 0x20) &&
                (a[i - 2] | 0x20) == (y | 0x20) && pp[j - 2] + 1 < v)
                v = pp[j - 2] + 1;
            cur[j] = v;
        }
    }
    return d[n % 3][m];
}

const char *hone_suggest(const char *word, const char *const *cands, size_t n)
{
    const char *best = NULL;
    int best_d = SUGGEST_MAX + 1;
    size_t len = word ? strlen(word) : 0;
    /* close enough to be a slip: 1 edit for short words, a third of the word for long ones */
    int limit = len <= 4 ? 1 : (int)(len / 3) > 2 ? (int)(len / 3) : 2;

    if (!word || !word[0])
        return NULL;
    for (size_t i = 0; i < n && cands[i]; i++) {
        int d = suggest_distance(word, cands[i]);
        if (d == 0 && strcmp(word, cands[i]) == 0)
            continue; /* the word itself is no suggestion */
        if (d < best_d) {
            best_d = d;
            best = cands[i];
        }
    }
    if (best && best_d <= limit)
        return best;
    /* a prefix of exactly one candidate ("exp" for "experiment") is a suggestion too */
    best = NULL;
    for (size_t i = 0; len >= 2 && i < n && cands[i]; i++)
        if (strncasecmp(cands[i], word, len) == 0 && strlen(cands[i]) > len) {
            if (best)
                return NULL;
            best = cands[i];
        }
    return best;
}
