/*
 * util.h — small helpers shared by the tools: a monotonic clock, float
 * conversions for 16-bit storage types, a deterministic random source, an
 * aligned text table that can also be written as CSV, and path helpers.
 * Nothing here touches the library's internals; the tools include sdpa.h only.
 */
#ifndef SDPA_TOOLS_UTIL_H
#define SDPA_TOOLS_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "sdpa.h"

/* Monotonic time in seconds. */
double tu_now(void);

/* IEEE binary16 and bfloat16 <-> binary32 (round to nearest even). */
float tu_f16_to_f32(uint16_t h);
uint16_t tu_f32_to_f16(float f);
float tu_bf16_to_f32(uint16_t b);
uint16_t tu_f32_to_bf16(float f);

/* Element e of an f32/f16/bf16/u8/i32 array as double (NaN for other dtypes). */
double tu_load(const void *base, sdpa_dtype dtype, size_t e);
/* Stores v as element e of an f32/f16/bf16 array. */
void tu_store(void *base, sdpa_dtype dtype, size_t e, double v);

/* xorshift64* random numbers; deterministic per seed. */
typedef struct tu_rng { uint64_t s; } tu_rng;
void tu_rng_seed(tu_rng *r, uint64_t seed);
double tu_rng_uniform(tu_rng *r); /* [0, 1) */
double tu_rng_normal(tu_rng *r);  /* N(0, 1) */

/* a * b and a + b on size_t with overflow detection: 0 on overflow. */
int tu_mul_size(size_t a, size_t b, size_t *out);
int tu_add_size(size_t a, size_t b, size_t *out);

/* Joins dir and name with one '/'. Returns 0 when it does not fit. */
int tu_path_join(char *out, size_t cap, const char *dir, const char *name);
/* 1 if path is an existing directory / regular file. */
int tu_is_dir(const char *path);
int tu_is_file(const char *path);

/* ---- tables: rows of strings, printed aligned or as CSV ------------------- */
#define TU_TABLE_MAX_COLS 32

typedef struct tu_table {
    int ncols;
    const char *head[TU_TABLE_MAX_COLS];
    int right[TU_TABLE_MAX_COLS]; /* 1 = right-aligned (numbers) */
    char **cells;                  /* nrows * ncols owned strings */
    size_t nrows, cap;
} tu_table;

void tu_table_init(tu_table *t, int ncols, const char *const *head,
                   const int *right);
/* Appends a row; the cells are copied. Returns 0 when out of memory. */
int tu_table_add(tu_table *t, const char *const *cells);
void tu_table_print(const tu_table *t, FILE *f);     /* aligned text */
void tu_table_print_csv(const tu_table *t, FILE *f); /* RFC 4180 quoting */
void tu_table_free(tu_table *t);

#endif /* SDPA_TOOLS_UTIL_H */
