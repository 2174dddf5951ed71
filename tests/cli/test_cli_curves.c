/* test_cli_curves: the SVG of `hone job curves`: one polyline per series that has the metric, one
 * point per epoch with a finite value, in epoch order from left to right, the better value higher;
 * the highlighted series thicker and marked best; labels and titles escaped; an empty run still a
 * whole document. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "cli.h"

static int count(const char *s, const char *what)
{
    int n = 0;
    for (const char *p = strstr(s, what); p; p = strstr(p + 1, what))
        n++;
    return n;
}

/* The points="..." of the polyline with data-label="label", as x y pairs; returns how many. */
static int points_of(const char *svg, const char *label, double *xy, int max)
{
    char key[128];
    snprintf(key, sizeof(key), "data-label=\"%s\"", label);
    const char *p = strstr(svg, key);
    if (!p || !(p = strstr(p, "points=\"")))
        return -1;
    p += 8;
    int n = 0;
    double x, y;
    int used;
    while (n < max && sscanf(p, "%lf,%lf %n", &x, &y, &used) == 2) {
        xy[2 * n] = x;
        xy[2 * n + 1] = y;
        n++;
        p += used;
    }
    return n;
}

static void test_curves(void)
{
    json_t *series = json_pack(
        "{s:[{s:i,s:f},{s:i,s:f},{s:i,s:f}],s:[{s:i,s:f},{s:i,s:s},{s:i,s:f}],s:[{s:i,s:f}]}",
        "trial 1", "epoch", 1, "val_accuracy", 0.5, "epoch", 2, "val_accuracy", 0.7, "epoch", 3,
        "val_accuracy", 0.8, "trial <2>", "epoch", 1, "val_accuracy", 0.4, "epoch", 2,
        "val_accuracy", "oops", "epoch", 3, "val_accuracy", 0.9, "trial 3", "epoch", 1, "val_loss",
        0.3);
    int nc = -1, np = -1;
    char *svg = cli_curves_svg(series, "val_accuracy", "automl job j & <x>", "trial 1", &nc, &np);
    REQUIRE(svg);
    CHECK(nc == 2 && np == 5);
    CHECK(!strncmp(svg, "<?xml", 5) && strstr(svg, "</svg>\n"));
    CHECK(count(svg, "<polyline") == 2);
    CHECK(strstr(svg, "automl job j &amp; &lt;x&gt;") != NULL);
    CHECK(strstr(svg, "trial &lt;2&gt;") != NULL && strstr(svg, "trial <2>") == NULL);
    CHECK(strstr(svg, "trial 1 (best)") != NULL && count(svg, "(best)") == 1);
    double a[16], b[16];
    REQUIRE(points_of(svg, "trial 1", a, 8) == 3);
    REQUIRE(points_of(svg, "trial &lt;2&gt;", b, 8) == 2); /* epoch 2 is not a number */
    CHECK(a[0] < a[2] && a[2] < a[4]);                     /* epochs left to right */
    CHECK(a[1] > a[3] && a[3] > a[5]);                     /* higher accuracy is higher */
    CHECK(b[0] == a[0] && b[2] == a[4]);                   /* the same epoch, the same x */
    CHECK(b[3] < a[5]);                                    /* 0.9 above 0.8 */
    free(svg);

    svg = cli_curves_svg(series, "val_loss", "t", NULL, &nc, &np); /* one point: still drawn */
    CHECK(nc == 1 && np == 1 && count(svg, "<polyline") == 1 && !strstr(svg, "(best)"));
    free(svg);

    svg = cli_curves_svg(series, "nope", "t", NULL, &nc, &np);
    CHECK(nc == 0 && np == 0 && count(svg, "<polyline") == 0 && strstr(svg, "no epochs"));
    CHECK(strstr(svg, "</svg>\n") != NULL);
    free(svg);
    json_decref(series);
}

int main(void)
{
    test_curves();
    if (failures)
        fprintf(stderr, "%d check(s) failed\n", failures);
    return failures ? 1 : 0;
}
