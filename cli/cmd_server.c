/* cmd_server: the controller's own routes as commands: `hone server health` (/healthz and
 * /readyz), `hone server metrics` (the Prometheus text of /metrics), `hone server openapi` (the
 * REST contract it serves) and `hone server spec-schema` (the JSON Schema of specs). */
#include <stdio.h>
#include <string.h>

#include "cli.h"

/* GET path, its body to stdout as it comes (text routes). */
static int get_raw(cli_ctx *c, const char *path)
{
    hone_rest_resp resp;
    char err[1024];
    int rc = hone_rest_download(c->rest, path, stdout, 30, &resp, err, sizeof(err));
    if (rc == 0 && resp.status != 200)
        cli_error_text(&resp, err, sizeof(err));
    if (rc != 0 || resp.status != 200) {
        fprintf(stderr, "error: %s: %s\n", path, err);
        hone_rest_resp_clear(&resp);
        return 1;
    }
    hone_rest_resp_clear(&resp);
    return 0;
}

static int server_health(cli_ctx *c)
{
    static const char *const paths[] = {"/healthz", "/readyz"};
    json_t *all = json_object();
    int rc = 0;
    for (size_t i = 0; i < HONE_ARRAY_LEN(paths); i++) {
        hone_rest_resp resp;
        char err[512] = "";
        int r = hone_rest_call(c->rest, "GET", paths[i], NULL, 10, &resp, err, sizeof(err));
        int ok = r == 0 && resp.status == 200;
        json_object_set_new(all, paths[i] + 1, ok ? json_string("ok") : json_string("not ok"));
        if (!c->json)
            printf("%-8s %s%s%s\n", paths[i] + 1, ok ? "ok" : "not ok", ok ? "" : ": ",
                   ok ? "" : (r ? err : "HTTP error"));
        rc |= !ok;
        hone_rest_resp_clear(&resp);
    }
    if (c->json)
        cli_print_json(all);
    json_decref(all);
    return rc;
}

static int server_metrics(cli_ctx *c)
{
    return get_raw(c, "/metrics");
}

static int server_openapi(cli_ctx *c)
{
    return get_raw(c, "/api/v1/openapi.yaml");
}

static int server_spec_schema(cli_ctx *c)
{
    return get_raw(c, "/api/v1/schemas/spec");
}

const cli_command cli_server_commands[] = {
    {"server", "health", server_health, NULL, 0, 0, 0, "",
     "is the controller alive (/healthz) and ready (/readyz)", 0},
    {"server", "metrics", server_metrics, NULL, 0, 0, 0, "",
     "the controller's Prometheus metrics (/metrics)", 0},
    {"server", "openapi", server_openapi, NULL, 0, 0, 0, "",
     "the REST contract the controller serves (OpenAPI YAML)", 0},
    {"server", "spec-schema", server_spec_schema, NULL, 0, 0, 0, "",
     "the JSON Schema of experiment and job specs", 0},
};
const int cli_nserver_commands = (int)HONE_ARRAY_LEN(cli_server_commands);
