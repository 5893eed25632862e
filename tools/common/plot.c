/*
 * plot.c — writes an SVG line chart (see plot.h). Pure text output: fixed
 * 720x440 canvas, plot area inside margins, y from 0 to a rounded maximum,
 * x linear or log2 over the data range, colours from a fixed palette.
 * Text is XML-escaped. Invariant: non-finite points (and x <= 0 on a log
 * axis) are skipped, never drawn. Called by sdpa-bench; tp_svg_path_check
 * also by sdpa-lab's --plot.
 */
#include "plot.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#define W 720.0
#define H 440.0
#define ML 70.0
#define MR 170.0
#define MT 40.0
#define MB 55.0

static const char *const palette[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e",
                                      "#9467bd", "#8c564b", "#e377c2", "#17becf"};

static void put_text(FILE *f, const char *s)
{
    for (; *s; s++) {
        switch (*s) {
        case '<': fputs("&lt;", f); break;
        case '>': fputs("&gt;", f); break;
        case '&': fputs("&amp;", f); break;
        case '"': fputs("&quot;", f); break;
        default:
            if ((unsigned char)*s >= 0x20)
                fputc(*s, f);
        }
    }
}

static int usable(double x, double y, int logx)
{
    return isfinite(x) && isfinite(y) && (!logx || x > 0);
}

/* A "nice" upper bound: 1, 2 or 5 times a power of ten, >= v. */
static double nice_ceil(double v)
{
    if (!(v > 0))
        return 1;
    double p = pow(10, floor(log10(v)));
    const double m[] = {1, 2, 5, 10};
    for (int i = 0; i < 4; i++)
        if (m[i] * p >= v)
            return m[i] * p;
    return 10 * p;
}

int tp_plot_svg(const char *path, const char *title, const char *xlabel, const char *ylabel,
                int logx, const tp_series *s, int ns, char *err, size_t errcap)
{
    double xmin = INFINITY, xmax = -INFINITY, ymax = 0;
    for (int k = 0; k < ns; k++)
        for (int i = 0; i < s[k].n; i++) {
            double x = s[k].x[i], y = s[k].y[i];
            if (!usable(x, y, logx))
                continue;
            double xv = logx ? log2(x) : x;
            xmin = fmin(xmin, xv);
            xmax = fmax(xmax, xv);
            ymax = fmax(ymax, y);
        }
    if (!isfinite(xmin)) {
        snprintf(err, errcap, "nothing to plot (no successful rows)");
        return 0;
    }
    if (xmax - xmin < 1e-9) {
        xmin -= logx ? 1 : fmax(1, fabs(xmin) * 0.1);
        xmax += logx ? 1 : fmax(1, fabs(xmax) * 0.1);
    }
    ymax = nice_ceil(ymax * 1.05);
    FILE *f = fopen(path, "w");
    if (!f) {
        snprintf(err, errcap, "cannot write %s: %s", path, strerror(errno));
        return 0;
    }
    const double pw = W - ML - MR, ph = H - MT - MB;
#define PX(xv) (ML + ((xv) - xmin) / (xmax - xmin) * pw)
#define PY(yv) (MT + ph - (yv) / ymax * ph)
    fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" "
               "viewBox=\"0 0 %.0f %.0f\" font-family=\"sans-serif\" font-size=\"12\">\n",
            W, H, W, H);
    fprintf(f, "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n");
    fprintf(f, "<text x=\"%.1f\" y=\"22\" font-size=\"15\" text-anchor=\"middle\">", W / 2);
    put_text(f, title);
    fprintf(f, "</text>\n");
    /* y grid and ticks */
    for (int i = 0; i <= 5; i++) {
        double yv = ymax * i / 5, y = PY(yv);
        fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>\n", ML,
                y, ML + pw, y);
        fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%g</text>\n", ML - 6, y + 4,
                yv);
    }
    /* x ticks: powers of two on a log axis, else 5 steps */
    if (logx) {
        for (double e = ceil(xmin); e <= floor(xmax) + 1e-9; e++) {
            double x = PX(e);
            fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#eee\"/>\n",
                    x, MT, x, MT + ph);
            fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%.0f</text>\n", x,
                    MT + ph + 18, pow(2, e));
        }
    } else {
        for (int i = 0; i <= 5; i++) {
            double xv = xmin + (xmax - xmin) * i / 5, x = PX(xv);
            fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%.4g</text>\n", x,
                    MT + ph + 18, xv);
        }
    }
    fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"none\" "
               "stroke=\"#333\"/>\n", ML, MT, pw, ph);
    fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">", ML + pw / 2, H - 12);
    put_text(f, xlabel);
    fprintf(f, "</text>\n<text transform=\"translate(18,%.1f) rotate(-90)\" "
               "text-anchor=\"middle\">", MT + ph / 2);
    put_text(f, ylabel);
    fprintf(f, "</text>\n");
    /* series */
    for (int k = 0; k < ns; k++) {
        const char *col = palette[k % (int)(sizeof palette / sizeof palette[0])];
        fprintf(f, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"2\" points=\"", col);
        for (int i = 0; i < s[k].n; i++)
            if (usable(s[k].x[i], s[k].y[i], logx))
                fprintf(f, "%.1f,%.1f ", PX(logx ? log2(s[k].x[i]) : s[k].x[i]), PY(s[k].y[i]));
        fprintf(f, "\"/>\n");
        for (int i = 0; i < s[k].n; i++)
            if (usable(s[k].x[i], s[k].y[i], logx))
                fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3\" fill=\"%s\"/>\n",
                        PX(logx ? log2(s[k].x[i]) : s[k].x[i]), PY(s[k].y[i]), col);
        double ly = MT + 10 + 18 * k;
        fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" "
                   "stroke-width=\"2\"/>\n", ML + pw + 12, ly, ML + pw + 32, ly, col);
        fprintf(f, "<text x=\"%.1f\" y=\"%.1f\">", ML + pw + 38, ly + 4);
        put_text(f, s[k].name);
        fprintf(f, "</text>\n");
    }
#undef PX
#undef PY
    fprintf(f, "</svg>\n");
    if (fclose(f) != 0) {
        snprintf(err, errcap, "cannot write %s", path);
        return 0;
    }
    return 1;
}

int tp_svg_path_check(const char *path, char *err, size_t errcap)
{
    size_t n = path ? strlen(path) : 0;
    const char *base = path ? strrchr(path, '/') : NULL;
    base = base ? base + 1 : path;
    if (n == 0) {
        snprintf(err, errcap, "empty file name");
        return 0;
    }
    if (n < 4 || strcasecmp(path + n - 4, ".svg") != 0 || strlen(base) <= 4) {
        const char *dot = strrchr(base, '.');
        snprintf(err, errcap, "%s: charts are written as SVG only, so the file name must end "
                              "in .svg%s%s%s", path, dot && dot[1] ? " (not " : "",
                 dot && dot[1] ? dot : "", dot && dot[1] ? ")" : "");
        return 0;
    }
    return 1;
}
