/*
 * cl_plan.c — what the OpenCL backend supports, how it picks its tile
 * configuration, and the plan's program, kernels and workspace.
 *
 * Configuration: each field of options->tile that is not SDPA_AUTO is used as
 * given (checked against the device's limits); the rest come from the
 * device: on CPU devices and devices whose local memory is emulated (PoCL)
 * each work-item owns a query row with its accumulators in registers and
 * K/V are read straight from (cached) global memory; on GPUs a work-group of
 * 64 rows stages K/V tiles in local memory. Split-KV is chosen for
 * decode-like shapes (few query rows, long key range) when no statistics are
 * requested.
 * Everything a call needs is allocated here (packed q/k/v, per-row stats,
 * split partials, backward temporaries), so forward/backward allocate
 * nothing. Programs belong to the context's cache; kernels and workspace to
 * the plan. Called through the backend table (cl_backend.c).
 */
#include "cl_internal.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_HEAD 256

sdpa_status sdpa__cl_supports(sdpa_context *ctx, const sdpa__problem *p,
                              unsigned plan_flags)
{
    (void)plan_flags;
    if (p->dtype != SDPA_DTYPE_F32 && p->dtype != SDPA_DTYPE_F16 &&
        p->dtype != SDPA_DTYPE_BF16)
        return SDPA__FAIL(ctx, SDPA_ERR_UNSUPPORTED, "opencl: storage dtype %s",
                          sdpa_dtype_name(p->dtype));
    if (p->D > MAX_HEAD || p->Dv > MAX_HEAD)
        return SDPA__FAIL(ctx, SDPA_ERR_UNSUPPORTED,
                          "opencl: head size %lld/%lld above %d",
                          (long long)p->D, (long long)p->Dv, MAX_HEAD);
    if (p->Sq > (1 << 30) || p->Skv > (1 << 30) || p->B * p->Hq > (1 << 30))
        return SDPA__FAIL(ctx, SDPA_ERR_UNSUPPORTED, "opencl: sequence or batch too long");
    return SDPA_OK;
}

static int pow2_divisor(int64_t n, int cap)
{
    int v = 1;
    while (v * 2 <= cap && n % (v * 2) == 0) v *= 2;
    return v;
}

static bool is_pow2_in(int v, int lo, int hi)
{
    return v >= lo && v <= hi && (v & (v - 1)) == 0;
}

static sdpa_status ws_alloc(sdpa_context *ctx, sdpa__cl_state *st, sdpa__cl_plan *pl,
                            cl_mem *m, int64_t floats, const char *what)
{
    size_t bytes;
    if (floats <= 0) return SDPA_OK;
    if (!sdpa__mul_size((size_t)floats, sizeof(float), &bytes) ||
        (st->props.max_alloc && bytes > st->props.max_alloc))
        return SDPA__FAIL(ctx, SDPA_ERR_OUT_OF_MEMORY,
                          "opencl: workspace %s of %lld floats exceeds the device's "
                          "largest allocation", what, (long long)floats);
    cl_int err;
    *m = clCreateBuffer(st->context, CL_MEM_READ_WRITE, bytes, NULL, &err);
    if (err != CL_SUCCESS) return sdpa__cl_fail(ctx, err, what, __FILE__, __LINE__);
    pl->ws_bytes += bytes;
    return SDPA_OK;
}

/* Reads the forced fields of the tile config (SDPA_AUTO = default). */
static sdpa_status choose_config(sdpa_context *ctx, const sdpa__cl_state *st,
                                 const sdpa__problem *p, const sdpa_tile_config *t,
                                 sdpa__cl_plan *pl, bool *forced)
{
    const sdpa__cl_props *d = &st->props;
    bool gpu_style = d->is_gpu && d->local_mem_is_local;
    /* CPU-style defaults: rows per work-item by head size so the output
     * accumulators (rows x Dv floats) stay in 32 vector registers. */
    int rpw = gpu_style ? 1 : (p->Dv <= 64 ? 4 : (p->Dv <= 128 ? 2 : 1));
    int wg = gpu_style ? 64 : 8, kt = gpu_style ? 8 : (rpw >= 2 ? 32 : 64);
    int stage = gpu_style ? 1 : 0;
    int vec = gpu_style ? 4 : 16, split = SDPA_AUTO;
    *forced = false;
    if (t && t->struct_size >= offsetof(sdpa_tile_config, unfused) + sizeof(int)) {
        if (t->unfused == 1)
            return SDPA__FAIL(ctx, SDPA_ERR_UNSUPPORTED,
                              "opencl: tile.unfused: the unfused (CLBlast) path is not "
                              "built into this backend");
        if (t->wg_size != SDPA_AUTO) wg = t->wg_size, *forced = true;
        if (t->q_tile != SDPA_AUTO) {
            *forced = true;
            if (t->wg_size == SDPA_AUTO && (t->q_tile % wg != 0 || t->q_tile / wg > 4))
                wg = t->q_tile; /* one row per work-item */
            if (t->q_tile % wg != 0 || (t->q_tile / wg != 1 && t->q_tile / wg != 2 &&
                                        t->q_tile / wg != 4))
                return SDPA__FAIL(ctx, SDPA_ERR_UNSUPPORTED,
                                  "opencl: tile.q_tile %d must be 1, 2 or 4 times "
                                  "tile.wg_size %d", t->q_tile, wg);
            rpw = t->q_tile / wg;
        } else if (t->wg_size != SDPA_AUTO) {
            rpw = 1;
        }
        if (t->k_tile != SDPA_AUTO) kt = t->k_tile, *forced = true;
        if (t->vec_width != SDPA_AUTO) vec = t->vec_width, *forced = true;
        if (t->stage_kv != SDPA_AUTO) stage = t->stage_kv, *forced = true;
        if (t->split_kv != SDPA_AUTO) split = t->split_kv, *forced = true;
    }
    if (wg < 1 || (size_t)wg > d->max_wg)
        return SDPA__FAIL(ctx, SDPA_ERR_UNSUPPORTED, "opencl: tile.wg_size %d outside 1..%zu",
                          wg, d->max_wg);
    if (!is_pow2_in(kt, 2, 64))
        return SDPA__FAIL(ctx, SDPA_ERR_UNSUPPORTED,
                          "opencl: tile.k_tile %d (must be 2, 4, 8, 16, 32 or 64)", kt);
    if (!is_pow2_in(vec, 1, 16))
        return SDPA__FAIL(ctx, SDPA_ERR_UNSUPPORTED,
                          "opencl: tile.vec_width %d (must be 1, 2, 4, 8 or 16)", vec);
    if (stage != 0 && stage != 1)
        return SDPA__FAIL(ctx, SDPA_ERR_UNSUPPORTED, "opencl: tile.stage_kv %d", stage);
    if (split != SDPA_AUTO && (split < 1 || split > 256))
        return SDPA__FAIL(ctx, SDPA_ERR_UNSUPPORTED, "opencl: tile.split_kv %d outside 1..256",
                          split);
    if (stage) {
        uint64_t need = (uint64_t)(p->D * kt + kt * p->Dv) * sizeof(float);
        if (need > d->local_mem)
            return SDPA__FAIL(ctx, SDPA_ERR_UNSUPPORTED,
                              "opencl: staged K/V tile needs %llu bytes of local memory, "
                              "device has %llu", (unsigned long long)need,
                              (unsigned long long)d->local_mem);
    }
    pl->wg = wg;
    pl->rpw = rpw;
    pl->kt = kt;
    pl->stage_kv = stage;
    pl->ov = pow2_divisor(p->Dv, vec);
    pl->qv = pow2_divisor(p->D, vec);
    /* Split-KV for decode-like shapes: enough groups to fill the device. */
    int64_t rows = (int64_t)wg * rpw;
    int64_t groups = p->B * p->Hkv * ((p->Hq / p->Hkv * p->Sq + rows - 1) / rows);
    int64_t want = (int64_t)(d->compute_units > 0 ? d->compute_units : 1) * (gpu_style ? 8 : 4);
    int nsplit = 1;
    if (split != SDPA_AUTO) nsplit = split;
    else if (groups < want && p->Skv >= 512)
        nsplit = (int)((want + groups - 1) / groups);
    if (p->has_stats) nsplit = 1; /* statistics need whole rows */
    int64_t chunk = (p->Skv + nsplit - 1) / nsplit;
    if (nsplit > 1 && chunk < 64) chunk = 64;
    chunk = (chunk + kt - 1) / kt * kt;
    if (nsplit > 1) nsplit = (int)((p->Skv + chunk - 1) / chunk);
    if (nsplit < 1) nsplit = 1;
    pl->nsplit = nsplit;
    pl->chunk = (int)chunk;
    return SDPA_OK;
}

sdpa_status sdpa__cl_plan_create(sdpa_context *ctx, const sdpa__problem *p,
                                 const sdpa_plan_options *options, void **plan_state)
{
    sdpa__cl_state *st = sdpa__context_backend_state(ctx);
    *plan_state = NULL;
    SDPA__TRY(sdpa__cl_supports(ctx, p, options ? options->flags : 0));
    sdpa__cl_plan *pl = calloc(1, sizeof *pl);
    if (!pl) return SDPA__FAIL(ctx, SDPA_ERR_OUT_OF_MEMORY, "opencl: plan");
    bool forced = false;
    sdpa_status s = choose_config(ctx, st, p, options ? options->tile : NULL, pl, &forced);
    if (s != SDPA_OK) goto fail;
    pl->backward = options && (options->flags & SDPA_PLAN_BACKWARD);
    /* Padded lengths: a multiple of 64 so no tile reads past the end, plus 16
     * so the rows of feature-major arrays are not 4 KiB apart (which would
     * map a whole tile onto a few L1 sets on CPUs). */
    pl->SqP = (int)((p->Sq + 63) / 64 * 64 + 16);
    pl->SkvP = (int)((p->Skv + 63) / 64 * 64 + 16);
    pl->SkvT = (int)((p->Skv + 63) / 64 * 64);

    char opts[512];
    int n = snprintf(opts, sizeof opts,
                     "-DSTORE_DT=%d -DHD=%d -DHDV=%d -DWG=%d -DRPW=%d -DKT=%d -DOV=%d -DQV=%d "
                     "-DSTAGE_KV=%d -DHAS_MASK=%d -DHAS_BIAS=%d -DHAS_SOFTCAP=%d "
                     "-DHAS_STATS=%d",
                     (int)p->dtype, (int)p->D, (int)p->Dv, pl->wg, pl->rpw, pl->kt, pl->ov, pl->qv,
                     pl->stage_kv, p->has_mask, p->has_bias, p->softcap > 0,
                     p->has_stats);
    if (pl->backward)
        snprintf(opts + n, sizeof opts - (size_t)n, " -DNORM=%d", (int)p->qk_norm);
    static const char *const files[] = {"pack.cl", "fwd.cl", "combine.cl", "stats.cl",
                                        "bwd.cl"};
    s = sdpa__cl_program(ctx, st, files, pl->backward ? 5 : 4, opts, &pl->program);
    if (s != SDPA_OK) goto fail;

    struct { cl_kernel *k; const char *name; bool want; } ks[] = {
        {&pl->k_pack, "sdpa_pack", true},      {&pl->k_fwd, "sdpa_fwd", true},
        {&pl->k_combine, "sdpa_combine", true}, {&pl->k_stats, "sdpa_stats", true},
        {&pl->k_prep, "sdpa_bwd_prep", pl->backward},
        {&pl->k_dq, "sdpa_bwd_dq", pl->backward},
        {&pl->k_dkdv, "sdpa_bwd_dkdv", pl->backward},
        {&pl->k_reduce, "sdpa_reduce_cols", pl->backward},
    };
    for (size_t i = 0; i < sizeof ks / sizeof ks[0]; i++) {
        if (!ks[i].want) continue;
        cl_int err;
        *ks[i].k = clCreateKernel(pl->program, ks[i].name, &err);
        if (err != CL_SUCCESS) {
            s = sdpa__cl_fail(ctx, err, "clCreateKernel", __FILE__, __LINE__);
            goto fail;
        }
    }

    /* Workspace. */
    int64_t BHq = p->B * p->Hq, BHkv = p->B * p->Hkv;
    int64_t R = BHq * p->Sq;
#define WS(m, n, what)                                          \
    do {                                                        \
        s = ws_alloc(ctx, st, pl, &pl->m, (n), what);           \
        if (s != SDPA_OK) goto fail;                            \
    } while (0)
    WS(ws_q, BHq * pl->SqP * p->D, "packed q");
    WS(ws_kt, BHkv * pl->SkvP * p->D, "packed k");
    WS(ws_v, BHkv * pl->SkvP * p->Dv, "packed v");
    if (p->has_stats) WS(ws_rowstats, R * 10, "row statistics");
    if (pl->nsplit > 1) {
        WS(ws_part_o, (int64_t)pl->nsplit * R * p->Dv, "split partial outputs");
        WS(ws_part_l, (int64_t)pl->nsplit * R, "split partial lse");
    }
    if (pl->backward) {
        WS(ws_qt, BHq * pl->SqP * p->D, "packed q^T");
        WS(ws_kp, BHkv * pl->SkvP * p->D, "packed k rows");
        WS(ws_vt, BHkv * pl->SkvP * p->Dv, "packed v^T");
        WS(ws_dop, BHq * pl->SqP * p->Dv, "packed dout");
        WS(ws_dot, BHq * pl->SqP * p->Dv, "packed dout^T");
        WS(ws_l, BHq * pl->SqP, "lse copy");
        WS(ws_dsum, BHq * pl->SqP, "rowsum(dout*out)");
        if (p->has_q_gain) WS(ws_gq, R * p->D, "q gain partials");
        if (p->has_k_gain) WS(ws_gk, BHkv * p->Skv * p->D, "k gain partials");
        if (p->has_temperature) WS(ws_tp, R, "temperature partials");
    }
#undef WS
    snprintf(pl->config, sizeof pl->config,
             "wg_size=%d q_tile=%d k_tile=%d vec_width=%d stage_kv=%d split_kv=%d",
             pl->wg, pl->wg * pl->rpw, pl->kt, pl->ov, pl->stage_kv, pl->nsplit);
    sdpa__strlcpy(pl->source, forced ? "forced" : "default", sizeof pl->source);
    sdpa__log(ctx, SDPA_LOG_DEBUG, "opencl: plan %s (%s), workspace %zu bytes", pl->config,
              pl->source, pl->ws_bytes);
    *plan_state = pl;
    return SDPA_OK;
fail:
    sdpa__cl_plan_free(ctx, pl);
    return s;
}

void sdpa__cl_plan_free(sdpa_context *ctx, void *plan_state)
{
    (void)ctx;
    sdpa__cl_plan *pl = plan_state;
    if (!pl) return;
    cl_kernel ks[] = {pl->k_pack, pl->k_fwd, pl->k_combine, pl->k_stats,
                      pl->k_prep, pl->k_dq, pl->k_dkdv, pl->k_reduce};
    for (size_t i = 0; i < sizeof ks / sizeof ks[0]; i++)
        if (ks[i]) clReleaseKernel(ks[i]);
    cl_mem ms[] = {pl->ws_q, pl->ws_kt, pl->ws_v, pl->ws_rowstats, pl->ws_part_o,
                   pl->ws_part_l, pl->ws_qt, pl->ws_kp, pl->ws_vt, pl->ws_dop,
                   pl->ws_dot, pl->ws_l, pl->ws_dsum, pl->ws_gq, pl->ws_gk, pl->ws_tp};
    for (size_t i = 0; i < sizeof ms / sizeof ms[0]; i++)
        if (ms[i]) clReleaseMemObject(ms[i]);
    free(pl);
}

size_t sdpa__cl_plan_workspace(const void *plan_state)
{
    const sdpa__cl_plan *pl = plan_state;
    return pl ? pl->ws_bytes : 0;
}

void sdpa__cl_plan_describe(const void *plan_state, sdpa_plan_info *info)
{
    const sdpa__cl_plan *pl = plan_state;
    sdpa__strlcpy(info->kernel, pl->nsplit > 1 ? "decode" : "fused", sizeof info->kernel);
    sdpa__strlcpy(info->config, pl->config, sizeof info->config);
    sdpa__strlcpy(info->source, pl->source, sizeof info->source);
}
