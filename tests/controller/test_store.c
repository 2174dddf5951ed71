/* Controller unit tests without a server: migrations are idempotent and versioned, paths are
 * confined to the data roots (.., symlink escapes), spec overrides are flattened with the faulty
 * field named, the YAML config names unknown or mistyped keys, and the store's prepared-statement
 * cache keeps statements usable across errors and partial reads. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "controller.h"
#include "ctl_spec.h"
#include "dataset_check.h"
#include "store.h"
#include "util.h"

#include "check.h"

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    fputs(text, f);
    fclose(f);
}

static void test_migrations(const char *dir)
{
    char db[512];
    int v1 = -1, v2 = -1;
    snprintf(db, sizeof db, "%s/hone.db", dir);
    CHECK(hone_controller_store_migrate(db, &v1) == HONE_OK);
    CHECK(v1 >= 1);
    CHECK(hone_controller_store_migrate(db, &v2) == HONE_OK);
    CHECK(v2 == v1);
    ctl_db *h = NULL;
    int v3 = -1;
    CHECK(db_open(db, &h, &v3) == HONE_OK && v3 == v1);
    json_t *rows = NULL;
    CHECK(db_rows(h, &rows, "SELECT name FROM sqlite_master WHERE type='table' ORDER BY name",
                  NULL) == HONE_OK);
    const char *want[] = {"automl_events", "datasets", "experiments", "jobs",
                          "leases",        "metrics",  "users",       "schema_version",
                          "tokens",        "workers",  "api_keys"};
    for (size_t i = 0; i < HONE_ARRAY_LEN(want); i++) {
        int found = 0;
        json_t *r;
        size_t k;
        json_array_foreach(rows, k, r) found |= !strcmp(jstr(r, "name"), want[i]);
        CHECK(found);
    }
    json_decref(rows);
    json_t *row = NULL;
    CHECK(db_row(h, &row, "PRAGMA journal_mode", NULL) == HONE_OK);
    CHECK(!strcmp(jstr(row, "journal_mode"), "wal"));
    json_decref(row);
    CHECK(db_row(h, &row, "PRAGMA foreign_keys", NULL) == HONE_OK);
    CHECK(jint(row, "foreign_keys") == 1);
    json_decref(row);
    /* Metrics are unique per (job, epoch). */
    CHECK(db_run(h,
                 "INSERT INTO datasets(id,name,type,format,path,description,stats,created) "
                 "VALUES('d','n','t','idx','/p','','{}',0)",
                 NULL) == 1);
    CHECK(db_run(h,
                 "INSERT INTO experiments(id,name,network,train_datasets,metric,created) "
                 "VALUES('e','n','mlp','[\"d\"]','val_accuracy',0)",
                 NULL) == 1);
    CHECK(db_run(h,
                 "INSERT INTO jobs(id,experiment_id,action,status,created) "
                 "VALUES('j','e','train','queued',0)",
                 NULL) == 1);
    CHECK(db_run(h, "INSERT INTO metrics VALUES('j',1,'{}',0)", NULL) == 1);
    CHECK(db_run(h, "INSERT OR IGNORE INTO metrics VALUES('j',1,'{}',0)", NULL) == 0);
    CHECK(db_run(h,
                 "INSERT INTO jobs(id,experiment_id,action,status,created) "
                 "VALUES('k','nope','train','queued',0)",
                 NULL) < 0); /* foreign key */
    db_close(h);
}

static void test_confine(const char *dir)
{
    char root[512], out[512], p[600], res[4096], msg[256];
    snprintf(root, sizeof root, "%s/root", dir);
    snprintf(out, sizeof out, "%s/out", dir);
    mkdir(root, 0755);
    mkdir(out, 0755);
    snprintf(p, sizeof p, "%s/inner", root);
    mkdir(p, 0755);
    snprintf(p, sizeof p, "%s/link", root);
    CHECK(symlink(out, p) == 0);
    char *roots[] = {root};
    snprintf(p, sizeof p, "%s/inner", root);
    CHECK(ctl_path_confine(roots, 1, p, res, sizeof res, msg, sizeof msg) == HONE_OK);
    CHECK(strstr(res, "/root/inner") != NULL);
    CHECK(ctl_path_confine(roots, 1, root, res, sizeof res, msg, sizeof msg) == HONE_OK);
    snprintf(p, sizeof p, "%s/link", root);
    CHECK(ctl_path_confine(roots, 1, p, res, sizeof res, msg, sizeof msg) == HONE_EINVAL);
    snprintf(p, sizeof p, "%s/inner/../inner", root);
    CHECK(ctl_path_confine(roots, 1, p, res, sizeof res, msg, sizeof msg) == HONE_EINVAL);
    CHECK(ctl_path_confine(roots, 1, out, res, sizeof res, msg, sizeof msg) == HONE_EINVAL);
    CHECK(ctl_path_confine(roots, 1, "inner", res, sizeof res, msg, sizeof msg) == HONE_EINVAL);
    snprintf(p, sizeof p, "%s/absent", root);
    CHECK(ctl_path_confine(roots, 1, p, res, sizeof res, msg, sizeof msg) == HONE_ENOENT);
    /* A sibling whose name starts like the root is not inside it. */
    snprintf(p, sizeof p, "%s/rootx", dir);
    mkdir(p, 0755);
    CHECK(ctl_path_confine(roots, 1, p, res, sizeof res, msg, sizeof msg) == HONE_EINVAL);
    /* "..." is a name, not a parent reference. */
    snprintf(p, sizeof p, "%s/...", root);
    mkdir(p, 0755);
    CHECK(ctl_path_confine(roots, 1, p, res, sizeof res, msg, sizeof msg) == HONE_OK);
}

static void test_spec(void)
{
    char field[128], msg[256];
    json_t *flat = NULL;
    json_t *in =
        json_loads("{\"train\": {\"lr\": 0.1, \"epochs\": 3}, \"model.dropout\": 0.2}", 0, NULL);
    CHECK(ctl_spec_flatten(in, "specs", &flat, field, sizeof field, msg, sizeof msg) == 0);
    CHECK(json_real_value(json_object_get(flat, "train.lr")) == 0.1);
    CHECK(json_integer_value(json_object_get(flat, "train.epochs")) == 3);
    CHECK(json_object_size(flat) == 3);
    json_decref(flat);
    json_decref(in);
    const char *bad[][2] = {{"{\"train\": {\"lr\": \"x\"}}", "specs.train.lr"},
                            {"{\"train\": {\"epochs\": 2.5}}", "specs.train.epochs"},
                            {"{\"train\": {\"optimizer\": \"rmsprop\"}}", "specs.train.optimizer"},
                            {"{\"model\": {\"width\": 3}}", "specs.model.width"},
                            {"{\"network\": \"cnn\"}", "specs.network"},
                            {"{\"data\": {\"path\": \"/etc\"}}", "specs.data.path"}};
    for (size_t i = 0; i < HONE_ARRAY_LEN(bad); i++) {
        in = json_loads(bad[i][0], 0, NULL);
        CHECK(ctl_spec_flatten(in, "specs", &flat, field, sizeof field, msg, sizeof msg) ==
              HONE_EINVAL);
        CHECK(!strcmp(field, bad[i][1]));
        if (strcmp(field, bad[i][1]))
            fprintf(stderr, "  got field %s for %s\n", field, bad[i][0]);
        json_decref(flat);
        flat = NULL;
        json_decref(in);
    }
    json_t *d = ctl_spec_defaults("cnn");
    json_object_set_new(d, "data.path", json_string("/data/with \"quote\""));
    /* best_model/spec.yaml: spec/'s one emitter, the string quoted and escaped */
    char err[256] = "";
    char *y = ctl_spec_to_yaml(d, err, sizeof err);
    CHECK(y != NULL);
    CHECK(y && strstr(y, "network: \"cnn\"\n") != NULL);
    CHECK(y && strstr(y, "train:\n") != NULL && strstr(y, "  lr: 0.05") != NULL);
    CHECK(y && strstr(y, "  path: \"/data/with \\\"quote\\\"\"") != NULL);
    free(y);
    /* a key spec/ does not know is named, nothing written */
    json_object_set_new(d, "train.nope", json_integer(1));
    CHECK(ctl_spec_to_yaml(d, err, sizeof err) == NULL && strstr(err, "train.nope") != NULL);
    json_decref(d);
}

static void test_config(const char *dir)
{
    char path[512], err[256];
    hone_controller_config c;
    snprintf(path, sizeof path, "%s/c.yaml", dir);
    write_file(path, "listen: 0.0.0.0:9000\ndata_roots: [/a, /b]\nlease_seconds: 7\n"
                     "auth: {token: t}\nlimits: {body_bytes: 4096}\nlog_format: text\n");
    hone_controller_config_default(&c);
    CHECK(hone_controller_config_load(&c, path, err, sizeof err) == HONE_OK);
    CHECK(!strcmp(c.listen_host, "0.0.0.0") && c.listen_port == 9000);
    CHECK(c.n_data_roots == 2 && !strcmp(c.data_roots[1], "/b"));
    CHECK(c.lease_seconds == 7 && c.max_body_bytes == 4096 && !c.log_json);
    CHECK(c.auth_token && !strcmp(c.auth_token, "t"));
    hone_controller_config_free(&c);
    const char *bad[][2] = {{"lease_secs: 3\n", "lease_secs"},
                            {"lease_seconds: soon\n", "lease_seconds"},
                            {"listen: nowhere\n", "listen"},
                            {"limits: {body_bytes: 1}\n", "limits.body_bytes"},
                            {"log_format: xml\n", "log_format"},
                            {"data_roots: /x\n", "data_roots"},
                            {"listen: [\n", "c.yaml"}};
    for (size_t i = 0; i < HONE_ARRAY_LEN(bad); i++) {
        write_file(path, bad[i][0]);
        hone_controller_config_default(&c);
        CHECK(hone_controller_config_load(&c, path, err, sizeof err) != HONE_OK);
        CHECK(strstr(err, bad[i][1]) != NULL);
        hone_controller_config_free(&c);
    }
}

/* Prepared statements are cached by SQL text: a repeated statement is parsed once, a failing one
 * (constraint, bad bind) stays usable, a row query stopped after its first row is reset (it runs
 * again, with fresh bindings, and sees a second connection's write), more distinct statements
 * than the cache holds still run, and db_close finalizes them all (LSan checks). */
static void test_stmt_cache(const char *dir)
{
    char path[512];
    snprintf(path, sizeof path, "%s/cache.db", dir);
    ctl_db *h = NULL, *h2 = NULL;
    CHECK(db_open(path, &h, NULL) == HONE_OK);
    CHECK(db_run(h, "CREATE TABLE t (k INTEGER PRIMARY KEY, v TEXT NOT NULL)", NULL) >= 0);
    int before = db_cached(h);
    char sql[128];
    for (int i = 0; i < 50; i++) {
        snprintf(sql, sizeof sql, "INSERT INTO t(k,v) VALUES(?,?)"); /* same text, new buffer */
        CHECK(db_run(h, sql, "is", i, "x") == 1);
    }
    CHECK(db_cached(h) == before + 1);
    CHECK(db_run(h, "INSERT INTO t(k,v) VALUES(?,?)", "is", 1, "dup") < 0);  /* primary key */
    CHECK(db_run(h, "INSERT INTO t(k,v) VALUES(?,?)", "is", 100, NULL) < 0); /* not null */
    CHECK(db_run(h, "INSERT INTO t(k,v) VALUES(?,?)", "is", 101, "y") == 1);
    CHECK(db_run(h, "INSERT INTO t(k,v) VALUES(?,?)", "?", 0) == HONE_ESQL); /* bad bind type */
    CHECK(db_run(h, "SELEKT nonsense", NULL) == HONE_ESQL);
    json_t *row = NULL, *rows = NULL;
    CHECK(db_begin(h) == HONE_OK);
    CHECK(db_row(h, &row, "SELECT k FROM t ORDER BY k", NULL) == HONE_OK); /* 51 rows, reads 1 */
    CHECK(jint(row, "k") == 0);
    json_decref(row);
    CHECK(db_run(h, "UPDATE t SET v='z' WHERE k=?", "i", 3) == 1);
    CHECK(db_commit(h) == HONE_OK);
    CHECK(db_open(path, &h2, NULL) == HONE_OK);
    CHECK(db_row(h, &row, "SELECT k FROM t ORDER BY k", NULL) == HONE_OK);
    json_decref(row);
    CHECK(db_run(h2, "UPDATE t SET v='w' WHERE k=?", "i", 4) == 1); /* seen by h next */
    CHECK(db_row(h, &row, "SELECT v FROM t WHERE k=?", "i", 4) == HONE_OK);
    CHECK(row && !strcmp(jstr(row, "v"), "w"));
    json_decref(row);
    CHECK(db_row(h, &row, "SELECT v FROM t WHERE k=?", "i", 3) == HONE_OK); /* bindings fresh */
    CHECK(row && !strcmp(jstr(row, "v"), "z"));
    json_decref(row);
    CHECK(db_row(h, &row, "SELECT v FROM t WHERE k=?", "i", 999) == HONE_ENOENT);
    for (int i = 0; i < 1100; i++) { /* past the cache's size: prepared per call */
        snprintf(sql, sizeof sql, "SELECT COUNT(*) AS n FROM t WHERE k >= %d", i);
        CHECK(db_rows(h, &rows, sql, NULL) == HONE_OK);
        CHECK(json_array_size(rows) == 1);
        json_decref(rows);
    }
    CHECK(db_cached(h) <= 1024);
    CHECK(db_run(h, "UPDATE t SET v=? WHERE k=?", "si", "late", 5) == 1);
    db_close(h2);
    db_close(h);
}

int main(void)
{
    char dir[] = "/tmp/hone-ctl-unit-XXXXXX";
    if (!mkdtemp(dir))
        return 2;
    test_migrations(dir);
    test_stmt_cache(dir);
    test_confine(dir);
    test_spec();
    test_config(dir);
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", dir);
    if (failures) {
        fprintf(stderr, "%d check(s) failed\n", failures);
        return 1;
    }
    printf("ok\n");
    return 0;
}
