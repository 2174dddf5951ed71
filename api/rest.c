/* rest: blocking JSON-over-HTTP calls on one libcurl easy handle (see rest.h).
 * Keeps the connection alive between calls; never retries and never prints: the caller owns
 * both the retry policy (the worker backs off, the CLI gives up) and the user's message. */
#include "rest.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>

struct hone_rest {
    char *base;
    char *auth; /* "Authorization: Bearer ..." or NULL */
    CURL *curl;
    volatile sig_atomic_t *abort_flag;
    hone_rest_progress_fn progress;
    void *progress_user;
    char extra[128]; /* one more header for the call in progress (Range, X-Hone-Sha256), or "" */
};

typedef struct rest_buf {
    char *p;
    size_t len, cap;
    FILE *sink;      /* download target for a 2xx answer, or NULL */
    long *status_of; /* filled from curl before the first body byte */
    CURL *curl;
} rest_buf;

int hone_rest_new(const char *base_url, const char *token, hone_rest **out)
{
    hone_rest *r;
    size_t n;

    *out = NULL;
    if (!base_url || strncmp(base_url, "http", 4) != 0)
        return HONE_EINVAL;
    r = hone_xcalloc(1, sizeof(*r));
    r->base = hone_xstrdup(base_url);
    n = strlen(r->base);
    while (n > 0 && r->base[n - 1] == '/')
        r->base[--n] = '\0';
    hone_rest_set_token(r, token);
    r->curl = curl_easy_init();
    if (!r->curl) {
        hone_rest_free(r);
        return HONE_EIO;
    }
    *out = r;
    return HONE_OK;
}

void hone_rest_free(hone_rest *r)
{
    if (!r)
        return;
    if (r->curl)
        curl_easy_cleanup(r->curl);
    free(r->base);
    free(r->auth);
    free(r);
}

void hone_rest_set_token(hone_rest *r, const char *token)
{
    free(r->auth);
    r->auth = NULL;
    if (token && token[0]) {
        size_t len = strlen(token) + 40;
        r->auth = hone_xmalloc(len);
        snprintf(r->auth, len, "Authorization: Bearer %s", token);
    }
}

const char *hone_rest_base(const hone_rest *r)
{
    return r->base;
}

void hone_rest_set_abort(hone_rest *r, volatile sig_atomic_t *flag)
{
    r->abort_flag = flag;
}

void hone_rest_set_progress(hone_rest *r, hone_rest_progress_fn fn, void *user)
{
    r->progress = fn;
    r->progress_user = user;
}

static int rest_progress(void *arg, curl_off_t dt, curl_off_t dn, curl_off_t ut, curl_off_t un)
{
    hone_rest *r = arg;
    if (r->progress)
        r->progress(r->progress_user, (int64_t)un, (int64_t)ut, (int64_t)dn, (int64_t)dt);
    return r->abort_flag && *r->abort_flag ? 1 : 0;
}

void hone_rest_resp_clear(hone_rest_resp *resp)
{
    if (!resp)
        return;
    json_decref(resp->json);
    free(resp->body);
    memset(resp, 0, sizeof(*resp));
}

static size_t rest_write(char *data, size_t size, size_t nmemb, void *arg)
{
    rest_buf *b = arg;
    size_t n = size * nmemb;

    if (b->sink) {
        long st = 0;
        curl_easy_getinfo(b->curl, CURLINFO_RESPONSE_CODE, &st);
        if (st >= 200 && st < 300)
            return fwrite(data, 1, n, b->sink);
    }
    if (b->len + n + 1 > b->cap) {
        b->cap = (b->len + n + 1) * 2;
        b->p = hone_xrealloc(b->p, b->cap);
    }
    memcpy(b->p + b->len, data, n);
    b->len += n;
    b->p[b->len] = '\0';
    return n;
}

/* The one transfer path: every call sets every option it uses, so nothing leaks between calls. */
static int rest_perform(hone_rest *r, const char *method, const char *path, const char *body,
                        FILE *upload, const char *upload_type, curl_off_t upload_len, FILE *sink,
                        long timeout_s, hone_rest_resp *resp, char *err, size_t errlen)
{
    struct curl_slist *hdrs = NULL;
    rest_buf b = {0};
    char *url;
    size_t ulen;
    CURLcode cc;
    int rc = HONE_OK;

    memset(resp, 0, sizeof(*resp));
    ulen = strlen(r->base) + strlen(path) + 2;
    url = hone_xmalloc(ulen);
    snprintf(url, ulen, "%s%s", r->base, path);

    curl_easy_reset(r->curl);
    curl_easy_setopt(r->curl, CURLOPT_URL, url);
    curl_easy_setopt(r->curl, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(r->curl, CURLOPT_CONNECTTIMEOUT, 5L);
    curl_easy_setopt(r->curl, CURLOPT_TIMEOUT, timeout_s > 0 ? timeout_s : 30L);
    curl_easy_setopt(r->curl, CURLOPT_WRITEFUNCTION, rest_write);
    curl_easy_setopt(r->curl, CURLOPT_WRITEDATA, &b);
    curl_easy_setopt(r->curl, CURLOPT_CUSTOMREQUEST, method);
    if (r->abort_flag || r->progress) {
        curl_easy_setopt(r->curl, CURLOPT_XFERINFOFUNCTION, rest_progress);
        curl_easy_setopt(r->curl, CURLOPT_XFERINFODATA, r);
        curl_easy_setopt(r->curl, CURLOPT_NOPROGRESS, 0L);
    }
    b.sink = sink;
    b.curl = r->curl;
    hdrs = curl_slist_append(hdrs, "Accept: application/json");
    if (r->auth)
        hdrs = curl_slist_append(hdrs, r->auth);
    if (r->extra[0])
        hdrs = curl_slist_append(hdrs, r->extra);
    if (upload) {
        char ct[128];
        snprintf(ct, sizeof ct, "Content-Type: %s", upload_type);
        hdrs = curl_slist_append(hdrs, ct);
        curl_easy_setopt(r->curl, CURLOPT_UPLOAD, 1L);
        curl_easy_setopt(r->curl, CURLOPT_READDATA, upload);
        curl_easy_setopt(r->curl, CURLOPT_INFILESIZE_LARGE, upload_len);
    } else if (body) {
        hdrs = curl_slist_append(hdrs, "Content-Type: application/json");
        curl_easy_setopt(r->curl, CURLOPT_POSTFIELDS, body);
        curl_easy_setopt(r->curl, CURLOPT_POSTFIELDSIZE, (long)strlen(body));
    } else if (strcmp(method, "POST") == 0 || strcmp(method, "PUT") == 0 ||
               strcmp(method, "PATCH") == 0) {
        curl_easy_setopt(r->curl, CURLOPT_POSTFIELDS, "");
        curl_easy_setopt(r->curl, CURLOPT_POSTFIELDSIZE, 0L);
    } else if (strcmp(method, "HEAD") == 0) {
        curl_easy_setopt(r->curl, CURLOPT_NOBODY, 1L);
    }
    /* curl sets the method from POSTFIELDS; CUSTOMREQUEST above keeps the one asked for. */
    curl_easy_setopt(r->curl, CURLOPT_HTTPHEADER, hdrs);

    cc = curl_easy_perform(r->curl);
    if (cc != CURLE_OK) {
        if (err)
            snprintf(err, errlen, "%s: %s", url, curl_easy_strerror(cc));
        rc = cc == CURLE_OPERATION_TIMEDOUT ? HONE_ETIMEDOUT : HONE_EIO;
        free(b.p);
        goto fail;
    }
    curl_easy_getinfo(r->curl, CURLINFO_RESPONSE_CODE, &resp->status);
    resp->body = b.p ? b.p : hone_xstrdup("");
    resp->len = b.len;
    if (b.len > 0 && (b.p[0] == '{' || b.p[0] == '['))
        resp->json = json_loadb(b.p, b.len, 0, NULL);
fail:
    curl_slist_free_all(hdrs);
    free(url);
    return rc;
}

int hone_rest_call(hone_rest *r, const char *method, const char *path, const json_t *body,
                   long timeout_s, hone_rest_resp *resp, char *err, size_t errlen)
{
    char *text = NULL;
    int rc;

    if (body)
        text = json_dumps(body, JSON_COMPACT);
    rc = rest_perform(r, method, path, text, NULL, NULL, 0, NULL, timeout_s, resp, err, errlen);
    free(text);
    return rc;
}

int hone_rest_download(hone_rest *r, const char *path, FILE *out, long timeout_s,
                       hone_rest_resp *resp, char *err, size_t errlen)
{
    return rest_perform(r, "GET", path, NULL, NULL, NULL, 0, out, timeout_s, resp, err, errlen);
}

int hone_rest_download_from(hone_rest *r, const char *path, uint64_t from, FILE *out,
                            long timeout_s, hone_rest_resp *resp, char *err, size_t errlen)
{
    snprintf(r->extra, sizeof r->extra, "Range: bytes=%llu-", (unsigned long long)from);
    int rc = rest_perform(r, "GET", path, NULL, NULL, NULL, 0, out, timeout_s, resp, err, errlen);
    r->extra[0] = '\0';
    return rc;
}

int hone_rest_upload_checked(hone_rest *r, const char *method, const char *path, const char *file,
                             const char *content_type, const char *sha256, long timeout_s,
                             hone_rest_resp *resp, char *err, size_t errlen)
{
    snprintf(r->extra, sizeof r->extra, "X-Hone-Sha256: %.64s", sha256);
    int rc = hone_rest_upload(r, method, path, file, content_type, timeout_s, resp, err, errlen);
    r->extra[0] = '\0';
    return rc;
}

int hone_rest_upload(hone_rest *r, const char *method, const char *path, const char *file,
                     const char *content_type, long timeout_s, hone_rest_resp *resp, char *err,
                     size_t errlen)
{
    FILE *f = fopen(file, "rb");
    long len;
    int rc;

    memset(resp, 0, sizeof(*resp));
    if (!f) {
        if (err)
            snprintf(err, errlen, "cannot open %s", file);
        return HONE_ENOENT;
    }
    fseek(f, 0, SEEK_END);
    len = ftell(f);
    fseek(f, 0, SEEK_SET);
    rc = rest_perform(r, method, path, NULL, f, content_type, (curl_off_t)len, NULL, timeout_s,
                      resp, err, errlen);
    fclose(f);
    return rc;
}

void hone_rest_error_text(const hone_rest_resp *resp, char *buf, size_t len)
{
    json_t *e = resp->json ? json_object_get(resp->json, "error") : NULL;
    const char *msg = NULL, *field = NULL;

    if (json_is_object(e)) {
        msg = json_string_value(json_object_get(e, "message"));
        field = json_string_value(json_object_get(e, "field"));
    } else if (json_is_string(e)) {
        msg = json_string_value(e);
    }
    if (msg && field && field[0])
        snprintf(buf, len, "%s (field: %s)", msg, field);
    else if (msg)
        snprintf(buf, len, "%s", msg);
    else if (resp->body && resp->body[0] && resp->len < 200 && !resp->json)
        snprintf(buf, len, "HTTP %ld: %s", resp->status, resp->body);
    else
        snprintf(buf, len, "HTTP %ld", resp->status);
}

char *hone_rest_escape(const char *s)
{
    size_t n = strlen(s);
    char *o = hone_xmalloc(n * 3 + 1), *p = o;

    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
            *p++ = (char)c;
        } else {
            snprintf(p, 4, "%%%02X", c);
            p += 3;
        }
    }
    *p = '\0';
    return o;
}
