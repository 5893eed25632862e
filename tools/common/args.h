/*
 * args.h — tiny flag parsing shared by the tools. Flags are GNU style:
 * `--name VALUE` or `--name=VALUE`; `--` ends the flags. Numbers are parsed
 * strictly (the whole string, no overflow). The tools print usage errors
 * themselves and exit with TA_EXIT_USAGE.
 */
#ifndef SDPA_TOOLS_ARGS_H
#define SDPA_TOOLS_ARGS_H

#include <stdint.h>

#include "sdpa.h"

/* Exit statuses of every tool (docs/tools.md): the one definition. */
#define TA_EXIT_OK 0    /* success */
#define TA_EXIT_FAIL 1  /* the work failed: a case or run failed, no context (no such
                           device or backend), I/O */
#define TA_EXIT_USAGE 2 /* usage error, or a request the machine cannot hold (a shape
                           larger than its memory); nothing on stdout */

/* Walks argv. Typical use:
 *   ta_args a; ta_init(&a, argc, argv);
 *   while (ta_next(&a)) {
 *       if (ta_flag(&a, "--json")) ...
 *       else if (ta_value(&a, "--shape", &val)) ...   (val is NULL on error)
 *       else if (a.positional) ...
 *       else unknown flag
 *   }
 *   if (a.error) ...
 */
typedef struct ta_args {
    int argc;
    char **argv;
    int i;              /* index of the current argument */
    const char *arg;    /* the current argument */
    int positional;     /* current argument is not a flag (or follows "--") */
    int after_dashdash;
    int error;          /* set when a flag's value was missing */
    char message[256];  /* describes the first error */
} ta_args;

void ta_init(ta_args *a, int argc, char **argv);
/* Advances to the next argument; 0 at the end. */
int ta_next(ta_args *a);
/* 1 if the current argument is exactly `name` (a flag without value).
 * `--name=...` for a flag without value sets the error. */
int ta_flag(ta_args *a, const char *name);
/* 1 if the current argument is `name` or `name=...`; *value receives the value
 * (the next argument, which is consumed). When the value is missing, sets the
 * error and *value = NULL, and still returns 1. */
int ta_value(ta_args *a, const char *name, const char **value);
/* Sets a.error with a formatted message (keeps the first). */
void ta_fail(ta_args *a, const char *fmt, ...);

/* Strict parsers: return 1 on success, 0 on any junk or out-of-range value. */
int ta_parse_i64(const char *s, int64_t lo, int64_t hi, int64_t *out);
int ta_parse_int(const char *s, int lo, int hi, int *out);
int ta_parse_double(const char *s, double *out);
/* "a,b,c" into out[0..n); between min_n and max_n values, each in [lo, hi]. */
int ta_parse_i64_list(const char *s, int64_t lo, int64_t hi, int min_n, int max_n,
                      int64_t *out, int *n);
/* "f32" | "f16" | "bf16" (case-insensitive). */
int ta_parse_float_dtype(const char *s, sdpa_dtype *out);
/* A K/V storage dtype: f32, f16, bf16, q8_0 or q4_0. */
int ta_parse_kv_dtype(const char *s, sdpa_dtype *out);
/* The K/V options sdpa-bench and sdpa-tune share: --kv-dtype T, --page-size
 * N (0 = contiguous K/V), --alibi, --sinks. With max_list > 1, --kv-dtype and
 * --page-size take comma lists of up to max_list values (at most
 * TA_KV_LIST_MAX), each checked like a single value (the message names the
 * bad element); with max_list 1 the whole value is one element. A repeated
 * flag replaces the earlier list. */
#define TA_KV_LIST_MAX 8
typedef struct ta_kv_opts {
    sdpa_dtype kv[TA_KV_LIST_MAX]; /* --kv-dtype values; nkv 0 = not given */
    int nkv;
    int page[TA_KV_LIST_MAX];      /* --page-size values; npage 0 = not given */
    int npage;
    int alibi, sinks;              /* --alibi, --sinks */
} ta_kv_opts;
/* 1 when the current argument is one of them (parsed into *o; errors through
 * ta_fail), else 0. */
int ta_kv_options(ta_args *a, ta_kv_opts *o, int max_list);
/* The same with single values into *kv, *page, *alibi, *sinks. */
int ta_kv_option(ta_args *a, sdpa_dtype *kv, int *page, int *alibi, int *sinks);

#endif /* SDPA_TOOLS_ARGS_H */
