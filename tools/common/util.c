/*
 * util.c — helpers shared by the tools (see util.h): clock, 16-bit float
 * conversions, random numbers, checked size arithmetic, paths, and the text
 * table used by sdpa-bench and sdpa-info.
 *
 * Invariants: the conversions are exact inverses on representable values and
 * round to nearest even otherwise; NaN stays NaN (quiet), infinities stay
 * infinities. Table cells are owned copies, freed by tu_table_free.
 * Called by: every tool and tests/test_conformance.c (through case.c).
 */
#include "util.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

double tu_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* ---- 16-bit floats ---------------------------------------------------------- */

static uint32_t bits_of(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

static float float_of(uint32_t u)
{
    float f;
    memcpy(&f, &u, 4);
    return f;
}

float tu_f16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1fu;
    uint32_t man = h & 0x3ffu;
    if (exp == 0x1f) /* inf / NaN */
        return float_of(sign | 0x7f800000u | (man << 13) | (man ? 0x400000u : 0));
    if (exp == 0) {
        /* zero or subnormal: man * 2^-24 */
        float v = (float)man * 5.9604644775390625e-8f;
        return sign ? -v : v;
    }
    return float_of(sign | ((exp + 112u) << 23) | (man << 13));
}

uint16_t tu_f32_to_f16(float f)
{
    uint32_t u = bits_of(f);
    uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
    uint32_t a = u & 0x7fffffffu;
    if (a >= 0x7f800000u) /* inf or NaN */
        return (uint16_t)(sign | 0x7c00u | (a > 0x7f800000u ? 0x200u : 0));
    if (a >= 0x477ff000u) /* rounds to >= 65520: overflow to inf */
        return (uint16_t)(sign | 0x7c00u);
    if (a < 0x38800000u) { /* below the smallest normal half: subnormal/zero */
        float v = float_of(a) * 16777216.0f; /* exact scale by 2^24 */
        /* nearbyintf rounds to nearest even in the default mode */
        return (uint16_t)(sign | (uint16_t)nearbyintf(v));
    }
    uint32_t mant_odd = (a >> 13) & 1u;
    a += 0xfffu + mant_odd; /* round to nearest even on the dropped 13 bits */
    return (uint16_t)(sign | (uint16_t)(((a - 0x38000000u) >> 13) & 0x7fffu));
}

float tu_bf16_to_f32(uint16_t b) { return float_of((uint32_t)b << 16); }

uint16_t tu_f32_to_bf16(float f)
{
    uint32_t u = bits_of(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) /* NaN: keep it quiet */
        return (uint16_t)((u >> 16) | 0x40u);
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

double tu_load(const void *base, sdpa_dtype dtype, size_t e)
{
    switch (dtype) {
    case SDPA_DTYPE_F32: return ((const float *)base)[e];
    case SDPA_DTYPE_F16: return tu_f16_to_f32(((const uint16_t *)base)[e]);
    case SDPA_DTYPE_BF16: return tu_bf16_to_f32(((const uint16_t *)base)[e]);
    case SDPA_DTYPE_U8: return ((const uint8_t *)base)[e];
    case SDPA_DTYPE_I32: return ((const int32_t *)base)[e];
    default: return NAN;
    }
}

void tu_store(void *base, sdpa_dtype dtype, size_t e, double v)
{
    switch (dtype) {
    case SDPA_DTYPE_F32: ((float *)base)[e] = (float)v; break;
    case SDPA_DTYPE_F16: ((uint16_t *)base)[e] = tu_f32_to_f16((float)v); break;
    case SDPA_DTYPE_BF16: ((uint16_t *)base)[e] = tu_f32_to_bf16((float)v); break;
    default: break;
    }
}

/* ---- random numbers ----------------------------------------------------------- */

void tu_rng_seed(tu_rng *r, uint64_t seed)
{
    r->s = seed * 0x9E3779B97F4A7C15ull + 0x2545F4914F6CDD1Dull;
    if (r->s == 0)
        r->s = 1;
}

static uint64_t rng_next(tu_rng *r)
{
    r->s ^= r->s >> 12;
    r->s ^= r->s << 25;
    r->s ^= r->s >> 27;
    return r->s * 0x2545F4914F6CDD1Dull;
}

double tu_rng_uniform(tu_rng *r) { return (double)(rng_next(r) >> 11) * 0x1.0p-53; }

double tu_rng_normal(tu_rng *r)
{
    double u1 = tu_rng_uniform(r), u2 = tu_rng_uniform(r);
    if (u1 < 1e-300)
        u1 = 1e-300;
    return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

/* ---- checked arithmetic, paths ---------------------------------------------------- */

int tu_mul_size(size_t a, size_t b, size_t *out)
{
    if (a != 0 && b > SIZE_MAX / a)
        return 0;
    *out = a * b;
    return 1;
}

int tu_add_size(size_t a, size_t b, size_t *out)
{
    if (b > SIZE_MAX - a)
        return 0;
    *out = a + b;
    return 1;
}

int tu_path_join(char *out, size_t cap, const char *dir, const char *name)
{
    size_t ld = strlen(dir);
    while (ld > 1 && dir[ld - 1] == '/')
        ld--;
    int n = snprintf(out, cap, "%.*s/%s", (int)ld, dir, name);
    return n >= 0 && (size_t)n < cap;
}

int tu_is_dir(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

int tu_is_file(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* ---- tables ------------------------------------------------------------------------ */

void tu_table_init(tu_table *t, int ncols, const char *const *head,
                   const int *right)
{
    memset(t, 0, sizeof *t);
    if (ncols > TU_TABLE_MAX_COLS)
        ncols = TU_TABLE_MAX_COLS;
    t->ncols = ncols;
    for (int c = 0; c < ncols; c++) {
        t->head[c] = head[c];
        t->right[c] = right ? right[c] : 0;
    }
}

int tu_table_add(tu_table *t, const char *const *cells)
{
    if (t->nrows == t->cap) {
        size_t cap = t->cap ? 2 * t->cap : 16;
        char **n = realloc(t->cells, cap * (size_t)t->ncols * sizeof *n);
        if (!n)
            return 0;
        t->cells = n;
        t->cap = cap;
    }
    char **row = t->cells + t->nrows * (size_t)t->ncols;
    for (int c = 0; c < t->ncols; c++) {
        const char *s = cells[c] ? cells[c] : "";
        row[c] = malloc(strlen(s) + 1);
        if (!row[c]) {
            for (int d = 0; d < c; d++)
                free(row[d]);
            return 0;
        }
        strcpy(row[c], s);
    }
    t->nrows++;
    return 1;
}

void tu_table_print(const tu_table *t, FILE *f)
{
    size_t w[TU_TABLE_MAX_COLS];
    for (int c = 0; c < t->ncols; c++) {
        w[c] = strlen(t->head[c]);
        for (size_t r = 0; r < t->nrows; r++) {
            size_t l = strlen(t->cells[r * (size_t)t->ncols + (size_t)c]);
            if (l > w[c])
                w[c] = l;
        }
    }
    for (size_t r = 0; r <= t->nrows; r++) {
        for (int c = 0; c < t->ncols; c++) {
            const char *s = r == 0 ? t->head[c]
                                   : t->cells[(r - 1) * (size_t)t->ncols + (size_t)c];
            const char *sep = c + 1 < t->ncols ? "  " : "";
            if (t->right[c])
                fprintf(f, "%*s%s", (int)w[c], s, sep);
            else if (c + 1 < t->ncols)
                fprintf(f, "%-*s%s", (int)w[c], s, sep);
            else
                fprintf(f, "%s", s); /* no trailing blanks */
        }
        fputc('\n', f);
    }
}

static void csv_cell(FILE *f, const char *s)
{
    if (strpbrk(s, ",\"\n\r") == NULL) {
        fputs(s, f);
        return;
    }
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"')
            fputc('"', f);
        fputc(*s, f);
    }
    fputc('"', f);
}

void tu_table_print_csv(const tu_table *t, FILE *f)
{
    for (size_t r = 0; r <= t->nrows; r++) {
        for (int c = 0; c < t->ncols; c++) {
            if (c)
                fputc(',', f);
            csv_cell(f, r == 0 ? t->head[c]
                               : t->cells[(r - 1) * (size_t)t->ncols + (size_t)c]);
        }
        fputc('\n', f);
    }
}

void tu_table_free(tu_table *t)
{
    if (t->cells)
        for (size_t i = 0; i < t->nrows * (size_t)t->ncols; i++)
            free(t->cells[i]);
    free(t->cells);
    memset(t, 0, sizeof *t);
}
