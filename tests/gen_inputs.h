/*
 * gen_inputs.h — what the two case generators (gen_conformance.c,
 * gen_wave2.c) share: allocation that exits on failure, and their
 * deterministic inputs (an xorshift generator; values that are multiples of
 * 1/1024, bell-shaped, never zero, rounded to a storage dtype). Header-only,
 * included once by each program after naive_attention.h (for to_f16 and
 * friends); GEN_PROG names the program in messages.
 */
#ifndef SDPA_TESTS_GEN_INPUTS_H
#define SDPA_TESTS_GEN_INPUTS_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#ifndef GEN_PROG
#error "define GEN_PROG (the program's name) before including gen_inputs.h"
#endif

static void *xmalloc(size_t n)
{
    void *p = calloc(n ? n : 1, 1);
    if (!p) {
        fprintf(stderr, GEN_PROG ": out of memory\n");
        exit(1);
    }
    return p;
}

static uint64_t g_rng;

static uint64_t next(void)
{
    g_rng ^= g_rng >> 12;
    g_rng ^= g_rng << 25;
    g_rng ^= g_rng >> 27;
    return g_rng * 0x2545F4914F6CDD1Dull;
}

/* Bell-shaped, standard deviation about 1, a multiple of 1/1024, never 0. */
static double value(void)
{
    for (;;) {
        int64_t s = 0;
        for (int t = 0; t < 3; t++)
            s += (int64_t)(next() % 2049) - 1024;
        if (s != 0)
            return (double)s / 1024.0;
    }
}

/* Rounds x to the storage dtype and back. */
static float stored(sdpa_dtype dt, double x)
{
    float f = (float)x;
    if (dt == SDPA_DTYPE_F16) return from_f16(to_f16(f));
    if (dt == SDPA_DTYPE_BF16) return from_bf16(to_bf16(f));
    return f;
}

#endif
