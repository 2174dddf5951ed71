/* Serves the embedded page (web.h): index.html at /, the other files of web/ at /ui/{name}, each
 * with its content type; no-cache, so a new controller's page is picked up at once; a strict
 * Content-Security-Policy and no framing. Never reads
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

/* The page loads only its own files (no inline script or style attribute: app.js sets colours
 * through the DOM), talks only to its own origin (fetch), and may not be framed: a page that holds
 * the token must not be clickjacked or have injected markup run. */
#define WEB_CSP                                                                                    \
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src "        \
    "'self'; "                                                                                     \
    "frame-ancestors 'none'; base-uri 'none'; form-action 'self'; object-src 'none'"

static void web_send(hone_http_res *res, const char *name)
{
    const ctl_web_file *f = web_find(name);
    hone_http_res_header(res, "Content-Security-Policy", WEB_CSP);
    hone_http_res_header(res, "X-Frame-Options", "DENY");
    hone_http_res_header(res, "X-Content-Type-Options", "nosniff");
    hone_http_res_header(res, "Referrer-Policy", "no-referrer");
    if (!f) {
        hone_http_res_error(res, 404, "name", "no file %s", name);
        return;
    }
    hone_http_res_header(res, "Cache-Control", "no-cache");
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
