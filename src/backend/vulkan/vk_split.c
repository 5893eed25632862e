/*
 * vk_split.c — bounds the work of any single Vulkan dispatch (issue 16:
 * "splits dispatches so no single one risks a driver watchdog on long
 * rows"). A GPU driver resets the device when one dispatch runs too long
 * (Windows TDR, i915 hang check, Mali job timeouts); a long prefill or a
 * backward over long rows is one dispatch of many work-groups, each walking
 * every key of its rows.
 *
 * Per pipeline, sdpa__vk_split_work estimates one invocation's
 * multiply-adds from the loops of shaders/vulkan/ *.comp (keys walked times
 * head sizes); sdpa__vk_split_plan then cuts the logical dispatch into
 * pieces of whole work-group rows so that a piece's work stays within the
 * bound (SDPA__VK_DISPATCH_WORK, or the test-only SDPA_TEST_VK_DISPATCH_WORK),
 * at least one work-group each. Pieces are query-row ranges (key-row ranges
 * for bwd_dkv): the shaders index invocations with flat_id() over a grid of
 * width gl_NumWorkGroups.x, so every piece keeps the grid's width and starts
 * at its first row with vkCmdDispatchBase (core Vulkan 1.1; pipelines are
 * created with VK_PIPELINE_CREATE_DISPATCH_BASE_BIT). Pieces of one pipeline
 * write disjoint outputs, so no barrier separates them.
 *
 * The work of one invocation is bounded where the shaders allow it:
 * sdpa__vk_split_keys gives the forward enough key splits that no
 * invocation walks more than SDPA__VK_INVOCATION_KEYS keys (the test-only
 * SDPA_TEST_VK_DISPATCH_KEYS), their partial results combined by LSE in
 * combine.comp (vk_plan.c calls it; the staged forward has no key split).
 * The backward's invocations still walk whole rows. docs/vulkan.md,
 * "Dispatch splitting".
 *
 * vk_dispatch.c calls sdpa__vk_split_plan and sdpa__vk_split_record for
 * every dispatch; with the default bound a problem below 2^34 multiply-adds
 * per pipeline is one dispatch, exactly as before.
 */
#include "vk_split.h"

#include <stdatomic.h>
#include <stdlib.h>

/* Test hook: pieces recorded with a non-zero base since the process began
 * (tests/test_vksplit.c checks that the forced bound really splits). */
static atomic_ullong based_pieces;
uint64_t sdpa__vk_split_based_pieces(void) { return (uint64_t)atomic_load(&based_pieces); }

uint64_t sdpa__vk_split_work(const sdpa__vk_plan *pl, int pipe)
{
    const sdpa__problem *p = &pl->p;
    const uint64_t D = (uint64_t)p->D, Dv = (uint64_t)p->Dv, Sq = (uint64_t)p->Sq,
                   Skv = (uint64_t)p->Skv, group = (uint64_t)(p->Hq / p->Hkv);
    const uint64_t keys = pl->nsplit > 1 ? (uint64_t)pl->split_len : Skv;
    const uint64_t rows = pl->rows > 1 ? (uint64_t)pl->rows : 1;
    switch (pipe) {
    case SDPA__VK_P_QKNORM: return 2 * D;
    case SDPA__VK_P_FWD: return keys * rows * (D + Dv + 1);
    case SDPA__VK_P_COMBINE: return (uint64_t)pl->nsplit * (Dv + 1);
    case SDPA__VK_P_STATS: return Sq * SDPA_STAT_COUNT;
    /* the GPU-class backward (a backward view with lanes > 0): an
     * invocation's share of its rows' (or keys') work */
    case SDPA__VK_P_BWD_DQ:
        return pl->lanes > 0 ? rows * Skv * (2 * D + Dv + 1) / (uint64_t)pl->lanes + 1
                             : Skv * (2 * D + Dv + 1);
    case SDPA__VK_P_BWD_DKV:
        return pl->lanes > 0 ? rows * group * Sq * (2 * D + 2 * Dv + 1) / (uint64_t)pl->lanes + 1
                             : group * Sq * (2 * D + 2 * Dv + 1);
    default: /* bwd_reduce: one pass over the rows' partial sums */
        return (uint64_t)(p->B * p->Hq) * Sq + (uint64_t)(p->B * p->Hkv) * Skv;
    }
}

/* A bound in force: the test-only setting `env` when it parses as a
 * positive number, else `def`. */
static uint64_t bound(const char *env, uint64_t def)
{
    const char *v = getenv(env);
    if (v && *v) {
        char *end = NULL;
        unsigned long long n = strtoull(v, &end, 10);
        if (end && !*end && n > 0) return (uint64_t)n;
    }
    return def;
}

int sdpa__vk_split_keys(const sdpa__problem *p, int nsplit)
{
    uint64_t keys = bound(SDPA__VK_INVOCATION_KEYS_ENV, SDPA__VK_INVOCATION_KEYS);
    uint64_t need = ((uint64_t)p->Skv + keys - 1) / keys;
    if (need > (uint64_t)INT32_MAX) need = INT32_MAX;
    return (int)need > nsplit ? (int)need : nsplit;
}

sdpa_status sdpa__vk_split_plan(sdpa_context *ctx, const sdpa__vk_state *s,
                                const sdpa__vk_plan *pl, int pipe, uint64_t invocations,
                                sdpa__vk_split *out)
{
    const uint64_t wg = (uint64_t)pl->wg_size;
    const uint64_t groups = (invocations + wg - 1) / wg;
    const uint64_t per_group = wg * sdpa__vk_split_work(pl, pipe);
    /* work-groups one piece may hold: at least one */
    uint64_t chunk = per_group ? bound(SDPA__VK_DISPATCH_WORK_ENV, SDPA__VK_DISPATCH_WORK) / per_group
                               : groups;
    if (chunk < 1) chunk = 1;
    if (chunk > groups) chunk = groups;
    /* grid width: the chunk when it fits one row, else the widest row; wide
     * enough that the rows fit the second dimension */
    const uint64_t max_x = s->caps.max_groups[0], max_y = s->caps.max_groups[1];
    uint64_t gx = chunk < max_x ? chunk : max_x;
    if ((groups + gx - 1) / gx > max_y) gx = (groups + max_y - 1) / max_y;
    SDPA__CHECK(ctx, gx >= 1 && gx <= max_x, SDPA_ERR_UNSUPPORTED,
                "vulkan: %llu work-groups exceed the device's dispatch limits",
                (unsigned long long)groups);
    out->gx = (uint32_t)gx;
    out->rows = (groups + gx - 1) / gx;
    /* whole rows per piece; all of them when the bound holds the dispatch */
    out->rows_per = chunk >= groups ? out->rows : chunk / gx > 1 ? chunk / gx : 1;
    out->pieces = (out->rows + out->rows_per - 1) / out->rows_per;
    return SDPA_OK;
}

void sdpa__vk_split_record(VkCommandBuffer cb, const sdpa__vk_split *sp)
{
    for (uint64_t i = 0; i < sp->pieces; i++) {
        uint64_t y0 = i * sp->rows_per, n = sp->rows - y0;
        if (n > sp->rows_per) n = sp->rows_per;
        if (y0 == 0)
            vkCmdDispatch(cb, sp->gx, (uint32_t)n, 1);
        else {
            vkCmdDispatchBase(cb, 0, (uint32_t)y0, 0, sp->gx, (uint32_t)n, 1);
            atomic_fetch_add(&based_pieces, 1);
        }
    }
}
