/*
 * lab_svg.h — a small, dependency-free SVG line chart for sdpa-lab's --plot:
 * several named series of (x, y) points, linear or logarithmic axes, ticks,
 * axis labels and a legend beside the plot. The canvas grows to hold the
 * legend and the title, so nothing is clipped. Points that are not finite
 * break the line and are counted in a note under the plot; on a log y axis,
 * values <= 0 are drawn at the floor as open triangles, with a note; series
 * beyond LAB_SVG_MAX_SERIES are counted in a note, never dropped silently.
 */
#ifndef SDPA_LAB_SVG_H
#define SDPA_LAB_SVG_H

#define LAB_SVG_MAX_SERIES 64
#define LAB_SVG_COLORS 12 /* distinct palette colours */
#define LAB_SVG_DASHES 4  /* line styles: solid, dashed, dotted, dash-dot */

typedef struct lab_series {
    const char *name;   /* legend text (copied into the file, escaped) */
    int n;              /* number of points */
    const double *x, *y;
    int color;          /* palette index (0..LAB_SVG_COLORS-1, wraps) */
    int dash;           /* line style 0..LAB_SVG_DASHES-1 (wraps) */
} lab_series;

typedef struct lab_chart {
    const char *title, *xlabel, *ylabel;
    int logx, logy;     /* 1 = base-10 logarithmic axis */
    int xint;           /* 1 = integer x ticks only (epochs) */
    int nseries;
    int omitted;        /* series added beyond LAB_SVG_MAX_SERIES */
    lab_series series[LAB_SVG_MAX_SERIES];
} lab_chart;

/* Adds a series (counted in `omitted` beyond LAB_SVG_MAX_SERIES); the arrays
 * are borrowed until lab_svg_write returns. */
void lab_chart_add(lab_chart *c, const char *name, int n, const double *x,
                   const double *y, int color, int dash);

/* Colour and line style of run i of n so that no two runs share both:
 * colours first, then the next line style. */
void lab_chart_style(int i, int *color, int *dash);

/* Writes the chart to `path`. Returns 0, or -1 with errno set when the file
 * cannot be written. */
int lab_svg_write(const char *path, const lab_chart *c);

#endif /* SDPA_LAB_SVG_H */
