/*
 * lab_svg.h — a small, dependency-free SVG line chart for sdpa-lab's --plot:
 * several named series of (x, y) points, linear or logarithmic axes, ticks,
 * axis labels and a legend. Points that are not finite (or not positive on a
 * log axis) are skipped and break the line.
 */
#ifndef SDPA_LAB_SVG_H
#define SDPA_LAB_SVG_H

#define LAB_SVG_MAX_SERIES 24

typedef struct lab_series {
    const char *name;   /* legend text (copied into the file, escaped) */
    int n;              /* number of points */
    const double *x, *y;
    int color;          /* palette index (0..11, wraps) */
    int dashed;         /* 1 = dashed line */
} lab_series;

typedef struct lab_chart {
    const char *title, *xlabel, *ylabel;
    int logx, logy;     /* 1 = base-10 logarithmic axis */
    int nseries;
    lab_series series[LAB_SVG_MAX_SERIES];
} lab_chart;

/* Adds a series (ignored beyond LAB_SVG_MAX_SERIES); the arrays are borrowed
 * until lab_svg_write returns. */
void lab_chart_add(lab_chart *c, const char *name, int n, const double *x,
                   const double *y, int color, int dashed);

/* Writes the chart to `path`. Returns 0, or -1 with errno set when the file
 * cannot be written. */
int lab_svg_write(const char *path, const lab_chart *c);

#endif /* SDPA_LAB_SVG_H */
