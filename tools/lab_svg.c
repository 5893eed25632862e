/*
 * lab_svg.c — writes lab_chart (lab_svg.h) as a standalone SVG 1.1 file:
 * a plot frame with ticks and grid lines, one polyline plus point markers per
 * series, a legend beside the plot (group id "legend", framed by its
 * bounding rect), and notes under the plot for anything not drawn as a
 * normal point. Called by the variance, saturation, train and qknorm
 * subcommands of sdpa-lab.
 *
 * Invariants: the data range is taken over the drawable points only (finite,
 * and > 0 on log axes); an empty or degenerate range is widened so every
 * coordinate written is finite. Text is XML-escaped. The canvas width and
 * height are computed from the legend's and the title's text (estimated at
 * CHAR_W px per character), so the legend and title lie inside the viewBox.
 */
#include "lab_svg.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define PW 452.0 /* plot area */
#define PH 344.0
#define ML 78.0  /* margins: left, top, bottom */
#define MT 40.0
#define MB 56.0
#define CHAR_W 7.2   /* width of a 12 px sans-serif character, generous */
#define TITLE_W 9.0  /* at 15 px */
#define LEGEND_ROW 18.0
#define NOTE_ROW 16.0

static const char *const palette[LAB_SVG_COLORS] = {
    "#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b",
    "#e377c2", "#7f7f7f", "#bcbd22", "#17becf", "#393b79", "#637939",
};
static const char *const dashes[LAB_SVG_DASHES] = {
    "", " stroke-dasharray=\"6 4\"", " stroke-dasharray=\"2 3\"",
    " stroke-dasharray=\"8 3 2 3\"",
};

void lab_chart_add(lab_chart *c, const char *name, int n, const double *x,
                   const double *y, int color, int dash)
{
    if (c->nseries >= LAB_SVG_MAX_SERIES) {
        c->omitted++;
        return;
    }
    lab_series *s = &c->series[c->nseries++];
    s->name = name;
    s->n = n;
    s->x = x;
    s->y = y;
    s->color = color;
    s->dash = dash;
}

void lab_chart_style(int i, int *color, int *dash)
{
    *color = i % LAB_SVG_COLORS;
    *dash = (i / LAB_SVG_COLORS) % LAB_SVG_DASHES;
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

/* The stroke colour and dash attribute of a series. */
static void series_style(const lab_series *se, const char **col, const char **dash)
{
    *col = palette[(se->color % LAB_SVG_COLORS + LAB_SVG_COLORS) % LAB_SVG_COLORS];
    *dash = dashes[(se->dash % LAB_SVG_DASHES + LAB_SVG_DASHES) % LAB_SVG_DASHES];
}

/* Where point i of a series goes: 1 drawn, 2 drawn at the floor (y <= 0 on
 * a log y axis), 0 not drawn. */
static int point_kind(const lab_chart *c, const lab_series *se, int i)
{
    double x = se->x[i], y = se->y[i];
    if (!drawable(x, c->logx) || !isfinite(y))
        return 0;
    if (c->logy && y <= 0)
        return 2;
    return 1;
}

int lab_svg_write(const char *path, const lab_chart *c)
{
    axis ax = {INFINITY, -INFINITY, c->logx}, ay = {INFINITY, -INFINITY, c->logy};
    int nfloor = 0, nskip = 0;
    size_t legend_chars = 0;
    for (int s = 0; s < c->nseries; s++) {
        const lab_series *se = &c->series[s];
        legend_chars = strlen(se->name) > legend_chars ? strlen(se->name) : legend_chars;
        for (int i = 0; i < se->n; i++) {
            int k = point_kind(c, se, i);
            nfloor += k == 2;
            nskip += k == 0;
            if (k != 1)
                continue;
            double x = to_unit(&ax, se->x[i]), y = to_unit(&ay, se->y[i]);
            ax.lo = fmin(ax.lo, x), ax.hi = fmax(ax.hi, x);
            ay.lo = fmin(ay.lo, y), ay.hi = fmax(ay.hi, y);
        }
    }
    if (nfloor && ay.log && ay.lo <= ay.hi)
        ay.lo -= 1; /* one decade of room for the floor markers */
    axis_fit(&ax);
    axis_fit(&ay);
    if (!ay.log) { /* a little headroom on linear y */
        double pad = 0.04 * (ay.hi - ay.lo);
        ay.lo -= pad;
        ay.hi += pad;
    }

    /* notes under the plot */
    char notes[3][160];
    int nnotes = 0;
    if (nfloor)
        snprintf(notes[nnotes++], sizeof notes[0], "%d value%s <= 0 drawn at the floor of "
                 "the log axis (open triangles)", nfloor, nfloor == 1 ? "" : "s");
    if (nskip)
        snprintf(notes[nnotes++], sizeof notes[0], "%d non-finite point%s (nan/inf) not "
                 "drawn", nskip, nskip == 1 ? "" : "s");
    if (c->omitted)
        snprintf(notes[nnotes++], sizeof notes[0], "%d more series not drawn (at most %d "
                 "per chart)", c->omitted, LAB_SVG_MAX_SERIES);

    /* canvas: plot, legend beside it, title and notes inside */
    double legend_w = 46 + CHAR_W * (double)legend_chars + 10;
    double legend_h = 10 + LEGEND_ROW * c->nseries;
    double W = ML + PW + 12 + legend_w + 8;
    double title_w = TITLE_W * (double)strlen(c->title ? c->title : "") + 20;
    double notes_w = 0;
    for (int i = 0; i < nnotes; i++)
        notes_w = fmax(notes_w, 20 + CHAR_W * (double)strlen(notes[i]));
    W = fmax(W, fmax(title_w, notes_w));
    double H = fmax(MT + PH + MB, MT + legend_h + 10) + NOTE_ROW * nnotes;

    FILE *f = fopen(path, "w");
    if (!f)
        return -1;
    const double pw = PW, ph = PH;
#define PX(u) (ML + ((u) - ax.lo) / (ax.hi - ax.lo) * pw)
#define PY(u) (MT + ph - ((u) - ay.lo) / (ay.hi - ay.lo) * ph)
    fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
               "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" "
               "viewBox=\"0 0 %.0f %.0f\" font-family=\"sans-serif\" font-size=\"12\">\n"
               "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n",
            ceil(W), ceil(H), ceil(W), ceil(H));
    fprintf(f, "<text x=\"%.1f\" y=\"24\" text-anchor=\"middle\" font-size=\"15\">",
            title_w > ML + pw / 2 + 10 ? W / 2 : ML + pw / 2);
    put_text(f, c->title);
    fputs("</text>\n", f);

    /* grid and ticks */
    for (int dim = 0; dim < 2; dim++) {
        const axis *a = dim == 0 ? &ax : &ay;
        double step = a->log ? (a->hi - a->lo > 12 ? ceil((a->hi - a->lo) / 12) : 1)
                             : nice_step(a->hi - a->lo);
        if (dim == 0 && c->xint && !a->log)
            step = fmax(1, round(step));
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
    fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">", ML + pw / 2,
            MT + ph + 42);
    put_text(f, c->xlabel);
    fprintf(f, "%s</text>\n", c->logx ? " (log)" : "");
    fprintf(f, "<text transform=\"translate(18 %.1f) rotate(-90)\" text-anchor=\"middle\">",
            MT + ph / 2);
    put_text(f, c->ylabel);
    fprintf(f, "%s</text>\n", c->logy ? " (log)" : "");

    /* series: polylines broken at points not drawn normally, markers */
    for (int s = 0; s < c->nseries; s++) {
        const lab_series *se = &c->series[s];
        const char *col, *dash;
        series_style(se, &col, &dash);
        int open = 0;
        for (int i = 0; i < se->n; i++) {
            if (point_kind(c, se, i) != 1) {
                if (open)
                    fputs("\"/>\n", f);
                open = 0;
                continue;
            }
            if (!open)
                fprintf(f, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"2\"%s "
                           "points=\"", col, dash);
            fprintf(f, "%s%.1f,%.1f", open ? " " : "", PX(to_unit(&ax, se->x[i])),
                    PY(to_unit(&ay, se->y[i])));
            open = 1;
        }
        if (open)
            fputs("\"/>\n", f);
        for (int i = 0; i < se->n; i++) {
            int k = point_kind(c, se, i);
            if (k == 1 && se->n <= 40)
                fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3\" fill=\"%s\"/>\n",
                        PX(to_unit(&ax, se->x[i])), PY(to_unit(&ay, se->y[i])), col);
            else if (k == 2) {
                double x = PX(to_unit(&ax, se->x[i])), y = MT + ph - 2;
                fprintf(f, "<path class=\"floor\" d=\"M%.1f %.1f l-4 -7 h8 z\" fill=\"white\" "
                           "stroke=\"%s\" stroke-width=\"1.5\"/>\n", x, y, col);
            }
        }
    }

    /* legend beside the plot */
    double lx = ML + pw + 12, ly0 = MT;
    fprintf(f, "<g id=\"legend\">\n<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" "
               "height=\"%.1f\" fill=\"white\" stroke=\"#cccccc\"/>\n",
            lx, ly0, legend_w, legend_h);
    for (int s = 0; s < c->nseries; s++) {
        const lab_series *se = &c->series[s];
        const char *col, *dash;
        series_style(se, &col, &dash);
        double ly = ly0 + 14 + LEGEND_ROW * s;
        fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" "
                   "stroke-width=\"2\"%s/>\n", lx + 6, ly, lx + 34, ly, col, dash);
        fprintf(f, "<text class=\"legend-entry\" x=\"%.1f\" y=\"%.1f\">", lx + 40, ly + 4);
        put_text(f, se->name);
        fputs("</text>\n", f);
    }
    fputs("</g>\n", f);
    for (int i = 0; i < nnotes; i++) {
        fprintf(f, "<text class=\"note\" x=\"10\" y=\"%.1f\" font-style=\"italic\">",
                H - NOTE_ROW * (nnotes - i) + 11);
        put_text(f, notes[i]);
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
