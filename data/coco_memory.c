/* data/coco_memory.c: how much memory parsing a COCO JSON text may take, bounded from the text
 * alone before jansson sees it, and the budget every COCO parse of the process shares (a
 * controller checks several datasets at once: their parses together stay within it).
 *
 * The bound is a true upper bound for jansson 2.14 (Debian 12's) over glibc's malloc, derived
 * from jansson's code and checked by tests/data/test_data_coco_memory.c (a counting allocator
 * that charges what glibc would, over arrays and objects of every kind of value):
 *   - a chunk is the request + 8 rounded up to 16, at least 32 bytes; from 128 KiB on it may be
 *     mmap'd: the request + 16 rounded up to a page;
 *   - a string value: its struct (32 bytes) and its text as the lexer saw it (quotes included,
 *     escapes not yet decoded, + 1);
 *   - an object member: a hash pair (56 bytes + the key + 1) and its share of the buckets (16
 *     bytes each, fewer than twice the members); while its value is parsed the key's own copy
 *     (as a string's text) lives too, along the chain of open containers;
 *   - a number: its struct (24 bytes); true, false and null are shared (nothing);
 *   - an array: its struct (40) and a table of 8 slots, doubled as it fills (fewer than twice
 *     the elements, 8 bytes each); an object: its struct (72) and 8 buckets of 16 bytes;
 *   - one at a time, a table or bucket array being doubled holds its old copy too, and the lexer
 *     holds a buffer doubled up to the longest token.
 * Then the check's own arrays (coco.c: about 80 bytes an image or annotation, copies of file
 * names and category names, at most 1024 bytes each) and the text itself. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "data_internal.h"

#define MMAP_FROM ((size_t)128 << 10) /* glibc's default M_MMAP_THRESHOLD */
#define PAGE ((size_t)4096)
#define DEPTH 2049 /* jansson stops past JSON_PARSER_MAX_DEPTH (2048) open containers */

/* What glibc's malloc takes for a request of x bytes (an upper bound). */
static size_t chunk(size_t x)
{
    if (x >= MMAP_FROM)
        return (x + 16 + PAGE - 1) & ~(PAGE - 1);
    size_t c = (x + 8 + 15) & ~(size_t)15;
    return c < 32 ? 32 : c;
}

/* The scan's state, fed the text in pieces (a file is scanned before it is read whole). */
struct data__json_scan {
    size_t n;                   /* bytes seen */
    size_t jansson, check;      /* sums so far */
    size_t objects;             /* '{' seen */
    size_t str, tok;            /* the open string's bytes (quotes included), the open token's */
    size_t last;                /* the length of the string just closed (awaiting ':' or not) */
    size_t long_tok, long_key;  /* the longest token (strings with quotes), the longest key */
    size_t depth, max_depth;    /* open containers */
    size_t max_count;           /* the most values or members one container held */
    int in_str, esc, after_str; /* in a string; after a backslash; a string just closed */
    unsigned char kind[DEPTH];  /* '[' or '{' for each open container (the deepest: merged) */
    size_t count[DEPTH];        /* values or members in each open container */
};

/* One value ended inside the innermost container (a value string, a number, a container). */
static void value_in(data__json_scan *s)
{
    if (!s->depth)
        return;
    size_t d = s->depth > DEPTH ? DEPTH - 1 : s->depth - 1;
    if (s->kind[d] == '[') { /* a slot: the table stays under twice the elements, and an
                              * mmap'd table's page rounding is under 1 byte a slot */
        s->jansson += 17;
        s->count[d]++;
    } else if (s->kind[d] != '{') { /* beyond the depth tracked: the dearer of the two */
        s->jansson += 33;
    }
}

static void end_token(data__json_scan *s)
{
    if (!s->tok)
        return;
    if (s->tok > s->long_tok)
        s->long_tok = s->tok;
    s->jansson += 32; /* a number's struct (true/false/null cost nothing: charged anyway) */
    value_in(s);
    s->tok = 0;
}

/* The string just closed was a value (not followed by ':'). */
static void string_value(data__json_scan *s)
{
    size_t l = s->last; /* with its quotes */
    s->jansson += chunk(32) + chunk(l + 1);
    s->check += chunk((l < 1026 ? l : 1026) - 1); /* a file or category name's copy */
    value_in(s);
}

/* The string just closed was a key: a member of the innermost object. */
static void string_key(data__json_scan *s)
{
    size_t l = s->last;
    s->jansson += chunk(56 + l - 1) + 33; /* the pair, its buckets (< 2 per member, 16 bytes) */
    if (l > s->long_key)
        s->long_key = l;
    if (s->depth && s->depth <= DEPTH)
        s->count[s->depth - 1]++;
}

void data__json_scan_feed(data__json_scan *s, const uint8_t *b, size_t n)
{
    s->n += n;
    for (size_t i = 0; i < n; i++) {
        uint8_t c = b[i];
        if (s->in_str) {
            s->str++;
            if (s->esc)
                s->esc = 0;
            else if (c == '\\')
                s->esc = 1;
            else if (c == '"') {
                s->in_str = 0;
                s->after_str = 1;
                s->last = s->str;
                if (s->str > s->long_tok)
                    s->long_tok = s->str;
            }
            continue;
        }
        int ws = c == ' ' || c == '\t' || c == '\n' || c == '\r';
        if (s->after_str && !ws) {
            s->after_str = 0;
            if (c == ':')
                string_key(s);
            else
                string_value(s);
        }
        if (c == '"') {
            end_token(s);
            s->in_str = 1;
            s->str = 1;
        } else if (c == '{' || c == '[') {
            end_token(s);
            s->jansson += c == '{' ? chunk(72) + chunk(8 * 16) : chunk(40) + chunk(8 * 8);
            s->objects += c == '{';
            value_in(s);
            if (s->depth < DEPTH) {
                s->kind[s->depth] = c;
                s->count[s->depth] = 0;
            } else {
                s->kind[DEPTH - 1] = 0; /* both kinds merged: charged as the dearer */
            }
            s->depth++;
            if (s->depth > s->max_depth)
                s->max_depth = s->depth;
        } else if (c == '}' || c == ']') {
            end_token(s);
            if (s->depth) {
                size_t d = s->depth > DEPTH ? DEPTH - 1 : s->depth - 1;
                if (s->count[d] > s->max_count)
                    s->max_count = s->count[d];
                if (s->depth <= DEPTH)
                    s->count[d] = 0;
                s->depth--;
            }
        } else if (c == ',' || c == ':' || ws) {
            end_token(s);
        } else {
            s->tok++;
        }
    }
}

size_t data__json_scan_end(data__json_scan *s, size_t *jansson)
{
    if (s->in_str) { /* an unterminated string: jansson fails on it, charged as a value */
        s->last = s->str;
        if (s->str > s->long_tok)
            s->long_tok = s->str;
        string_value(s);
    } else if (s->after_str) {
        string_value(s);
    }
    end_token(s);
    for (size_t d = 0; d < s->depth && d < DEPTH; d++) /* unclosed containers */
        if (s->count[d] > s->max_count)
            s->max_count = s->count[d];
    size_t depth = s->max_depth < DEPTH ? s->max_depth : DEPTH;
    /* the keys alive along the chain of open containers: distinct parts of the text */
    size_t keys = depth * chunk(s->long_key + 1), keys2 = s->n + depth * (32 + PAGE);
    /* the lexer's buffer, doubled up to the longest token (old and new while doubling), a
     * table or bucket array's old copy while it is doubled, jansson's seeding and the like */
    size_t lexer = 3 * (s->long_tok + 16) + 2 * (32 + PAGE);
    size_t table = 16 * s->max_count + 2 * PAGE;
    size_t j = s->jansson + (keys < keys2 ? keys : keys2) + lexer + table + (16 << 10);
    if (jansson)
        *jansson = j;
    /* the check's arrays (coco.c): an image or annotation is one object, under 128 bytes in
     * them, and a few of them may be mmap'd; then the text itself, held while it is parsed */
    return j + s->check + 128 * s->objects + (64 << 10) + s->n;
}

size_t hone_data_coco_memory(const uint8_t *buf, size_t len, size_t *jansson)
{
    data__json_scan *s = hone_xcalloc(1, sizeof *s);
    data__json_scan_feed(s, buf, len);
    size_t m = data__json_scan_end(s, jansson);
    free(s);
    return m;
}

data__json_scan *data__json_scan_new(void)
{
    return hone_xcalloc(1, sizeof(data__json_scan));
}

/* ------------------------------------------------------------------ the process's budget */

static pthread_mutex_t budget_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t budget_cv = PTHREAD_COND_INITIALIZER;
static size_t budget = HONE_DATA_COCO_MEMORY_DEFAULT, budget_used;
static unsigned long ticket_next,
    ticket_now; /* parses are served in turn (no starving a big one) */
static char budget_fix[160];

void hone_data_coco_memory_budget(size_t bytes, const char *fix)
{
    pthread_mutex_lock(&budget_mu);
    budget = bytes;
    snprintf(budget_fix, sizeof budget_fix, "%s", fix ? fix : "");
    pthread_cond_broadcast(&budget_cv);
    pthread_mutex_unlock(&budget_mu);
}

static void too_big(size_t bytes, char *why, size_t n)
{
    snprintf(why, n,
             "parsing it takes up to %zu MiB (bounded from its text), more than the %zu MiB that "
             "COCO files may take at once here%s%s%s",
             (bytes + (1 << 20) - 1) >> 20, budget >> 20, budget_fix[0] ? " (" : "", budget_fix,
             budget_fix[0] ? ")" : "");
}

int data__coco_memory_reserve(size_t bytes, char *why, size_t n)
{
    pthread_mutex_lock(&budget_mu);
    int rc = HONE_OK;
    if (bytes > budget) {
        too_big(bytes, why, n);
        pthread_mutex_unlock(&budget_mu);
        return HONE_EINVAL;
    }
    /* in turn: the first waiting parse waits while others hold the rest, and those after it
     * wait behind it (a stream of small ones does not starve a big one) */
    unsigned long mine = ticket_next++;
    while (ticket_now != mine || budget_used + bytes > budget) {
        if (ticket_now == mine && bytes > budget) { /* the budget shrank meanwhile */
            too_big(bytes, why, n);
            rc = HONE_EINVAL;
            break;
        }
        pthread_cond_wait(&budget_cv, &budget_mu);
    }
    if (rc == HONE_OK)
        budget_used += bytes;
    ticket_now++;
    pthread_cond_broadcast(&budget_cv);
    pthread_mutex_unlock(&budget_mu);
    return rc;
}

void data__coco_memory_release(size_t bytes)
{
    pthread_mutex_lock(&budget_mu);
    budget_used -= bytes < budget_used ? bytes : budget_used;
    pthread_cond_broadcast(&budget_cv);
    pthread_mutex_unlock(&budget_mu);
}

size_t hone_data_coco_memory_in_use(void)
{
    pthread_mutex_lock(&budget_mu);
    size_t u = budget_used;
    pthread_mutex_unlock(&budget_mu);
    return u;
}

size_t data__coco_memory_waiting(void)
{
    pthread_mutex_lock(&budget_mu);
    size_t w = (size_t)(ticket_next - ticket_now);
    pthread_mutex_unlock(&budget_mu);
    return w;
}
