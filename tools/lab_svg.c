/*
 * lab_svg.c — writes lab_chart (lab_svg.h) as a standalone SVG 1.1 file:
 * a plot frame with ticks and grid lines, one polyline plus point markers per
 * series, and a legend in the top-right corner. Called by the variance,
 * saturation and train subcommands of sdpa-lab.
 *
 * Invariants: the data range is taken over the drawable points only (finite,
 * and > 0 on log axes); an empty or degenerate range is widened so every
 * coordinate written is finite. Text is XML-escaped.
 */
#include "lab_svg.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define W 720.0
#define H 440.0
#define ML 78.0  /* margins: left, right, top, bottom */
#define MR 190.0
#define MT 40.0
#define MB 56.0

static const char *const palette[12] = {
    "#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b",
    "#e377c2", "#7f7f7f", "#bcbd22", "#17becf", "#393b79", "#637939",
};

void lab_chart_add(lab_chart *c, const char *name, int n, const double *x,
                   const double *y, int color, int dashed)
{
    if (c->nseries >= LAB_SVG_MAX_SERIES)
        return;
    lab_series *s = &c->series[c->nseries++];
    s->name = name;
    s->n = n;
    s->x = x;
    s->y = y;
    s->color = color;
    s->dashed = dashed;
}

static void put_text(FILE *f, const char *s)
{
    for (; s && *s; s++) {
        if (*s == '&')
            fputs("&amp;", f);
        else if (*s == '<')
            fputs("&lt;", f);
        else if (*s == '>')
            fputs("&gt;", f);
        else
            fputc(*s, f);
    }
}

static int drawable(double v, int logaxis) { return isfinite(v) && (!logaxis || v > 0); }

/* Axis: data range in plot units (log10 when logarithmic). */
typedef struct axis {
    double lo, hi;
    int log;
} axis;

static double to_unit(const axis *a, double v) { return a->log ? log10(v) : v; }

static void axis_fit(axis *a)
{
    if (!(a->lo <= a->hi)) { /* no points */
        a->lo = 0;
        a->hi = 1;
    }
    if (a->hi - a->lo < 1e-12) {
        double pad = a->log ? 0.5 : (fabs(a->lo) > 0 ? fabs(a->lo) * 0.1 : 1.0);
        a->lo -= pad;
        a->hi += pad;
    }
    if (a->log) { /* whole decades */
        a->lo = floor(a->lo);
        a->hi = ceil(a->hi);
    }
}

/* Linear tick step: 1, 2 or 5 times a power of ten, about 6 ticks. */
static double nice_step(double span)
{
    double raw = span / 6.0, p = pow(10.0, floor(log10(raw))), m = raw / p;
    return (m < 1.5 ? 1 : m < 3.5 ? 2 : m < 7.5 ? 5 : 10) * p;
}

static void tick_label(char *buf, size_t cap, double u, int log)
{
    if (log) {
        double v = pow(10.0, u);
        if (u >= -3 && u <= 4)
            snprintf(buf, cap, "%g", v);
        else
            snprintf(buf, cap, "1e%d", (int)lround(u));
    } else {
        snprintf(buf, cap, "%g", fabs(u) < 1e-12 ? 0.0 : u);
    }
}

int lab_svg_write(const char *path, const lab_chart *c)
{
    axis ax = {INFINITY, -INFINITY, c->logx}, ay = {INFINITY, -INFINITY, c->logy};
    for (int s = 0; s < c->nseries; s++)
        for (int i = 0; i < c->series[s].n; i++) {
            double x = c->series[s].x[i], y = c->series[s].y[i];
            if (!drawable(x, ax.log) || !drawable(y, ay.log))
                continue;
            x = to_unit(&ax, x);
            y = to_unit(&ay, y);
            ax.lo = fmin(ax.lo, x), ax.hi = fmax(ax.hi, x);
            ay.lo = fmin(ay.lo, y), ay.hi = fmax(ay.hi, y);
        }
    axis_fit(&ax);
    axis_fit(&ay);
    if (!ay.log) { /* a little headroom on linear y */
        double pad = 0.04 * (ay.hi - ay.lo);
        ay.lo -= pad;
        ay.hi += pad;
    }

    FILE *f = fopen(path, "w");
    if (!f)
        return -1;
    const double pw = W - ML - MR, ph = H - MT - MB;
#define PX(u) (ML + ((u) - ax.lo) / (ax.hi - ax.lo) * pw)
#define PY(u) (MT + ph - ((u) - ay.lo) / (ay.hi - ay.lo) * ph)
    fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
               "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" "
               "viewBox=\"0 0 %.0f %.0f\" font-family=\"sans-serif\" font-size=\"12\">\n"
               "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n",
            W, H, W, H);
    fprintf(f, "<text x=\"%.1f\" y=\"24\" text-anchor=\"middle\" font-size=\"15\">",
            ML + pw / 2);
    put_text(f, c->title);
    fputs("</text>\n", f);

    /* grid and ticks */
    for (int dim = 0; dim < 2; dim++) {
        const axis *a = dim == 0 ? &ax : &ay;
        double step = a->log ? (a->hi - a->lo > 12 ? ceil((a->hi - a->lo) / 12) : 1)
                             : nice_step(a->hi - a->lo);
        double first = ceil(a->lo / step - 1e-9) * step;
        for (double u = first; u <= a->hi + 1e-9 * step; u += step) {
            char lab[32];
            tick_label(lab, sizeof lab, u, a->log);
            if (dim == 0) {
                double x = PX(u);
                fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
                           "stroke=\"#e0e0e0\"/>\n", x, MT, x, MT + ph);
                fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%s</text>\n",
                        x, MT + ph + 16, lab);
            } else {
                double y = PY(u);
                fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
                           "stroke=\"#e0e0e0\"/>\n", ML, y, ML + pw, y);
                fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%s</text>\n",
                        ML - 6, y + 4, lab);
            }
        }
    }
    fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"none\" "
               "stroke=\"black\"/>\n", ML, MT, pw, ph);
    fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">", ML + pw / 2, H - 14);
    put_text(f, c->xlabel);
    fprintf(f, "%s</text>\n", c->logx ? " (log)" : "");
    fprintf(f, "<text transform=\"translate(18 %.1f) rotate(-90)\" text-anchor=\"middle\">",
            MT + ph / 2);
    put_text(f, c->ylabel);
    fprintf(f, "%s</text>\n", c->logy ? " (log)" : "");

    /* series: polylines broken at undrawable points, markers, legend */
    for (int s = 0; s < c->nseries; s++) {
        const lab_series *se = &c->series[s];
        const char *col = palette[(se->color % 12 + 12) % 12];
        int open = 0;
        for (int i = 0; i < se->n; i++) {
            if (!drawable(se->x[i], ax.log) || !drawable(se->y[i], ay.log)) {
                if (open)
                    fputs("\"/>\n", f);
                open = 0;
                continue;
            }
            if (!open)
                fprintf(f, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"2\"%s "
                           "points=\"", col,
                        se->dashed ? " stroke-dasharray=\"6 4\"" : "");
            fprintf(f, "%s%.1f,%.1f", open ? " " : "", PX(to_unit(&ax, se->x[i])),
                    PY(to_unit(&ay, se->y[i])));
            open = 1;
        }
        if (open)
            fputs("\"/>\n", f);
        for (int i = 0; i < se->n; i++)
            if (drawable(se->x[i], ax.log) && drawable(se->y[i], ay.log) && se->n <= 40)
                fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3\" fill=\"%s\"/>\n",
                        PX(to_unit(&ax, se->x[i])), PY(to_unit(&ay, se->y[i])), col);
        double ly = MT + 10 + 18.0 * s;
        fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" "
                   "stroke-width=\"2\"%s/>\n", ML + pw + 12, ly, ML + pw + 40, ly, col,
                se->dashed ? " stroke-dasharray=\"6 4\"" : "");
        fprintf(f, "<text x=\"%.1f\" y=\"%.1f\">", ML + pw + 46, ly + 4);
        put_text(f, se->name);
        fputs("</text>\n", f);
    }
#undef PX
#undef PY
    fputs("</svg>\n", f);
    if (ferror(f)) {
        fclose(f);
        return -1;
    }
    return fclose(f) == 0 ? 0 : -1;
}
