/*
 * presets.c — the named problem shapes of sdpa-bench and sdpa-tune, the
 * --shape parser, and the memory check before a tool allocates (see
 * presets.h).
 *
 * Invariants: a preset row is one profile bucket of the tuner
 * (src/tune/bucket.c keys on kind, dtype, D, Dv, mask, log2 of Sq, Skv and
 * B*Hq), and both tools build the same problem from it (dtype and mask from
 * the row unless a flag overrides them), so a tuned preset is what the
 * benchmark of that name runs. Sizes are chosen to tune and measure in
 * seconds to minutes on a small machine. Called by sdpa-bench.c and
 * sdpa-tune.c.
 */
#include "presets.h"

#include "platform.h"

#include <string.h>
#include <unistd.h>

#include "args.h"

#define F32 SDPA_DTYPE_F32
#define F16 SDPA_DTYPE_F16

typedef struct tps_preset {
    const char *name;
    const char *about; /* what the rows stand for, one line */
    int n;
    tps_shape rows[4];
} tps_preset;

/* The presets, in --help order. */
static const tps_preset tps_presets[] = {
    {"llm-prefill", "LLM prompt prefill, causal, GQA in the second", 2,
     {{1, 8, 8, 512, 512, 64, 64, 1, F32}, {1, 8, 2, 1024, 1024, 128, 128, 1, F32}}},
    {"llm-decode", "one new token against a 1k/4k/16k KV cache, GQA 4:1", 3,
     {{1, 32, 8, 1, 1024, 128, 128, 0, F32},
      {1, 32, 8, 1, 4096, 128, 128, 0, F32},
      {1, 32, 8, 1, 16384, 128, 128, 0, F32}}},
    {"vit", "ViT-B/16 at 224 px, ViT-L/14 at 336 px", 2,
     {{1, 12, 12, 197, 197, 64, 64, 0, F32}, {1, 16, 16, 577, 577, 64, 64, 0, F32}}},
    {"mobile", "small on-device model in f16: a short prompt, then decode", 2,
     {{1, 4, 4, 256, 256, 64, 64, 0, F16}, {1, 8, 2, 1, 2048, 64, 64, 0, F16}}},
};
static const int tps_npresets = (int)(sizeof tps_presets / sizeof tps_presets[0]);

int tps_rows(const char *name, tps_shape *out, int max)
{
    int all = strcmp(name, "all") == 0, known = all, n = 0;
    for (int i = 0; i < tps_npresets; i++) {
        if (!all && strcmp(name, tps_presets[i].name) != 0)
            continue;
        known = 1;
        for (int r = 0; r < tps_presets[i].n; r++, n++)
            if (n < max)
                out[n] = tps_presets[i].rows[r];
    }
    return known ? n : -1;
}

const char *tps_names(void)
{
    static char names[256];
    size_t n = 0;
    for (int i = 0; i < tps_npresets && n < sizeof names; i++)
        n += (size_t)snprintf(names + n, sizeof names - n, "%s, ", tps_presets[i].name);
    if (n < sizeof names)
        snprintf(names + n, sizeof names - n, "all");
    return names;
}

void tps_describe(const tps_shape *s, char *buf, size_t cap)
{
    char h[48], q[64], d[48];
    if (s->Hq == s->Hkv)
        snprintf(h, sizeof h, "H%lld", (long long)s->Hq);
    else
        snprintf(h, sizeof h, "H%lld/%lld", (long long)s->Hq, (long long)s->Hkv);
    if (s->Sq == s->Skv)
        snprintf(q, sizeof q, "S%lld", (long long)s->Sq);
    else
        snprintf(q, sizeof q, "Sq%lld Skv%lld", (long long)s->Sq, (long long)s->Skv);
    if (s->D == s->Dv)
        snprintf(d, sizeof d, "D%lld", (long long)s->D);
    else
        snprintf(d, sizeof d, "D%lld Dv%lld", (long long)s->D, (long long)s->Dv);
    snprintf(buf, cap, "B%lld %s %s %s%s%s%s", (long long)s->B, h, q, d,
             s->causal ? " causal" : "", s->dtype != SDPA_DTYPE_NONE ? " " : "",
             s->dtype != SDPA_DTYPE_NONE ? sdpa_dtype_name(s->dtype) : "");
}

void tps_print_help(FILE *f, int indent, int with_all)
{
    for (int i = 0; i < tps_npresets; i++) {
        const tps_preset *p = &tps_presets[i];
        fprintf(f, "%*s%-12s %s:\n", indent, "", p->name, p->about);
        for (int r = 0; r < p->n; r++) {
            char d[256];
            tps_describe(&p->rows[r], d, sizeof d);
            fprintf(f, "%*s%-12s   %s\n", indent, "", "", d);
        }
    }
    if (with_all)
        fprintf(f, "%*s%-12s every preset above\n", indent, "", "all");
}

int tps_parse_shape(const char *val, tps_shape *s, char *err, size_t cap)
{
    int64_t v[8];
    int n = 0;
    if (!ta_parse_i64_list(val, 1, (int64_t)1 << 31, 6, 7, v, &n)) {
        snprintf(err, cap, "--shape: expected B,Hq,Hkv,Sq,Skv,D[,Dv] with positive integers, "
                           "got \"%s\"", val);
        return 0;
    }
    if (v[1] % v[2] != 0) {
        snprintf(err, cap, "--shape: Hq (%lld) must be a multiple of Hkv (%lld)",
                 (long long)v[1], (long long)v[2]);
        return 0;
    }
    *s = (tps_shape){v[0], v[1], v[2], v[3], v[4], v[5], n == 7 ? v[6] : v[5], 0,
                     SDPA_DTYPE_NONE};
    return 1;
}

double tps_bytes(const tps_shape *s, sdpa_dtype dt, int backward, int stats, int inputs_only)
{
    double e = (double)sdpa_dtype_size(dt), B = (double)s->B;
    double q = B * (double)s->Hq * (double)s->Sq * (double)s->D * e;
    double k = B * (double)s->Hkv * (double)s->Skv * (double)s->D * e;
    double v = B * (double)s->Hkv * (double)s->Skv * (double)s->Dv * e;
    double o = B * (double)s->Hq * (double)s->Sq * (double)s->Dv * e;
    if (inputs_only)
        return q + k + v + (backward ? o : 0); /* dout is an input of the backward */
    double n = q + k + v + o;
    if (backward)
        n += B * (double)s->Hq * (double)s->Sq * 4.0 /* lse */ + o + q + k + v;
    if (stats)
        n += B * (double)s->Hq * SDPA_STAT_COUNT * 4.0;
    return n;
}

double tps_physical_memory(void)
{
    return (double)sdpa__os_phys_mem();
}

int tps_fits(const tps_shape *s, double need, double have, const char *where, char *msg,
             size_t cap)
{
    if (!(have > 0) || need <= have)
        return 1;
    char d[256] = "the shapes together";
    if (s)
        tps_describe(s, d, sizeof d);
    snprintf(msg, cap, "%s needs %.1f GiB, more than the %.1f GiB of %s", d,
             need / 1073741824.0, have / 1073741824.0, where);
    return 0;
}

int tps_context_device(sdpa_context *ctx, sdpa_device_info *info)
{
    sdpa_backend_kind k = sdpa_context_backend(ctx);
    const char *name = sdpa_context_device_name(ctx);
    int n = 0;
    if (!name || sdpa_device_count(k, &n) != SDPA_OK)
        return 0;
    for (int i = 0; i < n; i++) {
        memset(info, 0, sizeof *info);
        info->struct_size = sizeof *info;
        if (sdpa_device_get_info(k, i, info) == SDPA_OK && strcmp(info->name, name) == 0)
            return 1;
    }
    return 0;
}

int tps_check_memory(const tps_shape *s, double host, double per_context,
                     sdpa_context *const *ctx, int n, char *msg, size_t cap)
{
    for (int i = 0; i < n; i++) {
        if (!ctx[i])
            continue;
        sdpa_device_info info;
        if (tps_context_device(ctx[i], &info) && info.is_gpu && info.global_mem_bytes > 0) {
            char where[300];
            snprintf(where, sizeof where, "device memory of %s", info.name);
            if (!tps_fits(s, per_context, (double)info.global_mem_bytes, where, msg, cap))
                return 0;
        } else {
            host += per_context; /* CPU devices (and PoCL, lavapipe) use host memory */
        }
    }
    return tps_fits(s, host, tps_physical_memory(), "physical memory on this machine", msg,
                    cap);
}
