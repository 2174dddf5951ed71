/* hone-controller as a library: configuration, and a controller object that owns the SQLite store,
 * the HTTP routes, the scheduler and the AutoML searches on one libuv loop. main.c is a thin shell
 * over this header; tests embed it too. Nothing here may be called off the loop thread. */
#ifndef HONE_CONTROLLER_H
#define HONE_CONTROLLER_H

#include <stddef.h>
#include <uv.h>

#include "hone.h"

typedef struct hone_controller_config {
    char *listen_host;       /* "127.0.0.1" */
    int listen_port;         /* 8080; 0 picks a free port */
    char *data_dir;          /* holds hone.db and artifacts/ by default */
    char *db_path;           /* NULL: <data_dir>/hone.db */
    char **data_roots;       /* server-side folders datasets may come from */
    int n_data_roots;        /* 0: <data_dir> and /usr/share/datasets */
    char *auth_token;        /* the admin key (auth.admin_key, alias auth.token); NULL: no auth */
    char *worker_token;      /* enrolment token: may only register workers (NULL: none) */
    int token_ttl_seconds;   /* login tokens live this long (auth.token_ttl_seconds, 7 days) */
    size_t max_body_bytes;   /* JSON bodies (default 1 MiB) */
    size_t max_upload_bytes; /* artifact and dataset uploads (default 256 MiB) */
    int max_uploads;         /* uploads streamed to disk at once; more wait (default 4) */
    int max_connections;     /* open connections before idle ones are evicted (0: 1024) */
    int max_per_address;     /* connections from one address (0: max_connections / 4) */
    size_t upload_inflight;  /* bytes of all uploads received, not yet on disk (4 MiB) */
    size_t max_header_bytes; /* default 16 KiB */
    int lease_seconds;       /* a lease without heartbeat this long expires (default 30) */
    int heartbeat_seconds;   /* told to workers (default 5) */
    int max_attempts;        /* a failing trainer is retried until this many attempts (3) */
    int max_wait_seconds;    /* longest lease long-poll (default 60) */
    int max_streams;         /* open metrics streams (SSE); beyond: 503 (default 64) */
    int downloads_per_user;  /* a user's artifact downloads at once; beyond: 503 (default 4) */
    int log_json;            /* 1: one JSON object per log line (default), 0: text */
    char *port_file;         /* write the bound port here once listening */
    int dataset_checks;      /* dataset checks run at once, on threads of their own (2) */
    /* limits.coco_json_memory: the memory all COCO JSON parses of dataset checks may take at
     * once (data/coco_memory.c's bound; 2 GiB; COCO's train2017 needs about 4.5 GiB) */
    size_t coco_json_memory;
    /* fair_share: the job queue between users (shares.c). Admins are under no cap. */
    int fair_max_running; /* a user's running jobs, trials included; more wait (0: no cap) */
    int fair_max_queued;  /* a user's queued jobs; creating one more is 429 (0: no cap; 1000) */
    char *fair_weights;   /* JSON {user name: weight > 0} (NULL: every weight 1) */
} hone_controller_config;

/* Fills defaults (everything owned by the config, freed by hone_controller_config_free). */
void hone_controller_config_default(hone_controller_config *c);
/* Reads a YAML file over the defaults. On error returns HONE_EPARSE/HONE_EINVAL/HONE_EIO with a
 * message naming the key in err. */
int hone_controller_config_load(hone_controller_config *c, const char *path, char *err,
                                size_t errlen);
/* Sets one string option (flag style), taking a copy: "listen", "data_dir", "db", "port_file". */
int hone_controller_config_set(hone_controller_config *c, const char *key, const char *value,
                               char *err, size_t errlen);
/* The environment's HONE_ADMIN_KEY and HONE_WORKER_TOKEN, each only where the config file and
 * flags left the key unset (the Helm chart passes them from a Secret). */
void hone_controller_config_env(hone_controller_config *c);
void hone_controller_config_free(hone_controller_config *c);

typedef struct hone_controller hone_controller;

/* Opens (creating and migrating) the store, rebuilds running AutoML searches, registers routes.
 * The config is copied. Does not listen yet. */
int hone_controller_new(uv_loop_t *loop, const hone_controller_config *cfg, hone_controller **out,
                        char *err, size_t errlen);
/* Binds and listens; writes the port to *port and "listening on http://HOST:PORT" to stderr. */
int hone_controller_listen(hone_controller *c, int *port);
/* Stops serving and timers; done(arg) runs on the loop once every handle is closed. */
void hone_controller_close(hone_controller *c, void (*done)(void *arg), void *arg);
void hone_controller_free(hone_controller *c);

/* Store only (tests, tools): opens/creates the SQLite file and applies pending migrations.
 * *version receives the schema version after migration. */
int hone_controller_store_migrate(const char *db_path, int *version);

#endif
