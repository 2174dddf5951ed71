/* libFuzzer target for the api/ server: arbitrary bytes go through http-parser, the request
 * limits, routing, percent-decoding, JSON bodies and json_check, as one connection without a
 * socket. Built only with HONE_FUZZ=ON and clang. Must never crash, leak or trip UBSan. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "http_internal.h"

static hone_http_server *srv;
static uv_loop_t loop;
static hone_http_res *zombies[64];
static size_t nzombies;

static void h_plain(hone_http_req *req, hone_http_res *res, void *ud)
{
    (void)ud;
    size_t len;
    const char *body = hone_http_req_body(req, &len);
    hone_http_req_header(req, "x-anything");
    hone_http_req_peer(req);
    hone_http_res_header(res, "X-Echo", hone_http_req_query(req, "h") ?: "none");
    hone_http_res_text(res, 200, "text/plain", body, len);
}

static void h_params(hone_http_req *req, hone_http_res *res, void *ud)
{
    (void)ud;
    hone_http_res_json(res, 200,
                       json_pack("{s:s?, s:s?, s:s?}", "id", hone_http_req_param(req, "id"), "q",
                                 hone_http_req_query(req, "q"), "r", hone_http_req_query(req, "")));
}

static const char *const kinds[] = {"train", "evaluate", NULL};
static const hone_json_field fields[] = {
    {.name = "kind", .type = HONE_JSON_STRING, .required = 1, .enum_values = kinds},
    {.name = "name", .type = HONE_JSON_STRING, .max_len = 16, .nullable = 1},
    {.name = "n", .type = HONE_JSON_INT, .has_range = 1, .min = 0, .max = 10},
    {.name = "x", .type = HONE_JSON_NUMBER},
    {.name = "tags", .type = HONE_JSON_ARRAY, .max_len = 4},
    {.name = "spec", .type = HONE_JSON_OBJECT},
};

static void h_json(hone_http_req *req, hone_http_res *res, void *ud)
{
    (void)ud;
    json_t *j = hone_http_req_json(req, res);
    if (!j)
        return;
    if (hone_json_check(j, fields, HONE_ARRAY_LEN(fields), res) == 0)
        hone_http_res_json(res, 201, json_incref(j));
    json_decref(j);
}

static void on_abort(hone_http_res *res, void *ud)
{
    (void)ud;
    hone_http_res_error(res, 500, NULL, "answer after abort is ignored");
}

static void h_defer_abort(hone_http_req *req, hone_http_res *res, void *ud)
{
    (void)req;
    (void)ud;
    hone_http_res_on_abort(res, on_abort, NULL);
}

static void h_defer(hone_http_req *req, hone_http_res *res, void *ud)
{
    (void)req;
    (void)ud;
    if (nzombies < HONE_ARRAY_LEN(zombies))
        zombies[nzombies++] = res;
    else
        hone_http_res_empty(res, 204);
}

static void h_stream(hone_http_req *req, hone_http_res *res, void *ud)
{
    (void)ud;
    hone_http_res_stream_start(res, 200, "text/plain");
    hone_http_res_stream_write(res, hone_http_req_path(req), strlen(hone_http_req_path(req)));
    hone_http_res_stream_end(res);
}

static void setup(void)
{
    hone_http_limits l;
    hone_http_limits_default(&l);
    l.max_header_bytes = 2048;
    l.max_body_bytes = 4096;
    l.max_json_depth = 8;
    l.max_string_bytes = 512;
    l.max_pipelined = 4;
    uv_loop_init(&loop);
    hone_http_server_new(&loop, &l, &srv);
    hone_http_route(srv, "GET", "/a", h_plain, NULL);
    hone_http_route(srv, "POST", "/a", h_plain, NULL);
    hone_http_route(srv, "GET", "/jobs/{id}", h_params, NULL);
    hone_http_route(srv, "GET", "/jobs/{id}/x/{y}", h_params, NULL);
    hone_http_route(srv, "GET", "/jobs/list", h_plain, NULL);
    hone_http_route(srv, "POST", "/json", h_json, NULL);
    hone_http_route(srv, "PUT", "/json", h_json, NULL);
    hone_http_route(srv, "GET", "/poll", h_defer_abort, NULL);
    hone_http_route(srv, "GET", "/defer", h_defer, NULL);
    hone_http_route(srv, "GET", "/stream", h_stream, NULL);
    hone_http_route_ex(srv, "POST", "/upload", 64, h_plain, NULL);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!srv)
        setup();
    if (size == 0)
        return 0;
    size_t chunk = data[0];
    hone_http__feed_for_fuzz(srv, (const char *)data + 1, size - 1, chunk);
    /* deferred answers arriving after their connection went: must be dropped and freed */
    for (size_t i = 0; i < nzombies; i++)
        hone_http_res_text(zombies[i], 200, "text/plain", "late", 4);
    nzombies = 0;
    return 0;
}
