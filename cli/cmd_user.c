/* cmd_user: logging in and out (`hone login`, `hone logout`, `hone whoami`), users (`hone user
 * create|list|disable|enable`) and API keys (`hone key create|list|revoke`), and the client config
 * file that `hone login` writes: url and token, mode 0600 from the start (created O_EXCL with
 * 0600, then renamed over the old one), so a token is never world-readable, not even for a moment.
 * An API key is read from --key-file FILE, --key - (stdin) or $HONE_API_KEY rather than the
 * command line (which other users see in ps); --key KEY still works. Never prints a key it read. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"

int cli_config_path(char *buf, size_t len)
{
    const char *env = getenv("HONE_CONFIG"), *home = getenv("HOME");
    if (env && *env)
        return snprintf(buf, len, "%s", env) >= (int)len ? HONE_ERANGE : HONE_OK;
    if (!home || !*home)
        return HONE_ENOENT;
    return snprintf(buf, len, "%s/.config/hone/config", home) >= (int)len ? HONE_ERANGE : HONE_OK;
}

/* One "key=value" line's value into out (empty when absent). */
static void config_value(const char *text, const char *key, char *out, size_t len)
{
    size_t k = strlen(key);
    out[0] = '\0';
    for (const char *p = text; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
        if (!strncmp(p, key, k) && p[k] == '=') {
            const char *v = p + k + 1, *e = strchr(v, '\n');
            size_t n = e ? (size_t)(e - v) : strlen(v);
            snprintf(out, len, "%.*s", (int)(n < len ? n : len - 1), v);
            return;
        }
}

int cli_config_read(char *url, size_t urllen, char *token, size_t toklen)
{
    char path[4096], text[8192];
    url[0] = token[0] = '\0';
    if (cli_config_path(path, sizeof path))
        return HONE_ENOENT;
    FILE *f = fopen(path, "r");
    if (!f)
        return HONE_ENOENT;
    size_t n = fread(text, 1, sizeof text - 1, f);
    text[n] = '\0';
    fclose(f);
    config_value(text, "url", url, urllen);
    config_value(text, "token", token, toklen);
    return HONE_OK;
}

/* mkdir -p of path's folder, 0700 for folders it makes (~/.config/hone). */
static int make_parent(const char *path)
{
    char dir[4096];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (!slash || slash == dir)
        return HONE_OK;
    *slash = '\0';
    for (char *p = dir + 1; *p; p++)
        if (*p == '/') {
            *p = '\0';
            if (mkdir(dir, 0700) && errno != EEXIST)
                return HONE_EIO;
            *p = '/';
        }
    return mkdir(dir, 0700) && errno != EEXIST ? HONE_EIO : HONE_OK;
}

static int config_write(const char *url, const char *token, char *path, size_t pathlen)
{
    char tmp[4200];
    if (cli_config_path(path, pathlen) || make_parent(path))
        return HONE_EIO;
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
    unlink(tmp); /* a leftover of this pid's own crash; O_EXCL below refuses anything else */
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0)
        return HONE_EIO;
    FILE *f = fdopen(fd, "w");
    if (!f) {
        close(fd);
        unlink(tmp);
        return HONE_EIO;
    }
    int bad = fprintf(f, "# hone client config, written by `hone login`\nurl=%s\ntoken=%s\n", url,
                      token) < 0;
    bad |= fflush(f) != 0 || fsync(fd) != 0;
    bad |= fclose(f) != 0;
    if (bad || rename(tmp, path)) {
        unlink(tmp);
        return HONE_EIO;
    }
    return HONE_OK;
}

enum { KEY_MAX = 512 };

/* The API key the user gave: --key-file FILE (a warning when others may read it), --key - (the
 * first line of stdin), --key KEY, then $HONE_API_KEY. 1 when none was given, 0 with the key in
 * out, -1 after printing why it could not be read. */
static int secret_key(cli_ctx *c, char *out, size_t len)
{
    const char *file = cli_arg(c->a, "key-file"), *key = cli_arg(c->a, "key");
    const char *env = getenv("HONE_API_KEY");
    if (file && key) {
        fprintf(stderr, "usage error: give --key-file or --key, not both\n");
        return -1;
    }
    if (file || (key && !strcmp(key, "-"))) {
        unsigned mode;
        int rc = hone_secret_read(file, out, len, &mode);
        if (rc == HONE_EIO)
            fprintf(stderr, "error: cannot read --key-file %s: %s\n", file, strerror(errno));
        else if (rc && file)
            fprintf(stderr, "error: --key-file %s holds no key on its first line\n", file);
        else if (rc)
            fprintf(stderr, "error: --key -: no key on the first line of stdin\n");
        else if (mode & 077)
            fprintf(stderr,
                    "warning: --key-file %s may be read by other users (mode %03o): chmod 600 "
                    "it\n",
                    file, mode);
        return rc ? -1 : 0;
    }
    if (!key)
        key = env && env[0] ? env : NULL;
    if (!key)
        return 1;
    if (strlen(key) >= len) {
        fprintf(stderr, "error: the API key is too long\n");
        return -1;
    }
    snprintf(out, len, "%s", key);
    return 0;
}

static int login(cli_ctx *c)
{
    char key[KEY_MAX], path[4096];
    int got = secret_key(c, key, sizeof key);
    if (got) {
        if (got > 0)
            fprintf(stderr, "usage error: give your API key with --key-file FILE, --key - "
                            "(stdin) or $HONE_API_KEY (or --key KEY, which others see in ps)\n");
        return got > 0 ? 2 : 1;
    }
    json_t *body = json_pack("{s:s}", "key", key);
    hone_rest_resp resp;
    int rc = cli_call(c, "POST", "/api/v1/login", body, &resp);
    json_decref(body);
    memset(key, 0, sizeof key);
    if (rc)
        return 1;
    const char *tok = json_string_value(json_object_get(resp.json, "token"));
    const json_t *user = json_object_get(resp.json, "user");
    if (!tok || config_write(c->url, tok, path, sizeof path)) {
        fprintf(stderr, "error: cannot write the client config (%s): %s\n",
                getenv("HONE_CONFIG") ? "$HONE_CONFIG" : "~/.config/hone/config",
                tok ? strerror(errno) : "no token in the answer");
        hone_rest_resp_clear(&resp);
        return 1;
    }
    if (c->json)
        cli_print_json(json_object_get(resp.json, "user"));
    else
        printf("logged in to %s as %s (%s) until %s; token saved in %s\n", c->url,
               json_string_value(json_object_get(user, "name")),
               json_string_value(json_object_get(user, "role")),
               json_string_value(json_object_get(resp.json, "expires_at")), path);
    hone_rest_resp_clear(&resp);
    return 0;
}

static int logout(cli_ctx *c)
{
    char path[4096];
    (void)c;
    if (cli_config_path(path, sizeof path) || (unlink(path) && errno != ENOENT)) {
        fprintf(stderr, "error: cannot remove the client config: %s\n", strerror(errno));
        return 1;
    }
    printf("logged out (removed %s)\n", path);
    return 0;
}

static int whoami(cli_ctx *c)
{
    return cli_get_show(c, "/api/v1/users/me");
}

static int user_create(cli_ctx *c)
{
    json_t *body = json_pack("{s:s,s:s}", "name", c->a->pos[0], "role",
                             cli_flag(c->a, "admin") ? "admin" : "user");
    hone_rest_resp resp;
    int rc = cli_call(c, "POST", "/api/v1/users", body, &resp);
    json_decref(body);
    if (rc)
        return 1;
    if (c->json)
        cli_print_json(resp.json);
    else
        printf("%s\n", json_string_value(json_object_get(resp.json, "id")));
    hone_rest_resp_clear(&resp);
    return 0;
}

/* PATCH /api/v1/users/ID {"disabled": on} */
static int user_set_disabled(cli_ctx *c, int on)
{
    char path[512];
    hone_rest_resp resp;
    json_t *body = json_pack("{s:b}", "disabled", on);
    snprintf(path, sizeof path, "/api/v1/users/%s", c->a->pos[0]);
    int rc = cli_call(c, "PATCH", path, body, &resp);
    json_decref(body);
    if (rc)
        return 1;
    if (c->json)
        cli_print_json(resp.json);
    else
        printf("%s %s\n", on ? "disabled" : "enabled", c->a->pos[0]);
    hone_rest_resp_clear(&resp);
    return 0;
}

static int user_disable(cli_ctx *c)
{
    return user_set_disabled(c, 1);
}

static int user_enable(cli_ctx *c)
{
    return user_set_disabled(c, 0);
}

static int user_list(cli_ctx *c)
{
    static const char *const h[] = {"ID", "NAME", "ROLE", "CREATED"};
    static const char *const k[] = {"id", "name", "role", "created"};
    return cli_get_list(c, "/api/v1/users", "users", h, k, 4);
}

/* /api/v1/users/<--user or me>/keys + rest */
static void keys_path(cli_ctx *c, const char *rest, char *buf, size_t len)
{
    const char *u = cli_arg(c->a, "user");
    snprintf(buf, len, "/api/v1/users/%s/keys%s", u ? u : "me", rest);
}

/* Minting a key needs a key of yours (sent itself) or an admin's token: with a key given, the
 * request carries it instead of the saved token. */
static int key_create(cli_ctx *c)
{
    char path[512], key[KEY_MAX];
    hone_rest_resp resp;
    hone_rest *saved = c->rest, *with_key = NULL;
    int got = secret_key(c, key, sizeof key), rc;
    if (got < 0)
        return 1;
    if (!got && hone_rest_new(c->url, key, &with_key)) {
        fprintf(stderr, "error: cannot use the key with --url %s\n", c->url);
        return 1;
    }
    memset(key, 0, sizeof key);
    keys_path(c, "", path, sizeof path);
    if (with_key) {
        hone_rest_set_abort(with_key, c->stop);
        c->rest = with_key;
    }
    rc = cli_call(c, "POST", path, NULL, &resp);
    c->rest = saved;
    hone_rest_free(with_key);
    if (rc)
        return 1;
    if (c->json)
        cli_print_json(resp.json);
    else
        printf("%s\n(key %s: shown once; keep it in a file only you read and log in with hone "
               "login --url %s --key-file FILE)\n",
               json_string_value(json_object_get(resp.json, "key")),
               json_string_value(json_object_get(resp.json, "id")), c->url);
    hone_rest_resp_clear(&resp);
    return 0;
}

static int key_list(cli_ctx *c)
{
    static const char *const h[] = {"ID", "PREFIX", "CREATED", "LAST USED", "REVOKED"};
    static const char *const k[] = {"id", "prefix", "created", "last_used", "revoked"};
    char path[512];
    keys_path(c, "", path, sizeof path);
    return cli_get_list(c, path, "keys", h, k, 5);
}

static int key_revoke(cli_ctx *c)
{
    char path[512], rest[300];
    hone_rest_resp resp;
    snprintf(rest, sizeof rest, "/%s", c->a->pos[0]);
    keys_path(c, rest, path, sizeof path);
    if (cli_call(c, "DELETE", path, NULL, &resp))
        return 1;
    hone_rest_resp_clear(&resp);
    if (!c->json)
        printf("revoked %s\n", c->a->pos[0]);
    return 0;
}

static const cli_opt login_opts[] = {
    {"key-file", CLI_VALUE, "FILE  a file whose first line is your API key (prefer this)", 0},
    {"key", CLI_VALUE,
     "KEY  your API key (from hone key create, or the admin key); - reads it from stdin. "
     "Default: $HONE_API_KEY. On the command line others may see it in ps: prefer --key-file",
     0}};
static const cli_opt key_create_opts[] = {
    {"user", CLI_VALUE, "ID  another user's key (admins only; default: your own)", 0},
    {"key-file", CLI_VALUE, "FILE  a live API key of yours, to mint with (a token may not)", 0},
    {"key", CLI_VALUE, "KEY  the same on the command line; - reads stdin ($HONE_API_KEY)", 0}};
static const cli_opt user_create_opts[] = {{"admin", CLI_FLAG, "an admin (default: a user)", 0}};
static const cli_opt user_opts[] = {
    {"user", CLI_VALUE, "ID  another user's keys (admins only; default: your own)", 0}};

const cli_command cli_user_commands[] = {
    {"login", NULL, login, login_opts, 2, 0, 0, "--url URL --key-file FILE | --key -|KEY",
     "trade an API key for a token, kept in ~/.config/hone/config ($HONE_CONFIG), mode 0600", 0},
    {"logout", NULL, logout, NULL, 0, 0, 0, "", "forget the saved token", 1},
    {"whoami", NULL, whoami, NULL, 0, 0, 0, "", "the user the token stands for", 0},
    {"user", "create", user_create, user_create_opts, 1, 1, 1, "NAME [--admin]",
     "create a user (admins only)", 0},
    {"user", "list", user_list, NULL, 0, 0, 0, "", "list users (admins only)", 0},
    {"user", "disable", user_disable, NULL, 0, 1, 1, "ID",
     "disable a user: its tokens end, its keys stop until enabled (admins only)", 0},
    {"user", "enable", user_enable, NULL, 0, 1, 1, "ID",
     "enable a disabled user: its keys work again, it logs in anew (admins only)", 0},
    {"key", "create", key_create, key_create_opts, 3, 0, 0, "[--user ID] [--key-file FILE]",
     "create an API key (printed once), with a key of yours or as an admin", 0},
    {"key", "list", key_list, user_opts, 1, 0, 0, "[--user ID]", "list API keys (never the keys)",
     0},
    {"key", "revoke", key_revoke, user_opts, 1, 1, 1, "KEY_ID [--user ID]",
     "revoke an API key and end the tokens made from it", 0},
};
const int cli_nuser_commands = (int)HONE_ARRAY_LEN(cli_user_commands);
