/*
 * vk_plan.c — what the Vulkan backend can run (supports), and plans: the
 * chosen configuration (work-group size, key tile, split-KV count, K/V
 * staging, query rows per invocation from options->tile or defaults), the
 * workspace layout, the pipelines (created here, never on the hot path), one
 * descriptor set, one command buffer and fence, and a host-visible uniform
 * parameter block.
 *
 * Invariants: a plan's objects are reused by every call; a call first waits
 * for the plan's previous submission (sdpa__vk_plan_wait) before rewriting
 * its descriptor set and parameters. Element indices in shaders are 32-bit:
 * supports() refuses problems whose tensors or workspace would overflow them.
 * Called through the backend table (vk_backend.c).
 */
#include "vk_internal.h"
#include "vk_split.h"

#include "capabilities.h"
#include "tile.h"

#include <stdio.h>
#include <stdlib.h>

#define DEFAULT_WG 64
#define DEFAULT_K_TILE 8
#define MAX_K_TILE 64
#define MAX_SPLIT 64
#define U32_LIMIT ((int64_t)UINT32_MAX)
#define ALIBI_OFFSET_LIMIT ((int64_t)1 << 29)
/* Vulkan's guaranteed maxComputeSharedMemorySize, assumed when the
 * candidates are asked for without a context. */
#define SHARED_MIN 16384

static bool fits_u32(int64_t a, int64_t b, int64_t c, int64_t d)
{
    int64_t n;
    return sdpa__mul_i64(a, b, &n) && sdpa__mul_i64(n, c, &n) && sdpa__mul_i64(n, d, &n) &&
           n < U32_LIMIT;
}

/* K/V storage as the shaders see it (features.glsl KV_TYPE). */
static int kv_type(const sdpa__problem *p)
{
    if (p->kv_dtype == p->dtype) return SDPA_VK_KV_SAME;
    switch (p->kv_dtype) {
    case SDPA_DTYPE_F32: return SDPA_VK_KV_F32;
    case SDPA_DTYPE_F16: return SDPA_VK_KV_F16;
    case SDPA_DTYPE_BF16: return SDPA_VK_KV_BF16;
    case SDPA_DTYPE_Q8_0: return SDPA_VK_KV_Q8_0;
    case SDPA_DTYPE_Q4_0: return SDPA_VK_KV_Q4_0;
    default: return -1;
    }
}

sdpa_status sdpa__vk_supports(sdpa_context *ctx, void *state, const sdpa__problem *p,
                              unsigned plan_flags)
{
    (void)plan_flags;
    sdpa__vk_state *s = state;
    SDPA__CHECK(ctx, kv_type(p) >= 0, SDPA_ERR_UNSUPPORTED,
                "vulkan: K/V storage dtype %s is not supported", sdpa_dtype_name(p->kv_dtype));
    /* the shaders measure ALiBi distances in 32-bit ints */
    SDPA__CHECK(ctx, !p->has_alibi_slopes || (p->alibi_offset > -ALIBI_OFFSET_LIMIT &&
                                              p->alibi_offset < ALIBI_OFFSET_LIMIT),
                SDPA_ERR_UNSUPPORTED,
                "vulkan: ALiBi with an explicit diagonal_offset of %lld: the Vulkan backend "
                "takes |diagonal_offset| < 2^29 with alibi_slopes", (long long)p->alibi_offset);
    SDPA__CHECK(ctx, p->dtype != SDPA_DTYPE_F16 || s->caps.storage16, SDPA_ERR_UNSUPPORTED,
                "vulkan: device '%s' lacks storageBuffer16BitAccess (16-bit storage), "
                "needed for f16 storage", s->props.deviceName);
    SDPA__CHECK(ctx, p->dtype == SDPA_DTYPE_F32 || p->dtype == SDPA_DTYPE_F16 ||
                p->dtype == SDPA_DTYPE_BF16, SDPA_ERR_UNSUPPORTED,
                "vulkan: storage dtype %s is not supported", sdpa_dtype_name(p->dtype));
    SDPA__CHECK(ctx, p->D <= SDPA_MAX_HEAD_DIM && p->Dv <= SDPA_MAX_HEAD_DIM,
                SDPA_ERR_UNSUPPORTED, "vulkan: head dimension D=%lld Dv=%lld exceeds %d",
                (long long)p->D, (long long)p->Dv, SDPA_MAX_HEAD_DIM);
    SDPA__CHECK(ctx, p->Sq < ((int64_t)1 << 28) && p->Skv < ((int64_t)1 << 28) &&
                fits_u32(p->B, p->Hq, p->Sq, p->D + SDPA_RS_SIZE + 1) &&
                fits_u32(p->B, p->Hq, p->Sq, p->Dv + SDPA_PT_SIZE) &&
                fits_u32(p->B, p->Hkv, p->Skv, p->D > p->Dv ? p->D : p->Dv) &&
                (!p->has_block_table ||
                 fits_u32(p->pages, p->Hkv, p->page, p->D > p->Dv ? p->D : p->Dv)) &&
                (!(p->has_mask || p->has_bias) || fits_u32(p->B, p->Hq, p->Sq, p->Skv)),
                SDPA_ERR_UNSUPPORTED,
                "vulkan: problem too large for 32-bit element indices");
    return SDPA_OK;
}

static int64_t cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

/* Shared memory the staged forward declares (fwd.comp sh_k, sh_v): K_TILE
 * rows of K and of V, f32. */
static int64_t staged_shared_bytes(int64_t k_tile, int64_t D, int64_t Dv)
{
    return k_tile * (D + Dv) * (int64_t)sizeof(float);
}

/* KV slabs (b, kv head) the rows of one staged work-group can touch: rows
 * are ordered (b, h, i) and a slab holds group * Sq consecutive rows. */
static int64_t staged_slabs(const sdpa__problem *p, int64_t wg)
{
    int64_t slab_rows = (p->Hq / p->Hkv) * p->Sq, total = p->B * p->Hkv;
    int64_t n = cdiv(wg - 1, slab_rows) + 1;
    return n < total ? n : total;
}

/* Loop iterations of one staged forward invocation (fwd.comp fwd_staged):
 * every slab's union key range, tile by tile, each tile costing the
 * cooperative K and V loads plus the d loops (counted even when the
 * invocation's row skips the tile: llvmpipe runs the loops of a SIMD
 * vector while any lane needs them). */
static int64_t staged_fwd_iterations(const sdpa__problem *p, int64_t wg, int64_t k)
{
    int64_t per_tile = cdiv(k * p->D, wg) + cdiv(k * p->Dv, wg) + p->D + p->Dv + 1;
    return staged_slabs(p, wg) * cdiv(p->Skv, k) * per_tile + p->D + 2 * p->Dv + 16;
}

/* Query rows per invocation (fwd_rows.comp) and the largest rows x head
 * size: its q and output registers grow with both, and so does llvmpipe's
 * compile time. */
#define MAX_ROWS 8
#define MAX_ROW_FLOATS 512

/* Whether q_tile = rows fits fwd_rows.comp's limits for p (rows <= 1 runs
 * fwd.comp and always fits). */
static bool rows_fit(const sdpa__problem *p, int64_t rows)
{
    int64_t widest = p->D > p->Dv ? p->D : p->Dv;
    return rows <= 1 || (rows <= MAX_ROWS && rows * widest <= MAX_ROW_FLOATS);
}

/* Loop iterations of an unstaged forward invocation outside its key tiles:
 * loading its rows' q, clearing and writing their outputs. */
static int64_t fwd_row_iterations(const sdpa__problem *p, int64_t rows)
{
    return rows * (p->D + 2 * p->Dv) + 16;
}

/* fwd_fa2.comp: query rows per work-group */
static int64_t fa2_block_rows(int64_t wg, int64_t lanes, int64_t rows)
{
    return wg / lanes * rows;
}

uint64_t sdpa__vk_fwd_invocations(const sdpa__vk_plan *pl)
{
    const sdpa__problem *p = &pl->p;
    if (pl->lanes > 0)
        return p->B * p->Hkv *
               cdiv((p->Hq / p->Hkv) * p->Sq, fa2_block_rows(pl->wg_size, pl->lanes, pl->rows)) *
               pl->nsplit * pl->wg_size;
    if (pl->rows <= 1) return p->B * p->Hq * p->Sq * pl->nsplit;
    return p->B * p->Hkv * cdiv((p->Hq / p->Hkv) * p->Sq, pl->rows) * pl->nsplit;
}

/* ---- fwd_fa2.comp (the GPU-class forward) ----------------------------------- */
#define FA2_MAX_ROWS 4
#define FA2_MAX_LANES 64
#define FA2_DEFAULT_K_TILE 8
/* Work-groups a forward should give a GPU-class device to fill it: Vulkan
 * does not report compute units, so this assumes 64 of them (an RX 6800 XT
 * has 36 CUs x 2 SIMDs, an RTX 4090 128 SMs) and asks for 4 groups each. */
#define FA2_FILL_GROUPS 256
/* The fewest keys a decode split gets. */
#define FA2_MIN_SPLIT_KEYS 128

static int64_t chunks_per_lane(int64_t d, int64_t lanes) { return cdiv(cdiv(d, 4), lanes); }

/* Shared memory of fwd_fa2.comp: the K and V tile (vec4 chunks, padded to
 * whole lanes; 16 bytes each in f32, 8 in f16/bf16) and, in the fwd_fa2sh
 * variant, one partial score per invocation, row and key. */
static int64_t fa2_shared_bytes(const sdpa__problem *p, int64_t wg, int64_t lanes, int64_t rows,
                                int64_t k_tile, bool shared_reduce)
{
    /* K/V in another type than q's are staged as f32 (fwd_fa2.comp sh_kf) */
    int64_t chunk = p->dtype == SDPA_DTYPE_F32 || kv_type(p) != SDPA_VK_KV_SAME ? 16 : 8;
    int64_t tile = k_tile * lanes * (chunks_per_lane(p->D, lanes) + chunks_per_lane(p->Dv, lanes));
    return tile * chunk + (shared_reduce ? wg * rows * k_tile * 4 : 4);
}

/* Loop iterations of one fwd_fa2.comp invocation per key tile, counting the
 * loops the driver may keep (llvmpipe unrolls the constant ones when it can;
 * this assumes it does not). */
static int64_t fa2_tile_iterations(const sdpa__problem *p, int64_t wg, int64_t lanes,
                                   int64_t rows, int64_t k)
{
    int64_t cpl = chunks_per_lane(p->D, lanes), cplv = chunks_per_lane(p->Dv, lanes);
    return cdiv(k * cpl * lanes, wg) + cdiv(k * cplv * lanes, wg) + k * (cpl + cplv) +
           rows * k * (lanes + 2) + rows * cplv + 2;
}

/* Lanes per row: the power of two that leaves each lane at most `chunks`
 * vec4 chunks of the widest row, at most `most` and the subgroup (the row's
 * sum runs over subgroup shuffles). */
static int fa2_lanes(const sdpa__vk_caps *caps, const sdpa__problem *p, int chunks, int most)
{
    int64_t widest = p->D > p->Dv ? p->D : p->Dv, want = cdiv(cdiv(widest, 4), chunks);
    int lanes = 1;
    while (lanes < want && lanes < most) lanes *= 2;
    while (caps->subgroup_size && (uint32_t)lanes > caps->subgroup_size && lanes > 1) lanes /= 2;
    return lanes;
}

/* Lanes per row of fwd_fa2.comp by default: each lane holds at most 4
 * chunks of q (and of the output); at most 16. */
static int fa2_default_lanes(const sdpa__vk_caps *caps, const sdpa__problem *p)
{
    return fa2_lanes(caps, p, 4, 16);
}

/* Whether the device can sum a row over its lanes with subgroup shuffles. */
static bool fa2_shuffle_ok(const sdpa__vk_caps *caps, int lanes)
{
    return (caps->subgroup_ops & VK_SUBGROUP_FEATURE_SHUFFLE_BIT) && caps->subgroup_size &&
           (uint32_t)lanes <= caps->subgroup_size;
}

bool sdpa__vk_gpu_class(const sdpa__vk_caps *caps)
{
    return SDPA__VK_GPU_STYLE(caps); /* the vendor defaults table (vk_vendor.c) */
}

/* ---- bwd_fa2_dq.comp / bwd_fa2_dkv.comp (the GPU-class backward) ------------- */

/* Shared memory of the GPU-class backward's passes (the larger one): the
 * staged tile (K and V for dq, q and dO for dkv: the same chunk counts), lse
 * and D of the staged rows (dkv) and, in the *sh variants, two partials per
 * invocation, row and key. */
static int64_t bwd_fa2_shared_bytes(const sdpa__problem *p, int64_t wg, int64_t lanes,
                                    int64_t rows, int64_t k, bool shared_reduce)
{
    return fa2_shared_bytes(p, wg, lanes, rows, k, false) + 8 * k +
           (shared_reduce ? 2 * wg * rows * k * 4 : 0);
}

/* Loop iterations of one bwd_fa2_dq (walks every key) or bwd_fa2_dkv (the
 * query rows of every head of its group) invocation: per tile the staging,
 * two sweeps and the lane sums, counted as twice the forward's tile. */
static int64_t bwd_fa2_iterations(const sdpa__vk_plan *pl, int pipe)
{
    const sdpa__problem *p = &pl->p;
    int64_t k = pl->bwd.k_tile, group = p->Hq / p->Hkv;
    int64_t tile = 2 * fa2_tile_iterations(p, pl->bwd.wg_size, pl->bwd.lanes, pl->bwd.rows, k);
    int64_t tiles = pipe == SDPA__VK_P_BWD_DQ ? cdiv(p->Skv, k) : group * cdiv(p->Sq, k);
    return tiles * tile + fwd_row_iterations(p, 2 * pl->bwd.rows);
}

uint64_t sdpa__vk_bwd_invocations(const sdpa__vk_plan *view, int pipe)
{
    const sdpa__problem *p = &view->p;
    if (view->lanes <= 0)
        return (uint64_t)(pipe == SDPA__VK_P_BWD_DQ ? p->B * p->Hq * p->Sq
                                                   : p->B * p->Hkv * p->Skv);
    int64_t slab = pipe == SDPA__VK_P_BWD_DQ ? (p->Hq / p->Hkv) * p->Sq : p->Skv;
    return (uint64_t)(p->B * p->Hkv * cdiv(slab, fa2_block_rows(view->wg_size, view->lanes,
                                                                view->rows)) *
                      view->wg_size);
}

void sdpa__vk_bwd_view(const sdpa__vk_plan *pl, sdpa__vk_plan *view)
{
    *view = *pl;
    view->lanes = pl->bwd.lanes;
    if (pl->bwd.lanes <= 0) return;
    view->rows = pl->bwd.rows;
    view->wg_size = pl->bwd.wg_size;
    view->k_tile = pl->bwd.k_tile;
    view->fa2_shared_reduce = pl->bwd.shared_reduce;
    view->stage_kv = 0;
}

/* Largest per-invocation loop-iteration count of the plan's shaders (the
 * estimates follow the loop structure of shaders/vulkan/ *.comp). */
static int64_t loop_iterations(const sdpa__vk_plan *pl, const char **which)
{
    const sdpa__problem *p = &pl->p;
    int64_t k = pl->k_tile, D = p->D, Dv = p->Dv, group = p->Hq / p->Hkv;
    int64_t keys = pl->nsplit > 1 ? pl->split_len : p->Skv;
    int64_t worst = pl->stage_kv ? staged_fwd_iterations(p, pl->wg_size, k)
                                 : cdiv(keys, k) * (D + Dv + 1) +
                                       fwd_row_iterations(p, pl->rows);
    *which = pl->stage_kv ? "fwd (staged)" : "fwd";
    if (pl->lanes > 0) {
        worst = cdiv(keys, k) * fa2_tile_iterations(p, pl->wg_size, pl->lanes, pl->rows, k) +
                fwd_row_iterations(p, pl->rows);
        *which = "fwd (fa2)";
    }
    int64_t n = pl->nsplit > 1 ? pl->nsplit * (Dv + 1) + Dv : 0;
    if (n > worst) { worst = n; *which = "combine"; }
    if (p->has_stats && p->Sq > worst) { worst = p->Sq; *which = "stats_reduce"; }
    if ((pl->flags & SDPA_PLAN_BACKWARD) && pl->bwd.lanes > 0) {
        n = bwd_fa2_iterations(pl, SDPA__VK_P_BWD_DQ);
        if (n > worst) { worst = n; *which = "bwd_fa2_dq"; }
        n = bwd_fa2_iterations(pl, SDPA__VK_P_BWD_DKV);
        if (n > worst) { worst = n; *which = "bwd_fa2_dkv"; }
    } else if (pl->flags & SDPA_PLAN_BACKWARD) {
        n = cdiv(p->Skv, k) * (2 * D + Dv + 1) + 6 * D + 2 * Dv;
        if (n > worst) { worst = n; *which = "bwd_dq"; }
        n = group * (cdiv(p->Sq, k) * (2 * D + 2 * Dv + 1) + 1) + 6 * D + 2 * Dv;
        if (n > worst) { worst = n; *which = "bwd_dkv"; }
    }
    if (pl->flags & SDPA_PLAN_BACKWARD) {
        if (p->has_q_gain || p->has_k_gain || p->has_temperature || p->has_sinks) {
            n = p->B * p->Hq * p->Sq;
            if (p->B * p->Hkv * p->Skv > n) n = p->B * p->Hkv * p->Skv;
            if (n > worst) { worst = n; *which = "bwd_reduce"; }
        }
    }
    return worst;
}

/* The Vulkan backend's tile parameters (checked by the front end,
 * src/core/tile_check.c); the device's work-group limit and the q_tile
 * register and shared-memory limits are checked by sdpa__vk_plan_create. */
const sdpa__tile_param_info sdpa__vk_tile_params[SDPA__VK_TILE_PARAMS] = {
    {SDPA_TILE_Q_TILE, NULL, "query rows per invocation: 1 = fwd.comp (the lanes of a subgroup "
     "share each K/V load), 2..8 = fwd_rows.comp (docs/vulkan.md)", 1, MAX_ROWS, 0, false, 1,
     false},
    {SDPA_TILE_K_TILE, NULL, "keys per inner tile", 1, MAX_K_TILE, 0, false, DEFAULT_K_TILE,
     false},
    {SDPA_TILE_WG_SIZE, NULL, "invocations per work-group; SDPA_AUTO = 64 or the device's "
     "limit", 1, 1024, 0, false, SDPA_AUTO, false},
    {SDPA_TILE_STAGE_KV, NULL, "1 = stage the K/V tile in shared memory", 0, 1, 0, false, 0,
     false},
    {SDPA_TILE_SPLIT_KV, NULL, "key splits merged by LSE; SDPA_AUTO = by problem and device",
     1, MAX_SPLIT, 0, false, SDPA_AUTO, false},
    {SDPA_TILE_UNFUSED, NULL, "only 0: scores are never materialised", 0, 0, 0, false,
     SDPA_AUTO, false},
    {SDPA_TILE_LANES, NULL, "invocations per query row: 0 = one row per invocation "
     "(fwd.comp, fwd_rows.comp), 1..64 = the FlashAttention-2 forward fwd_fa2.comp (q_tile = "
     "rows per lane group 1..4, k_tile = keys per staged tile); SDPA_AUTO = by device class "
     "(docs/vulkan.md)", 0, FA2_MAX_LANES, 0, false, SDPA_AUTO, false},
};

/* A value of the configuration (in range: tile_check.c) or the default. */
static int pick(const sdpa_tile_config *t, sdpa_tile_param param, int def)
{
    int v = sdpa_tile_config_get(t, param);
    return v != SDPA_AUTO ? v : def;
}

/* Fills the workspace layout (f32 elements) and returns its size in bytes. */
static size_t layout_workspace(sdpa__vk_plan *pl)
{
    const sdpa__problem *p = &pl->p;
    uint64_t rows = (uint64_t)(p->B * p->Hq * p->Sq), kvrows = (uint64_t)(p->B * p->Hkv * p->Skv);
    bool normed = (pl->spec_flags & SDPA__VK_F_NORMED) != 0;
    bool bwd = (pl->flags & SDPA_PLAN_BACKWARD) != 0;
    uint64_t at = 0;
#define TAKE(slot, n)            \
    do {                         \
        slot = (uint32_t)at;     \
        at += (n);               \
    } while (0)
    TAKE(pl->ws0[0], normed ? rows * (uint64_t)p->D : 0);
    TAKE(pl->ws0[1], normed ? kvrows * (uint64_t)p->D : 0);
    TAKE(pl->ws0[2], p->has_stats ? rows * SDPA_RS_SIZE : 0);
    TAKE(pl->ws0[3], pl->nsplit > 1 ? rows * pl->nsplit * (uint64_t)(SDPA_PT_SIZE + p->Dv) : 0);
    TAKE(pl->ws1[0], bwd ? rows : 0);
    TAKE(pl->ws1[1], bwd && p->has_q_gain ? rows * (uint64_t)p->D : 0);
    TAKE(pl->ws1[2], bwd && p->has_k_gain ? kvrows * (uint64_t)p->D : 0);
    TAKE(pl->ws1[3], bwd && p->has_temperature ? rows : 0);
#undef TAKE
    return (size_t)(at * sizeof(float));
}

sdpa_status sdpa__vk_plan_wait(sdpa_context *ctx, sdpa__vk_state *s, sdpa__vk_plan *pl)
{
    if (!pl->pending) return SDPA_OK;
    VkResult r = vkWaitForFences(s->device, 1, &pl->fence, VK_TRUE, UINT64_MAX);
    if (r == VK_SUCCESS) r = vkResetFences(s->device, 1, &pl->fence);
    pl->pending = false;
    if (r != VK_SUCCESS)
        return SDPA__FAIL_NATIVE(ctx, sdpa__vk_status(r, SDPA_ERR_DEVICE), r,
                                 "vulkan: waiting for the plan's work failed (%s)",
                                 sdpa__vk_result_name(r));
    return SDPA_OK;
}

static sdpa_status vkcheck(sdpa_context *ctx, VkResult r, const char *what)
{
    if (r == VK_SUCCESS) return SDPA_OK;
    return SDPA__FAIL_NATIVE(ctx, sdpa__vk_status(r, SDPA_ERR_DEVICE), r,
                             "vulkan: %s failed (%s)", what, sdpa__vk_result_name(r));
}

static sdpa_status plan_build(sdpa_context *ctx, sdpa__vk_state *s, sdpa__vk_plan *pl)
{
    const sdpa__problem *p = &pl->p;
    bool bwd = (pl->flags & SDPA_PLAN_BACKWARD) != 0;
    size_t ws_bytes = layout_workspace(pl);
    SDPA__CHECK(ctx, ws_bytes / sizeof(float) < (size_t)U32_LIMIT, SDPA_ERR_UNSUPPORTED,
                "vulkan: workspace too large for 32-bit element indices");
    SDPA__CHECK(ctx, ws_bytes <= s->caps.max_storage_range, SDPA_ERR_UNSUPPORTED,
                "vulkan: workspace of %zu bytes exceeds the device's maxStorageBufferRange "
                "(%llu bytes)", ws_bytes, (unsigned long long)s->caps.max_storage_range);
    pl->ws_bytes = ws_bytes;
    SDPA__TRY(sdpa__vk_buffer_create(ctx, s, ws_bytes ? ws_bytes : 16,
                                     VK_BUFFER_USAGE_STORAGE_BUFFER_BIT, false, &pl->ws));
    SDPA__TRY(sdpa__vk_buffer_create(ctx, s, sizeof(sdpa__vk_params),
                                     VK_BUFFER_USAGE_UNIFORM_BUFFER_BIT, true, &pl->params));
    SDPA__CHECK(ctx, pl->params->mapped, SDPA_ERR_DEVICE,
                "vulkan: no host-visible memory for the parameter block");

    struct { int id; const char *name; bool want; } pipes[] = {
        {SDPA__VK_P_QKNORM, "qknorm", (pl->spec_flags & SDPA__VK_F_NORMED) != 0},
        {SDPA__VK_P_FWD, "fwd", true},
        {SDPA__VK_P_COMBINE, "combine", pl->nsplit > 1},
        {SDPA__VK_P_STATS, "stats_reduce", p->has_stats},
        {SDPA__VK_P_BWD_DQ, "bwd_dq", bwd},
        {SDPA__VK_P_BWD_DKV, "bwd_dkv", bwd},
        {SDPA__VK_P_BWD_REDUCE, "bwd_reduce",
         bwd && (p->has_q_gain || p->has_k_gain || p->has_temperature || p->has_sinks)},
    };
    sdpa__vk_plan bview; /* bwd_dq, bwd_dkv: the GPU-class backward's configuration */
    sdpa__vk_bwd_view(pl, &bview);
    for (size_t i = 0; i < sizeof pipes / sizeof pipes[0]; i++)
        if (pipes[i].want) {
            bool bw = pipes[i].id == SDPA__VK_P_BWD_DQ || pipes[i].id == SDPA__VK_P_BWD_DKV;
            SDPA__TRY(sdpa__vk_pipeline_create(ctx, s, pipes[i].name, p->dtype,
                                               bw ? &bview : pl, &pl->pipes[pipes[i].id]));
        }
    sdpa__vk_pcache_save(ctx, s);

    VkDescriptorPoolSize sizes[2] = {
        {VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, sdpa__vk_binding_count(s) - 1},
        {VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER, 1},
    };
    VkDescriptorPoolCreateInfo dpi = {
        .sType = VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO,
        .maxSets = 1,
        .poolSizeCount = 2,
        .pPoolSizes = sizes,
    };
    SDPA__TRY(vkcheck(ctx, vkCreateDescriptorPool(s->device, &dpi, NULL, &pl->desc_pool),
                      "vkCreateDescriptorPool"));
    VkDescriptorSetAllocateInfo dsi = {
        .sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO,
        .descriptorPool = pl->desc_pool,
        .descriptorSetCount = 1,
        .pSetLayouts = &s->set_layout,
    };
    SDPA__TRY(vkcheck(ctx, vkAllocateDescriptorSets(s->device, &dsi, &pl->desc_set),
                      "vkAllocateDescriptorSets"));
    VkCommandBufferAllocateInfo cai = {
        .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
        .commandPool = s->cmd_pool,
        .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
        .commandBufferCount = 1,
    };
    SDPA__TRY(vkcheck(ctx, vkAllocateCommandBuffers(s->device, &cai, &pl->cmd),
                      "vkAllocateCommandBuffers"));
    VkFenceCreateInfo fci = {.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
    SDPA__TRY(vkcheck(ctx, vkCreateFence(s->device, &fci, NULL, &pl->fence), "vkCreateFence"));
    return SDPA_OK;
}

/* The row-per-invocation forwards (fwd.comp, its staged variant,
 * fwd_rows.comp): staging, rows per invocation and the tentative key split
 * (pl->nsplit, clamped by the caller). */
static sdpa_status rows_config(sdpa_context *ctx, const sdpa__vk_caps *caps,
                               const sdpa__problem *p, const sdpa_tile_config *t, int max_wg,
                               sdpa__vk_plan *pl)
{
    /* K/V staging: SDPA_AUTO = 0 on every device for now (docs/vulkan.md). */
    sdpa_status st = SDPA_OK;
    int stage = pick(t, SDPA_TILE_STAGE_KV, 0);
    int forced_split = pick(t, SDPA_TILE_SPLIT_KV, 0);
    int64_t shared_need = staged_shared_bytes(pl->k_tile, p->D, p->Dv);
    if (pl->wg_size > max_wg)
        st = SDPA__FAIL(ctx, SDPA_ERR_UNSUPPORTED,
                        "vulkan: tile.wg_size %d exceeds the device's %d invocations per "
                        "work-group", pl->wg_size, max_wg);
    else if (stage && shared_need > (int64_t)caps->max_shared)
        st = SDPA__FAIL(ctx, SDPA_ERR_UNSUPPORTED,
                        "vulkan: tile.stage_kv = 1 with k_tile %d needs %lld bytes of shared "
                        "memory for the K/V tile (k_tile x (D %lld + Dv %lld) floats) and the "
                        "device's maxComputeSharedMemorySize is %u bytes (use a smaller "
                        "k_tile or stage_kv 0)", pl->k_tile, (long long)shared_need,
                        (long long)p->D, (long long)p->Dv, caps->max_shared);
    else if (stage && forced_split > 1)
        st = SDPA__FAIL(ctx, SDPA_ERR_UNSUPPORTED,
                        "vulkan: tile.stage_kv = 1 does not combine with a key split "
                        "(tile.split_kv = %d); leave split_kv at SDPA_AUTO or 1",
                        forced_split);
    if (st != SDPA_OK) return st;
    pl->stage_kv = stage;

    /* query rows per invocation (q_tile): SDPA_AUTO = 1, fwd.comp, on every
     * device (docs/vulkan.md); > 1 selects fwd_rows.comp */
    int q_rows = pick(t, SDPA_TILE_Q_TILE, 1);
    if (!rows_fit(p, q_rows))
        st = SDPA__FAIL(ctx, SDPA_ERR_UNSUPPORTED,
                        "vulkan: tile.q_tile %d (query rows per invocation) must be at most %d "
                        "and keep q_tile x max(D, Dv) = %lld within %d registers",
                        q_rows, MAX_ROWS, (long long)q_rows * (p->D > p->Dv ? p->D : p->Dv),
                        MAX_ROW_FLOATS);
    else if (q_rows > 1 && stage)
        st = SDPA__FAIL(ctx, SDPA_ERR_UNSUPPORTED,
                        "vulkan: tile.q_tile %d does not combine with stage_kv = 1; use "
                        "q_tile 1 or stage_kv 0", q_rows);
    if (st != SDPA_OK) return st;
    pl->rows = q_rows;

    int64_t rows = p->B * p->Hq * p->Sq;
    int nsplit = 1;
    if (stage) {
        /* the staged forward has no key split: automatic splits (decode,
         * llvmpipe's loop budget) are not made; the budget check below
         * refuses what does not fit */
    } else if (forced_split) {
        nsplit = forced_split;
    } else if (rows < 128 && p->Skv >= 512) {
        /* decode: enough invocations to fill the device, >= 128 keys each */
        int64_t want = (256 + rows - 1) / rows, most = p->Skv / 128;
        nsplit = (int)(want < most ? want : most);
    }
    if (caps->loop_limited && !stage) {
        /* enough splits that one invocation's key range fits the budget */
        int64_t per = (SDPA__VK_LOOP_BUDGET - fwd_row_iterations(p, q_rows)) /
                      (p->D + p->Dv + 1);
        int64_t need = per > 0 ? cdiv(p->Skv, per * pl->k_tile) : MAX_SPLIT + 1;
        if (need > nsplit) nsplit = (int)(need < MAX_SPLIT + 1 ? need : MAX_SPLIT + 1);
    }
    pl->nsplit = nsplit;
    return SDPA_OK;
}

/* fwd_fa2.comp with `lanes` invocations per row: work-group, rows per lane
 * group, key tile (shrunk to the shared memory when not forced), the
 * reduction variant and the tentative key split (decode fills the device;
 * llvmpipe's loop budget). Forced values that do not fit are refused. */
static sdpa_status fa2_config(sdpa_context *ctx, const sdpa__vk_caps *caps,
                              const sdpa__problem *p, const sdpa_tile_config *t, int max_wg,
                              int lanes, sdpa__vk_plan *pl)
{
    SDPA__CHECK(ctx, (lanes & (lanes - 1)) == 0 && lanes <= max_wg, SDPA_ERR_UNSUPPORTED,
                "vulkan: tile.lanes %d must be a power of two and at most the device's %d "
                "invocations per work-group", lanes, max_wg);
    SDPA__CHECK(ctx, pick(t, SDPA_TILE_STAGE_KV, 0) == 0, SDPA_ERR_UNSUPPORTED,
                "vulkan: tile.lanes %d (fwd_fa2.comp, which always stages K/V) does not "
                "combine with stage_kv = 1; use lanes 0 for the staged fwd.comp", lanes);
    SDPA__CHECK(ctx, !(p->qk_norm != SDPA_QK_NORM_NONE || p->has_q_gain || p->has_k_gain),
                SDPA_ERR_UNSUPPORTED,
                "vulkan: tile.lanes %d: fwd_fa2.comp has no QK-norm or gains; use lanes 0",
                lanes);
    int64_t slab_rows = (p->Hq / p->Hkv) * p->Sq;
    int rows = pick(t, SDPA_TILE_Q_TILE, -1), wg = pick(t, SDPA_TILE_WG_SIZE, -1);
    if (rows < 0) rows = slab_rows >= 2 * (64 / lanes > 0 ? 64 / lanes : 1) ? 2 : 1;
    if (wg < 0) {
        /* 64 invocations, fewer when a KV slab has fewer rows (decode) */
        int64_t want = cdiv(slab_rows, rows) * lanes;
        wg = 64;
        while (wg / 2 >= lanes && wg / 2 >= want && wg / 2 >= 32) wg /= 2;
        if (wg < lanes) wg = lanes;
        if (wg > max_wg) wg = max_wg - max_wg % lanes;
    }
    SDPA__CHECK(ctx, rows >= 1 && rows <= FA2_MAX_ROWS, SDPA_ERR_UNSUPPORTED,
                "vulkan: tile.q_tile %d with lanes %d (rows per lane group of fwd_fa2.comp) "
                "must be 1..%d", rows, lanes, FA2_MAX_ROWS);
    SDPA__CHECK(ctx, wg <= max_wg && wg >= lanes && wg % lanes == 0, SDPA_ERR_UNSUPPORTED,
                "vulkan: tile.wg_size %d with lanes %d must be a multiple of lanes and at "
                "most the device's %d invocations per work-group", wg, lanes, max_wg);
    bool shared_reduce = !fa2_shuffle_ok(caps, lanes);
    int k = pick(t, SDPA_TILE_K_TILE, -1);
    bool k_forced = k > 0;
    if (!k_forced) {
        k = FA2_DEFAULT_K_TILE;
        while (k > 1 && fa2_shared_bytes(p, wg, lanes, rows, k, shared_reduce) >
                            (int64_t)caps->max_shared)
            k /= 2;
    }
    int64_t need = fa2_shared_bytes(p, wg, lanes, rows, k, shared_reduce);
    SDPA__CHECK(ctx, need <= (int64_t)caps->max_shared, SDPA_ERR_UNSUPPORTED,
                "vulkan: fwd_fa2.comp with lanes %d, k_tile %d needs %lld bytes of shared "
                "memory and the device's maxComputeSharedMemorySize is %u bytes (use a smaller "
                "k_tile or lanes 0)", lanes, k, (long long)need, caps->max_shared);
    pl->lanes = lanes;
    pl->rows = rows;
    pl->wg_size = wg;
    pl->k_tile = k;
    pl->stage_kv = 0;
    pl->fa2_shared_reduce = shared_reduce;
    /* q in f16 registers where the device has f16 arithmetic types (the
     * products stay f32: fa2_common.glsl, FA2_F16) and guarantees 16-bit
     * denormals (the module then requests DenormPreserve 16): q reaches its
     * f16 registers through two f16 conversions, which a device free to
     * flush would turn a subnormal q into 0 in */
    pl->fa2_f16 = caps->fp16 && caps->denorm_widths != 0 && p->dtype == SDPA_DTYPE_F16;

    int forced_split = pick(t, SDPA_TILE_SPLIT_KV, 0);
    int64_t groups = p->B * p->Hkv * cdiv(slab_rows, fa2_block_rows(wg, lanes, rows));
    int64_t nsplit = 1;
    if (forced_split) {
        nsplit = forced_split;
    } else if (groups < FA2_FILL_GROUPS && p->Skv >= 2 * FA2_MIN_SPLIT_KEYS) {
        /* decode and other small problems: split the keys until the device
         * has FA2_FILL_GROUPS work-groups, each split >= FA2_MIN_SPLIT_KEYS */
        int64_t want = cdiv(FA2_FILL_GROUPS, groups), most = p->Skv / FA2_MIN_SPLIT_KEYS;
        nsplit = want < most ? want : most;
    }
    if (caps->loop_limited) {
        int64_t per = (SDPA__VK_LOOP_BUDGET - fwd_row_iterations(p, rows)) /
                      fa2_tile_iterations(p, wg, lanes, rows, k);
        int64_t n = per > 0 ? cdiv(p->Skv, per * k) : MAX_SPLIT + 1;
        if (n > nsplit) nsplit = n < MAX_SPLIT + 1 ? n : MAX_SPLIT + 1;
    }
    pl->nsplit = (int)nsplit;
    return SDPA_OK;
}

/* Lanes per row (or key) of the GPU-class backward: each lane keeps four
 * register rows (q, dO, dq and D's inputs; k, v, dk, dv), so at most 2
 * chunks of each (D = 64: 8, 128: 16, 256: 32 lanes); at most 32. */
static int bwd_fa2_lanes(const sdpa__vk_caps *caps, const sdpa__problem *p)
{
    return fa2_lanes(caps, p, 2, 32);
}

/* The backward's configuration (pl->bwd): the GPU-class backward on
 * GPU-class devices unless the problem needs QK-norm or gains, a feature of
 * capabilities.h other than ALiBi and sinks (a K/V type other than q's:
 * bwd_dq.comp and bwd_dkv.comp run it; ALiBi is in finish_score and the
 * sink in the forward's lse, so the FlashAttention-2 passes need nothing of
 * their own, and dsinks is bwd_reduce.comp's from the D they store), or the
 * configuration forces lanes 0 (the older shaders throughout); lanes by
 * bwd_fa2_lanes unless forced (> 0: the forward's and the backward's), 64
 * invocations, 2 rows per lane group (1 when a
 * slab has few rows or keys), k_tile 8 halved to fit shared memory. Plans
 * it does not fit (shared memory; llvmpipe's loop budget) keep the older
 * shaders. The other tile options apply to the forward only. */
static void bwd_fa2_config(const sdpa__vk_caps *caps, const sdpa__problem *p,
                           const sdpa_tile_config *t, int max_wg, sdpa__vk_plan *pl)
{
    memset(&pl->bwd, 0, sizeof pl->bwd);
    bool normed = p->qk_norm != SDPA_QK_NORM_NONE || p->has_q_gain || p->has_k_gain;
    const unsigned fa2_features = SDPA__FEAT_ALIBI | SDPA__FEAT_SINKS |
                                  SDPA__FEAT_ALIBI_BACKWARD | SDPA__FEAT_SINKS_BACKWARD;
    if (!(pl->flags & SDPA_PLAN_BACKWARD) || !sdpa__vk_gpu_class(caps) || normed ||
        (sdpa__features_needed(p, pl->flags) & ~fa2_features) != 0 ||
        pick(t, SDPA_TILE_LANES, -1) == 0)
        return;
    int lanes = pick(t, SDPA_TILE_LANES, -1), wg = 64 < max_wg ? 64 : max_wg;
    if (lanes < 0) lanes = bwd_fa2_lanes(caps, p); /* a forced lanes > 0 serves both */
    wg -= wg % lanes;
    if (wg < lanes) return;
    int64_t groups = wg / lanes;
    int rows = (p->Hq / p->Hkv) * p->Sq >= 2 * groups && p->Skv >= 2 * groups ? 2 : 1;
    bool shared_reduce = !fa2_shuffle_ok(caps, lanes);
    int k = FA2_DEFAULT_K_TILE;
    while (k > 1 && bwd_fa2_shared_bytes(p, wg, lanes, rows, k, shared_reduce) >
                        (int64_t)caps->max_shared)
        k /= 2;
    if (bwd_fa2_shared_bytes(p, wg, lanes, rows, k, shared_reduce) > (int64_t)caps->max_shared)
        return;
    pl->bwd.lanes = lanes;
    pl->bwd.rows = rows;
    pl->bwd.wg_size = wg;
    pl->bwd.k_tile = k;
    pl->bwd.shared_reduce = shared_reduce;
    if (caps->loop_limited && (bwd_fa2_iterations(pl, SDPA__VK_P_BWD_DQ) > SDPA__VK_LOOP_BUDGET ||
                               bwd_fa2_iterations(pl, SDPA__VK_P_BWD_DKV) > SDPA__VK_LOOP_BUDGET))
        memset(&pl->bwd, 0, sizeof pl->bwd);
}

sdpa_status sdpa__vk_plan_config(sdpa_context *ctx, const sdpa__vk_caps *caps,
                                 const sdpa__problem *p, const sdpa_plan_options *options,
                                 sdpa__vk_plan *pl)
{
    pl->p = *p;
    pl->flags = options ? options->flags : 0;
    pl->packed = caps->packed;
    const sdpa_tile_config *t = options ? options->tile : NULL;
    int max_wg = (int)(caps->max_wg < 1024 ? caps->max_wg : 1024);
    pl->wg_size = pick(t, SDPA_TILE_WG_SIZE, DEFAULT_WG < max_wg ? DEFAULT_WG : max_wg);
    pl->k_tile = pick(t, SDPA_TILE_K_TILE, DEFAULT_K_TILE);
    sdpa__strlcpy(pl->source, t ? "forced" : "default", sizeof pl->source);

    /* the GPU-class forward: SDPA_AUTO = fwd_fa2.comp on GPU-class devices
     * unless the problem needs QK-norm or gains or the configuration asks
     * for the older shaders' staging or more than 4 rows; 0 = the older
     * shaders */
    bool normed = p->qk_norm != SDPA_QK_NORM_NONE || p->has_q_gain || p->has_k_gain;
    int lanes = pick(t, SDPA_TILE_LANES, -1);
    if (lanes < 0)
        lanes = sdpa__vk_gpu_class(caps) && !normed && pick(t, SDPA_TILE_STAGE_KV, 0) == 0 &&
                        pick(t, SDPA_TILE_Q_TILE, 1) <= FA2_MAX_ROWS
                    ? fa2_default_lanes(caps, p)
                    : 0;
    pl->lanes = 0;
    pl->fa2_shared_reduce = false;
    pl->fa2_f16 = false;
    if (lanes > 0) {
        SDPA__TRY(fa2_config(ctx, caps, p, t, max_wg, lanes, pl));
    } else {
        SDPA__TRY(rows_config(ctx, caps, p, t, max_wg, pl));
    }
    int nsplit = pl->nsplit;
    /* the watchdog bound on keys per invocation (vk_split.c), unless the
     * split is forced or the staged forward (which does not split) runs */
    if (!pl->stage_kv && !pick(t, SDPA_TILE_SPLIT_KV, 0)) nsplit = sdpa__vk_split_keys(p, nsplit);
    if (nsplit > MAX_SPLIT) nsplit = MAX_SPLIT;
    if (nsplit > p->Skv) nsplit = (int)p->Skv;
    if (nsplit < 1) nsplit = 1;
    pl->split_len = (int)((p->Skv + nsplit - 1) / nsplit);
    pl->nsplit = (int)((p->Skv + pl->split_len - 1) / pl->split_len);

    unsigned f = 0;
    if (p->has_mask) f |= SDPA__VK_F_MASK;
    if (p->has_bias) f |= SDPA__VK_F_BIAS;
    if (p->has_kv_len) f |= SDPA__VK_F_KVLEN;
    if (p->has_q_gain) f |= SDPA__VK_F_QGAIN;
    if (p->has_k_gain) f |= SDPA__VK_F_KGAIN;
    if (p->has_temperature) f |= SDPA__VK_F_TEMP;
    if (p->has_lse) f |= SDPA__VK_F_LSE;
    if (p->has_stats) f |= SDPA__VK_F_STATS;
    if (p->softcap > 0) f |= SDPA__VK_F_SOFTCAP;
    if (pl->nsplit > 1) f |= SDPA__VK_F_SPLIT;
    if (p->qk_norm != SDPA_QK_NORM_NONE || p->has_q_gain || p->has_k_gain)
        f |= SDPA__VK_F_NORMED;
    if (p->has_alibi_slopes) f |= SDPA__VK_F_ALIBI;
    if (p->has_sinks) f |= SDPA__VK_F_SINKS;
    if (p->has_block_table) f |= SDPA__VK_F_PAGED;
    pl->spec_flags = f;
    pl->kv_type = kv_type(p);
    bwd_fa2_config(caps, p, t, max_wg, pl);
    const float fpar[4] = {(float)p->scale, (float)p->softcap, (float)p->qk_norm_eps,
                           (float)p->stats_saturation};
    memcpy(pl->fpar, fpar, sizeof fpar);

    const char *which = "";
    int64_t iters = loop_iterations(pl, &which);
    if (caps->loop_limited && iters > SDPA__VK_LOOP_BUDGET) {
        return SDPA__FAIL(ctx, SDPA_ERR_UNSUPPORTED,
                          "vulkan: llvmpipe ends a shader invocation after 65535 loop "
                          "iterations and shader '%s' would need about %lld for this shape "
                          "(use the CPU backend, a larger k_tile, %sor shorter sequences)",
                          which, (long long)iters, pl->stage_kv ? "stage_kv 0, " : "");
    }
    return SDPA_OK;
}

sdpa_status sdpa__vk_plan_create(sdpa_context *ctx, void *state, const sdpa__problem *p,
                                 const sdpa_plan_options *options, void **plan_state)
{
    *plan_state = NULL;
    sdpa__vk_state *s = state;
    SDPA__TRY(sdpa__vk_supports(ctx, state, p, options ? options->flags : 0));
    sdpa__vk_plan *pl = sdpa__calloc(1, sizeof *pl);
    SDPA__CHECK(ctx, pl, SDPA_ERR_OUT_OF_MEMORY, "vulkan: out of host memory");
    sdpa_status st = sdpa__vk_plan_config(ctx, &s->caps, p, options, pl);
    if (st == SDPA_OK) st = plan_build(ctx, s, pl);
    if (st != SDPA_OK) {
        sdpa__vk_plan_free(ctx, state, pl);
        return st;
    }
    *plan_state = pl;
    return SDPA_OK;
}

void sdpa__vk_plan_free(sdpa_context *ctx, void *state, void *plan_state)
{
    (void)ctx;
    sdpa__vk_plan *pl = plan_state;
    sdpa__vk_state *s = state;
    if (!pl || !s) return;
    if (pl->pending) vkWaitForFences(s->device, 1, &pl->fence, VK_TRUE, UINT64_MAX);
    if (pl->fence) vkDestroyFence(s->device, pl->fence, NULL);
    if (pl->cmd) vkFreeCommandBuffers(s->device, s->cmd_pool, 1, &pl->cmd);
    if (pl->desc_pool) vkDestroyDescriptorPool(s->device, pl->desc_pool, NULL);
    for (int i = 0; i < SDPA__VK_P_COUNT; i++)
        if (pl->pipes[i]) vkDestroyPipeline(s->device, pl->pipes[i], NULL);
    sdpa__vk_buffer_destroy(s, pl->ws);
    sdpa__vk_buffer_destroy(s, pl->params);
    sdpa__vk_buffer_destroy(s, pl->pack);
    free(pl);
}

size_t sdpa__vk_plan_workspace(const void *plan_state)
{
    const sdpa__vk_plan *pl = plan_state;
    return pl ? pl->ws_bytes : 0;
}

void sdpa__vk_plan_describe(const void *plan_state, sdpa_plan_info *info)
{
    const sdpa__vk_plan *pl = plan_state;
    if (!pl || !info) return;
    sdpa__strlcpy(info->kernel, pl->nsplit > 1 ? "decode" : "fused", sizeof info->kernel);
    snprintf(info->config, sizeof info->config,
             "wg_size=%d k_tile=%d split_kv=%d split_len=%d q_tile=%d stage_kv=%d "
             "variant=%s kv=%s flags=0x%x lanes=%d%s", pl->wg_size, pl->k_tile, pl->nsplit,
             pl->split_len, pl->rows, pl->stage_kv, sdpa_dtype_name(pl->p.dtype),
             sdpa_dtype_name(pl->p.kv_dtype), pl->spec_flags, pl->lanes,
             pl->fa2_f16 ? " q_regs=f16" : "");
    if (pl->bwd.lanes > 0) { /* the GPU-class backward (bwd_fa2_*.comp) */
        size_t n = strlen(info->config);
        snprintf(info->config + n, sizeof info->config - n, " bwd=fa2/l%d/r%d/wg%d/k%d%s",
                 pl->bwd.lanes, pl->bwd.rows, pl->bwd.wg_size, pl->bwd.k_tile,
                 pl->bwd.shared_reduce ? "/sh" : "");
    }
    sdpa__strlcpy(info->source, pl->source, sizeof info->source);
}

/* --- tuning slots (src/core/backend.h) ----------------------------------
 * Work-group size, key tile and K/V staging are specialization constants, so
 * every candidate reuses the same SPIR-V; split_kv stays automatic (it also
 * keeps llvmpipe under its loop limit) and is 1 in staged candidates. */
static int vk_max_wg(const sdpa__vk_state *s)
{
    int m = s ? (int)(s->caps.max_wg < 1024 ? s->caps.max_wg : 1024) : 256;
    return m > 0 ? m : 1;
}

/* Whether plan creation would accept stage_kv = 1 with (wg, k_tile) for p:
 * the tile fits shared memory and, on llvmpipe, the loop budget. Without a
 * context: Vulkan's minimum shared memory, and the budget applies. */
static bool staged_ok(const sdpa__vk_state *s, const sdpa__problem *p, int wg, int k_tile)
{
    int64_t max_shared = s ? (int64_t)s->caps.max_shared : SHARED_MIN;
    bool limited = s ? s->caps.loop_limited : true;
    if (staged_shared_bytes(k_tile, p->D, p->Dv) > max_shared) return false;
    return !limited || staged_fwd_iterations(p, wg, k_tile) <= SDPA__VK_LOOP_BUDGET;
}

/* The forced values; the work-group size (the device's limit may be below
 * 64) and the table's static defaults (q_tile 1, k_tile, stage_kv 0) when
 * not forced; split_kv stays SDPA_AUTO (chosen by sdpa__vk_plan_config). */
sdpa_status sdpa__vk_default_tile(sdpa_context *ctx, void *state, const sdpa__problem *p,
                                  unsigned flags, const sdpa_tile_config *forced,
                                  sdpa_tile_config *tile)
{
    (void)ctx;
    int max_wg = vk_max_wg(state);
    if (forced) *tile = *forced;
    else sdpa_tile_config_init(tile);
    const sdpa__vk_state *s = state;
    if (s && sdpa_tile_config_get(tile, SDPA_TILE_LANES) == SDPA_AUTO) {
        /* the device class decides (sdpa__vk_gpu_class): what plan creation
         * would choose from this configuration, written out */
        sdpa_plan_options o;
        sdpa_plan_options_init(&o);
        o.flags = flags;
        o.tile = tile;
        sdpa__vk_plan pl;
        memset(&pl, 0, sizeof pl);
        if (sdpa__vk_plan_config(NULL, &s->caps, p, &o, &pl) == SDPA_OK) {
            sdpa_tile_config_set(tile, SDPA_TILE_LANES, pl.lanes);
            if (pl.lanes > 0) {
                const int chosen[][2] = {{SDPA_TILE_Q_TILE, pl.rows},
                                         {SDPA_TILE_K_TILE, pl.k_tile},
                                         {SDPA_TILE_WG_SIZE, pl.wg_size},
                                         {SDPA_TILE_STAGE_KV, 0}};
                for (size_t i = 0; i < sizeof chosen / sizeof chosen[0]; i++)
                    if (sdpa_tile_config_get(tile, (sdpa_tile_param)chosen[i][0]) == SDPA_AUTO)
                        sdpa_tile_config_set(tile, (sdpa_tile_param)chosen[i][0], chosen[i][1]);
            }
        }
    }
    if (sdpa_tile_config_get(tile, SDPA_TILE_WG_SIZE) == SDPA_AUTO)
        sdpa_tile_config_set(tile, SDPA_TILE_WG_SIZE, DEFAULT_WG < max_wg ? DEFAULT_WG : max_wg);
    sdpa__tile_fill_defaults(sdpa__vk_tile_params, SDPA__VK_TILE_PARAMS, tile);
    return SDPA_OK;
}

/* fwd_rows.comp's tuning candidates (rows, k_tile, wg; llvmpipe's compile
 * time grows with rows x head size), appended to out[n..]: only as many rows
 * as the q registers allow and a KV slab's rows (group x Sq) can fill.
 * Returns the new count (which may exceed max, as the slot's contract says). */
static int rows_candidates(const sdpa__problem *p, int max_wg, sdpa_tile_config *out, int n,
                           int max)
{
    static const int multi[][3] = {{2, 8, 64}, {4, 8, 64}, {4, 16, 32}, {8, 8, 32},
                                   {8, 8, 64}, {8, 16, 64}};
    int64_t slab_rows = (p->Hq / p->Hkv) * p->Sq;
    for (size_t a = 0; a < sizeof multi / sizeof multi[0]; a++) {
        int rows = multi[a][0];
        if (!rows_fit(p, rows) || rows / 2 >= slab_rows || multi[a][2] > max_wg) continue;
        if (n < max) {
            sdpa_tile_config_init(&out[n]);
            sdpa_tile_config_set(&out[n], SDPA_TILE_Q_TILE, rows);
            sdpa_tile_config_set(&out[n], SDPA_TILE_K_TILE, multi[a][1]);
            sdpa_tile_config_set(&out[n], SDPA_TILE_WG_SIZE, multi[a][2]);
        }
        n++;
    }
    return n;
}

int sdpa__vk_tile_candidates(sdpa_context *ctx, void *state, const sdpa__problem *p, unsigned flags,
                             sdpa_tile_config *out, int max)
{
    /* fwd.comp's work-group x key tile grid (on lavapipe every pair is
     * within ~15 % of the others; on GPUs the group size matters more) */
    static const int wgs[] = {32, 64, 128}, kts[] = {4, 8, 16};
    /* staged variants: a few work-group / tile pairs (each candidate is a
     * pipeline compile, ~1 s on lavapipe) */
    static const int staged[][2] = {{64, 8}, {128, 16}, {256, 8}};
    int max_wg = vk_max_wg(state), n = 0;
    sdpa_tile_config def;
    sdpa__vk_default_tile(ctx, state, p, flags, NULL, &def);
    if (n < max) out[n] = def;
    n++;
    /* GPU-class devices: fwd_fa2.comp around its default (lanes x rows x
     * k_tile), and the older shaders below with lanes 0 */
    const sdpa__vk_state *s = state;
    bool gpu = s && sdpa__vk_gpu_class(&s->caps);
    if (gpu) {
        int l0 = sdpa_tile_config_get(&def, SDPA_TILE_LANES);
        if (l0 <= 0) l0 = fa2_default_lanes(&s->caps, p);
        const int lanes[] = {l0 / 2, l0, l0 * 2}, rows[] = {1, 2, 4}, kts2[] = {8, 16};
        for (size_t a = 0; a < 3; a++)
            for (size_t b = 0; b < 3; b++)
                for (size_t k = 0; k < 2; k++) {
                    if (lanes[a] < 1) continue;
                    sdpa_tile_config c;
                    sdpa_tile_config_init(&c);
                    sdpa_tile_config_set(&c, SDPA_TILE_LANES, lanes[a]);
                    sdpa_tile_config_set(&c, SDPA_TILE_Q_TILE, rows[b]);
                    sdpa_tile_config_set(&c, SDPA_TILE_K_TILE, kts2[k]);
                    sdpa_plan_options o;
                    sdpa_plan_options_init(&o);
                    o.flags = flags;
                    o.tile = &c;
                    sdpa__vk_plan pl;
                    memset(&pl, 0, sizeof pl);
                    if (sdpa__vk_plan_config(NULL, &s->caps, p, &o, &pl) != SDPA_OK) continue;
                    sdpa_tile_config_set(&c, SDPA_TILE_WG_SIZE, pl.wg_size);
                    sdpa_tile_config_set(&c, SDPA_TILE_STAGE_KV, 0);
                    if (memcmp(c.value, def.value, sizeof c.value) == 0) continue;
                    if (n < max) out[n] = c;
                    n++;
                }
    }
    int first_old = n;
    /* a CPU-style device lists fwd_rows.comp's first: on lavapipe they are
     * 3-8x faster than fwd.comp's, and a budget that runs out before the
     * end of the list (the tuner measures a small space in its order)
     * should run out on the slow ones */
    if (!gpu) n = rows_candidates(p, max_wg, out, n, max);
    for (size_t a = 0; a < sizeof wgs / sizeof wgs[0]; a++) {
        if (wgs[a] > max_wg) continue;
        for (size_t b = 0; b < sizeof kts / sizeof kts[0]; b++) {
            if (wgs[a] == sdpa_tile_config_get(&def, SDPA_TILE_WG_SIZE) &&
                kts[b] == sdpa_tile_config_get(&def, SDPA_TILE_K_TILE))
                continue;
            if (n < max) {
                sdpa_tile_config_init(&out[n]);
                sdpa_tile_config_set(&out[n], SDPA_TILE_WG_SIZE, wgs[a]);
                sdpa_tile_config_set(&out[n], SDPA_TILE_K_TILE, kts[b]);
            }
            n++;
        }
    }
    if (gpu) n = rows_candidates(p, max_wg, out, n, max);
    for (size_t a = 0; a < sizeof staged / sizeof staged[0]; a++) {
        if (staged[a][0] > max_wg || !staged_ok(state, p, staged[a][0], staged[a][1])) continue;
        if (n < max) {
            sdpa_tile_config_init(&out[n]);
            sdpa_tile_config_set(&out[n], SDPA_TILE_WG_SIZE, staged[a][0]);
            sdpa_tile_config_set(&out[n], SDPA_TILE_K_TILE, staged[a][1]);
            sdpa_tile_config_set(&out[n], SDPA_TILE_STAGE_KV, 1);
        }
        n++;
    }
    for (int i = first_old; gpu && i < n && i < max; i++)
        sdpa_tile_config_set(&out[i], SDPA_TILE_LANES, 0);
    return n;
}
