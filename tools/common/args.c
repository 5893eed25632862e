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

/* Splits val into the elements of a comma list (the whole of val when max is
 * 1) and parses each with parse(element, tmp, k) into a scratch array of
 * elements of esz bytes, copied to out only when all parsed: 1 with *n set,
 * or 0 after ta_fail with `expected` and the bad element (out untouched). */
static int kv_list(ta_args *a, const char *flag, const char *expected, const char *val,
                   int max, int (*parse)(const char *, void *, int), size_t esz, void *out,
                   int *n)
{
    char buf[256];
    int64_t tmp[TA_KV_LIST_MAX * 2]; /* up to 16 bytes an element, aligned */
    int k = 0;
    if (strlen(val) >= sizeof buf || esz > 16) {
        ta_fail(a, "%s: expected %s, got \"%s\"", flag, expected, val);
        return 0;
    }
    strcpy(buf, val);
    for (char *p = buf;; k++) {
        char *comma = max > 1 ? strchr(p, ',') : NULL;
        if (comma)
            *comma = '\0';
        if (k >= max) {
            ta_fail(a, "%s: at most %d values, got \"%s\"", flag, max, val);
            return 0;
        }
        if (!parse(p, tmp, k)) {
            ta_fail(a, "%s: expected %s, got \"%s\"", flag, expected, p);
            return 0;
        }
        if (!comma)
            break;
        p = comma + 1;
    }
    memcpy(out, tmp, (size_t)(k + 1) * esz);
    *n = k + 1;
    return 1;
}

static int kv_dtype_elem(const char *s, void *out, int k)
{
    return ta_parse_kv_dtype(s, (sdpa_dtype *)out + k);
}

static int page_elem(const char *s, void *out, int k)
{
    return ta_parse_int(s, 0, 1 << 20, (int *)out + k);
}

int ta_kv_options(ta_args *a, ta_kv_opts *o, int max_list)
{
    const char *val;
    if (max_list > TA_KV_LIST_MAX)
        max_list = TA_KV_LIST_MAX;
    if (max_list < 1)
        max_list = 1;
    if (ta_value(a, "--kv-dtype", &val)) {
        if (val)
            kv_list(a, "--kv-dtype", "f32, f16, bf16, q8_0 or q4_0", val, max_list,
                    kv_dtype_elem, sizeof o->kv[0], o->kv, &o->nkv);
    } else if (ta_value(a, "--page-size", &val)) {
        if (val)
            kv_list(a, "--page-size", "an integer in [0, 1048576] (0 = contiguous)", val,
                    max_list, page_elem, sizeof o->page[0], o->page, &o->npage);
    } else if (ta_flag(a, "--alibi")) {
        o->alibi = 1;
    } else if (ta_flag(a, "--sinks")) {
        o->sinks = 1;
    } else {
        return 0;
    }
    return 1;
}

int ta_kv_option(ta_args *a, sdpa_dtype *kv, int *page, int *alibi, int *sinks)
{
    ta_kv_opts o;
    memset(&o, 0, sizeof o);
    if (!ta_kv_options(a, &o, 1))
        return 0;
    if (o.nkv)
        *kv = o.kv[0];
    if (o.npage)
        *page = o.page[0];
    *alibi |= o.alibi;
    *sinks |= o.sinks;
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
