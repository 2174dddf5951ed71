/* libFuzzer target for the controller's YAML config loader (controller/config.c): the input is
 * written to a temporary file and loaded over the defaults; errors must name a key, never crash. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "controller.h"

static char path[64];

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    hone_controller_config c;
    char err[512];
    if (!path[0]) {
        snprintf(path, sizeof path, "/tmp/hone-cfg-fuzz-%d.yaml", (int)getpid());
    }
    FILE *f = fopen(path, "wb");
    if (!f)
        return 0;
    fwrite(data, 1, size, f);
    fclose(f);
    hone_controller_config_default(&c);
    err[0] = '\0';
    if (hone_controller_config_load(&c, path, err, sizeof err) != HONE_OK && !err[0])
        __builtin_trap(); /* a refusal must say why */
    hone_controller_config_free(&c);
    return 0;
}
