/* trun_internal: the relay state and line handling that trun.c (a hone-train child, a resident
 * `hone-train --serve` on pipes) and trun_socket.c (a shared `hone-train --serve --listen` over a
 * unix socket) both drive. Not part of the public API. */
#ifndef HONE_TRUN_INTERNAL_H
#define HONE_TRUN_INTERNAL_H

#include <sys/types.h>

#include "trun.h"

#define TRUN_LINE_MAX 65536
#define TRUN_LOG_LINE_MAX 400

typedef struct trun_line {
    char *buf;
    size_t len, cap;
} trun_line;

typedef struct trun_state {
    char **ring; /* stderr lines, oldest at ring_head once full */
    int ring_n, ring_cap, ring_head;
    int ring_fresh; /* lines pushed since the last epoch line (not yet reported) */
    trun_line out, err;
    pid_t pid;
    int killing;     /* 0 none, 1 SIGTERM sent (or, on a socket, the cancel line) */
    double kill_at;  /* monotonic time of SIGKILL (on a socket: of giving the job up) */
    int killed_hard; /* SIGKILL sent (on a socket: the job given up) */
    hone_wdecision decided;
    int aborted;
    int natural_end; /* stop/pause came on the last epoch: let it exit */
    int resident;    /* the child is hone-train --serve: its exit line ends the job */
    int exit_seen, exit_code, restart; /* restart: the server ends after this job */
    double last_io;                    /* monotonic time of the last bytes read from the child */
    /* A shared server over a unix socket (trun_socket.c): a stop writes {"cancel":true} to
     * sock_fd instead of a signal, and the grace's end gives the job up instead of SIGKILL. */
    int on_socket;
    int sock_fd;
} trun_state;

void trun_ring_push(trun_state *s, const char *line, size_t len);
/* The ring's lines, '\n'-joined (new string). */
char *trun_ring_join(trun_state *s);
/* Frees the ring and the line buffers that s still owns. */
void trun_state_clear(trun_state *s);
/* The start every run shares: res zeroed, the stderr ring sized by o->log_lines (default 50). */
void trun_run_begin(trun_state *s, const hone_trun_opts *o, hone_trun_result *res);
/* The end every run shares: FAILED when rc is an error, the log tail joined, s cleared. */
void trun_run_end(trun_state *s, int rc, hone_trun_result *res);
/* One complete stdout line of the trainer: epoch lines to the hooks (and the decision acted on),
 * other JSON events to on_event; with s->resident the server's own events (accepted, alive,
 * hello, log, exit) are taken here. */
void trun_stdout_line(trun_state *s, const hone_trun_opts *o, const hone_trun_hooks *h,
                      hone_trun_result *res, char *line, size_t len, double grace);
/* Reads what is there from fd into the line buffer and dispatches complete lines. 0 at EOF. */
int trun_drain(trun_state *s, int fd, int is_err, const hone_trun_opts *o, const hone_trun_hooks *h,
               hone_trun_result *res, double grace);
/* The hooks' stop (once) and the end of the grace, as the wait loops owe them. */
void trun_tick(trun_state *s, const hone_trun_hooks *h, double grace);
/* Sets res's outcome from the decisions taken and exit_code (a failure adds a log line). */
void trun_outcome(trun_state *s, hone_trun_result *res, int exit_code);
/* The line `{"run":[argv[1..]]}\n` (new string), NULL (with a log line) when not UTF-8. */
char *trun_request_line(trun_state *s, char *const argv[]);
/* Writes all of buf; 0 or -1 (the peer is gone). Never raises SIGPIPE on a socket. */
int trun_write_all(int fd, const char *buf, size_t len);

#endif
