/*
 * timing.h — the timing the C baselines of scripts/bench-baselines.sh share
 * (openblas_attention.c, ggml_flash_attn.c; header-only, each program is
 * one file compiled by the script): a monotonic clock in milliseconds, and
 * the "median_ms min_ms" line every baseline prints for the script to read.
 */
#ifndef SDPA_BASELINES_TIMING_H
#define SDPA_BASELINES_TIMING_H

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e3 + t.tv_nsec * 1e-6;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Sorts the n > 0 timings t and prints "median_ms min_ms". */
static void print_median_min(double *t, int n)
{
    qsort(t, (size_t)n, sizeof *t, cmp_double);
    printf("%.4f %.4f\n", n % 2 ? t[n / 2] : 0.5 * (t[n / 2 - 1] + t[n / 2]), t[0]);
}

#endif
