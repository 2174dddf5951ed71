/* hone-worker: the worker daemon's entry point. Parses the command line, installs SIGTERM/SIGINT
 * handlers that only set a flag, and runs the loop in worker.c until told to stop. */
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include <curl/curl.h>

#include "worker.h"
#include "hone.h"

static volatile sig_atomic_t worker_stop_flag;

static void on_signal(int sig)
{
    (void)sig;
    worker_stop_flag = 1;
}

int main(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) /* the version of every Hone program, one string */
        if (!strcmp(argv[i], "--version"))
            return printf("hone-worker %s\n", hone_version()) < 0;
    hone_worker_opts o;
    char err[2048];
    struct sigaction sa;
    int rc;

    rc = hone_worker_args_parse(argc, argv, &o, err, sizeof(err));
    if (rc == 1) {
        fputs(err, stdout);
        return 0;
    }
    if (rc != 0) {
        fprintf(stderr, "hone-worker: %s\n", err);
        return 2;
    }
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
    curl_global_init(CURL_GLOBAL_DEFAULT);
    rc = hone_worker_run(&o, &worker_stop_flag);
    curl_global_cleanup();
    return rc == 0 ? 0 : 1;
}
