/* tests/data/test_data_coco_memory.c: the bound on a COCO JSON parse's memory
 * (hone_data_coco_memory) is a true upper bound for jansson: synthetic JSONs of every shape
 * (arrays and objects of empty, short, long and escaped strings, numbers, true/false/null, {},
 * [], nested, deep, many keys, a COCO-like file), parsed by jansson under a counting allocator
 * that charges what glibc's malloc takes (chunk sizes, mmap'd pages) and keeps the peak; the
 * peak never exceeds the bound's jansson part. Then the process's budget: a file whose bound
 * exceeds it is refused naming both sizes and the fix, and a second parse waits while a first
 * holds the budget. */
#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "data.h"
#include "data_internal.h"

/* ------------------------------------------------------------------ the counting allocator */

static size_t live, peak;

static size_t glibc_chunk(size_t x) /* what glibc takes for x bytes */
{
    if (x >= ((size_t)128 << 10))
        return (x + 16 + 4095) & ~(size_t)4095;
    size_t c = (x + 8 + 15) & ~(size_t)15;
    return c < 32 ? 32 : c;
}

static void *count_malloc(size_t n)
{
    size_t *p = malloc(n + 16);
    if (!p)
        return NULL;
    p[0] = glibc_chunk(n);
    live += p[0];
    if (live > peak)
        peak = live;
    return p + 2;
}

static void count_free(void *q)
{
    if (!q)
        return;
    size_t *p = (size_t *)q - 2;
    live -= p[0];
    free(p);
}

static double worst; /* the largest peak / bound seen */

/* Parses text under the counting allocator: the peak must stay within the bound. */
static void within(const char *what, const char *text, size_t n)
{
    size_t jansson = 0;
    size_t all = hone_data_coco_memory((const uint8_t *)text, n, &jansson);
    CHECK(all >= jansson + n);
    live = peak = 0;
    json_set_alloc_funcs(count_malloc, count_free);
    json_error_t e;
    json_t *j = json_loadb(text, n, JSON_REJECT_DUPLICATES, &e);
    json_decref(j);
    json_set_alloc_funcs(malloc, free);
    double r = (double)peak / (double)jansson;
    if (r > worst)
        worst = r;
    if (getenv("HONE_TEST_VERBOSE") && r > 0.9)
        fprintf(stderr, "%s: %.3f\n", what, r);
    if (peak > jansson)
        fprintf(stderr, "%s (%zu bytes, %s): jansson took %zu, bounded at %zu\n", what, n,
                j ? "parsed" : e.text, peak, jansson);
    CHECK(peak <= jansson);
    CHECK(live == 0);
}

/* [e, e, ...] (or {"k0": e, ...}) of count elements */
static void shape(const char *e, size_t count, int object)
{
    size_t el = strlen(e), cap = count * (el + 32) + 16, n = 0;
    char *t = malloc(cap);
    t[n++] = object ? '{' : '[';
    for (size_t i = 0; i < count; i++) {
        if (i)
            t[n++] = ',';
        if (object)
            n += (size_t)sprintf(t + n, "\"k%zx\":", i);
        memcpy(t + n, e, el);
        n += el;
    }
    t[n++] = object ? '}' : ']';
    char what[96];
    snprintf(what, sizeof what, "%s of %zu %.40s", object ? "object" : "array", count, e);
    within(what, t, n);
    free(t);
}

static void test_shapes(void)
{
    char *big = malloc(300000); /* a string past the mmap threshold */
    big[0] = '"';
    memset(big + 1, 'x', 299997);
    big[299998] = '"';
    big[299999] = 0;
    const char *kinds[] = {"\"\"",
                           "\"a\"",
                           "\"abcdefghijklmnopqrstuvwx\"",
                           "\"\\u00e9\\n\\\"\"",
                           "1",
                           "1.5",
                           "-1234567890123",
                           "1e300",
                           "true",
                           "false",
                           "null",
                           "{}",
                           "[]",
                           "[[]]",
                           "{\"a\":{}}",
                           "[1,2]",
                           "{\"a\":\"\"}",
                           "{\"id\":1,\"bbox\":[1.5,2,3,4],\"iscrowd\":0}",
                           " [ \"\" , 1 ] "};
    /* counts around the tables' doublings (8 slots, then twice as many) and past the point
     * where glibc mmaps a table (16384 slots, 8192 buckets) */
    const size_t counts[] = {0, 1, 7, 8, 9, 16, 17, 1000, 1025, 8193, 16385, 70000};
    for (size_t k = 0; k < sizeof kinds / sizeof *kinds; k++)
        for (size_t c = 0; c < sizeof counts / sizeof *counts; c++)
            for (int o = 0; o < 2; o++)
                shape(kinds[k], counts[c], o);
    shape(big, 3, 0);
    shape(big, 3, 1);
    /* a long key, a long number */
    char *t = malloc(300100);
    int n = sprintf(t, "{%s:1}", big);
    within("a long key", t, (size_t)n);
    memset(t + 1, '7', 200000);
    t[0] = '[';
    t[200001] = ']';
    within("a long number", t, 200002);
    free(t);
    free(big);
}

/* deep nesting: [[[...]]] and {"a":{"a":...}} to jansson's depth and past it */
static void test_deep(void)
{
    const size_t depths[] = {100, 2048, 2049, 5000};
    for (size_t d = 0; d < sizeof depths / sizeof *depths; d++) {
        size_t D = depths[d], n = 0;
        char *t = malloc(D * 12 + 16);
        for (size_t i = 0; i < D; i++)
            t[n++] = '[';
        for (size_t i = 0; i < D; i++)
            t[n++] = ']';
        within("deep arrays", t, n);
        n = 0;
        for (size_t i = 0; i < D; i++)
            n += (size_t)sprintf(t + n, "{\"key%zu\":", i % 7);
        t[n++] = '1';
        for (size_t i = 0; i < D; i++)
            t[n++] = '}';
        within("deep objects", t, n);
        free(t);
    }
    within("unterminated", "[\"abc", 5);
    within("a bad token", "[1, tru]", 8);
    within("empty", "", 0);
}

/* a COCO-like file: images, annotations with polygons, categories */
static void test_coco_like(void)
{
    size_t cap = 40u << 20, n = 0;
    char *t = malloc(cap);
    n += (size_t)sprintf(t + n, "{\"info\": {\"year\": 2017}, \"images\": [");
    for (int i = 0; i < 2000; i++)
        n += (size_t)sprintf(t + n,
                             "%s{\"license\": 3, \"file_name\": \"%012d.jpg\", \"coco_url\": "
                             "\"http://images.cocodataset.org/train2017/%012d.jpg\", \"height\": "
                             "480, \"width\": 640, \"date_captured\": \"2013-11-14 11:18:45\", "
                             "\"id\": %d}",
                             i ? ", " : "", i, i, i);
    n += (size_t)sprintf(t + n, "], \"annotations\": [");
    for (int i = 0; i < 15000; i++) {
        n += (size_t)sprintf(t + n, "%s{\"segmentation\": [[", i ? ", " : "");
        for (int p = 0; p < 24; p++)
            n += (size_t)sprintf(t + n, "%s%.2f", p ? ", " : "", 100 + p * 3.37);
        n += (size_t)sprintf(t + n,
                             "]], \"area\": 702.1057, \"iscrowd\": 0, \"image_id\": %d, "
                             "\"bbox\": [473.07, 395.93, 38.65, 28.67], \"category_id\": 18, "
                             "\"id\": %d}",
                             i % 2000, i);
    }
    n += (size_t)sprintf(t + n, "], \"categories\": [{\"supercategory\": \"animal\", \"id\": 18, "
                                "\"name\": \"dog\"}]}");
    within("COCO-like", t, n);
    size_t jansson, all = hone_data_coco_memory((const uint8_t *)t, n, &jansson);
    fprintf(stderr, "COCO-like: %zu bytes of text, bounded at %zu (jansson %zu): %.2fx the text\n",
            n, all, jansson, (double)all / (double)n);
    free(t);
}

/* ------------------------------------------------------------------ the budget */

static char base[64];

static void write_file(const char *rel, const char *text, size_t n)
{
    char p[256];
    snprintf(p, sizeof p, "%s/%s", base, rel);
    FILE *f = fopen(p, "wb");
    REQUIRE(f);
    REQUIRE(fwrite(text, 1, n, f) == n);
    fclose(f);
}

/* The review's trigger, scaled down: {"images":[],"annotations":[],"categories":["",...]}
 * (3 bytes a string, each ~100 bytes once parsed) refused under a budget its bound exceeds. */
static void test_budget_refuses(void)
{
    size_t count = 100000, n = 0;
    char *t = malloc(count * 3 + 64);
    n += (size_t)sprintf(t, "{\"images\":[],\"annotations\":[],\"categories\":[");
    for (size_t i = 0; i < count; i++) {
        memcpy(t + n, i ? ",\"\"" : "\"\"", i ? 3 : 2);
        n += i ? 3 : 2;
    }
    n += (size_t)sprintf(t + n, "]}");
    within("the trigger", t, n);
    size_t jansson, all = hone_data_coco_memory((const uint8_t *)t, n, &jansson);
    CHECK(jansson > 30 * n); /* each "" (3 bytes) takes over 90 bytes in jansson */
    snprintf(base, sizeof base, "/tmp/hone_coco_mem_%d", (int)getpid());
    REQUIRE(mkdir(base, 0755) == 0);
    char p[128];
    snprintf(p, sizeof p, "%s/images", base);
    REQUIRE(mkdir(p, 0755) == 0);
    write_file("annotations.json", t, n);
    hone_data_coco_memory_budget(8u << 20, "raise the test's budget");
    hone_data_kitti *k = NULL;
    char err[2048];
    int rc = hone_data_coco_open(base, NULL, &k, err, sizeof err);
    CHECK(rc == HONE_EPARSE && !k);
    char want[160];
    snprintf(want, sizeof want, "annotations.json: parsing it takes up to %zu MiB",
             (all + (1 << 20) - 1) >> 20);
    CHECK(strstr(err, want) != NULL);
    CHECK(strstr(err, "more than the 8 MiB") && strstr(err, "(raise the test's budget)"));
    if (!strstr(err, want))
        fprintf(stderr, "got: %s\nwant: %s\n", err, want);
    CHECK(hone_data_coco_memory_in_use() == 0);
    /* within a budget it fits: parsed (the categories are refused, not the memory) */
    hone_data_coco_memory_budget(all, NULL);
    rc = hone_data_coco_open(base, NULL, &k, err, sizeof err);
    CHECK(rc == HONE_EPARSE && !strstr(err, "parsing it takes") && strstr(err, "categories[0]"));
    CHECK(hone_data_coco_memory_in_use() == 0);
    hone_data_coco_memory_budget(HONE_DATA_COCO_MEMORY_DEFAULT, NULL);
    snprintf(p, sizeof p, "%s/annotations.json", base);
    unlink(p);
    snprintf(p, sizeof p, "%s/images", base);
    rmdir(p);
    rmdir(base);
    free(t);
}

static volatile int second_in, third_in;

static void *second(void *arg)
{
    (void)arg;
    char why[400];
    int rc = data__coco_memory_reserve(600, why, sizeof why);
    second_in = rc == HONE_OK ? 1 : -1;
    return NULL;
}

static void *third(void *arg)
{
    (void)arg;
    char why[400];
    int rc = data__coco_memory_reserve(100, why, sizeof why);
    third_in = rc == HONE_OK ? 1 : -1;
    return NULL;
}

static void wait_for_waiting(size_t n)
{
    for (int i = 0; i < 60000 && data__coco_memory_waiting() != n; i++)
        usleep(1000);
    REQUIRE(data__coco_memory_waiting() == n);
}

/* Two parses that together exceed the budget do not run at once: the second waits, and a third
 * that would fit waits its turn behind it (a big parse is not starved by small ones). */
static void test_budget_waits(void)
{
    hone_data_coco_memory_budget(1000, NULL);
    char why[400];
    REQUIRE(data__coco_memory_reserve(600, why, sizeof why) == HONE_OK);
    pthread_t th[2];
    REQUIRE(pthread_create(&th[0], NULL, second, NULL) == 0);
    wait_for_waiting(1);
    REQUIRE(pthread_create(&th[1], NULL, third, NULL) == 0);
    wait_for_waiting(2);
    CHECK(second_in == 0 && third_in == 0 && hone_data_coco_memory_in_use() == 600);
    data__coco_memory_release(600);
    pthread_join(th[0], NULL);
    pthread_join(th[1], NULL);
    CHECK(second_in == 1 && third_in == 1 && hone_data_coco_memory_in_use() == 700);
    data__coco_memory_release(700);
    CHECK(data__coco_memory_reserve(1001, why, sizeof why) == HONE_EINVAL);
    CHECK(strstr(why, "more than the 0 MiB") != NULL); /* 1000 bytes: under a MiB */
    CHECK(hone_data_coco_memory_in_use() == 0 && data__coco_memory_waiting() == 0);
    hone_data_coco_memory_budget(HONE_DATA_COCO_MEMORY_DEFAULT, NULL);
}

int main(void)
{
    test_shapes();
    test_deep();
    test_coco_like();
    test_budget_refuses();
    test_budget_waits();
    fprintf(stderr, "the largest peak seen: %.2f of the bound\n", worst);
    return failures != 0;
}
