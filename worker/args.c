/* args: hone-worker's command line, parsed into hone_worker_opts without touching anything else
 * but the --token-file it names. Strings point into argv; nothing is allocated. */
#include "args.h"

#include "hone.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

const char *hone_worker_usage(void)
{
    return "usage: hone-worker --controller URL [--name N] [--work-dir DIR]\n"
           "                   [--device cpu|cuda|auto] [--threads N]\n"
           "                   [--token-file FILE | --token T]\n"
           "                   [--trainer PATH] [--packer PATH] [--lease-wait S] [--grace S]\n"
           "                   [--max-jobs N] [--storage shared|http] [--cache-dir DIR]\n"
           "                   [--gpu INDEX] [--resident | --no-resident]\n"
           "                   [--trainer-socket PATH] [-v]\n"
           "Registers with the controller at URL, leases jobs and runs hone-train for each\n"
           "(hone-pack for a convert job).\n"
           "--resident: train jobs go to one resident hone-train --serve kept between leases\n"
           "(its CUDA context and datasets stay loaded); default on with --device cuda, off\n"
           "otherwise.\n"
           "--trainer-socket PATH: train jobs run on one shared hone-train --serve --listen\n"
           "PATH (started by the first worker that needs it, ended when idle), so that the\n"
           "trials of several workers overlap on one GPU. The server sees the GPU of the\n"
           "worker that started it: workers sharing a socket must share a GPU (one socket\n"
           "per GPU). Default: none.\n"
           "--storage shared: the controller's data dir is mounted here (default);\n"
           "--storage http: datasets are downloaded into --cache-dir (default\n"
           "<work-dir>/cache, by content hash) and outputs uploaded to the controller.\n"
           "--gpu INDEX: use only that GPU (of those hone-train --list-devices reports, or\n"
           "of CUDA_VISIBLE_DEVICES when set): trainers get CUDA_VISIBLE_DEVICES and\n"
           "--device cuda, and only that GPU is registered. One worker per GPU, or several\n"
           "sharing one --trainer-socket.\n"
           "--token-file FILE: the enrolment token (or admin key) that registering takes,\n"
           "on the file's first line; prefer it (or HONE_TOKEN) to --token T, which other\n"
           "users see in ps. A file others may read gets a warning.\n"
           "Environment: HONE_URL (default for --controller), HONE_TOKEN (default for\n"
           "--token), HONE_STORAGE,\n"
           "HONE_GPU (default for --gpu), HONE_TRAINER_SOCKET (for --trainer-socket).\n";
}

/* The first line of path (without its line end) into o->token_buf. */
static int args_token_file(const char *path, hone_worker_opts *o, char *err, size_t errlen)
{
    unsigned mode;
    int rc = hone_secret_read(path, o->token_buf, sizeof(o->token_buf), &mode);
    if (rc == HONE_EIO) {
        snprintf(err, errlen, "cannot read --token-file %s: %s", path, strerror(errno));
        return HONE_EINVAL;
    }
    if (rc) {
        snprintf(err, errlen, "--token-file %s holds no token on its first line", path);
        return HONE_EINVAL;
    }
    o->token = o->token_buf;
    o->token_file_loose = (mode & 077) != 0;
    if (o->token_file_loose)
        fprintf(stderr,
                "hone-worker: warning: --token-file %s may be read by other users (mode "
                "%03o): chmod 600 it\n",
                path, mode);
    return HONE_OK;
}

static int args_int(const char *v, int lo, int hi, int *out)
{
    char *end;
    long x = strtol(v, &end, 10);
    if (*v == '\0' || *end != '\0' || x < lo || x > hi)
        return HONE_EINVAL;
    *out = (int)x;
    return HONE_OK;
}

int hone_worker_args_parse(int argc, char **argv, hone_worker_opts *o, char *err, size_t errlen)
{
    memset(o, 0, sizeof(*o));
    o->device = "auto";
    o->lease_wait_s = 20;
    o->grace_s = 10.0;
    o->resident = -1;
    o->controller = getenv("HONE_URL");
    o->token = getenv("HONE_TOKEN");
    o->storage = getenv("HONE_STORAGE");
    if (!o->storage || !o->storage[0])
        o->storage = "shared";
    const char *env_gpu = getenv("HONE_GPU");
    if (env_gpu && env_gpu[0] && args_int(env_gpu, 0, 63, &o->gpu) != 0) {
        snprintf(err, errlen, "HONE_GPU must be a GPU index from 0 to 63 (got '%s')", env_gpu);
        return HONE_EINVAL;
    }
    o->pin_gpu = env_gpu && env_gpu[0];
    o->trainer_socket = getenv("HONE_TRAINER_SOCKET");
    const char *token_file = NULL, *token_arg = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = NULL;
        const char *eq;
        char name[64];

        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            snprintf(err, errlen, "%s", hone_worker_usage());
            return 1;
        }
        if (strcmp(a, "-v") == 0 || strcmp(a, "--verbose") == 0) {
            o->verbose = 1;
            continue;
        }
        if (strcmp(a, "--resident") == 0 || strcmp(a, "--no-resident") == 0) {
            o->resident = a[2] == 'r';
            continue;
        }
        if (strncmp(a, "--", 2) != 0) {
            snprintf(err, errlen, "unexpected argument '%s' (options start with --; see --help)",
                     a);
            return HONE_EINVAL;
        }
        eq = strchr(a, '=');
        if (eq) {
            size_t n = (size_t)(eq - a);
            if (n >= sizeof(name))
                n = sizeof(name) - 1;
            memcpy(name, a, n);
            name[n] = '\0';
            v = eq + 1;
        } else {
            snprintf(name, sizeof(name), "%s", a);
            if (i + 1 >= argc) {
                snprintf(err, errlen, "option %s needs a value (e.g. %s VALUE)", name, name);
                return HONE_EINVAL;
            }
            v = argv[++i];
        }
        if (strcmp(name, "--controller") == 0 || strcmp(name, "--url") == 0) {
            o->controller = v;
        } else if (strcmp(name, "--name") == 0) {
            o->name = v;
        } else if (strcmp(name, "--work-dir") == 0) {
            o->work_dir = v;
        } else if (strcmp(name, "--device") == 0) {
            if (strcmp(v, "cpu") != 0 && strcmp(v, "cuda") != 0 && strcmp(v, "auto") != 0) {
                snprintf(err, errlen, "--device must be cpu, cuda or auto (got '%s')", v);
                return HONE_EINVAL;
            }
            o->device = v;
        } else if (strcmp(name, "--threads") == 0) {
            if (args_int(v, 0, 4096, &o->threads) != 0) {
                snprintf(err, errlen, "--threads must be an integer from 0 to 4096 (got '%s')", v);
                return HONE_EINVAL;
            }
        } else if (strcmp(name, "--token") == 0) {
            token_arg = o->token = v;
        } else if (strcmp(name, "--token-file") == 0) {
            token_file = v;
        } else if (strcmp(name, "--trainer") == 0) {
            o->trainer = v;
        } else if (strcmp(name, "--packer") == 0) {
            o->packer = v;
        } else if (strcmp(name, "--lease-wait") == 0) {
            if (args_int(v, 1, 300, &o->lease_wait_s) != 0) {
                snprintf(err, errlen, "--lease-wait must be 1..300 seconds (got '%s')", v);
                return HONE_EINVAL;
            }
        } else if (strcmp(name, "--grace") == 0) {
            char *end;
            o->grace_s = strtod(v, &end);
            if (*end != '\0' || !(o->grace_s > 0 && o->grace_s <= 3600)) {
                snprintf(err, errlen, "--grace must be a number of seconds in (0, 3600]");
                return HONE_EINVAL;
            }
        } else if (strcmp(name, "--storage") == 0) {
            o->storage = v;
        } else if (strcmp(name, "--cache-dir") == 0) {
            if (!v[0]) {
                snprintf(err, errlen, "--cache-dir needs a folder");
                return HONE_EINVAL;
            }
            o->cache_dir = v;
        } else if (strcmp(name, "--gpu") == 0) {
            if (args_int(v, 0, 63, &o->gpu) != 0) {
                snprintf(err, errlen, "--gpu must be a GPU index from 0 to 63 (got '%s')", v);
                return HONE_EINVAL;
            }
            o->pin_gpu = 1;
        } else if (strcmp(name, "--trainer-socket") == 0) {
            o->trainer_socket = v;
        } else if (strcmp(name, "--max-jobs") == 0) {
            if (args_int(v, 0, 1000000, &o->max_jobs) != 0) {
                snprintf(err, errlen, "--max-jobs must be a non-negative integer");
                return HONE_EINVAL;
            }
        } else {
            snprintf(err, errlen, "unknown option %s (see hone-worker --help)", name);
            return HONE_EINVAL;
        }
    }
    if (token_file && token_arg) {
        snprintf(err, errlen, "give --token-file or --token, not both");
        return HONE_EINVAL;
    }
    if (token_file && args_token_file(token_file, o, err, errlen))
        return HONE_EINVAL;
    if (strcmp(o->storage, "shared") != 0 && strcmp(o->storage, "http") != 0) {
        snprintf(err, errlen, "--storage (or HONE_STORAGE) must be shared or http (got '%s')",
                 o->storage);
        return HONE_EINVAL;
    }
    if (o->pin_gpu && strcmp(o->device, "cpu") == 0) {
        snprintf(err, errlen, "--gpu (or HONE_GPU) needs --device cuda or auto, not cpu");
        return HONE_EINVAL;
    }
    if (o->trainer_socket && !o->trainer_socket[0])
        o->trainer_socket = NULL;
    if (o->trainer_socket && o->resident == 0) {
        snprintf(err, errlen,
                 "--trainer-socket runs train jobs on a resident server; it cannot "
                 "go with --no-resident");
        return HONE_EINVAL;
    }
    if (o->pin_gpu)
        o->device = "cuda"; /* a pinned worker trains on its GPU, never quietly on the CPU */
    if (!o->controller || !o->controller[0]) {
        snprintf(err, errlen, "missing --controller URL (or set HONE_URL)");
        return HONE_EINVAL;
    }
    if (strncmp(o->controller, "http://", 7) != 0 && strncmp(o->controller, "https://", 8) != 0) {
        snprintf(err, errlen, "--controller must be an http:// or https:// URL (got '%s')",
                 o->controller);
        return HONE_EINVAL;
    }
    return HONE_OK;
}
