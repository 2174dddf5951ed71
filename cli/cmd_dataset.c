/* cmd_dataset: `hone dataset create|upload|list|get|delete|convert`. Server-side paths given
 * relative to the current folder are made absolute first, since the controller resolves them on
 * its side. */
#include "cli.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Prints a created dataset (JSON or one line with its stats) and clears resp. */
static void print_created(cli_ctx *c, hone_rest_resp *resp)
{
    if (c->json) {
        cli_print_json(resp->json);
    } else {
        cli_json_escape(resp->json); /* the upload's answer does not come through cli_call */
        const json_t *st = json_object_get(resp->json, "stats");
        char a[64], b[64], k[64];
        printf("created dataset %s (%s): %s train / %s test images, %s classes\n",
               json_string_value(json_object_get(resp->json, "id")),
               json_string_value(json_object_get(resp->json, "name")),
               cli_cell(json_object_get(st, "train_images"), a, sizeof(a)),
               cli_cell(json_object_get(st, "test_images"), b, sizeof(b)),
               cli_cell(json_object_get(st, "classes"), k, sizeof(k)));
        const char *fmt = json_string_value(json_object_get(resp->json, "format"));
        if (json_is_true(json_object_get(resp->json, "format_guessed")))
            printf("format: %s (guessed from the folder's shape; give --format to choose)\n",
                   fmt ? fmt : "?");
        else if (fmt)
            printf("format: %s\n", fmt);
    }
    hone_rest_resp_clear(resp);
}

static int dataset_create(cli_ctx *c)
{
    const char *path = cli_arg(c->a, "path");
    json_t *body = json_object();
    hone_rest_resp resp;
    char abs[PATH_MAX];
    int rc;

    json_object_set_new(body, "name", json_string(cli_arg(c->a, "name")));
    /* no --format (and no --type): the controller guesses them from the folder's shape */
    if (cli_arg(c->a, "type"))
        json_object_set_new(body, "type", json_string(cli_arg(c->a, "type")));
    if (cli_arg(c->a, "format"))
        json_object_set_new(body, "format", json_string(cli_arg(c->a, "format")));
    if (path && path[0] != '/' && realpath(path, abs))
        path = abs;
    json_object_set_new(body, "path", json_string(path));
    if (cli_arg(c->a, "description"))
        json_object_set_new(body, "description", json_string(cli_arg(c->a, "description")));
    rc = cli_call(c, "POST", "/api/v1/datasets", body, &resp);
    json_decref(body);
    if (rc != 0)
        return rc;
    print_created(c, &resp);
    return 0;
}

/* `hone dataset upload FOLDER|FILE`: a folder is packed into a temporary tar of its contents
 * (tar_write.c); a file, a tar (of the dataset folder or of its contents), tar.gz or zip, is sent
 * as it is; the controller tells them apart by their first bytes and checks the archive whole
 * before it stores anything. */
static int dataset_upload(cli_ctx *c)
{
    const char *params[] = {"name", "type", "format", "description"};
    char path[2048] = "/api/v1/datasets:upload", err[1024];
    size_t n = strlen(path);
    char sep = '?';
    hone_rest_resp resp;

    for (size_t i = 0; i < HONE_ARRAY_LEN(params); i++) {
        const char *v = cli_arg(c->a, params[i]);
        if (v) {
            char *e = hone_rest_escape(v);
            n += (size_t)snprintf(path + n, sizeof(path) - n, "%c%s=%s", sep, params[i], e);
            sep = '&';
            free(e);
        }
    }
    if (n >= sizeof(path)) {
        fprintf(stderr, "usage error: --name/--description too long\n");
        return 2;
    }
    /* a folder: packed here into a temporary tar of its contents (as `tar -C FOLDER .`) */
    const char *file = c->a->pos[0];
    char tmp[PATH_MAX] = "";
    struct stat st;
    if (stat(file, &st) == 0 && S_ISDIR(st.st_mode)) {
        const char *td = getenv("TMPDIR") && getenv("TMPDIR")[0] ? getenv("TMPDIR") : "/tmp";
        snprintf(tmp, sizeof(tmp), "%s/hone-upload-XXXXXX", td);
        int fd = mkstemp(tmp);
        if (fd < 0) {
            fprintf(stderr, "error: cannot create a temporary archive in %s: %s\n", td,
                    strerror(errno));
            return 1;
        }
        int trc = cli_tar_folder(file, fd, err, sizeof(err));
        if (close(fd) != 0 && trc == 0) {
            snprintf(err, sizeof(err), "cannot write %s: %s", tmp, strerror(errno));
            trc = HONE_EIO;
        }
        if (trc != 0) {
            unlink(tmp);
            fprintf(stderr, "error: %s\n", err);
            return 1;
        }
        file = tmp;
    }
    cli_progress bar;
    cli_progress_begin(c, &bar, "upload", 1);
    int rc = hone_rest_upload(c->rest, "POST", path, file, "application/octet-stream", 600, &resp,
                              err, sizeof(err));
    cli_progress_end(c, &bar);
    if (tmp[0])
        unlink(tmp);
    if (rc != 0) {
        fprintf(stderr, "error: %s\n", err);
        return 1;
    }
    if (resp.status < 200 || resp.status >= 300) {
        cli_error_text(&resp, err, sizeof(err));
        fprintf(stderr, "error: %s\n", err);
        hone_rest_resp_clear(&resp);
        return 1;
    }
    print_created(c, &resp);
    return 0;
}

static int dataset_list(cli_ctx *c)
{
    static const char *const h[] = {"ID", "NAME", "TYPE", "FORMAT", "TRAIN", "TEST", "CLASSES"};
    static const char *const k[] = {
        "id", "name", "type", "format", "stats.train_images", "stats.test_images", "stats.classes"};

    return cli_get_list(c, "/api/v1/datasets", "datasets", h, k, 7);
}

static int dataset_get(cli_ctx *c)
{
    char *id = hone_rest_escape(c->a->pos[0]), path[512];

    snprintf(path, sizeof(path), "/api/v1/datasets/%s", id);
    free(id);
    return cli_get_show(c, path);
}

static int dataset_delete(cli_ctx *c)
{
    hone_rest_resp resp;
    char *id = hone_rest_escape(c->a->pos[0]), path[512];

    snprintf(path, sizeof(path), "/api/v1/datasets/%s", id);
    free(id);
    if (cli_call(c, "DELETE", path, NULL, &resp) != 0)
        return 1;
    if (c->json)
        printf("{\"deleted\": \"%s\"}\n", c->a->pos[0]);
    else
        printf("deleted dataset %s\n", c->a->pos[0]);
    hone_rest_resp_clear(&resp);
    return 0;
}

/* `hone dataset convert ID --size N [--grey|--rgb]`: the convert job that packs an image folder
 * at NxN (reused when one at that size is queued, running or done), then waits for it with a
 * progress line unless --no-wait or --json. */
static int dataset_convert(cli_ctx *c)
{
    long size = 0;
    char err[256], path[512], *id = hone_rest_escape(c->a->pos[0]);
    hone_rest_resp resp;
    json_t *body, *fin = NULL;
    int grey = cli_flag(c->a, "grey"), rgb = cli_flag(c->a, "rgb"), rc;

    snprintf(path, sizeof(path), "/api/v1/datasets/%s/convert", id);
    free(id);
    if (cli_arg_int(c->a, "size", 8, 512, &size, err, sizeof(err)) != 0 || (grey && rgb)) {
        fprintf(stderr, "usage error: %s\n", grey && rgb ? "--grey or --rgb, not both" : err);
        return 2;
    }
    body = json_pack("{s:i,s:i}", "input_size", (int)size, "channels", grey ? 1 : rgb ? 3 : 0);
    rc = cli_call(c, "POST", path, body, &resp);
    json_decref(body);
    if (rc != 0)
        return rc;
    const char *jid = json_string_value(json_object_get(resp.json, "id"));
    const json_t *cfg = json_object_get(resp.json, "config");
    if (c->json || cli_flag(c->a, "no-wait")) {
        if (c->json)
            cli_print_json(resp.json);
        else
            printf("%s convert job %s (%s): %s\n", resp.status == 201 ? "created" : "reusing", jid,
                   json_string_value(json_object_get(resp.json, "status")),
                   json_string_value(json_object_get(cfg, "out")));
        hone_rest_resp_clear(&resp);
        return 0;
    }
    printf("%s convert job %s: %lldx%lldx%lld -> %s\n", resp.status == 201 ? "created" : "reusing",
           jid, (long long)size, (long long)size,
           (long long)json_integer_value(json_object_get(cfg, "channels")),
           json_string_value(json_object_get(cfg, "out")));
    fflush(stdout);
    char *keep = hone_xstrdup(jid);
    hone_rest_resp_clear(&resp);
    rc = cli_job_wait(c, keep, 0, stdout, &fin);
    if (rc == 0 && fin) {
        const json_t *r = json_object_get(fin, "result");
        printf("packed %lld images in %.1f s: %s\n",
               (long long)json_integer_value(json_object_get(r, "images")),
               json_number_value(json_object_get(r, "seconds")),
               json_string_value(json_object_get(r, "path"))
                   ? json_string_value(json_object_get(r, "path"))
                   : "");
    }
    json_decref(fin);
    free(keep);
    return rc;
}

static const cli_opt convert_opts[] = {
    {"size", CLI_VALUE, "N  side of the square images (8..512)", 1},
    {"grey", CLI_FLAG, "  one channel (default: the folder's own)", 0},
    {"rgb", CLI_FLAG, "  three channels (default: the folder's own)", 0},
    {"no-wait", CLI_FLAG, "  print the job and return", 0},
};

static const cli_opt create_opts[] = {
    {"name", CLI_VALUE, "NAME  dataset name", 1},
    {"path", CLI_VALUE, "DIR  folder on the controller's side, inside its data roots", 1},
    {"type", CLI_VALUE, "TYPE  image_classification or object_detection (default: the format's)",
     0},
    {"format", CLI_VALUE,
     "FORMAT  idx, image_folder, kitti or coco (default: guessed from the folder's shape)", 0},
    {"description", CLI_VALUE, "TEXT  free text", 0},
};

static const cli_opt upload_opts[] = {
    {"name", CLI_VALUE, "NAME  dataset name", 1},
    {"type", CLI_VALUE, "TYPE  image_classification or object_detection (default: the format's)",
     0},
    {"format", CLI_VALUE,
     "FORMAT  idx, image_folder, kitti or coco (default: guessed from the folder's shape)", 0},
    {"description", CLI_VALUE, "TEXT  free text", 0},
};

const cli_command cli_dataset_commands[] = {
    {"dataset", "create", dataset_create, create_opts, (int)HONE_ARRAY_LEN(create_opts), 0, 0,
     "--name NAME --path DIR [--type T] [--format F]", "register a dataset folder", 0},
    {"dataset", "upload", dataset_upload, upload_opts, (int)HONE_ARRAY_LEN(upload_opts), 1, 1,
     "FOLDER|FILE --name NAME [--type T] [--format F]",
     "upload a dataset folder (packed here), or an archive of it: tar, tar.gz or zip", 0},
    {"dataset", "list", dataset_list, NULL, 0, 0, 0, "", "list datasets", 0},
    {"dataset", "get", dataset_get, NULL, 0, 1, 1, "ID", "show one dataset with its stats", 0},
    {"dataset", "delete", dataset_delete, NULL, 0, 1, 1, "ID", "delete a dataset", 0},
    {"dataset", "convert", dataset_convert, convert_opts, (int)HONE_ARRAY_LEN(convert_opts), 1, 1,
     "ID --size N [--grey|--rgb] [--no-wait]",
     "pack an image folder at NxN for training (waits, showing progress)", 0},
};
const int cli_ndataset_commands = (int)HONE_ARRAY_LEN(cli_dataset_commands);
