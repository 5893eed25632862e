/*
 * args.c — GNU-style flag walking and strict number parsing for the tools
 * (see args.h). Keeps no global state; a ta_args is one pass over argv.
 * Invariant: a parse function either fills its output and returns 1, or leaves
 * it untouched and returns 0. Called by the main() of every tool.
 */
#include "args.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

void ta_init(ta_args *a, int argc, char **argv)
{
    memset(a, 0, sizeof *a);
    a->argc = argc;
    a->argv = argv;
    a->i = 0;
}

int ta_next(ta_args *a)
{
    for (;;) {
        a->i++;
        if (a->i >= a->argc)
            return 0;
        a->arg = a->argv[a->i];
        if (!a->after_dashdash && strcmp(a->arg, "--") == 0) {
            a->after_dashdash = 1;
            continue;
        }
        a->positional = a->after_dashdash || a->arg[0] != '-' || a->arg[1] == '\0';
        return 1;
    }
}

void ta_fail(ta_args *a, const char *fmt, ...)
{
    if (a->error)
        return;
    a->error = 1;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(a->message, sizeof a->message, fmt, ap);
    va_end(ap);
}

int ta_flag(ta_args *a, const char *name)
{
    if (a->positional)
        return 0;
    size_t n = strlen(name);
    if (strncmp(a->arg, name, n) != 0)
        return 0;
    if (a->arg[n] == '\0')
        return 1;
    if (a->arg[n] == '=') {
        ta_fail(a, "%s takes no value", name);
        return 1;
    }
    return 0;
}

int ta_value(ta_args *a, const char *name, const char **value)
{
    *value = NULL;
    if (a->positional)
        return 0;
    size_t n = strlen(name);
    if (strncmp(a->arg, name, n) != 0)
        return 0;
    if (a->arg[n] == '=') {
        *value = a->arg + n + 1;
        return 1;
    }
    if (a->arg[n] != '\0')
        return 0;
    if (a->i + 1 >= a->argc) {
        ta_fail(a, "%s needs a value", name);
        return 1;
    }
    a->i++;
    *value = a->argv[a->i];
    return 1;
}

int ta_parse_i64(const char *s, int64_t lo, int64_t hi, int64_t *out)
{
    if (!s || !*s || isspace((unsigned char)*s))
        return 0;
    errno = 0;
    char *end = NULL;
    long long v = strtoll(s, &end, 10);
    if (errno || *end != '\0' || v < lo || v > hi)
        return 0;
    *out = (int64_t)v;
    return 1;
}

int ta_parse_int(const char *s, int lo, int hi, int *out)
{
    int64_t v;
    if (!ta_parse_i64(s, lo, hi, &v))
        return 0;
    *out = (int)v;
    return 1;
}

int ta_parse_double(const char *s, double *out)
{
    if (!s || !*s || isspace((unsigned char)*s))
        return 0;
    errno = 0;
    char *end = NULL;
    double v = strtod(s, &end);
    if (errno || *end != '\0' || !isfinite(v))
        return 0;
    *out = v;
    return 1;
}

int ta_parse_i64_list(const char *s, int64_t lo, int64_t hi, int min_n, int max_n,
                      int64_t *out, int *n)
{
    int64_t tmp[32];
    int k = 0;
    if (!s || max_n > 32)
        return 0;
    const char *p = s;
    for (;;) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        char buf[32];
        if (len == 0 || len >= sizeof buf || k >= max_n)
            return 0;
        memcpy(buf, p, len);
        buf[len] = '\0';
        if (!ta_parse_i64(buf, lo, hi, &tmp[k]))
            return 0;
        k++;
        if (!comma)
            break;
        p = comma + 1;
    }
    if (k < min_n)
        return 0;
    memcpy(out, tmp, (size_t)k * sizeof *out);
    *n = k;
    return 1;
}

int ta_parse_kv_dtype(const char *s, sdpa_dtype *out)
{
    if (s && strcasecmp(s, "q8_0") == 0)
        *out = SDPA_DTYPE_Q8_0;
    else if (s && strcasecmp(s, "q4_0") == 0)
        *out = SDPA_DTYPE_Q4_0;
    else
        return ta_parse_float_dtype(s, out);
    return 1;
}

int ta_kv_option(ta_args *a, sdpa_dtype *kv, int *page, int *alibi, int *sinks)
{
    const char *val;
    if (ta_value(a, "--kv-dtype", &val)) {
        if (val && !ta_parse_kv_dtype(val, kv))
            ta_fail(a, "--kv-dtype: expected f32, f16, bf16, q8_0 or q4_0, got \"%s\"", val);
    } else if (ta_value(a, "--page-size", &val)) {
        if (val && !ta_parse_int(val, 1, 1 << 20, page))
            ta_fail(a, "--page-size: expected an integer in [1, 1048576], got \"%s\"", val);
    } else if (ta_flag(a, "--alibi")) {
        *alibi = 1;
    } else if (ta_flag(a, "--sinks")) {
        *sinks = 1;
    } else {
        return 0;
    }
    return 1;
}

int ta_parse_float_dtype(const char *s, sdpa_dtype *out)
{
    if (!s)
        return 0;
    if (strcasecmp(s, "f32") == 0 || strcasecmp(s, "float32") == 0)
        *out = SDPA_DTYPE_F32;
    else if (strcasecmp(s, "f16") == 0 || strcasecmp(s, "float16") == 0)
        *out = SDPA_DTYPE_F16;
    else if (strcasecmp(s, "bf16") == 0 || strcasecmp(s, "bfloat16") == 0)
        *out = SDPA_DTYPE_BF16;
    else
        return 0;
    return 1;
}
