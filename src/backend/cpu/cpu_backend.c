/*
 * cpu_backend.c — the function table of the fast CPU backend ("cpu"): context
 * state (thread pool + the vector kernels this CPU runs), plan creation
 * (tile sizes, split-KV decision, one workspace allocation), and dispatch to
 * the forward and backward drivers. Buffers are host memory and shared with
 * the reference backend (host_buffers.c).
 *
 * Invariants: a plan's workspace is allocated once at plan_create and is
 * O(threads x tile) plus O(B x Hkv x rows / bq) statistics partials; it never
 * depends on Skv. forward/backward allocate nothing.
 */
#include "cpu_internal.h"
#include "capabilities.h"

/* Bump when a kernel change makes tuned CPU profiles stale. */
#define SDPA_CPU_KERNEL_REVISION "1"
#include "host_buffers.h"
#include "tile.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static sdpa_status cpu_context_init(sdpa_context *ctx, int device_index, void **state)
{
    (void)device_index;
    *state = NULL;
    sdpa__cpu_state *s = sdpa__calloc(1, sizeof *s);
    SDPA__CHECK(ctx, s, SDPA_ERR_OUT_OF_MEMORY, "cpu: context state");
    char why[160];
    bool ignored;
    s->k = sdpa__cpu_kernels_select(why, sizeof why, &ignored);
    sdpa_status st = sdpa__cpu_pool_create(ctx, sdpa__context_threads(ctx), &s->pool);
    if (st != SDPA_OK) {
        free(s);
        return st;
    }
    s->nthreads = sdpa__cpu_pool_size(s->pool);
    sdpa__log(ctx, ignored ? SDPA_LOG_WARN : SDPA_LOG_INFO, "cpu: %d threads, %s kernels (%s)",
              s->nthreads, s->k->name, why);
    *state = s;
    return SDPA_OK;
}

/* The host device, with the kernels a context would run, why, and the sets
 * this build has in details (what sdpa-info shows). */
static sdpa_status cpu_device_info(int index, sdpa_device_info *info)
{
    sdpa_status st = sdpa__host_device_info(index, info);
    if (st != SDPA_OK) return st;
    char why[160], built[160];
    const sdpa__cpu_kernels *k = sdpa__cpu_kernels_select(why, sizeof why, NULL);
    sdpa__cpu_kernels_built(built, sizeof built);
    snprintf(info->details, sizeof info->details, "kernels %s: %s (this build has: %s)",
             k->name, why, built);
    return SDPA_OK;
}

static void cpu_context_free(sdpa_context *ctx, void *state)
{
    (void)ctx;
    sdpa__cpu_state *s = state;
    if (!s) return;
    sdpa__cpu_pool_destroy(s->pool);
    free(s);
}

static sdpa_status cpu_supports(sdpa_context *ctx, void *state, const sdpa__problem *p,
                                unsigned flags)
{
    (void)state;
    (void)flags;
    SDPA__CHECK(ctx, p->D <= 4096 && p->Dv <= 4096, SDPA_ERR_UNSUPPORTED,
                "cpu: head size %lld/%lld above 4096", (long long)p->D, (long long)p->Dv);
    SDPA__CHECK(ctx, p->dtype == SDPA_DTYPE_F32 || p->dtype == SDPA_DTYPE_F16 ||
                         p->dtype == SDPA_DTYPE_BF16,
                SDPA_ERR_UNSUPPORTED, "cpu: storage dtype %s", sdpa_dtype_name(p->dtype));
    return SDPA_OK;
}

/* The cpu backend's tile parameters (checked by the front end,
 * src/core/tile_check.c): the query and key tiles are multiples of the
 * 16-wide kernels' blocks; unfused 0 is the only path there is. */
static const sdpa__tile_param_info cpu_tile_params[] = {
    {SDPA_TILE_Q_TILE, NULL, "query rows (of one KV head's query group) per block of a task",
     16, 256, 16, false, 64, false},
    {SDPA_TILE_K_TILE, NULL, "keys per block of packed K/V", 16, 512, 16, false, 64, false},
    {SDPA_TILE_SPLIT_KV, NULL, "key splits merged by LSE; SDPA_AUTO = by thread count and "
     "problem (decode-like shapes)", 1, 256, 0, false, SDPA_AUTO, false},
    {SDPA_TILE_UNFUSED, NULL, "only 0: scores are never materialised", 0, 0, 0, false,
     SDPA_AUTO, false},
};
#define CPU_DEFAULT(i) (cpu_tile_params[i].def) /* 0: q_tile, 1: k_tile */
#define CPU_TILE_PARAMS ((int)(sizeof cpu_tile_params / sizeof cpu_tile_params[0]))

static void cpu_plan_free(sdpa_context *ctx, void *state, void *plan_state)
{
    (void)ctx;
    (void)state;
    sdpa__cpu_plan *pl = plan_state;
    if (!pl) return;
    sdpa__aligned_free(pl->mem);
    free(pl);
}

static sdpa_status cpu_plan_create(sdpa_context *ctx, void *state, const sdpa__problem *p,
                                   const sdpa_plan_options *options, void **plan_state)
{
    *plan_state = NULL;
    sdpa__cpu_state *s = state;
    SDPA__CHECK(ctx, s, SDPA_ERR_INTERNAL, "cpu: context has no backend state");
    sdpa__cpu_plan *pl = sdpa__calloc(1, sizeof *pl);
    SDPA__CHECK(ctx, pl, SDPA_ERR_OUT_OF_MEMORY, "cpu: plan");
    pl->p = *p;
    pl->k = s->k;
    pl->pool = s->pool;
    pl->nthreads = s->nthreads;
    pl->backward = options && (options->flags & SDPA_PLAN_BACKWARD);
    /* the complete configuration (src/core/plan.c), within cpu_tile_params */
    const sdpa_tile_config *tc = options ? options->tile : NULL;
    int q = sdpa_tile_config_get(tc, SDPA_TILE_Q_TILE);
    int k = sdpa_tile_config_get(tc, SDPA_TILE_K_TILE);
    int split = sdpa_tile_config_get(tc, SDPA_TILE_SPLIT_KV);
    pl->bq = q != SDPA_AUTO ? q : CPU_DEFAULT(0);
    pl->bk = k != SDPA_AUTO ? k : CPU_DEFAULT(1);
    int forced_split = split != SDPA_AUTO ? split : 0;
    pl->G = p->Hq / p->Hkv;
    pl->rows = pl->G * p->Sq;
    pl->nsub = (pl->rows + pl->bq - 1) / pl->bq;
    /* Rows per forward task: large enough to amortise packing K/V, small
     * enough that every thread gets several tasks. */
    const int64_t bhkv = p->B * p->Hkv;
    int64_t sbs = 4;
    while (sbs > 1 && bhkv * ((pl->nsub + sbs - 1) / sbs) < 4 * pl->nthreads) sbs--;
    pl->sb = (int)sbs * pl->bq;
    pl->nsb = (pl->rows + pl->sb - 1) / pl->sb;
    /* Split-KV: when there are fewer tasks than threads and the keys are many,
     * split the keys and merge partials by LSE. */
    const int64_t tasks = bhkv * pl->nsb;
    pl->nsplit = 1;
    if (forced_split)
        pl->nsplit = forced_split;
    else if (tasks < 2 * pl->nthreads && p->Skv >= 8 * pl->bk) {
        int64_t ns = (4 * pl->nthreads + tasks - 1) / tasks;
        const int64_t maxs = p->Skv / (4 * pl->bk);
        if (ns > maxs) ns = maxs;
        if (ns > 64) ns = 64;
        pl->nsplit = ns < 1 ? 1 : (int)ns;
    }
    if (p->has_stats) pl->nsplit = 1; /* row statistics need whole rows */

    /* Backward key tiles: up to 4 forward tiles, so the dK/dV pass loads each
     * block of query rows once per 4*bk keys, while keeping 4 tasks per
     * thread. */
    pl->bkb = 4 * pl->bk;
    while (pl->bkb > pl->bk &&
           bhkv * ((p->Skv + pl->bkb - 1) / pl->bkb) < 4 * pl->nthreads)
        pl->bkb -= pl->bk;
    size_t tb = sdpa__cpu_forward_thread_bytes(pl);
    if (pl->backward) {
        const size_t bb = sdpa__cpu_backward_thread_bytes(pl);
        if (bb > tb) tb = bb;
    }
    pl->thread_bytes = sdpa__cpu_align(tb);
    pl->split_task_floats = (size_t)pl->sb * ((size_t)p->Dv + 2);
    const size_t split_floats =
        pl->nsplit > 1 ? (size_t)tasks * pl->nsplit * pl->split_task_floats : 0;
    const size_t stat_doubles =
        p->has_stats ? (size_t)(bhkv * pl->nsub * pl->G) * CPU_SP_N : 0;
    sdpa__cpu_carve c = {NULL, 0};
    sdpa__cpu_take(&c, pl->thread_bytes * (size_t)pl->nthreads);
    sdpa__cpu_take(&c, ((size_t)p->D * 2 + (size_t)p->Hq) * sizeof(float));
    sdpa__cpu_take(&c, split_floats * sizeof(float));
    sdpa__cpu_take(&c, stat_doubles * sizeof(double));
    pl->mem_bytes = c.used;
    pl->mem = sdpa__aligned_alloc(64, pl->mem_bytes);
    if (!pl->mem) {
        cpu_plan_free(ctx, state, pl);
        return SDPA__FAIL(ctx, SDPA_ERR_OUT_OF_MEMORY, "cpu: plan workspace of %zu bytes",
                          c.used);
    }
    c.p = pl->mem;
    c.used = 0;
    pl->thread_ws = sdpa__cpu_take(&c, pl->thread_bytes * (size_t)pl->nthreads);
    pl->params = sdpa__cpu_take(&c, ((size_t)p->D * 2 + (size_t)p->Hq) * sizeof(float));
    pl->split_ws = sdpa__cpu_take(&c, split_floats * sizeof(float));
    pl->stat_ws = sdpa__cpu_take(&c, stat_doubles * sizeof(double));
    sdpa__log(ctx, SDPA_LOG_DEBUG,
              "cpu: plan bq=%d bk=%d rows/task=%d split=%d threads=%d workspace=%zu",
              pl->bq, pl->bk, pl->sb, pl->nsplit, pl->nthreads, pl->mem_bytes);
    *plan_state = pl;
    return SDPA_OK;
}

static size_t cpu_plan_workspace(const void *plan_state)
{
    const sdpa__cpu_plan *pl = plan_state;
    return pl ? pl->mem_bytes : 0;
}

static void cpu_plan_describe(const void *plan_state, sdpa_plan_info *info)
{
    const sdpa__cpu_plan *pl = plan_state;
    sdpa__strlcpy(info->kernel, pl->nsplit > 1 ? "decode" : "fused", sizeof info->kernel);
    snprintf(info->config, sizeof info->config,
             "q_tile=%d k_tile=%d rows_per_task=%d split_kv=%d bwd_k_tile=%d threads=%d "
             "kernels=%s",
             pl->bq, pl->bk, pl->sb, pl->nsplit, pl->bkb, pl->nthreads, pl->k->name);
}

/* The FMA peak at the width of the kernels this context runs (cpu_peak.c). */
static const char *cpu_peak_kernels(sdpa_context *ctx, void *state)
{
    (void)ctx;
    const sdpa__cpu_state *s = state;
    return s && s->k ? s->k->name : "generic";
}

static sdpa_status cpu_measure_peak(sdpa_context *ctx, void *state, double seconds, double *gflops,
                                    char *method, size_t method_len)
{
    return sdpa__cpu_measure_peak_for(ctx, cpu_peak_kernels(ctx, state), seconds, gflops, method,
                                      method_len);
}

static sdpa_status cpu_forward(sdpa_context *ctx, void *state, void *plan_state,
                               const sdpa__problem *p, const sdpa__fwd_args *a)
{
    (void)ctx;
    (void)state;
    return sdpa__cpu_forward_run(plan_state, p, a);
}

static sdpa_status cpu_backward(sdpa_context *ctx, void *state, void *plan_state,
                                const sdpa__problem *p, const sdpa__fwd_args *a,
                                const sdpa__bwd_args *g)
{
    (void)state;
    sdpa__cpu_plan *pl = plan_state;
    SDPA__CHECK(ctx, pl->backward, SDPA_ERR_INVALID_ARG,
                "cpu: plan was created without SDPA_PLAN_BACKWARD");
    SDPA__CHECK(ctx, a->lse.mem && a->out.mem, SDPA_ERR_INVALID_ARG,
                "cpu: backward needs the forward's out and lse");
    return sdpa__cpu_backward_run(pl, p, a, g);
}

/* --- tuning slots ------------------------------------------------------- */

/* Decode-like problems (few query rows per KV head, long keys) also try key
 * splits; everything else varies only the tile sizes. */
static bool cpu_decode_like(const sdpa__problem *p)
{
    return p->Sq * (p->Hq / p->Hkv) <= 64 && p->Skv >= 1024 && !p->has_stats;
}

/* The forced values, and the table's defaults for the rest (split_kv stays
 * SDPA_AUTO: cpu_plan_create chooses it from the problem and threads). */
static sdpa_status cpu_default_tile(sdpa_context *ctx, void *state, const sdpa__problem *p,
                                    unsigned flags, const sdpa_tile_config *forced,
                                    sdpa_tile_config *tile)
{
    (void)ctx;
    (void)state;
    (void)p;
    (void)flags;
    if (forced) *tile = *forced;
    else sdpa_tile_config_init(tile);
    sdpa__tile_fill_defaults(cpu_tile_params, CPU_TILE_PARAMS, tile);
    return SDPA_OK;
}

static int cpu_tile_candidates(sdpa_context *ctx, void *state, const sdpa__problem *p,
                               unsigned flags, sdpa_tile_config *out, int max)
{
    (void)ctx;
    (void)state;
    (void)flags;
    static const int qt[] = {32, 64, 128}, kt[] = {32, 64, 128, 256}, splits[] = {1, 2, 4, 8, 16};
    int n = 0;
    for (size_t a = 0; a < sizeof qt / sizeof qt[0]; a++)
        for (size_t b = 0; b < sizeof kt / sizeof kt[0]; b++, n++)
            if (n < max) {
                sdpa_tile_config_init(&out[n]);
                sdpa_tile_config_set(&out[n], SDPA_TILE_Q_TILE, qt[a]);
                sdpa_tile_config_set(&out[n], SDPA_TILE_K_TILE, kt[b]);
            }
    if (cpu_decode_like(p))
        for (size_t c = 0; c < sizeof splits / sizeof splits[0]; c++, n++)
            if (n < max) {
                sdpa_tile_config_init(&out[n]);
                sdpa_tile_config_set(&out[n], SDPA_TILE_Q_TILE, CPU_DEFAULT(0));
                sdpa_tile_config_set(&out[n], SDPA_TILE_K_TILE, CPU_DEFAULT(1));
                sdpa_tile_config_set(&out[n], SDPA_TILE_SPLIT_KV, splits[c]);
            }
    return n;
}

/* The kernels are C compiled into the library: its version names them. */
static const char *cpu_source_hash(void) { return "cpu-" SDPA_CPU_KERNEL_REVISION; }

const sdpa__backend sdpa__backend_cpu = {
    .api_version = SDPA__BACKEND_API_VERSION,
    .kind = SDPA_BACKEND_CPU,
    .name = "cpu",
    .host_memory = true,
    /* every optional capability (docs/cpu.md): ALiBi and sinks forward and
     * backward, K/V dtype independent of q's, q8_0/q4_0 and paged K/V */
    .features = SDPA__FEAT_ALL,
    .device_count = sdpa__host_device_count,
    .device_info = cpu_device_info,
    .context_init = cpu_context_init,
    .context_free = cpu_context_free,
    .buffer_alloc = sdpa__host_buffer_alloc,
    .buffer_free = sdpa__host_buffer_free,
    .buffer_write = sdpa__host_buffer_write,
    .buffer_read = sdpa__host_buffer_read,
    .supports = cpu_supports,
    .plan_create = cpu_plan_create,
    .plan_free = cpu_plan_free,
    .plan_workspace = cpu_plan_workspace,
    .plan_describe = cpu_plan_describe,
    .forward = cpu_forward,
    .backward = cpu_backward,
    .finish = sdpa__host_finish,
    .default_tile = cpu_default_tile,
    .tile_params = cpu_tile_params,
    .n_tile_params = CPU_TILE_PARAMS,
    .tile_candidates = cpu_tile_candidates,
    .source_hash = cpu_source_hash,
    .measure_peak = cpu_measure_peak,
    .peak_kernels = cpu_peak_kernels,
    .measure_bandwidth = sdpa__cpu_measure_bandwidth,
    .measure_read_time = sdpa__cpu_measure_read_time,
};
