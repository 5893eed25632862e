/*
 * cl_plan.c — what the OpenCL backend supports, how it picks its tile
 * configuration, and the plan's program, kernels and workspace.
 *
 * Configuration: options->tile is the complete configuration the front end
 * resolved (src/core/plan.c) and sdpa__cl_default_tile made. When it equals
 * what sdpa__cl_default_tile gives for the problem it is the default, fitted
 * to the device's limits (adapt_defaults: work-group, local memory, and the
 * per-kernel limits the built kernels report, which rebuild the plan:
 * kernels_fit / fit_plan; sdpa__cl_plan_shrink steps down once more when a
 * launch is refused for resources); any other configuration (forced, or a
 * profile's) is used as given, checked against the device's limits and
 * refused beyond them. What the default takes comes from the device: on CPU
 * devices and devices whose local memory is emulated (PoCL)
 * each work-item owns a query row with its accumulators in registers and
 * K/V are read straight from (cached) global memory; on GPUs a work-group of
 * 64 rows stages K/V tiles in local memory. Split-KV is chosen for
 * decode-like shapes (few query rows, long key range) when no statistics are
 * requested. Decode shapes without QK-norm, statistics or a tile forcing
 * another configuration take the direct path (direct_kv: decode.cl reads
 * K/V in place, no packed K/V workspace; see direct_plan; GPU-class devices
 * take decode_gpu.cl instead, gdec_plan). Backward plans on GPU-class
 * devices take bwd_fa2.cl's dQ and dK/dV kernels (fa2_plan) unless they
 * need QK-norm, gain or temperature gradients.
 * tile.unfused = 1 selects the materialised-scores path (cl_unfused.c; forward
 * only, CLBlast builds only, within options->workspace_limit).
 * Tuning slots: sdpa__cl_default_tile returns the complete configuration
 * plan_create uses without a tile; sdpa__cl_tile_candidates the pruned
 * search space (choose_config in quiet mode decides what the device takes).
 * Everything a call needs is allocated here (packed q/k/v, per-row stats,
 * split partials, backward temporaries), so forward/backward allocate
 * nothing. Programs belong to the context's cache; kernels and workspace to
 * the plan. Called through the backend table (cl_backend.c).
 */
#include "cl_internal.h"

#include "cl_forward.h"
#include "cl_gemm.h"
#include "sdpa_opencl.h"
#include "tile.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_HEAD 256

sdpa_status sdpa__cl_supports(sdpa_context *ctx, void *state, const sdpa__problem *p,
                              unsigned plan_flags)
{
    (void)state;
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
    /* K/V read in place (kv_access.cl) are used as stored: the k side of a
     * QK-norm (pack.cl's) has no in-place form, and the backward packs K/V
     * in q's dtype only. */
    if (sdpa__cl_kv_in_place(p) && p->qk_norm != SDPA_QK_NORM_NONE)
        return SDPA__FAIL(ctx, SDPA_ERR_UNSUPPORTED,
                          "opencl: QK-norm with K/V read in place (K/V dtype %s with q %s%s)",
                          sdpa_dtype_name(sdpa__cl_kv_dtype(p)), sdpa_dtype_name(p->dtype),
                          p->has_block_table ? ", paged" : "");
    if (sdpa__cl_kv_dtype(p) != p->dtype && (plan_flags & SDPA_PLAN_BACKWARD))
        return SDPA__FAIL(ctx, SDPA_ERR_UNSUPPORTED,
                          "opencl: the backward with a K/V dtype (%s) other than q's (%s)",
                          sdpa_dtype_name(sdpa__cl_kv_dtype(p)), sdpa_dtype_name(p->dtype));
    return SDPA_OK;
}

static int pow2_divisor(int64_t n, int cap)
{
    int v = 1;
    while (v * 2 <= cap && n % (v * 2) == 0) v *= 2;
    return v;
}

/* The OpenCL backend's tile parameters (checked by the front end,
 * src/core/tile_check.c). Device limits (tile.wg_size against the device's
 * work-group size, q_tile as 1, 2 or 4 rows per work-item, local memory, the
 * number of CLBlast parameter sets) are checked by choose_config below; the
 * defaults depend on the device (CPU- or GPU-style) and the problem. */
const sdpa__tile_param_info sdpa__cl_tile_params[SDPA__CL_TILE_PARAMS] = {
    {SDPA_TILE_Q_TILE, NULL, "query rows per work-group: wg_size x 1, 2 or 4 rows per "
     "work-item", 1, 4 * 8192, 0, false, SDPA_AUTO, false},
    {SDPA_TILE_K_TILE, NULL, "keys per inner tile", 2, 64, 0, true, SDPA_AUTO, false},
    {SDPA_TILE_WG_SIZE, NULL, "work-items per work-group", 1, 8192, 0, false, SDPA_AUTO, false},
    {SDPA_TILE_VEC_WIDTH, NULL, "vector width of the inner loops", 1, 16, 0, true, SDPA_AUTO,
     false},
    {SDPA_TILE_STAGE_KV, NULL, "1 = stage K/V tiles in local memory", 0, 1, 0, false,
     SDPA_AUTO, false},
    {SDPA_TILE_SPLIT_KV, NULL, "key splits merged by LSE (decode shapes)", 1, 256, 0, false,
     SDPA_AUTO, false},
    {SDPA_TILE_UNFUSED, NULL, "1 = materialise the scores through CLBlast GEMMs (forward "
     "only, CLBlast builds)", 0, 1, 0, false, 0, false},
    {SDPA_TILE_OPENCL_GEMM_PARAMS, "gemm_params", "unfused path: CLBlast GEMM parameter set, "
     "0 = CLBlast's own, 1..n = libsdpa's table (docs/opencl.md); process-wide per device",
     0, 64, 0, false, SDPA_AUTO, true},
    {SDPA_TILE_OPENCL_FWD_KERNEL, "fwd_kernel", "fused forward kernel: 0 = rows per work-item "
     "(fwd.cl), 1 = FlashAttention-2 blocks of q_tile rows x k_tile keys (fwd_block.cl); "
     "automatic: by device class", 0, 1, 0, false, SDPA_AUTO, false},
};

sdpa_status sdpa__cl_ws_alloc(sdpa_context *ctx, sdpa__cl_state *st, sdpa__cl_plan *pl,
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

/* Refuses a configuration: recorded on the context unless quiet (candidate
 * pruning must not overwrite the context's last error). */
#define REFUSE(quiet, ctx, ...) \
    ((quiet) ? SDPA_ERR_UNSUPPORTED : SDPA__FAIL((ctx), SDPA_ERR_UNSUPPORTED, __VA_ARGS__))

/* CPU- or GPU-style kernels: the vendor defaults table (cl_vendor.c). The
 * GPU-style devices (gpu-style and mobile-gpu, Mali-like devices that report
 * global "local" memory included) also take the GPU-class block forward
 * (fwd_block.cl); CPU devices (PoCL) keep fwd.cl. */
static bool gpu_style(const sdpa__cl_props *d) { return sdpa__cl_gpu_style(d); }


/* Split count for a row blocking: with few work-groups (fewer than 4 per
 * compute unit on CPUs, 8 on GPUs) and Skv >= 512, enough key chunks to fill
 * the device; `split` forces the count (SDPA_AUTO = choose). Chunks are
 * multiples of kt, at least 64 keys; statistics never split. */
static void split_plan(const sdpa__cl_props *d, const sdpa__problem *p, int64_t rows,
                       int kt, int split, int *nsplit_out, int *chunk_out)
{
    int64_t groups = p->B * p->Hkv * ((p->Hq / p->Hkv * p->Sq + rows - 1) / rows);
    int64_t want = (int64_t)(d->compute_units > 0 ? d->compute_units : 1) *
                   (gpu_style(d) ? 8 : 4);
    int64_t nsplit = 1;
    if (split != SDPA_AUTO) nsplit = split;
    else if (groups < want && p->Skv >= 512)
        nsplit = (want + groups - 1) / groups;
    if (p->has_stats) nsplit = 1; /* statistics need whole rows */
    int64_t chunk = (p->Skv + nsplit - 1) / nsplit;
    if (nsplit > 1 && chunk < 64) chunk = 64;
    chunk = (chunk + kt - 1) / kt * kt;
    if (nsplit > 1) nsplit = (p->Skv + chunk - 1) / chunk;
    if (nsplit < 1) nsplit = 1;
    *nsplit_out = (int)nsplit;
    *chunk_out = (int)chunk;
}

/* Largest power of two <= n (1 for n <= 1). */
static int pow2_floor(uint64_t n)
{
    int v = 1;
    while ((uint64_t)v * 2 <= n && v < (1 << 30)) v *= 2;
    return v;
}

/* Key chunks of a direct_kv launch for about nsplit splits: chunk =
 * ceil(Skv / nsplit) rounded up to `align` keys (the kernel's tile),
 * iterated to a fixed point so forcing the resulting count (default_tile)
 * gives the same chunks. */
static void direct_chunks(const sdpa__problem *p, int64_t nsplit, int align,
                          sdpa__cl_plan *pl)
{
    int64_t chunk;
    for (;;) {
        chunk = ((p->Skv + nsplit - 1) / nsplit + align - 1) / align * align;
        if (chunk < align) chunk = align;
        int64_t n2 = (p->Skv + chunk - 1) / chunk;
        if (n2 < 1) n2 = 1;
        if (n2 == nsplit) break;
        nsplit = n2;
    }
    pl->nsplit = (int)nsplit;
    pl->chunk = (int)chunk;
}

/* Shape of a direct_kv (decode.cl) launch: rows per work-item by head size
 * (CPU devices keep up to 16 rows of Dv <= 64 floats in private memory, so K/V
 * of a KV head are read once for all the query heads sharing it), then key
 * chunks so the device gets about 4 work-groups per compute unit: chunks of
 * at least 128 keys (automatic count), a multiple of 16, at most 256 of
 * them; `split` forces the count. */
static void direct_plan(const sdpa__cl_props *d, const sdpa__problem *p, int split,
                        sdpa__cl_plan *pl)
{
    bool gpu = gpu_style(d);
    int64_t nr = p->Hq / p->Hkv * p->Sq;
    int cap = gpu ? (p->Dv <= 128 ? 2 : 1) : (p->Dv <= 64 ? 16 : (p->Dv <= 128 ? 8 : 4));
    if (d->max_rows > 0 && cap > d->max_rows) cap = d->max_rows;
    pl->drb = (int)(nr < cap ? nr : cap);
    pl->nrb = (int)((nr + pl->drb - 1) / pl->drb);
    pl->dwg = gpu ? 64 : 8;
    if ((size_t)pl->dwg > d->max_wg) pl->dwg = (int)d->max_wg;
    int64_t items = p->B * p->Hkv * pl->nrb;
    int64_t want = (int64_t)(d->compute_units > 0 ? d->compute_units : 1) * 4 * pl->dwg;
    int64_t nsplit = split != SDPA_AUTO ? split : (want + items - 1) / items;
    if (split == SDPA_AUTO && nsplit > (p->Skv + 127) / 128) nsplit = (p->Skv + 127) / 128;
    if (nsplit > 256) nsplit = 256;
    if (nsplit < 1) nsplit = 1;
    direct_chunks(p, nsplit, 16, pl);
}

/* Whether bwd_fa2.cl covers p's inputs: not the wave-2 features (ALiBi,
 * sinks, K/V stored in another dtype; quantised and paged K/V have no
 * backward), whose backward only bwd.cl has (issue 19); those plans keep
 * bwd.cl. decode_gpu.cl takes every one (kv_access.cl). */
static bool gpu_kernels_cover(const sdpa__problem *p)
{
    return !p->has_alibi_slopes && !p->has_sinks && !p->has_block_table &&
           (p->kv_dtype == SDPA_DTYPE_NONE /* q's */ || p->kv_dtype == p->dtype);
}

/* decode_gpu.cl's shape on a GPU-class device (docs/opencl.md, "GPU-class
 * decode"): a work-group of 64 work-items (128 for Dv > 128) per (KV head,
 * key chunk, block of rows); rows per block 4, 8 or 16 (all of the G * Sq
 * rows of a KV group up to 16, so K/V are read once for the group; at most
 * 8 per float4 column of output lanes, so each work-item keeps <= 32
 * output floats); tiles of 32 keys; fitted to the device's work-group and
 * local memory (fewer keys, then rows). Key chunks: at least 4 work-groups
 * per compute unit, chunks of at least 64 keys, at most 256 of them.
 * False (decode.cl instead) when a head size is not a multiple of 4 or the
 * output row does not fit one work-group. */
static bool gdec_plan(const sdpa__cl_props *d, const sdpa__problem *p, int split,
                      sdpa__cl_plan *pl)
{
    if (p->D % 4 || p->Dv % 4) return false;
    int64_t nr = p->Hq / p->Hkv * p->Sq;
    int dwg = p->Dv > 128 ? 128 : 64, dgk = 32;
    if ((size_t)dwg > d->max_wg) dwg = pow2_floor(d->max_wg);
    if (dwg < p->Dv / 4) return false;
    if (dgk > dwg) dgk = dwg;
    int drb = nr <= 4 ? 4 : (nr <= 8 ? 8 : 16);
    if (drb > 8 * (dwg / (int)(p->Dv / 4))) drb = 8 * (dwg / (int)(p->Dv / 4));
    if (d->max_rows > 0 && drb > d->max_rows) drb = pow2_floor((uint64_t)d->max_rows);
    int64_t dmax = (p->D > p->Dv ? p->D : p->Dv) + 4;
    for (;;) {
        uint64_t bytes = (uint64_t)(drb * p->D + dgk * dmax + (int64_t)drb * dgk + 7 * drb + 2) *
                         sizeof(float);
        if (bytes <= d->local_mem) break;
        if (dgk > 8) dgk /= 2;
        else if (drb > 1) drb /= 2;
        else return false;
    }
    pl->dgpu = 1;
    pl->dgk = dgk;
    pl->dwg = dwg;
    pl->drb = drb;
    pl->nrb = (int)((nr + drb - 1) / drb);
    int64_t groups = p->B * p->Hkv * pl->nrb;
    int64_t want = (int64_t)(d->compute_units > 0 ? d->compute_units : 1) * 4;
    int64_t nsplit = split != SDPA_AUTO ? split : (want + groups - 1) / groups;
    if (split == SDPA_AUTO && nsplit > (p->Skv + 63) / 64) nsplit = (p->Skv + 63) / 64;
    if (nsplit > 256) nsplit = 256;
    if (nsplit < 1) nsplit = 1;
    direct_chunks(p, nsplit, dgk, pl);
    return true;
}

/* bwd_fa2.cl's work split for work-groups of wg (docs/opencl.md, "GPU-class
 * backward"): dQ rows per work-group fbr and dK/dV keys per work-group fbc
 * so each work-item keeps about 32 dq, or 16 dk + dv, accumulator floats
 * (no spills within AMD gfx1100's 128 VGPRs: 32 dK/dV floats spill there),
 * tiles of 32 keys (dQ pass) and 32 rows (dK/dV
 * pass), fitted to the local memory (fewer keys or rows per tile, then
 * fewer per work-group). False (bwd.cl instead) when a head size is not a
 * multiple of 4 or no split divides evenly and fits. */
static bool fa2_plan(const sdpa__cl_props *d, const sdpa__problem *p, int wg, sdpa__cl_plan *pl)
{
    if (p->D % 4 || p->Dv % 4 || wg < 1 || !gpu_kernels_cover(p)) return false;
    const int64_t q4 = p->D / 4, v4 = p->Dv / 4, rowf = p->D + p->Dv + 8;
    int fbr = pow2_floor((uint64_t)(32 * wg / p->D)), fqk = 32;
    int fbc = pow2_floor((uint64_t)(16 * wg / (p->D + p->Dv))), fkr = 32;
    if (fbr > 64) fbr = 64;
    if (fbc > 64) fbc = 64;
    while (fbr < 64 && (fbr * q4) % wg) fbr *= 2;
    while (fbc < 64 && ((fbc * q4) % wg || (fbc * v4) % wg)) fbc *= 2;
    /* one work-item loads each row's L and D: rows per tile <= wg (a
     * 32-wide work-group with D = 16 asked for 64 rows; fbr = wg keeps
     * fbr * q4 a multiple of wg) */
    if (fbr > wg) fbr = pow2_floor((uint64_t)wg);
    if (fkr > wg) fkr = pow2_floor((uint64_t)wg);
#define FA2_DIV(n) ((n) % wg == 0)
    /* dQ: q, dO, K, V tiles, dS, L and D */
    for (;;) {
        uint64_t b = (uint64_t)((fbr + fqk) * rowf + (int64_t)fbr * fqk + 2 * fbr) * 4;
        if (b <= d->local_mem && FA2_DIV(fbr * q4)) break;
        if (fqk > 8) fqk /= 2;
        else if (fbr > 1 && FA2_DIV(fbr / 2 * q4)) fbr /= 2;
        else return false;
    }
    /* dK/dV: K, V blocks, q, dO tiles, P, dS, L and D */
    for (;;) {
        uint64_t b = (uint64_t)((fbc + fkr) * rowf + 2 * (int64_t)fbc * fkr + 2 * fkr) * 4;
        if (b <= d->local_mem && FA2_DIV(fbc * q4) && FA2_DIV(fbc * v4)) break;
        if (fkr > 8) fkr /= 2;
        else if (fbc > 1 && FA2_DIV(fbc / 2 * q4) && FA2_DIV(fbc / 2 * v4)) fbc /= 2;
        else return false;
    }
#undef FA2_DIV
    pl->fa2 = 1;
    pl->fbr = fbr;
    pl->fqk = fqk;
    pl->fbc = fbc;
    pl->fkr = fkr;
    return true;
}

/* Local memory of a staged K/V tile of kt keys (fwd.cl's kt_l and v_l). */
static uint64_t stage_bytes(const sdpa__problem *p, int kt)
{
    return (uint64_t)(p->D * kt + kt * p->Dv) * sizeof(float);
}

/* Whether the device's rows may be reduced over subgroups (prelude.cl's
 * SDPA_SUBGROUPS: fwd_block.cl without statistics, decode_gpu.cl). */
static bool use_subgroups(const sdpa__cl_props *d) { return d->subgroups != 0; }

/* Local memory of fwd_block.cl with br rows and kt keys: QT, the shared
 * K / V tile, P^T, the score tile (rows of kt + 1), alpha and 1 / l; with
 * subgroups (FBLK_SG) also each row's m, kept range, head and index. */
static uint64_t block_bytes(const sdpa__cl_props *d, const sdpa__problem *p, int br, int kt)
{
    int64_t dmax = p->D > p->Dv ? p->D : p->Dv;
    int64_t sg = use_subgroups(d) && !p->has_stats ? 5 * (int64_t)br : 0;
    return (uint64_t)(p->D * br + dmax * kt + (int64_t)kt * br + (int64_t)br * (kt + 1) +
                      2 * br + sg) * sizeof(float) + 64;
}

/* The work split of fwd_block.cl for br rows, kt keys and wg work-items:
 * each work-item computes tr x tc scores (tc up to 4 keys) and owns tro x to
 * outputs (tro up to 4 rows); false when the numbers do not divide (e.g. a
 * head size Dv that wg / (br / tro) does not divide), or br > wg (one
 * work-item runs each row's softmax). */
static bool block_shape(const sdpa__problem *p, int br, int kt, int wg, sdpa__cl_plan *pl)
{
    if (br < 1 || kt < 4 || wg < 1 || br > wg) return false;
    int64_t es = (int64_t)br * kt, eo = (int64_t)br * p->Dv;
    if (es % wg || eo % wg) return false;
    es /= wg;
    eo /= wg;
    int tc = (int)(es >= 4 ? 4 : es), tr = (int)(es / tc);
    int tro = (int)(eo >= 4 ? 4 : eo), to = (int)(eo / tro);
    if (es % tc || kt % tc || br % tr || eo % tro || br % tro || p->Dv % to) return false;
    pl->br = br;
    pl->tr = tr;
    pl->tc = tc;
    pl->tro = tro;
    pl->to = to;
    return true;
}

/* fwd_block.cl's default for the head size (rows x keys x work-items: 64 x
 * 32 x 128 up to 64, 32 x 32 x 128 up to 128, 16 x 16 x 128 beyond: 32
 * output floats per work-item, so no spills within AMD gfx1100's 128 VGPRs,
 * and the tiles within 48 KiB; docs/opencl.md has the compiler figures),
 * fitted to the device: a smaller work-group halves the rows with it, less
 * local memory halves the keys (down to 8) and then the rows. False when
 * nothing fits (the plan keeps fwd.cl). */
static bool block_default(const sdpa__cl_props *d, const sdpa__problem *p, int *br, int *kt,
                          int *wg, sdpa__cl_plan *pl)
{
    int64_t dmax = p->D > p->Dv ? p->D : p->Dv;
    *br = dmax <= 64 ? 64 : (dmax <= 128 ? 32 : 16);
    *kt = dmax <= 128 ? 32 : 16;
    *wg = 128;
    while (*wg > 1 && (size_t)*wg > d->max_wg) {
        *wg /= 2;
        *br = *br > 1 ? *br / 2 : 1;
    }
    while (block_bytes(d, p, *br, *kt) > d->local_mem) {
        if (*kt > 8) *kt /= 2;
        else if (*br > 4 && *wg > 8) *br /= 2, *wg /= 2;
        else return false;
    }
    return block_shape(p, *br, *kt, *wg, pl);
}

/* Fits the default configuration into the device's limits instead of
 * refusing it: the work-group to the largest power of two the device (or,
 * after plan_kernels, a kernel) takes, rows per work-item to max_rows when a
 * kernel's private memory asked for fewer, and the staged tile to the local
 * memory (fewer keys per tile, down to 2, then no staging). */
static void adapt_defaults(const sdpa__cl_props *d, const sdpa__problem *p, int *wg, int *rpw,
                           int *kt, int *stage)
{
    if ((size_t)*wg > d->max_wg) *wg = pow2_floor(d->max_wg);
    if (d->max_rows > 0 && *rpw > d->max_rows) *rpw = pow2_floor((uint64_t)d->max_rows);
    if (*stage) {
        while (*kt > 2 && stage_bytes(p, *kt) > d->local_mem) *kt /= 2;
        if (stage_bytes(p, *kt) > d->local_mem) *stage = 0;
    }
}

/* Reads the forced fields of the tile config (SDPA_AUTO = default) and
 * checks the result against the device's limits. quiet: refuse without
 * recording a message (used to prune tuning candidates). */
static sdpa_status choose_config(sdpa_context *ctx, const sdpa__cl_props *d,
                                 cl_device_id device, const sdpa__problem *p,
                                 const sdpa_tile_config *t, unsigned flags,
                                 sdpa__cl_plan *pl, bool *forced, bool quiet)
{
    bool gpu = gpu_style(d);
    /* CPU-style defaults: rows per work-item by head size so the output
     * accumulators (rows x Dv floats) stay in 32 vector registers. */
    int rpw = gpu ? 1 : (p->Dv <= 64 ? 4 : (p->Dv <= 128 ? 2 : 1));
    int wg = gpu ? 64 : 8, kt = gpu ? 8 : (rpw >= 2 ? 32 : 64);
    sdpa__device_defaults dd; /* the vendor table: Mali stages nothing */
    sdpa__cl_device_defaults(d, &dd);
    /* K/V read in place: fwd.cl stages its tiles from them (kv_access.cl) */
    const bool kv_direct = sdpa__cl_kv_in_place(p) && !(flags & SDPA_PLAN_BACKWARD);
    int stage = gpu ? dd.stage_kv : 0;
    if (kv_direct) stage = 1;
    int vec = gpu ? 4 : 16, split = SDPA_AUTO, unfused = 0, gemm = SDPA_AUTO;
    adapt_defaults(d, p, &wg, &rpw, &kt, &stage);
    const int rpw0 = rpw, wg0 = wg, kt0 = kt, stage0 = stage, vec0 = vec;
    *forced = false;
    /* values of t (SDPA_AUTO when t is NULL or leaves them) */
#define TV(P) sdpa_tile_config_get(t, SDPA_TILE_##P)
    const int fq = TV(Q_TILE), fwg = TV(WG_SIZE);
    /* fwd_kernel = 1 reads q_tile as rows per work-group (below) */
    const bool fblock = sdpa_tile_config_get(t, SDPA_TILE_OPENCL_FWD_KERNEL) == 1;
    if (TV(UNFUSED) != SDPA_AUTO) unfused = TV(UNFUSED), *forced = true;
    if (fwg != SDPA_AUTO) wg = fwg, *forced = true;
    if (fq != SDPA_AUTO && fblock) {
        *forced = true;
    } else if (fq != SDPA_AUTO) {
        *forced = true;
        if (fwg == SDPA_AUTO && (fq % wg != 0 || fq / wg > 4))
            wg = fq; /* one row per work-item */
        if (fq % wg != 0 || (fq / wg != 1 && fq / wg != 2 && fq / wg != 4))
            return REFUSE(quiet, ctx,
                          "opencl: tile.q_tile %d must be 1, 2 or 4 times "
                          "tile.wg_size %d", fq, wg);
        rpw = fq / wg;
    } else if (fwg != SDPA_AUTO) {
        rpw = 1;
    }
    const int TV_KT = TV(K_TILE);
    if (TV_KT != SDPA_AUTO) kt = TV_KT, *forced = true;
    if (TV(VEC_WIDTH) != SDPA_AUTO) vec = TV(VEC_WIDTH), *forced = true;
    if (TV(STAGE_KV) != SDPA_AUTO) stage = TV(STAGE_KV), *forced = true;
    if (TV(SPLIT_KV) != SDPA_AUTO) split = TV(SPLIT_KV), *forced = true;
#undef TV
    if (sdpa_tile_config_get(t, SDPA_TILE_OPENCL_GEMM_PARAMS) != SDPA_AUTO)
        gemm = sdpa_tile_config_get(t, SDPA_TILE_OPENCL_GEMM_PARAMS), *forced = true;
    const int fk = sdpa_tile_config_get(t, SDPA_TILE_OPENCL_FWD_KERNEL);
    if (fk != SDPA_AUTO) *forced = true;
    if (unfused == 1 && (flags & SDPA_PLAN_BACKWARD))
        return REFUSE(quiet, ctx, "opencl: tile.unfused: the unfused path is forward only "
                      "(create the backward plan without unfused = 1)");
    if (unfused == 1 && (kv_direct || p->has_alibi_slopes || p->has_sinks))
        return REFUSE(quiet, ctx, "opencl: tile.unfused: the unfused path takes no ALiBi, "
                      "sinks, K/V of another dtype than q's, q8_0 / q4_0 or paged K/V (the "
                      "fused path does: leave tile.unfused automatic)");
    if (unfused == 1 && !sdpa__cl_unfused_available())
        return REFUSE(quiet, ctx, "%s", sdpa__cl_unfused_missing());
    if (gemm != SDPA_AUTO && unfused != 1)
        return REFUSE(quiet, ctx, "opencl: tile.gemm_params %d applies to the unfused path "
                      "only (set tile.unfused = 1)", gemm);
    if (gemm != SDPA_AUTO && gemm > sdpa__cl_gemm_count())
        return REFUSE(quiet, ctx, "opencl: tile.gemm_params %d is out of range: must be "
                      "SDPA_AUTO or 0..%d (the sets of this build)", gemm, sdpa__cl_gemm_count());
    if (gemm > 0 && !sdpa__cl_gemm_fits(gemm, d, gpu))
        return REFUSE(quiet, ctx, "opencl: tile.gemm_params %d (%s) does not suit this "
                      "device", gemm, sdpa__cl_gemm_label(gemm));
    /* AUTO: keep whatever set is in force for the device (0 if none) */
    if (unfused == 1 && gemm == SDPA_AUTO) gemm = sdpa__cl_gemm_current(device);
    if (gemm == 0 && unfused == 1 && sdpa__cl_gemm_current(device) != 0)
        return REFUSE(quiet, ctx, "opencl: tile.gemm_params 0 (CLBlast's own parameters): "
                      "libsdpa set %d is in force for this device in this process, and "
                      "CLBlast cannot go back to its own", sdpa__cl_gemm_current(device));
    /* The direct decode path's shape conditions (below). */
    const bool direct_shape = !unfused && !(flags & SDPA_PLAN_BACKWARD) &&
                              (p->Sq == 1 || (p->Sq <= 16 && p->Skv > p->Sq)) &&
                              !p->has_stats && p->qk_norm == SDPA_QK_NORM_NONE &&
                              !p->has_k_gain;
    /* fwd_block.cl: forced (fwd_kernel = 1, q_tile / k_tile / wg_size as
     * given or its defaults), or automatic on GPU-class devices for forward
     * plans whose tile forces nothing but split_kv and which do not take the
     * direct decode path; a shape the block split does not divide keeps
     * fwd.cl (automatic) or is refused (forced). */
    pl->block = 0;
    if (fk == 1 || (fk == SDPA_AUTO && gpu_style(d) && !unfused && !direct_shape &&
                    !(flags & SDPA_PLAN_BACKWARD) && rpw == rpw0 && wg == wg0 &&
                    kt == kt0 && stage == stage0 && vec == vec0)) {
        if (fk == 1 && (unfused == 1 || (flags & SDPA_PLAN_BACKWARD)))
            return REFUSE(quiet, ctx, "opencl: tile.fwd_kernel 1 is the fused forward of "
                          "forward-only plans (not unfused, not SDPA_PLAN_BACKWARD)");
        int bbr, bkt, bwg;
        bool ok = block_default(d, p, &bbr, &bkt, &bwg, pl);
        if (fk == 1) {
            if (fq != SDPA_AUTO) bbr = fq;
            if (TV_KT != SDPA_AUTO) bkt = TV_KT;
            if (fwg != SDPA_AUTO) bwg = fwg;
            ok = block_shape(p, bbr, bkt, bwg, pl);
            if (!ok || (size_t)bwg > d->max_wg || block_bytes(d, p, bbr, bkt) > d->local_mem)
                return REFUSE(quiet, ctx, "opencl: tile.fwd_kernel 1 with q_tile %d, k_tile "
                              "%d, wg_size %d: needs q_tile <= wg_size, k_tile >= 4, "
                              "q_tile x k_tile and q_tile x Dv (%lld) multiples of wg_size, "
                              "wg_size <= %zu and %llu bytes of local memory (device %llu)",
                              bbr, bkt, bwg, (long long)p->Dv, d->max_wg,
                              (unsigned long long)block_bytes(d, p, bbr, bkt),
                              (unsigned long long)d->local_mem);
        }
        if (ok) {
            pl->block = 1;
            wg = bwg;
            kt = bkt;
            rpw = 1;
            stage = 1;
        }
    }
    if (wg < 1 || (size_t)wg > d->max_wg)
        return REFUSE(quiet, ctx, "opencl: tile.wg_size %d outside 1..%zu", wg, d->max_wg);
    if (kv_direct && !stage && !pl->block)
        return REFUSE(quiet, ctx, "opencl: tile.stage_kv 0: K/V read in place (dtype %s%s) "
                      "are staged in local memory", sdpa_dtype_name(sdpa__cl_kv_dtype(p)),
                      p->has_block_table ? ", paged" : "");
    if (stage && !pl->block) {
        uint64_t need = stage_bytes(p, kt);
        if (need > d->local_mem)
            return REFUSE(quiet, ctx,
                          "opencl: staged K/V tile needs %llu bytes of local memory, "
                          "device has %llu", (unsigned long long)need,
                          (unsigned long long)d->local_mem);
    }
    pl->unfused = unfused;
    pl->kv_direct = kv_direct;
    pl->gemm = unfused == 1 ? gemm : 0;
    pl->wg = wg;
    pl->rpw = rpw;
    pl->kt = kt;
    pl->vec = vec;
    pl->stage_kv = stage;
    pl->ov = pow2_divisor(p->Dv, vec);
    pl->qv = pow2_divisor(p->D, vec);
    /* The direct decode path: decode shapes (one query row, or up to 16
     * rows against a longer key range: a KV cache) without the transformed K that
     * pack.cl makes (QK-norm, k gain) or whole rows (statistics), forward
     * plans, and no forced field other than split_kv (a forced value equal
     * to the default is no change, so forcing default_tile gives this plan). */
    pl->direct_kv = direct_shape && !pl->block && fk == SDPA_AUTO && rpw == rpw0 &&
                    wg == wg0 && kt == kt0 && stage == stage0 && vec == vec0;
    /* bwd_fa2.cl: backward plans on GPU-class devices with the default
     * tile, without the features whose gradients only bwd.cl has (QK-norm,
     * gains, temperature) */
    pl->fa2 = 0;
    if ((flags & SDPA_PLAN_BACKWARD) && gpu && fk == SDPA_AUTO && !unfused && rpw == rpw0 &&
        wg == wg0 && kt == kt0 && stage == stage0 && vec == vec0 &&
        p->qk_norm == SDPA_QK_NORM_NONE && !p->has_q_gain && !p->has_k_gain &&
        !p->has_temperature)
        fa2_plan(d, p, wg, pl);
    pl->dgpu = 0;
    if (pl->direct_kv && gpu && gdec_plan(d, p, split, pl))
        ; /* decode_gpu.cl */
    else if (pl->direct_kv)
        direct_plan(d, p, split, pl);
    else
        split_plan(d, p, pl->block ? pl->br : (int64_t)wg * rpw, kt, unfused ? 1 : split,
                   &pl->nsplit, &pl->chunk);
    pl->sg = ((pl->block && !p->has_stats) || pl->dgpu) && use_subgroups(d);
    return SDPA_OK;
}

static void config_to_tile(const sdpa__cl_plan *pl, sdpa_tile_config *t)
{
    sdpa_tile_config_init(t);
    sdpa_tile_config_set(t, SDPA_TILE_Q_TILE, pl->block ? pl->br : pl->wg * pl->rpw);
    sdpa_tile_config_set(t, SDPA_TILE_K_TILE, pl->kt);
    sdpa_tile_config_set(t, SDPA_TILE_WG_SIZE, pl->wg);
    sdpa_tile_config_set(t, SDPA_TILE_VEC_WIDTH, pl->vec);
    sdpa_tile_config_set(t, SDPA_TILE_STAGE_KV, pl->stage_kv);
    sdpa_tile_config_set(t, SDPA_TILE_SPLIT_KV, pl->nsplit);
    sdpa_tile_config_set(t, SDPA_TILE_UNFUSED, pl->unfused);
    if (pl->unfused) sdpa_tile_config_set(t, SDPA_TILE_OPENCL_GEMM_PARAMS, pl->gemm);
    if (pl->block) sdpa_tile_config_set(t, SDPA_TILE_OPENCL_FWD_KERNEL, 1);
}

/* The configuration choose_config makes of `forced` (NULL = nothing forced),
 * every value set; a refusal is recorded with its message. */
sdpa_status sdpa__cl_default_tile(sdpa_context *ctx, void *state, const sdpa__problem *p,
                                  unsigned plan_flags, const sdpa_tile_config *forced,
                                  sdpa_tile_config *tile)
{
    const sdpa__cl_state *st = state;
    sdpa__cl_plan pl;
    bool was_forced;
    memset(&pl, 0, sizeof pl);
    SDPA__TRY(choose_config(ctx, &st->props, st->device, p, forced, plan_flags, &pl,
                            &was_forced, false));
    config_to_tile(&pl, tile);
    return SDPA_OK;
}

/* Adds t to the list if the device takes it and it is not there yet. */
static void add_candidate(sdpa_context *ctx, const sdpa__cl_state *st, const sdpa__problem *p,
                          unsigned flags, const sdpa_tile_config *t, sdpa_tile_config *out,
                          int max, int *n)
{
    sdpa__cl_plan pl;
    bool forced;
    memset(&pl, 0, sizeof pl);
    if (choose_config(ctx, &st->props, st->device, p, t, flags, &pl, &forced, true) != SDPA_OK)
        return;
    sdpa_tile_config c;
    config_to_tile(&pl, &c);
    for (int i = 0; i < *n && i < max; i++)
        if (sdpa__tile_equal(&out[i], &c)) return;
    if (*n < max) out[*n] = c;
    (*n)++;
}

/* The search space: the default first, then rows per work-item x keys per
 * tile x work-group size (CPU devices: unstaged, vec 16; GPUs: staged and
 * unstaged, vec 4), split counts around the default for decode shapes, and
 * the unfused path where CLBlast is built in and the scores fit the default
 * workspace limit, once per CLBlast parameter set that suits the device
 * (cl_gemm.c; a new set rebuilds CLBlast's kernel, ~15 s on a cold PoCL
 * cache). Kept to about 24 per problem because each variant costs a
 * program build (~1 s on PoCL). */
int sdpa__cl_tile_candidates(sdpa_context *ctx, void *state, const sdpa__problem *p,
                             unsigned plan_flags, sdpa_tile_config *out, int max)
{
    const sdpa__cl_state *st = state;
    bool gpu = gpu_style(&st->props);
    int n = 0;
    sdpa_tile_config def, t;
    bool have_def = sdpa__cl_default_tile(ctx, state, p, plan_flags, NULL, &def) == SDPA_OK;
    if (have_def) add_candidate(ctx, st, p, plan_flags, &def, out, max, &n);
    static const int rpws[] = {1, 2, 4};
    static const int cpu_kts[] = {16, 32, 64}, gpu_kts[] = {8, 16};
    static const int cpu_wgs[] = {8, 16}, gpu_wgs[] = {32, 64, 128};
    const int *kts = gpu ? gpu_kts : cpu_kts, *wgs = gpu ? gpu_wgs : cpu_wgs;
    int nkt = gpu ? 2 : 3, nwg = gpu ? 3 : 2, nstage = gpu ? 2 : 1;
    for (int a = 0; a < 3; a++) {
        /* four rows of Dv > 128 floats do not fit in registers */
        if (rpws[a] == 4 && p->Dv > 128) continue;
        if (gpu && rpws[a] == 4) continue;
        for (int b = 0; b < nkt; b++)
            for (int c = 0; c < nwg; c++)
                for (int s = 0; s < nstage; s++) {
                    sdpa_tile_config_init(&t);
                    sdpa_tile_config_set(&t, SDPA_TILE_WG_SIZE, wgs[c]);
                    sdpa_tile_config_set(&t, SDPA_TILE_Q_TILE, wgs[c] * rpws[a]);
                    sdpa_tile_config_set(&t, SDPA_TILE_K_TILE, kts[b]);
                    sdpa_tile_config_set(&t, SDPA_TILE_VEC_WIDTH, gpu ? 4 : 16);
                    sdpa_tile_config_set(&t, SDPA_TILE_STAGE_KV, gpu ? 1 - s : 0);
                    add_candidate(ctx, st, p, plan_flags, &t, out, max, &n);
                }
    }
    /* GPU-class devices, forward plans: fwd_block.cl's rows x keys x
     * work-items around its defaults. */
    if (gpu_style(&st->props) && !(plan_flags & SDPA_PLAN_BACKWARD)) {
        static const int brs[] = {16, 32, 64}, bkts[] = {16, 32}, bwgs[] = {64, 128};
        for (int a = 0; a < 3; a++)
            for (int b = 0; b < 2; b++)
                for (int c = 0; c < 2; c++) {
                    sdpa_tile_config_init(&t);
                    sdpa_tile_config_set(&t, SDPA_TILE_OPENCL_FWD_KERNEL, 1);
                    sdpa_tile_config_set(&t, SDPA_TILE_Q_TILE, brs[a]);
                    sdpa_tile_config_set(&t, SDPA_TILE_K_TILE, bkts[b]);
                    sdpa_tile_config_set(&t, SDPA_TILE_WG_SIZE, bwgs[c]);
                    add_candidate(ctx, st, p, plan_flags, &t, out, max, &n);
                }
    }
    /* Decode shapes (few query rows or an automatic split, long key range,
     * no statistics): split counts around the default's. */
    int d = sdpa_tile_config_get(&def, SDPA_TILE_SPLIT_KV);
    if (have_def && !p->has_stats && p->Skv >= 512 && (p->Sq <= 16 || d > 1)) {
        const int splits[] = {1, d > 1 ? d / 2 : 2, d > 1 ? d * 2 : 4, d > 1 ? d * 4 : 8};
        for (int i = 0; i < 4; i++) {
            if (splits[i] < 1) continue;
            t = def;
            sdpa_tile_config_set(&t, SDPA_TILE_SPLIT_KV, splits[i]);
            add_candidate(ctx, st, p, plan_flags, &t, out, max, &n);
        }
    }
    /* The unfused path, if it fits the default workspace limit. */
    if (sdpa__cl_unfused_available() && !(plan_flags & SDPA_PLAN_BACKWARD) &&
        sdpa__cl_unfused_bytes(p) <= SDPA__CL_DEFAULT_WORKSPACE_LIMIT) {
        /* under each CLBlast parameter set that suits the device (0 =
         * CLBlast's own, offered only while no set is in force) */
        for (int k = 0; k <= sdpa__cl_gemm_count(); k++) {
            sdpa_tile_config_init(&t);
            sdpa_tile_config_set(&t, SDPA_TILE_UNFUSED, 1);
            sdpa_tile_config_set(&t, SDPA_TILE_OPENCL_GEMM_PARAMS, k);
            add_candidate(ctx, st, p, plan_flags, &t, out, max, &n);
        }
    }
    return n;
}

/* Configuration, build options and files of a plan without a device
 * (cl_internal.h): plan_create uses them, and so does the static GPU gate's
 * tools/internal/sdpa-gpu-config.c for described devices. */
sdpa_status sdpa__cl_plan_config(const sdpa__cl_props *d, const sdpa__problem *p,
                                 const sdpa_tile_config *tile, unsigned flags,
                                 sdpa__cl_plan *pl)
{
    bool forced;
    SDPA__TRY(choose_config(NULL, d, NULL, p, tile, flags, pl, &forced, true));
    pl->backward = (flags & SDPA_PLAN_BACKWARD) != 0;
    return SDPA_OK;
}

void sdpa__cl_plan_options(const sdpa__problem *p, const sdpa__cl_plan *pl, char *opts,
                           size_t size)
{
    char score[128], kv[64];
    sdpa__cl_score_options(p, score, sizeof score);
    sdpa__cl_kv_options(p, pl, kv, sizeof kv);
    int n = snprintf(opts, size,
                     "-DSTORE_DT=%d -DHD=%d -DHDV=%d -DWG=%d -DRPW=%d -DKT=%d -DOV=%d -DQV=%d "
                     "-DSTAGE_KV=%d %s -DHAS_STATS=%d %s",
                     (int)p->dtype, (int)p->D, (int)p->Dv, pl->wg, pl->rpw, pl->kt, pl->ov, pl->qv,
                     pl->stage_kv, score, p->has_stats, kv);
    if (n < 0 || (size_t)n >= size) return;
    if (pl->backward && pl->fa2)
        snprintf(opts + n, size - (size_t)n, " -DNORM=%d -DBWD_FA2=1 -DFBR=%d -DFQK=%d "
                 "-DFBC=%d -DFKR=%d", (int)p->qk_norm, pl->fbr, pl->fqk, pl->fbc, pl->fkr);
    else if (pl->backward)
        snprintf(opts + n, size - (size_t)n, " -DNORM=%d", (int)p->qk_norm);
    else if (pl->block)
        snprintf(opts + n, size - (size_t)n, " -DFWD_BLOCK=1 -DBR=%d -DTR=%d -DTC=%d -DTRO=%d "
                 "-DTO=%d", pl->br, pl->tr, pl->tc, pl->tro, pl->to);
    else if (pl->direct_kv && pl->dgpu)
        snprintf(opts + n, size - (size_t)n, " -DDRB=%d -DDWG=%d -DDGK=%d", pl->drb, pl->dwg,
                 pl->dgk);
    else if (pl->direct_kv)
        snprintf(opts + n, size - (size_t)n, " -DDRB=%d -DDWG=%d", pl->drb, pl->dwg);
    n = (int)strlen(opts);
    if (pl->sg) snprintf(opts + n, size - (size_t)n, " -DSDPA_SUBGROUPS=1");
}

int sdpa__cl_plan_files(const sdpa__cl_plan *pl, const char *const **out)
{
    static const char *const files[] = {"pack.cl", "stats.cl", "fwd.cl", "combine.cl",
                                        "bwd.cl"};
    static const char *const unfused_files[] = {"pack.cl", "combine.cl", "stats.cl",
                                                "unfused.cl"};
    static const char *const direct_files[] = {"pack.cl", "decode.cl", "combine.cl"};
    static const char *const dgpu_files[] = {"pack.cl", "decode_gpu.cl", "combine.cl"};
    static const char *const fa2_files[] = {"pack.cl", "stats.cl", "fwd.cl", "combine.cl",
                                            "bwd.cl", "bwd_fa2.cl"};
    static const char *const block_files[] = {"pack.cl", "stats.cl", "fwd.cl", "fwd_block.cl",
                                              "combine.cl"};
    if (pl->unfused) {
        *out = unfused_files;
        return 4;
    }
    if (pl->direct_kv) {
        *out = pl->dgpu ? dgpu_files : direct_files;
        return 3;
    }
    if (pl->block) {
        *out = block_files;
        return 5;
    }
    if (pl->backward && pl->fa2) {
        *out = fa2_files;
        return 6;
    }
    *out = files;
    return pl->backward ? 5 : 4;
}

/* Kernels of a plan's program: function, name, and whether pl uses it. */
#define PLAN_KERNELS(pl)                                                    \
    {                                                                       \
        {&(pl)->k_pack, "sdpa_pack", true, false},                          \
        {&(pl)->k_fwd, "sdpa_fwd", !(pl)->unfused && !(pl)->direct_kv, true}, \
        {&(pl)->k_decode, "sdpa_decode", (pl)->direct_kv != 0, true},       \
        {&(pl)->k_softmax, "sdpa_unf_softmax", (pl)->unfused != 0, false},  \
        {&(pl)->k_combine, "sdpa_combine", true, false},                    \
        {&(pl)->k_stats, "sdpa_stats", !(pl)->direct_kv, false},            \
        {&(pl)->k_prep, "sdpa_bwd_prep", (pl)->backward, false},            \
        {&(pl)->k_dq, "sdpa_bwd_dq", (pl)->backward, true},                 \
        {&(pl)->k_dkdv, "sdpa_bwd_dkdv", (pl)->backward, true},             \
        {&(pl)->k_reduce, "sdpa_reduce_cols", (pl)->backward, false},       \
    }
typedef struct plan_kernel {
    cl_kernel *k;
    const char *name;
    bool want;
    bool tiled; /* launched with the plan's work-group (WG or DWG), else small_wg */
} plan_kernel;

static void release_kernels(sdpa__cl_plan *pl)
{
    plan_kernel ks[] = PLAN_KERNELS(pl);
    for (size_t i = 0; i < sizeof ks / sizeof ks[0]; i++) {
        if (*ks[i].k) clReleaseKernel(*ks[i].k);
        *ks[i].k = NULL;
    }
    pl->program = NULL;
}

/* Builds (or reuses) pl's program and creates its kernels. */
static sdpa_status plan_kernels(sdpa_context *ctx, sdpa__cl_state *st, const sdpa__problem *p,
                                sdpa__cl_plan *pl)
{
    char opts[512];
    const char *const *files;
    int nfiles = sdpa__cl_plan_files(pl, &files);
    sdpa__cl_plan_options(p, pl, opts, sizeof opts);
    SDPA__TRY(sdpa__cl_program(ctx, st, files, nfiles, opts, &pl->program));
    plan_kernel ks[] = PLAN_KERNELS(pl);
    for (size_t i = 0; i < sizeof ks / sizeof ks[0]; i++) {
        if (!ks[i].want) continue;
        cl_int err;
        *ks[i].k = clCreateKernel(pl->program, ks[i].name, &err);
        if (err != CL_SUCCESS) return sdpa__cl_fail(ctx, err, "clCreateKernel", __FILE__, __LINE__);
    }
    return SDPA_OK;
}

/* Private memory per work-item above which a GPU kernel is taken to spill
 * (accumulators in memory): the plan halves its rows per work-item. */
#define PRIVATE_BUDGET 1024

/* The per-kernel limits of the built kernels (CL_KERNEL_WORK_GROUP_SIZE,
 * CL_KERNEL_LOCAL_MEM_SIZE, CL_KERNEL_PRIVATE_MEM_SIZE): true when pl's
 * configuration fits every kernel; otherwise tightens *eff (the device as the
 * plan sees it) so choose_config picks a configuration that does. Also sets
 * pl->swg, the local size of the per-row kernels. */
static bool kernels_fit(sdpa_context *ctx, const sdpa__cl_state *st, const sdpa__problem *p,
                        sdpa__cl_plan *pl, sdpa__cl_props *eff)
{
    size_t wg = (size_t)(pl->direct_kv ? pl->dwg : pl->wg);
    int rows = pl->direct_kv ? pl->drb : pl->rpw;
    bool fit = true;
    size_t swg = eff->is_gpu ? 64 : 128;
    if (swg > eff->max_wg) swg = eff->max_wg;
    plan_kernel ks[] = PLAN_KERNELS(pl);
    for (size_t i = 0; i < sizeof ks / sizeof ks[0]; i++) {
        if (!*ks[i].k) continue;
        size_t kwg = 0;
        cl_ulong lm = 0, pm = 0;
        if (clGetKernelWorkGroupInfo(*ks[i].k, st->device, CL_KERNEL_WORK_GROUP_SIZE,
                                     sizeof kwg, &kwg, NULL) != CL_SUCCESS || kwg == 0)
            kwg = eff->max_wg;
        if (!ks[i].tiled) {
            if (swg > kwg) swg = kwg;
            continue;
        }
        clGetKernelWorkGroupInfo(*ks[i].k, st->device, CL_KERNEL_LOCAL_MEM_SIZE, sizeof lm,
                                 &lm, NULL);
        clGetKernelWorkGroupInfo(*ks[i].k, st->device, CL_KERNEL_PRIVATE_MEM_SIZE, sizeof pm,
                                 &pm, NULL);
        sdpa__log(ctx, SDPA_LOG_DEBUG,
                  "opencl: %s takes work-groups up to %zu, local %llu B, private %llu B",
                  ks[i].name, kwg, (unsigned long long)lm, (unsigned long long)pm);
        if (kwg < wg) {
            eff->max_wg = kwg;
            fit = false;
        }
        if (lm > eff->local_mem) {
            /* what the kernel takes beyond the staged tile comes off the budget */
            uint64_t tile = pl->block      ? block_bytes(eff, p, pl->br, pl->kt)
                            : pl->stage_kv ? stage_bytes(p, pl->kt)
                                           : 0;
            uint64_t extra = lm > tile ? lm - tile : lm;
            eff->local_mem = eff->local_mem > extra ? eff->local_mem - extra : 0;
            fit = false;
        }
        if (gpu_style(eff) && pm > PRIVATE_BUDGET && rows > 1) {
            eff->max_rows = rows / 2;
            fit = false;
        }
    }
    pl->swg = (int)(swg ? swg : 1);
    return fit;
}

/* Chooses pl's configuration for the device as *eff describes it, builds its
 * kernels and fits them to their per-kernel limits (a default
 * configuration is adapted, at most 4 rounds; a forced one is refused). */
static sdpa_status fit_plan(sdpa_context *ctx, sdpa__cl_state *st, const sdpa__problem *p,
                            const sdpa_tile_config *tile, unsigned flags, sdpa__cl_props *eff,
                            sdpa__cl_plan *pl, bool quiet)
{
    for (int round = 0;; round++) {
        bool forced = false;
        SDPA__TRY(choose_config(ctx, eff, st->device, p, tile, flags, pl, &forced, quiet));
        pl->forced = forced;
        pl->backward = (flags & SDPA_PLAN_BACKWARD) != 0;
        SDPA__TRY(plan_kernels(ctx, st, p, pl));
        if (kernels_fit(ctx, st, p, pl, eff)) return SDPA_OK;
        release_kernels(pl);
        if (forced || round == 3)
            return REFUSE(quiet, ctx,
                          "opencl: the kernels of configuration wg_size=%d k_tile=%d "
                          "stage_kv=%d exceed this device's per-kernel limits "
                          "(work-group %zu, local memory %llu bytes)",
                          pl->direct_kv ? pl->dwg : pl->wg, pl->kt, pl->stage_kv,
                          eff->max_wg, (unsigned long long)eff->local_mem);
        sdpa__log(ctx, SDPA_LOG_INFO,
                  "opencl: per-kernel limits: adapting the default configuration "
                  "(work-group %zu, local memory %llu bytes, rows %d)",
                  eff->max_wg, (unsigned long long)eff->local_mem, eff->max_rows);
    }
}

static void describe_config(sdpa__cl_plan *pl)
{
    if (pl->unfused)
        snprintf(pl->config, sizeof pl->config,
                 "unfused=1 gemm_params=%d (scores materialised, CLBlast GEMMs: %s) "
                 "clblast_temp=%zu", pl->gemm, sdpa__cl_gemm_label(pl->gemm), pl->tmp_bytes);
    else if (pl->direct_kv && pl->dgpu)
        snprintf(pl->config, sizeof pl->config,
                 "direct_kv=1 rows=%d wg_size=%d k_tile=%d split_kv=%d chunk=%d "
                 "(decode_gpu.cl on K/V in place)", pl->drb, pl->dwg, pl->dgk, pl->nsplit,
                 pl->chunk);
    else if (pl->direct_kv)
        snprintf(pl->config, sizeof pl->config,
                 "direct_kv=1 rows=%d wg_size=%d vec_width=%d split_kv=%d chunk=%d "
                 "(decode.cl on K/V in place)", pl->drb, pl->dwg, pl->ov, pl->nsplit,
                 pl->chunk);
    else if (pl->block)
        snprintf(pl->config, sizeof pl->config,
                 "fwd_kernel=1 wg_size=%d q_tile=%d k_tile=%d split_kv=%d (fwd_block.cl: "
                 "scores %dx%d, outputs %dx%d per work-item)", pl->wg, pl->br, pl->kt,
                 pl->nsplit, pl->tr, pl->tc, pl->tro, pl->to);
    else
        snprintf(pl->config, sizeof pl->config,
                 "wg_size=%d q_tile=%d k_tile=%d vec_width=%d stage_kv=%d split_kv=%d",
                 pl->wg, pl->wg * pl->rpw, pl->kt, pl->ov, pl->stage_kv, pl->nsplit);
    if (pl->backward && pl->fa2) {
        size_t n = strlen(pl->config);
        snprintf(pl->config + n, sizeof pl->config - n,
                 " (backward: bwd_fa2.cl, dQ %d rows x %d keys, dK/dV %d keys x %d rows)",
                 pl->fbr, pl->fqk, pl->fbc, pl->fkr);
    }
    if (pl->sg) {
        size_t n = strlen(pl->config);
        snprintf(pl->config + n, sizeof pl->config - n, " (row reductions over subgroups)");
    }
}

sdpa_status sdpa__cl_plan_shrink(sdpa_context *ctx, sdpa__cl_state *st, const sdpa__problem *p,
                                 sdpa__cl_plan *pl)
{
    if (pl->forced || pl->unfused) return SDPA_ERR_UNSUPPORTED;
    sdpa__cl_props eff = pl->eff;
    int wg = pl->direct_kv ? pl->dwg : pl->wg, rows = pl->direct_kv ? pl->drb : pl->rpw;
    if (wg > 1) eff.max_wg = (size_t)(wg / 2);
    else if (pl->stage_kv) eff.local_mem = 0;
    else if (rows > 1) eff.max_rows = rows / 2;
    else return SDPA_ERR_UNSUPPORTED;
    /* Same split count (or fewer: chunks of whole tiles), so the workspace
     * the plan has fits the new configuration. */
    sdpa_tile_config t;
    sdpa_tile_config_init(&t);
    sdpa_tile_config_set(&t, SDPA_TILE_SPLIT_KV, pl->nsplit);
    sdpa__cl_plan n = *pl;
    n.program = NULL;
    n.k_pack = n.k_fwd = n.k_combine = n.k_stats = n.k_prep = n.k_dq = n.k_dkdv =
        n.k_reduce = n.k_softmax = n.k_decode = NULL;
    sdpa_status s = fit_plan(ctx, st, p, &t, pl->backward ? SDPA_PLAN_BACKWARD : 0, &eff, &n,
                             true);
    if (s == SDPA_OK && (n.direct_kv != pl->direct_kv || n.nsplit > pl->nsplit ||
                         n.drb * n.nrb > pl->drb * pl->nrb))
        s = SDPA_ERR_UNSUPPORTED;
    if (s != SDPA_OK) {
        release_kernels(&n);
        return s;
    }
    release_kernels(pl);
    n.forced = false;
    n.eff = eff;
    *pl = n;
    describe_config(pl);
    sdpa__log(ctx, SDPA_LOG_WARN, "opencl: retrying with a smaller configuration: %s",
              pl->config);
    return SDPA_OK;
}

/* The front end passes a complete configuration (src/core/plan.c): when it
 * is this backend's default for p, NULL is returned so fit_plan fits the
 * default to the device and to its kernels' limits (and a launch refused for
 * resources may shrink it); any other configuration, forced or a profile's,
 * is returned as given and only checked. */
static const sdpa_tile_config *given_config(sdpa_context *ctx, sdpa__cl_state *st,
                                            const sdpa__problem *p, unsigned flags,
                                            const sdpa_tile_config *t)
{
    if (!t) return NULL;
    sdpa_tile_config def;
    sdpa_tile_config_init(&def);
    if (sdpa__cl_default_tile(ctx, st, p, flags, NULL, &def) != SDPA_OK) return t;
    sdpa__tile_fill_defaults(sdpa__cl_tile_params, SDPA__CL_TILE_PARAMS, &def);
    return sdpa__tile_equal(&def, t) ? NULL : t;
}

sdpa_status sdpa__cl_plan_create(sdpa_context *ctx, void *state, const sdpa__problem *p,
                                 const sdpa_plan_options *options, void **plan_state)
{
    sdpa__cl_state *st = state;
    *plan_state = NULL;
    SDPA__TRY(sdpa__cl_supports(ctx, state, p, options ? options->flags : 0));
    sdpa__cl_plan *pl = sdpa__calloc(1, sizeof *pl);
    if (!pl) return SDPA__FAIL(ctx, SDPA_ERR_OUT_OF_MEMORY, "opencl: plan");
    pl->eff = st->props;
    const unsigned flags = options ? options->flags : 0;
    sdpa_status s = fit_plan(ctx, st, p,
                             given_config(ctx, st, p, flags, options ? options->tile : NULL),
                             flags, &pl->eff, pl, false);
    if (s != SDPA_OK) goto fail;
    /* Padded lengths: a multiple of 64 so no tile reads past the end, plus 16
     * so the rows of feature-major arrays are not 4 KiB apart (which would
     * map a whole tile onto a few L1 sets on CPUs). */
    pl->SqP = (int)((p->Sq + 63) / 64 * 64 + 16);
    pl->SkvP = (int)((p->Skv + 63) / 64 * 64 + 16);
    pl->SkvT = (int)((p->Skv + 63) / 64 * 64);
    if (pl->direct_kv) pl->SqP = (int)p->Sq; /* decode.cl reads q rows < Sq only */

    if (pl->unfused) {
        s = sdpa__cl_unfused_setup(ctx, st, p, pl,
                                   options ? options->workspace_limit : SDPA_AUTO);
        if (s != SDPA_OK) goto fail;
        goto done;
    }
    /* Workspace. */
    int64_t BHq = p->B * p->Hq, BHkv = p->B * p->Hkv;
    int64_t R = BHq * p->Sq;
#define WS(m, n, what)                                          \
    do {                                                        \
        s = sdpa__cl_ws_alloc(ctx, st, pl, &pl->m, (n), what); \
        if (s != SDPA_OK) goto fail;                            \
    } while (0)
    WS(ws_q, BHq * pl->SqP * p->D, "packed q");
    if (!pl->direct_kv && !pl->kv_direct) { /* these paths read K/V in place */
        WS(ws_kt, BHkv * pl->SkvP * p->D, "packed k");
        WS(ws_v, BHkv * pl->SkvP * p->Dv, "packed v");
    }
    if (p->has_stats) WS(ws_rowstats, R * SDPA_CLRS_SIZE, "row statistics");
    if (pl->nsplit > 1 || pl->direct_kv) {
        WS(ws_part_o, (int64_t)pl->nsplit * R * p->Dv, "split partial outputs");
        WS(ws_part_l, (int64_t)pl->nsplit * R, "split partial lse");
    }
    if (pl->backward) {
        if (!pl->fa2) WS(ws_qt, BHq * pl->SqP * p->D, "packed q^T"); /* bwd_fa2.cl: rows only */
        WS(ws_kp, BHkv * pl->SkvP * p->D, "packed k rows");
        if (!pl->fa2) WS(ws_vt, BHkv * pl->SkvP * p->Dv, "packed v^T");
        WS(ws_dop, BHq * pl->SqP * p->Dv, "packed dout");
        if (!pl->fa2) WS(ws_dot, BHq * pl->SqP * p->Dv, "packed dout^T");
        WS(ws_l, BHq * pl->SqP, "lse copy");
        WS(ws_dsum, BHq * pl->SqP, "rowsum(dout*out)");
        if (p->has_q_gain) WS(ws_gq, R * p->D, "q gain partials");
        if (p->has_k_gain) WS(ws_gk, BHkv * p->Skv * p->D, "k gain partials");
        if (p->has_temperature) WS(ws_tp, R, "temperature partials");
        if (p->has_sinks) WS(ws_ds, p->B * pl->SqP * p->Hq, "sink partials");
    }
#undef WS
done:
    describe_config(pl);
    sdpa__strlcpy(pl->source, pl->forced ? "forced" : "default", sizeof pl->source);
    sdpa__log(ctx, SDPA_LOG_DEBUG, "opencl: plan %s (%s), workspace %zu bytes", pl->config,
              pl->source, pl->ws_bytes);
    *plan_state = pl;
    return SDPA_OK;
fail:
    sdpa__cl_plan_free(ctx, state, pl);
    return s;
}

void sdpa__cl_plan_free(sdpa_context *ctx, void *state, void *plan_state)
{
    (void)ctx;
    (void)state;
    sdpa__cl_plan *pl = plan_state;
    if (!pl) return;
    release_kernels(pl);
    cl_mem ms[] = {pl->ws_q, pl->ws_kt, pl->ws_v, pl->ws_rowstats, pl->ws_part_o,
                   pl->ws_part_l, pl->ws_qt, pl->ws_kp, pl->ws_vt, pl->ws_dop,
                   pl->ws_dot, pl->ws_l, pl->ws_dsum, pl->ws_gq, pl->ws_gk, pl->ws_tp,
                   pl->ws_ds, pl->ws_s, pl->ws_tmp};
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
    sdpa__strlcpy(info->kernel, pl->unfused                        ? "unfused"
                  : pl->nsplit > 1 || pl->direct_kv ? "decode"
                                                     : "fused",
                  sizeof info->kernel);
    sdpa__strlcpy(info->config, pl->config, sizeof info->config);
    sdpa__strlcpy(info->source, pl->source, sizeof info->source);
}
