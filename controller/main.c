/* hone-controller: the REST service's executable. Reads the YAML config and flags, opens the store,
 * serves until SIGINT/SIGTERM, then closes in order. All logic lives in the library (controller.h).
 */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>

#include "controller.h"
#include "hone.h"

static void usage(FILE *f)
{
    fprintf(f, "usage: hone-controller [--config FILE] [--listen HOST:PORT] [--data-dir DIR]\n"
               "                       [--db FILE] [--port-file FILE] [--auth-token TOKEN]\n"
               "                       [--worker-token TOKEN]\n"
               "environment (used where the config file and flags leave the key unset):\n"
               "  HONE_ADMIN_KEY     the admin's API key (config auth.admin_key)\n"
               "  HONE_WORKER_TOKEN  the worker enrolment token (config auth.worker_token)\n");
}

/* Idle clients must not run us out of descriptors before the HTTP connection limit does (which
 * the api/ library then fits to what this leaves). */
static void raise_nofile_limit(void)
{
    struct rlimit r;
    if (getrlimit(RLIMIT_NOFILE, &r) == 0 && r.rlim_cur < r.rlim_max) {
        r.rlim_cur = r.rlim_max;
        setrlimit(RLIMIT_NOFILE, &r);
    }
}

typedef struct signals {
    uv_signal_t sint, sterm;
    hone_controller *c;
} signals;

static void on_signal(uv_signal_t *s, int signum)
{
    signals *sg = s->data;
    (void)signum;
    fprintf(stderr, "hone-controller: shutting down\n");
    uv_close((uv_handle_t *)&sg->sint, NULL);
    uv_close((uv_handle_t *)&sg->sterm, NULL);
    hone_controller_close(sg->c, NULL, NULL);
}

int main(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) /* the version of every Hone program, one string */
        if (!strcmp(argv[i], "--version"))
            return printf("hone-controller %s\n", hone_version()) < 0;
    hone_controller_config cfg;
    char err[512] = "";
    const char *flags[][2] = {{"--listen", "listen"},
                              {"--data-dir", "data_dir"},
                              {"--db", "db"},
                              {"--port-file", "port_file"},
                              {"--auth-token", "auth_token"},
                              {"--worker-token", "worker_token"}};
    hone_controller_config_default(&cfg);
    signal(SIGPIPE, SIG_IGN);
    /* The config file first, then flags over it, whatever their order on the command line. */
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "--config") && i + 1 < argc &&
            hone_controller_config_load(&cfg, argv[++i], err, sizeof err)) {
            fprintf(stderr, "hone-controller: config: %s\n", err);
            hone_controller_config_free(&cfg);
            return 2;
        }
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            usage(stdout);
            hone_controller_config_free(&cfg);
            return 0;
        }
        if (!strcmp(argv[i], "--config")) {
            i++;
            continue;
        }
        size_t k = 0;
        for (; k < sizeof flags / sizeof flags[0]; k++)
            if (!strcmp(argv[i], flags[k][0]))
                break;
        if (k == sizeof flags / sizeof flags[0] || i + 1 >= argc) {
            usage(stderr);
            hone_controller_config_free(&cfg);
            return 2;
        }
        if (hone_controller_config_set(&cfg, flags[k][1], argv[++i], err, sizeof err)) {
            fprintf(stderr, "hone-controller: %s\n", err);
            hone_controller_config_free(&cfg);
            return 2;
        }
    }
    hone_controller_config_env(&cfg);
    raise_nofile_limit();
    uv_loop_t *loop = uv_default_loop();
    hone_controller *c = NULL;
    int port = 0;
    if (hone_controller_new(loop, &cfg, &c, err, sizeof err)) {
        fprintf(stderr, "hone-controller: %s\n", err);
        hone_controller_config_free(&cfg);
        return 1;
    }
    if (hone_controller_listen(c, &port)) {
        fprintf(stderr, "hone-controller: cannot listen on %s:%d\n", cfg.listen_host,
                cfg.listen_port);
        hone_controller_free(c);
        hone_controller_config_free(&cfg);
        return 1;
    }
    signals sg = {.c = c};
    uv_signal_init(loop, &sg.sint);
    uv_signal_init(loop, &sg.sterm);
    sg.sint.data = sg.sterm.data = &sg;
    uv_signal_start(&sg.sint, on_signal, SIGINT);
    uv_signal_start(&sg.sterm, on_signal, SIGTERM);
    uv_run(loop, UV_RUN_DEFAULT);
    hone_controller_free(c);
    hone_controller_config_free(&cfg);
    uv_loop_close(loop);
    return 0;
}
