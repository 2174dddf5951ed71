/* web.c: the page served at / (web/index.html and the files beside it, embedded in the binary at
 * build time by embed_web.cmake: no file to install, no build step, no CDN). The page reads the
 * REST API like any client; serving it needs no token, since it holds no data. */
#ifndef HONE_CTL_WEB_H
#define HONE_CTL_WEB_H

#include <stddef.h>

#include "controller.h"

typedef struct ctl_web_file {
    const char *name; /* "index.html": its name under web/ */
    const unsigned char *data;
    size_t len;
} ctl_web_file;

extern const ctl_web_file ctl_web_files[]; /* the generated web_files.c */
extern const size_t ctl_web_files_count;

/* GET / (index.html) and GET /ui/{name} (the others). */
int ctl_routes_web(hone_controller *c);
/* Whether a matched route pattern (NULL: none) is one of the page's (the auth filter lets them
 * through). */
int ctl_web_route(const char *route);

#endif
