/*
 * lab_common.c — shared plumbing of sdpa-lab (see lab_common.h): global
 * flags, usage errors, opening the context, reporting library failures, and
 * JSON/number formatting. Called by sdpa-lab.c and every lab_*.c subcommand.
 * Invariant: nothing here prints to stdout except the JSON helpers, so a
 * subcommand's --json output stays one clean document.
 */
#include "lab_common.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "plot.h"

int lab_global_flag(lab_env *env, ta_args *a)
{
    const char *val;
    if (a->positional)
        return LAB_FLAG_NO;
    if (ta_flag(a, "--help") || ta_flag(a, "-h"))
        return LAB_FLAG_HELP;
    if (ta_flag(a, "--json")) {
        env->json = 1;
        return LAB_FLAG_DONE;
    }
    if (ta_value(a, "--backend", &val)) {
        if (val && sdpa_backend_parse(val, &env->backend) != SDPA_OK)
            ta_fail(a, "unknown backend '%s' (auto, reference, cpu, opencl, vulkan)",
                    val);
        env->backend_set = 1;
        return LAB_FLAG_DONE;
    }
    if (ta_value(a, "--seed", &val)) {
        int64_t s;
        if (val && !ta_parse_i64(val, 0, INT64_MAX, &s))
            ta_fail(a, "--seed wants a non-negative integer, not '%s'", val);
        else if (val)
            env->seed = (uint64_t)s;
        return LAB_FLAG_DONE;
    }
    if (ta_value(a, "--plot", &val)) {
        char err[300];
        if (val && !*val)
            ta_fail(a, "--plot wants a file name");
        else if (val && !tp_svg_path_check(val, err, sizeof err))
            ta_fail(a, "--plot: %s", err);
        env->plot = val;
        return LAB_FLAG_DONE;
    }
    return LAB_FLAG_NO;
}

int lab_usage_error(const lab_env *env, const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "%s%s%s: ", env->prog, env->cmd ? " " : "",
            env->cmd ? env->cmd : "");
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\nTry '%s%s%s --help'.\n", env->prog, env->cmd ? " " : "",
            env->cmd ? env->cmd : "");
    return LAB_EXIT_USAGE;
}

void lab_unknown_arg(ta_args *a)
{
    if (a->positional)
        ta_fail(a, "unexpected argument '%s'", a->arg);
    else
        ta_fail(a, "unknown option '%s'", a->arg);
}

int lab_open(lab_env *env)
{
    sdpa_context_options o;
    sdpa_context_options_init(&o);
    if (env->backend_set) {
        o.backend = env->backend;
    } else {
        const char *e = getenv("SDPA_BACKEND");
        if (e && *e)
            o.backend = SDPA_BACKEND_DEFAULT;
        else if (sdpa_backend_compiled(SDPA_BACKEND_CPU))
            o.backend = SDPA_BACKEND_CPU;
        else
            o.backend = SDPA_BACKEND_REFERENCE;
    }
    sdpa_status st = sdpa_context_create(&o, &env->ctx);
    if (st != SDPA_OK) {
        fprintf(stderr, "%s %s: cannot open backend %s: %s\n", env->prog,
                env->cmd ? env->cmd : "", sdpa_backend_name(o.backend),
                sdpa_status_string(st));
        env->ctx = NULL;
        return LAB_EXIT_FAIL;
    }
    return LAB_EXIT_OK;
}

void lab_close(lab_env *env)
{
    sdpa_context_destroy(env->ctx);
    env->ctx = NULL;
}

int lab_failed(const lab_env *env, sdpa_status st, const char *what)
{
    if (st == SDPA_OK)
        return 0;
    sdpa_error_info info;
    const char *msg = "";
    if (env->ctx && sdpa_context_last_error(env->ctx, &info) == SDPA_OK && info.message)
        msg = info.message;
    fprintf(stderr, "%s %s: %s: %s%s%s\n", env->prog, env->cmd ? env->cmd : "", what,
            sdpa_status_string(st), *msg ? ": " : "", msg);
    return 1;
}

int lab_parse_double_list(const char *s, double lo, double hi, int max_n,
                          double *out, int *n)
{
    int k = 0;
    if (!s || !*s)
        return 0;
    const char *p = s;
    for (;;) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        char buf[64];
        double v;
        if (len == 0 || len >= sizeof buf || k >= max_n)
            return 0;
        memcpy(buf, p, len);
        buf[len] = '\0';
        if (!ta_parse_double(buf, &v) || v < lo || v > hi)
            return 0;
        out[k++] = v;
        if (!comma)
            break;
        p = comma + 1;
    }
    *n = k;
    return 1;
}

void lab_json_num(FILE *f, double v)
{
    if (isfinite(v))
        fprintf(f, "%.9g", v);
    else
        fputs("null", f);
}

void lab_json_str(FILE *f, const char *s)
{
    fputc('"', f);
    for (; s && *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            fprintf(f, "\\%c", c);
        else if (c < 0x20)
            fprintf(f, "\\u%04x", c);
        else
            fputc(c, f);
    }
    fputc('"', f);
}

void lab_json_env(FILE *f, const lab_env *env)
{
    fputs("\"backend\":", f);
    lab_json_str(f, env->ctx ? sdpa_backend_name(sdpa_context_backend(env->ctx)) : "");
    fputs(",\"device\":", f);
    lab_json_str(f, env->ctx ? sdpa_context_device_name(env->ctx) : "");
    fprintf(f, ",\"seed\":%llu", (unsigned long long)env->seed);
}

const char *lab_fmt(char *buf, size_t cap, double v, int prec)
{
    double a = fabs(v);
    if (!isfinite(v))
        snprintf(buf, cap, "%s", isnan(v) ? "nan" : (v > 0 ? "inf" : "-inf"));
    else if (v != 0 && (a < 1e-3 || a >= 1e6))
        snprintf(buf, cap, "%.*e", prec > 1 ? prec - 1 : 0, v);
    else
        snprintf(buf, cap, "%.*f", prec, v);
    return buf;
}

double lab_mean(const double *x, int n)
{
    double s = 0;
    for (int i = 0; i < n; i++)
        s += x[i];
    return n > 0 ? s / n : 0;
}

sdpa_status lab_forward_stats(lab_env *env, float *q, float *k, float *v, int64_t B,
                      int64_t H, int64_t Sq, int64_t Skv, int64_t D, int64_t Dv,
                      double scale, float *out, float *stats)
{
    sdpa_attention_desc d;
    sdpa_attention_desc_init(&d);
    d.scale = scale;
    d.tensors.q = sdpa_tensor_host(q, SDPA_DTYPE_F32, B, H, Sq, D);
    d.tensors.k = sdpa_tensor_host(k, SDPA_DTYPE_F32, B, H, Skv, D);
    d.tensors.v = sdpa_tensor_host(v, SDPA_DTYPE_F32, B, H, Skv, Dv);
    d.tensors.out = sdpa_tensor_host(out, SDPA_DTYPE_F32, B, H, Sq, Dv);
    d.tensors.stats = sdpa_tensor_host(stats, SDPA_DTYPE_F32, B, H, 1, SDPA_STAT_COUNT);
    return sdpa_attention_forward(env->ctx, &d);
}

void lab_fill_normal(tu_rng *r, float *x, size_t n, double sigma)
{
    for (size_t i = 0; i < n; i++)
        x[i] = (float)(sigma * tu_rng_normal(r));
}

int lab_parse_int_opts(lab_env *env, int argc, char **argv, void (*help)(void),
                       const lab_int_opt *opts, int n, int *rc)
{
    *rc = LAB_EXIT_OK;
    ta_args a;
    ta_init(&a, argc, argv);
    while (ta_next(&a) && !a.error) {
        const char *v;
        int g = lab_global_flag(env, &a), hit = 0;
        if (g == LAB_FLAG_HELP) {
            help();
            return 0;
        }
        if (g == LAB_FLAG_DONE)
            continue;
        for (int i = 0; i < n && !hit; i++)
            if (ta_value(&a, opts[i].name, &v)) {
                hit = 1;
                if (v && !ta_parse_int(v, opts[i].lo, opts[i].hi, opts[i].value))
                    ta_fail(&a, "%s wants an integer in [%d, %d], not '%s'", opts[i].name,
                            opts[i].lo, opts[i].hi, v);
            }
        if (!hit)
            lab_unknown_arg(&a);
    }
    if (a.error) {
        *rc = lab_usage_error(env, "%s", a.message);
        return 0;
    }
    return 1;
}
