/* File answers: a byte range of an open file streamed to its client in chunks read on the thread
 * pool (uv_fs_read), one read in flight and the next only once the socket's write queue is below
 * a chunk, so memory stays flat whatever the file's size and a client that stops reading makes
 * the server hold no more. Also Range parsing (RFC 9110 section 14) and the 200/206/416 choice of
 * a download. Never touches the disk from the loop; the file is closed off the loop too. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>
#include "http_internal.h"

/* One read's size, and the most a file answer leaves in the socket's write queue before it reads
 * on: two chunks in memory at worst per download. */
enum { FILE_CHUNK = 256 << 10, FILE_QUEUE = FILE_CHUNK };

typedef enum file_op { FOP_NONE, FOP_READ, FOP_CLOSE } file_op;

struct http_file {
    hone_http_server *s;
    hone_http_req *req; /* NULL once the answer is over: the file is closed, then this freed */
    uv_fs_t fs;
    file_op op; /* the file operation in flight: one at a time */
    uv_file fd;
    char *buf;          /* the chunk being read */
    uint64_t off, left; /* the next byte to read; bytes not read yet */
    size_t queued_mark; /* the socket's write queue when the connection's clock last started */
    hone_http_file_end end;
    void *end_ud;
    int (*guard)(void *ud); /* hone_http_res_file_guard's: 0 ends the answer */
    unsigned reads;         /* chunks read so far */
};

#define FILE_GUARD_EVERY 16 /* chunks (4 MiB) between two questions to the guard */

static void file_step(http_file *f);

/* The owner's end callback, once. */
static void file_end(http_file *f, int complete)
{
    hone_http_file_end end = f->end;
    f->end = NULL;
    if (end)
        end(f->end_ud, complete);
}

/* The answer is over (whole, or given up): the request forgets the file, the file closes. */
static void file_detach(http_file *f, int complete)
{
    if (f->req)
        f->req->res.file = NULL;
    f->req = NULL;
    file_end(f, complete);
    file_step(f);
}

static void file_destroy(http_file *f)
{
    hone_http_server *s = f->s;
    free(f->buf);
    free(f);
    s->files_live--;
    http_server_maybe_done(s);
}

static void file_fs_done(uv_fs_t *r)
{
    http_file *f = r->data;
    file_op op = f->op;
    ssize_t n = r->result;
    char *buf = f->buf;
    uv_fs_req_cleanup(r);
    f->op = FOP_NONE;
    f->buf = NULL;
    if (op == FOP_CLOSE) {
        f->fd = -1;
        file_destroy(f);
        return;
    }
    hone_http_req *req = f->req;
    hone_http_conn *c = req ? req->conn : NULL;
    if (!c || c->closing) { /* gone meanwhile: the release detached it, or is about to */
        free(buf);
        file_step(f);
        return;
    }
    if (n <= 0) { /* an error, or the file shrank: the promised length cannot be kept */
        free(buf);
        http_conn_close(c); /* the client sees a short body; the release gives the file up */
        return;
    }
    f->off += (uint64_t)n;
    f->left -= (uint64_t)n;
    http_conn_write(c, buf, (size_t)n); /* takes buf */
    if (f->left > 0 || c->closing) {
        file_step(f);
        http_conn_arm_timer(c);
        return;
    }
    /* the last chunk is queued: answered, and the next pipelined request may go */
    req->res.answered = 1;
    file_detach(f, 1);
    http_conn_answered(c, req);
}

/* Issues the next file operation, if one is due and none is in flight. */
static void file_step(http_file *f)
{
    uv_loop_t *loop = f->s->loop;
    int rc;
    if (f->op != FOP_NONE)
        return;
    f->fs.data = f;
    if (!f->req) {
        if (f->fd < 0) {
            file_destroy(f);
            return;
        }
        f->op = FOP_CLOSE;
        if (uv_fs_close(loop, &f->fs, f->fd, file_fs_done) < 0) { /* cannot queue: here, once */
            f->op = FOP_NONE;
            close(f->fd);
            f->fd = -1;
            file_destroy(f);
        }
        return;
    }
    hone_http_conn *c = f->req->conn;
    if (!c || !http_conn_can_write(c) || f->left == 0)
        return;
    if (!c->fake && c->tcp.write_queue_size >= FILE_QUEUE)
        return; /* on_write pumps the connection, and so this, as the queue drains */
    if (f->guard && ++f->reads % FILE_GUARD_EVERY == 0 && !f->guard(f->end_ud)) {
        http_conn_close(c); /* no longer allowed: a short body; the release gives the file up */
        return;
    }
    size_t n = f->left < FILE_CHUNK ? (size_t)f->left : FILE_CHUNK;
    f->buf = hone_xmalloc(n);
    uv_buf_t b = uv_buf_init(f->buf, (unsigned)n);
    f->op = FOP_READ;
    rc = uv_fs_read(loop, &f->fs, f->fd, &b, 1, (int64_t)f->off, file_fs_done);
    if (rc < 0) {
        f->op = FOP_NONE;
        free(f->buf);
        f->buf = NULL;
        http_conn_close(c); /* the release gives the file up */
    }
}

void http_file_pump(hone_http_req *req)
{
    if (req->res.file)
        file_step(req->res.file);
}

void http_file_release(hone_http_req *req)
{
    if (req->res.file)
        file_detach(req->res.file, 0);
}

void http_file_mark(hone_http_req *req, size_t queued)
{
    if (req->res.file)
        req->res.file->queued_mark = queued;
}

/* A slow client whose socket takes a few bytes now and then is making progress, even when no
 * whole chunk's write completes within the timeout; one that takes none is stalled. */
int http_file_stalled(hone_http_req *req, size_t queued)
{
    http_file *f = req->res.file;
    if (!f || queued >= f->queued_mark)
        return 1;
    f->queued_mark = queued;
    return 0;
}

void hone_http_res_file_guard(hone_http_res *res, int (*ok)(void *ud))
{
    res->file_guard = ok;
}

void hone_http_res_file(hone_http_res *res, int status, const char *content_type, int fd,
                        uint64_t offset, uint64_t length, hone_http_file_end end, void *ud)
{
    hone_http_req *req = res->req;
    hone_http_conn *c = req->conn;
    if (res->answered || res->streaming || res->file || !c) {
        /* answered already (ignored, as every answering call is), or its client has gone */
        close(fd);
        if (end)
            end(ud, 0);
        if (!res->answered && !res->streaming && !res->file) { /* a zombie: it is freed */
            res->answered = 1;
            res->status = status;
            http_conn_answered(NULL, req);
        }
        return;
    }
    if (status < 100 || status > 999)
        status = 500;
    http_file *f = hone_xcalloc(1, sizeof(*f));
    f->s = c->server;
    f->s->files_live++;
    f->req = req;
    f->fd = fd;
    f->off = offset;
    f->left = http_res_body_allowed(status) && !req->is_head ? length : 0;
    f->end = end;
    f->end_ud = ud;
    f->guard = res->file_guard;
    res->status = status;
    if (http_conn_can_write(c)) {
        http_buf out = {0};
        http_res_head(&out, res, status, content_type, length, 0);
        http_conn_write(c, out.data, out.len);
    }
    if (f->left == 0 || !http_conn_can_write(c)) { /* HEAD, an empty range: no read */
        res->answered = 1;
        f->req = NULL;
        file_end(f, http_conn_can_write(c));
        file_step(f);
        http_conn_answered(c, req);
        return;
    }
    res->file = f;
    file_step(f);
}

/* ---- Range -------------------------------------------------------------------------------- */

/* Digits at *p into *v (no sign, no overflow); 0, or -1 when there are none or too many. */
static int range_num(const char **p, uint64_t *v)
{
    const char *s = *p;
    uint64_t n = 0;
    if (*s < '0' || *s > '9')
        return -1;
    for (; *s >= '0' && *s <= '9'; s++) {
        uint64_t d = (uint64_t)(*s - '0');
        if (n > UINT64_MAX / 10 || (n == UINT64_MAX / 10 && d > UINT64_MAX % 10))
            return -1;
        n = n * 10 + d;
    }
    *p = s;
    *v = n;
    return 0;
}

static const char *skip_ows(const char *p)
{
    while (*p == ' ' || *p == '\t')
        p++;
    return p;
}

hone_http_range hone_http_range_parse(const char *value, uint64_t size, uint64_t *off,
                                      uint64_t *len)
{
    uint64_t first = 0, last = 0;
    int has_first = 0, has_last = 0;
    if (!value)
        return HONE_HTTP_RANGE_WHOLE;
    const char *p = skip_ows(value);
    if (strncasecmp(p, "bytes", 5) != 0)
        return HONE_HTTP_RANGE_WHOLE;
    p = skip_ows(p + 5);
    if (*p++ != '=')
        return HONE_HTTP_RANGE_WHOLE;
    p = skip_ows(p);
    if (*p != '-') {
        if (range_num(&p, &first))
            return HONE_HTTP_RANGE_WHOLE;
        has_first = 1;
    }
    if (*p++ != '-')
        return HONE_HTTP_RANGE_WHOLE;
    if (*p >= '0' && *p <= '9') {
        if (range_num(&p, &last))
            return HONE_HTTP_RANGE_WHOLE;
        has_last = 1;
    }
    p = skip_ows(p);
    /* several ranges (a ',' follows), trailing garbage, "-" alone, or last before first */
    if (*p || (!has_first && !has_last) || (has_first && has_last && last < first))
        return HONE_HTTP_RANGE_WHOLE;
    if (!has_first) { /* the last `last` bytes */
        if (last == 0 || size == 0)
            return HONE_HTTP_RANGE_UNSATISFIABLE;
        *len = last < size ? last : size;
        *off = size - *len;
        return HONE_HTTP_RANGE_PART;
    }
    if (first >= size)
        return HONE_HTTP_RANGE_UNSATISFIABLE;
    if (!has_last || last >= size)
        last = size - 1;
    *off = first;
    *len = last - first + 1;
    return HONE_HTTP_RANGE_PART;
}

void hone_http_res_download(hone_http_res *res, const char *content_type, int fd, uint64_t size,
                            hone_http_file_end end, void *ud)
{
    hone_http_req *req = res->req;
    uint64_t off = 0, len = size;
    char cr[96];
    const char *range = hone_http_req_header(req, "range");
    hone_http_range r = HONE_HTTP_RANGE_WHOLE;
    if (range && !req->is_head && !hone_http_req_header(req, "if-range"))
        r = hone_http_range_parse(range, size, &off, &len);
    if (r == HONE_HTTP_RANGE_UNSATISFIABLE) {
        close(fd);
        if (end)
            end(ud, 0);
        snprintf(cr, sizeof(cr), "bytes */%" PRIu64, size);
        hone_http_res_header(res, "Content-Range", cr);
        hone_http_res_error(res, 416, "Range",
                            "range %.60s is outside the file's %" PRIu64 " bytes", range, size);
        return;
    }
    hone_http_res_header(res, "Accept-Ranges", "bytes");
    if (r == HONE_HTTP_RANGE_PART) {
        snprintf(cr, sizeof(cr), "bytes %" PRIu64 "-%" PRIu64 "/%" PRIu64, off, off + len - 1,
                 size);
        hone_http_res_header(res, "Content-Range", cr);
    }
    hone_http_res_file(res, r == HONE_HTTP_RANGE_PART ? 206 : 200, content_type, fd, off, len, end,
                       ud);
}
