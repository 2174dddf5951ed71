/* libFuzzer target for hone-controller's request handlers: a real controller (store on tmpfs,
 * fixtures: an IDX dataset, a train and an AutoML experiment, a leased train job and trial) gets
 * each input as the JSON body of one of its routes (first byte picks the route, ids filled in) or,
 * for selector 0xFF, as raw HTTP bytes ({WRK}-style tags in paths and bodies become fixture ids).
 * Every request carries worker {WRK}'s credential (a fixed secret whose hash the fixtures store),
 * so the worker routes are reached past authentication. Traps on any 5xx answer. State resets every
 * RESET inputs. */
#include <openssl/evp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ctl.h"
#include "http_internal.h"
#include "store.h"
#include "util.h"

#define RESET 64
#define SECRET "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff"

static uv_loop_t loop;
static hone_controller *ctl;
static char dir[256];
static int served, answered_5xx, last_status;
static char ids[8][64]; /* DS, EXP, AEXP, JOB, TRIAL, AUTOML, WRK, WRK2 */
static const char *const tags[8] = {"{DS}",    "{EXP}",    "{AEXP}", "{JOB}",
                                    "{TRIAL}", "{AUTOML}", "{WRK}",  "{WRK2}"};

/* route templates: method, path (with {TAG}s) */
static const char *const routes[][2] = {
    {"POST", "/api/v1/datasets"},
    {"POST", "/api/v1/experiments"},
    {"PATCH", "/api/v1/experiments/{EXP}"},
    {"PATCH", "/api/v1/experiments/{AEXP}"},
    {"POST", "/api/v1/experiments/{EXP}/jobs"},
    {"POST", "/api/v1/experiments/{AEXP}/jobs"},
    {"POST", "/api/v1/workers"},
    {"POST", "/api/v1/workers/{WRK}/heartbeat"},
    {"POST", "/api/v1/workers/{WRK2}/lease?wait=0"},
    {"POST", "/api/v1/jobs/{JOB}/report"},
    {"POST", "/api/v1/jobs/{TRIAL}/report"},
    {"POST", "/api/v1/jobs/{JOB}/complete"},
    {"POST", "/api/v1/jobs/{TRIAL}/complete"},
    {"POST", "/api/v1/jobs/{AUTOML}:cancel"},
    {"POST", "/api/v1/jobs/{JOB}/pause"},
    {"PUT", "/api/v1/jobs/{JOB}/artifacts/x.bin"},
    {"GET", "/api/v1/jobs/{AUTOML}/metrics"},
    {"GET", "/api/v1/jobs?parent={AUTOML}"},
    {"DELETE", "/api/v1/datasets/{DS}"},
    {"DELETE", "/api/v1/experiments/{EXP}"},
};
#define NROUTES (sizeof routes / sizeof routes[0])

static void on_access(const char *method, const char *path, int status, uint64_t micros, void *ud)
{
    (void)micros;
    (void)ud;
    if (getenv("HONE_FUZZ_VERBOSE"))
        fprintf(stdout, "ctl_fuzz: %s %s -> %d\n", method, path, status);
    served++;
    last_status = status;
    if (status >= 500)
        answered_5xx++;
}

/* Replaces each {TAG} in in[0..len) with its fixture id (binary safe); returns a malloc'd buffer.
 */
static char *subst(const char *in, size_t len, size_t *outlen)
{
    size_t cap = len + 1, o = 0;
    char *out = malloc(cap);
    for (size_t i = 0; i < len;) {
        const char *rep = NULL;
        size_t tl = 0;
        if (in[i] == '{')
            for (int t = 0; t < 8 && !rep; t++) {
                tl = strlen(tags[t]);
                if (len - i >= tl && !memcmp(in + i, tags[t], tl))
                    rep = ids[t][0] ? ids[t] : "none";
            }
        size_t rl = rep ? strlen(rep) : 1;
        if (o + rl + 1 > cap) {
            cap = (o + rl + 1) * 2;
            out = realloc(out, cap);
        }
        if (rep) {
            memcpy(out + o, rep, rl);
            i += tl;
        } else {
            out[o] = in[i++];
        }
        o += rl;
    }
    out[o] = '\0';
    *outlen = o;
    return out;
}

static int request(const char *method, const char *path_tmpl, const char *body, size_t blen)
{
    char head[1024];
    size_t pl, bl;
    char *path = subst(path_tmpl, strlen(path_tmpl), &pl);
    char *b = subst(body, blen, &bl);
    int hl = snprintf(head, sizeof head,
                      "%s %s HTTP/1.1\r\nHost: f\r\nContent-Type: application/json\r\n"
                      "Authorization: Bearer %s.%s\r\nContent-Length: %zu\r\n\r\n",
                      method, path, ids[6][0] ? ids[6] : "none", SECRET, bl);
    char *buf = malloc((size_t)hl + bl + 1);
    memcpy(buf, head, (size_t)hl);
    memcpy(buf + hl, b, bl);
    last_status = 0;
    hone_http__feed_for_fuzz(ctl->http, buf, (size_t)hl + bl, 0);
    free(buf);
    free(b);
    free(path);
    return last_status;
}

static void put_idx(const char *path, const unsigned char *hdr, size_t hl, size_t n, int mod)
{
    FILE *f = fopen(path, "wb");
    fwrite(hdr, 1, hl, f);
    for (size_t i = 0; i < n; i++)
        fputc((int)(i * 7 % (size_t)mod), f);
    fclose(f);
}

static void first_id(int slot, const char *sql)
{
    json_t *row = NULL;
    ids[slot][0] = '\0';
    if (db_row(ctl->db, &row, sql, NULL) == HONE_OK && jstr(row, "id"))
        snprintf(ids[slot], sizeof ids[slot], "%s", jstr(row, "id"));
    json_decref(row);
}

static void fixtures(void)
{
    char body[1024], p[512];
    snprintf(p, sizeof p, "%s/ds", dir);
    mkdir(p, 0755);
    static const unsigned char ti[] = {0, 0, 8, 3, 0, 0, 0, 40, 0, 0, 0, 4, 0, 0, 0, 4};
    static const unsigned char tl[] = {0, 0, 8, 1, 0, 0, 0, 40};
    static const unsigned char si[] = {0, 0, 8, 3, 0, 0, 0, 10, 0, 0, 0, 4, 0, 0, 0, 4};
    static const unsigned char sl[] = {0, 0, 8, 1, 0, 0, 0, 10};
    snprintf(p, sizeof p, "%s/ds/train-images-idx3-ubyte", dir);
    put_idx(p, ti, sizeof ti, 40 * 16, 256);
    snprintf(p, sizeof p, "%s/ds/train-labels-idx1-ubyte", dir);
    put_idx(p, tl, sizeof tl, 40, 10);
    snprintf(p, sizeof p, "%s/ds/t10k-images-idx3-ubyte", dir);
    put_idx(p, si, sizeof si, 10 * 16, 256);
    snprintf(p, sizeof p, "%s/ds/t10k-labels-idx1-ubyte", dir);
    put_idx(p, sl, sizeof sl, 10, 10);
    /* POST /datasets answers from the thread pool, after the fake connection has gone: insert */
    snprintf(p, sizeof p, "%s/ds", dir);
    db_run(ctl->db,
           "INSERT INTO datasets(id,name,type,format,path,stats,created) VALUES('ds-fuzz','d',"
           "'image_classification','idx',?,'{\"classes\":10,\"train_images\":40,"
           "\"test_images\":10,\"image_shape\":[1,4,4]}',1)",
           "s", p);
    first_id(0, "SELECT id FROM datasets");
    snprintf(body, sizeof body,
             "{\"name\":\"e\",\"network_arch\":\"mlp\",\"train_datasets\":[\"%s\"],"
             "\"metric\":\"val_accuracy\",\"specs\":{\"train\":{\"epochs\":3}}}",
             ids[0]);
    request("POST", "/api/v1/experiments", body, strlen(body));
    first_id(1,
             "SELECT id FROM experiments WHERE automl_settings NOT LIKE '%automl_enabled\":true%'");
    snprintf(body, sizeof body,
             "{\"name\":\"a\",\"network_arch\":\"mlp\",\"train_datasets\":[\"%s\"],"
             "\"metric\":\"val_accuracy\",\"specs\":{\"train\":{\"epochs\":3}},"
             "\"automl_settings\":{\"automl_enabled\":true,\"automl_algorithm\":\"random\","
             "\"automl_max_recommendations\":4,\"automl_max_parallel\":2}}",
             ids[0]);
    request("POST", "/api/v1/experiments", body, strlen(body));
    first_id(2, "SELECT id FROM experiments WHERE automl_settings LIKE '%automl_enabled\":true%'");
    request("POST", "/api/v1/experiments/{EXP}/jobs", "{\"action\":\"train\"}",
            strlen("{\"action\":\"train\"}"));
    request("POST", "/api/v1/experiments/{AEXP}/jobs", "{\"action\":\"automl\"}",
            strlen("{\"action\":\"automl\"}"));
    first_id(5, "SELECT id FROM jobs WHERE action='automl'");
    request("POST", "/api/v1/workers", "{\"name\":\"w1\",\"resources\":{}}",
            strlen("{\"name\":\"w1\",\"resources\":{}}"));
    first_id(6, "SELECT id FROM workers");
    unsigned char md[32];
    char hash[65];
    unsigned int mdlen = 0;
    EVP_Digest(SECRET, strlen(SECRET), md, &mdlen, EVP_sha256(), NULL);
    for (int i = 0; i < 32; i++)
        snprintf(hash + 2 * i, 3, "%02x", md[i]);
    db_run(ctl->db, "UPDATE workers SET secret_hash=? WHERE id=?", "ss", hash, ids[6]);
    request("POST", "/api/v1/workers", "{\"name\":\"w2\",\"resources\":{}}",
            strlen("{\"name\":\"w2\",\"resources\":{}}"));
    first_id(7, "SELECT id FROM workers WHERE name='w2'");
    for (int i = 0; i < 3; i++)
        request("POST", "/api/v1/workers/{WRK}/lease?wait=0", "", strlen(""));
    first_id(3, "SELECT id FROM jobs WHERE action='train' AND parent_id IS NULL");
    first_id(4, "SELECT id FROM jobs WHERE parent_id IS NOT NULL AND worker_id IS NOT NULL");
    if (!ids[4][0])
        first_id(4, "SELECT id FROM jobs WHERE parent_id IS NOT NULL");
}

static void closed(void *arg)
{
    *(int *)arg = 1;
}

static void teardown(void)
{
    int done = 0;
    hone_controller_close(ctl, closed, &done);
    while (!done && uv_run(&loop, UV_RUN_ONCE))
        ;
    while (uv_run(&loop, UV_RUN_DEFAULT)) /* thread-pool work still in flight (dataset checks) */
        ;
    hone_controller_free(ctl);
    ctl = NULL;
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        abort();
}

static void setup(void)
{
    static int loop_ready;
    char err[512];
    hone_controller_config cfg;
    if (!loop_ready) {
        uv_loop_init(&loop);
        loop_ready = 1;
        if (!getenv("HONE_FUZZ_VERBOSE"))
            stderr = fopen("/dev/null", "w"); /* the controller's logs; sanitizers use fd 2 */
    }
    snprintf(dir, sizeof dir, "/dev/shm/hone-ctl-fuzz-XXXXXX");
    if (!mkdtemp(dir)) {
        snprintf(dir, sizeof dir, "/tmp/hone-ctl-fuzz-XXXXXX");
        if (!mkdtemp(dir))
            abort();
    }
    hone_controller_config_default(&cfg);
    free(cfg.data_dir);
    cfg.data_dir = hone_xstrdup(dir);
    cfg.max_body_bytes = 64 << 10;
    cfg.max_upload_bytes = 64 << 10;
    if (hone_controller_new(&loop, &cfg, &ctl, err, sizeof err)) {
        fprintf(stdout, "controller: %s\n", err);
        abort();
    }
    hone_controller_config_free(&cfg);
    hone_http_set_access_log(ctl->http, on_access, NULL);
    fixtures();
    if (answered_5xx) {
        fprintf(stdout, "fixtures answered 5xx\n");
        abort();
    }
    for (int t = 0; t < 8; t++)
        if (!ids[t][0] || getenv("HONE_FUZZ_VERBOSE"))
            fprintf(stdout, "ctl_fuzz: fixture %s = '%s'\n", tags[t], ids[t]);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static unsigned n;
    if (!ctl)
        setup();
    if (size == 0)
        return 0;
    if (data[0] == 0xFF) {
        size_t rl;
        char *raw = subst((const char *)data + 1, size - 1, &rl);
        hone_http__feed_for_fuzz(ctl->http, raw, rl, 0);
        free(raw);
    } else {
        const char *const *r = routes[data[0] % NROUTES];
        request(r[0], r[1], (const char *)data + 1, size - 1);
    }
    uv_run(&loop, UV_RUN_NOWAIT); /* timers and closes the handlers scheduled */
    if (answered_5xx) {
        fprintf(stdout, "controller answered %d (5xx) to this input\n", last_status);
        __builtin_trap();
    }
    if (++n % RESET == 0) {
        teardown();
        setup();
    }
    return 0;
}
