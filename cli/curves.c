/* curves: learning curves as an SVG, written by hand (a few elements, no library), for people
 * without a browser (`hone job curves`). Pure: JSON in, text out; no I/O, so it is unit-tested. */
#include "cli.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define SVG_W 900
#define SVG_H 520
#define PAD_L 70
#define PAD_R 150 /* the legend */
#define PAD_T 40
#define PAD_B 50
#define LEGEND_MAX 24

static void curves_oom(void) /* as common/'s allocators do */
{
    fputs("hone: out of memory\n", stderr);
    abort();
}

static void svg_text(FILE *f, const char *s) /* XML-escaped */
{
    for (; *s; s++) {
        switch (*s) {
        case '<':
            fputs("&lt;", f);
            break;
        case '>':
            fputs("&gt;", f);
            break;
        case '&':
            fputs("&amp;", f);
            break;
        case '"':
            fputs("&quot;", f);
            break;
        default:
            if ((unsigned char)*s >= 0x20 || *s == '\t')
                fputc(*s, f);
        }
    }
}

/* A metric's value in one epoch's object; NAN when absent or not a number. */
static double point_value(const json_t *m, const char *metric)
{
    const json_t *v = json_object_get(m, metric);
    return json_is_number(v) ? json_number_value(v) : NAN;
}

/* Tick step of about n intervals over [lo, hi]: 1, 2 or 5 times a power of ten. */
static double nice_step(double lo, double hi, int n)
{
    double raw = (hi - lo) / n, mag = pow(10, floor(log10(raw)));
    double steps[] = {1, 2, 5, 10};
    for (int i = 0; i < 4; i++)
        if (steps[i] * mag >= raw)
            return steps[i] * mag;
    return 10 * mag;
}

static void curve_color(int i, int n, char *buf, size_t len)
{
    snprintf(buf, len, "hsl(%d,70%%,45%%)", (int)(200 + (long)i * 360 / (n > 0 ? n : 1)) % 360);
}

char *cli_curves_svg(const json_t *series, const char *metric, const char *title,
                     const char *highlight, int *ncurves, int *npoints)
{
    char *buf = NULL, color[32];
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f)
        curves_oom();
    double x1 = 1, y0 = INFINITY, y1 = -INFINITY;
    int n = 0, pts = 0, drawn = 0;
    const char *label;
    json_t *arr, *m;
    size_t i;
    json_object_foreach((json_t *)series, label, arr)
    {
        int any = 0;
        json_array_foreach(arr, i, m)
        {
            double y = point_value(m, metric);
            json_int_t e = json_integer_value(json_object_get(m, "epoch"));
            if (!isfinite(y) || e < 1)
                continue;
            x1 = fmax(x1, (double)e);
            y0 = fmin(y0, y);
            y1 = fmax(y1, y);
            pts++;
            any = 1;
        }
        n += any;
    }
    if (y0 == y1) {
        y0 -= 0.5;
        y1 += 0.5;
    }
    fprintf(f,
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
            "viewBox=\"0 0 %d %d\" font-family=\"sans-serif\" font-size=\"12\">\n"
            "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n"
            "<text x=\"%d\" y=\"24\" font-size=\"15\">",
            SVG_W, SVG_H, SVG_W, SVG_H, PAD_L);
    svg_text(f, title);
    fputs("</text>\n", f);
    double pw = SVG_W - PAD_L - PAD_R, ph = SVG_H - PAD_T - PAD_B;
#define SX(x) (PAD_L + ((x)-1) / (x1 > 1 ? x1 - 1 : 1) * pw)
#define SY(y) (SVG_H - PAD_B - ((y)-y0) / (y1 - y0) * ph)
    if (pts == 0) {
        fprintf(f, "<text x=\"%d\" y=\"%d\">no epochs with ", PAD_L, SVG_H / 2);
        svg_text(f, metric);
        fputs(" yet</text>\n", f);
    } else {
        double st = nice_step(y0, y1, 5);
        fputs("<g stroke=\"#ddd\">\n", f);
        for (double t = ceil(y0 / st) * st; t <= y1 + st * 1e-9; t += st)
            fprintf(f, "<line x1=\"%d\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\"/>\n", PAD_L, PAD_L + pw,
                    SY(t), SY(t));
        fputs("</g>\n<g text-anchor=\"end\">\n", f);
        for (double t = ceil(y0 / st) * st; t <= y1 + st * 1e-9; t += st)
            fprintf(f, "<text x=\"%d\" y=\"%.1f\">%.4g</text>\n", PAD_L - 6, SY(t) + 4,
                    fabs(t) < st * 1e-6 ? 0.0 : t);
        double sx = fmax(1, round(nice_step(1, x1 > 1 ? x1 : 2, 8)));
        fputs("</g>\n<g text-anchor=\"middle\">\n", f);
        for (double t = 1; t <= x1; t += sx)
            fprintf(f, "<text x=\"%.1f\" y=\"%d\">%.0f</text>\n", SX(t), SVG_H - PAD_B + 16, t);
        fprintf(f, "<text x=\"%.1f\" y=\"%d\">epoch</text>\n", PAD_L + pw / 2, SVG_H - 12);
        fputs("</g>\n", f);
        fprintf(f, "<text transform=\"translate(16,%.1f) rotate(-90)\" text-anchor=\"middle\">",
                PAD_T + ph / 2);
        svg_text(f, metric);
        fputs("</text>\n", f);
        fprintf(f,
                "<g fill=\"none\" stroke=\"#333\"><line x1=\"%d\" x2=\"%d\" y1=\"%d\" "
                "y2=\"%d\"/><line x1=\"%d\" x2=\"%.1f\" y1=\"%d\" y2=\"%d\"/></g>\n",
                PAD_L, PAD_L, PAD_T, SVG_H - PAD_B, PAD_L, PAD_L + pw, SVG_H - PAD_B,
                SVG_H - PAD_B);
    }
    json_object_foreach((json_t *)series, label, arr)
    {
        int first = 1, hl = highlight && !strcmp(label, highlight), npts = 0;
        double px = 0, py = 0;
        json_array_foreach(arr, i, m)
        {
            double y = point_value(m, metric);
            json_int_t e = json_integer_value(json_object_get(m, "epoch"));
            if (!isfinite(y) || e < 1)
                continue;
            if (first) {
                curve_color(drawn, n, color, sizeof color);
                fprintf(f, "<polyline data-label=\"");
                svg_text(f, label);
                fprintf(f, "\" fill=\"none\" stroke=\"%s\" stroke-width=\"%s\" points=\"", color,
                        hl ? "3.5" : "1.5");
                first = 0;
            }
            px = SX((double)e);
            py = SY(y);
            fprintf(f, "%.1f,%.1f ", px, py);
            npts++;
        }
        if (first)
            continue;
        fputs("\"/>\n", f);
        if (npts == 1) { /* a trial stopped after one epoch: a line of one point draws nothing */
            fprintf(f, "<circle data-label=\"");
            svg_text(f, label);
            fprintf(f, "\" cx=\"%.1f\" cy=\"%.1f\" r=\"%s\" fill=\"%s\"/>\n", px, py,
                    hl ? "5" : "3.5", color);
        }
        if (drawn < LEGEND_MAX) {
            int ly = PAD_T + 10 + drawn * 17;
            fprintf(f,
                    "<line x1=\"%d\" x2=\"%d\" y1=\"%d\" y2=\"%d\" stroke=\"%s\" "
                    "stroke-width=\"%s\"/><text x=\"%d\" y=\"%d\">",
                    SVG_W - PAD_R + 14, SVG_W - PAD_R + 34, ly, ly, color, hl ? "3.5" : "1.5",
                    SVG_W - PAD_R + 40, ly + 4);
            svg_text(f, label);
            fputs(hl ? " (best)</text>\n" : "</text>\n", f);
        } else if (drawn == LEGEND_MAX) {
            fprintf(f, "<text x=\"%d\" y=\"%d\">… %d more</text>\n", SVG_W - PAD_R + 14,
                    PAD_T + 10 + drawn * 17 + 4, n - LEGEND_MAX);
        }
        drawn++;
    }
#undef SX
#undef SY
    fputs("</svg>\n", f);
    if (fclose(f))
        curves_oom();
    if (ncurves)
        *ncurves = drawn;
    if (npoints)
        *npoints = pts;
    return buf;
}
