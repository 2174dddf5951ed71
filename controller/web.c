/* Serves the embedded page (web.h): index.html at /, the other files of web/ at /ui/{name}, each
 * with its content type; no-cache, so a new controller's page is picked up at once. Never reads
 * the store or the disk. */
#include <string.h>

#include "ctl.h"
#include "http.h"
#include "web.h"

static const ctl_web_file *web_find(const char *name)
{
    for (size_t i = 0; i < ctl_web_files_count; i++)
        if (!strcmp(ctl_web_files[i].name, name))
            return &ctl_web_files[i];
    return NULL;
}

static const char *web_type(const char *name)
{
    static const char *const types[][2] = {{".html", "text/html; charset=utf-8"},
                                           {".js", "text/javascript; charset=utf-8"},
                                           {".css", "text/css; charset=utf-8"},
                                           {".svg", "image/svg+xml"}};
    size_t n = strlen(name);
    for (size_t i = 0; i < HONE_ARRAY_LEN(types); i++) {
        size_t m = strlen(types[i][0]);
        if (n > m && !strcmp(name + n - m, types[i][0]))
            return types[i][1];
    }
    return "application/octet-stream";
}

static void web_send(hone_http_res *res, const char *name)
{
    const ctl_web_file *f = web_find(name);
    if (!f) {
        hone_http_res_error(res, 404, "name", "no file %s", name);
        return;
    }
    hone_http_res_header(res, "Cache-Control", "no-cache");
    hone_http_res_header(res, "X-Content-Type-Options", "nosniff");
    hone_http_res_text(res, 200, web_type(name), (const char *)f->data, f->len);
}

static void web_index(hone_http_req *req, hone_http_res *res, void *ud)
{
    (void)req;
    (void)ud;
    web_send(res, "index.html");
}

static void web_asset(hone_http_req *req, hone_http_res *res, void *ud)
{
    (void)ud;
    web_send(res, hone_http_req_param(req, "name"));
}

int ctl_web_route(const char *route)
{
    return route && (!strcmp(route, "/") || !strcmp(route, "/ui/{name}"));
}

int ctl_routes_web(hone_controller *c)
{
    int rc = hone_http_route(c->http, "GET", "/", web_index, c);
    rc |= hone_http_route(c->http, "GET", "/ui/{name}", web_asset, c);
    return rc ? HONE_EINVAL : HONE_OK;
}
