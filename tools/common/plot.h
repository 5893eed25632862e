/*
 * plot.h — a small self-contained SVG line chart (no external library):
 * one polyline with point markers per series, axes with ticks, a legend.
 * Used by sdpa-bench --plot (GFLOP/s against sequence length per backend);
 * its path check by every tool's --plot.
 */
#ifndef SDPA_TOOLS_PLOT_H
#define SDPA_TOOLS_PLOT_H

#include <stddef.h>

typedef struct tp_series {
    const char *name;
    int n;
    const double *x, *y; /* n points; points with non-finite values are skipped */
} tp_series;

/* Writes the chart to `path`. `logx` uses a log2 x axis (x must be > 0).
 * Returns 1, or 0 with a reason in err. */
int tp_plot_svg(const char *path, const char *title, const char *xlabel, const char *ylabel,
                int logx, const tp_series *s, int ns, char *err, size_t errcap);

/* The check of a --plot FILE: charts are SVG only, so FILE must end in
 * ".svg" (any case) and have a name before it; a file named .png would get
 * SVG data. Returns 1, or 0 with the reason in err. */
int tp_svg_path_check(const char *path, char *err, size_t errcap);

#endif /* SDPA_TOOLS_PLOT_H */
