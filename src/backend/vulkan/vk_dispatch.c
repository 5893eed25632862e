/*
 * vk_dispatch.c — runs a plan: fills its uniform parameter block (shapes,
 * band, offsets and strides of this call's tensors, workspace layout),
 * points its descriptor set at this call's buffers (absent tensors at a
 * small dummy buffer), records the dispatch sequence with compute-to-compute
 * barriers and submits it with the plan's fence. It does not wait: the
 * front end (host tensors), sdpa_context_finish or buffer reads do.
 *
 * Packed descriptor layout (vk_pack.c): the tensors are copied into the
 * plan's pack buffer first and the written ones back at the end.
 * Each dispatch may be recorded as several pieces of bounded work
 * (vk_split.c). Sequences: forward = [qknorm] fwd [combine] [stats_reduce];
 * backward = [qknorm] bwd_dq bwd_dkv [bwd_reduce] (on GPU-class devices
 * bwd_fa2_dq.comp and bwd_fa2_dkv.comp in those two places, dispatched with
 * the backward's own configuration: sdpa__vk_bwd_view).
 * Every command buffer opens with a barrier against all earlier memory
 * writes on the queue and closes with one making its writes visible to all
 * later commands and the host, so work the application submits to the same
 * queue before or after is ordered with ours (docs/vulkan.md).
 * Called through the backend table (vk_backend.c).
 */
#include "vk_internal.h"
#include "vk_split.h"
#include "capabilities.h"

#define BAND_CLAMP ((int64_t)1 << 29)

static int32_t clamp_band(int64_t v)
{
    if (v < -BAND_CLAMP) return (int32_t)-BAND_CLAMP;
    if (v > BAND_CLAMP) return (int32_t)BAND_CLAMP;
    return (int32_t)v;
}

/* Tensor t's strides and the element index of its last element in its
 * buffer (*last); false when an index would pass 2^32. A block-quantized
 * tensor (ext[3] counting blocks, unit = the block's bytes) is indexed in
 * bytes: offset, strides and *last (its last byte) times the unit. */
static bool tensor_extent(sdpa__vk_params *pr, int t, const sdpa__ref *r, const int64_t *ext,
                          uint64_t unit, uint64_t *last)
{
    *last = r->offset * unit;
    for (int k = 0; k < 4; k++) {
        uint64_t st = (uint64_t)r->stride[k] * unit;
        if (r->stride[k] < 0 || st > (uint64_t)UINT32_MAX) return false;
        *last += (uint64_t)(ext[k] - 1) * st;
        if (*last > UINT32_MAX) return false;
        pr->tstride[t][k] = (uint32_t)st;
    }
    *last += unit - 1;
    return *last <= UINT32_MAX;
}

static sdpa_status fill_params(sdpa_context *ctx, sdpa__vk_state *s, sdpa__vk_plan *pl,
                               const sdpa__problem *p, const sdpa__fwd_args *a,
                               const sdpa__bwd_args *g, const sdpa__ref **refs,
                               sdpa__vk_pack_job *job)
{
    sdpa__vk_params pr;
    memset(&pr, 0, sizeof pr);
    int32_t sh0[4] = {(int32_t)p->B, (int32_t)p->Hq, (int32_t)p->Hkv, (int32_t)p->Sq};
    int32_t sh1[4] = {(int32_t)p->Skv, (int32_t)p->D, (int32_t)p->Dv, (int32_t)(p->Hq / p->Hkv)};
    memcpy(pr.shape0, sh0, sizeof sh0);
    memcpy(pr.shape1, sh1, sizeof sh1);
    pr.band[0] = (int32_t)p->diagonal;
    pr.band[1] = clamp_band(p->diagonal_offset);
    pr.band[2] = p->window_left < 0 ? -1 : clamp_band(p->window_left);
    pr.band[3] = p->window_right < 0 ? -1 : clamp_band(p->window_right);
    pr.misc[0] = pl->nsplit;
    pr.misc[1] = pl->split_len;
    pr.misc[2] = (int32_t)(p->B * p->Hq * p->Sq);
    pr.misc[3] = (int32_t)(p->B * p->Hkv * p->Skv);
    if (g) {
        pr.rflags[0] = g->dq_gain.mem != NULL;
        pr.rflags[1] = g->dk_gain.mem != NULL;
        pr.rflags[2] = g->dtemperature.mem != NULL;
        pr.rflags[3] = g->dsinks.mem != NULL;
    }
    pr.feat[0] = (int32_t)pl->spec_flags;
    pr.feat[1] = (int32_t)p->qk_norm;
    pr.ext[0] = (int32_t)p->page;
    pr.ext[1] = (int32_t)p->pages;
    pr.ext[2] = (int32_t)p->alibi_offset; /* |value| < 2^29 (sdpa__vk_supports) */
    memcpy(pr.fpar, pl->fpar, sizeof pr.fpar);
    memcpy(pr.ws0, pl->ws0, sizeof pr.ws0);
    memcpy(pr.ws1, pl->ws1, sizeof pr.ws1);

    int64_t B = p->B, Hq = p->Hq, Hkv = p->Hkv, Sq = p->Sq, Skv = p->Skv, D = p->D, Dv = p->Dv;
    /* paged: k and v are the page pools (pages, Hkv, page, D) */
    bool paged = p->has_block_table;
    int64_t kv0 = paged ? p->pages : B, kv2 = paged ? p->page : Skv;
    struct { int t; const sdpa__ref *r; int64_t n[4]; } tl[] = {
        {SDPA__VK_T_Q, &a->q, {B, Hq, Sq, D}},
        {SDPA__VK_T_K, paged ? &a->k_pages : &a->k, {kv0, Hkv, kv2, D}},
        {SDPA__VK_T_V, paged ? &a->v_pages : &a->v, {kv0, Hkv, kv2, Dv}},
        {SDPA__VK_T_OUT, &a->out, {B, Hq, Sq, Dv}},
        {SDPA__VK_T_MASK, &a->mask, {B, Hq, Sq, Skv}},
        {SDPA__VK_T_BIAS, &a->bias, {B, Hq, Sq, Skv}},
        {SDPA__VK_T_KVLEN, &a->kv_len, {B, 1, 1, 1}},
        {SDPA__VK_T_QGAIN, &a->q_gain, {1, 1, 1, D}},
        {SDPA__VK_T_KGAIN, &a->k_gain, {1, 1, 1, D}},
        {SDPA__VK_T_TEMP, &a->temperature, {1, Hq, 1, 1}},
        {SDPA__VK_T_LSE, &a->lse, {B, Hq, Sq, 1}},
        {SDPA__VK_T_STATS, &a->stats, {B, Hq, 1, SDPA_STAT_COUNT}},
        {SDPA__VK_T_DOUT, g ? &g->dout : NULL, {B, Hq, Sq, Dv}},
        {SDPA__VK_T_DQ, g ? &g->dq : NULL, {B, Hq, Sq, D}},
        {SDPA__VK_T_DK, g ? &g->dk : NULL, {B, Hkv, Skv, D}},
        {SDPA__VK_T_DV, g ? &g->dv : NULL, {B, Hkv, Skv, Dv}},
        {SDPA__VK_T_DQG, g ? &g->dq_gain : NULL, {1, 1, 1, D}},
        {SDPA__VK_T_DKG, g ? &g->dk_gain : NULL, {1, 1, 1, D}},
        {SDPA__VK_T_DT, g ? &g->dtemperature : NULL, {1, Hq, 1, 1}},
        {SDPA__VK_T_ALIBI, &a->alibi_slopes, {1, Hq, 1, 1}},
        {SDPA__VK_T_SINKS, &a->sinks, {1, Hq, 1, 1}},
        {SDPA__VK_T_BTAB, &a->block_table, {B, 1, 1, p->max_pages}},
        {SDPA__VK_T_DSINKS, g ? &g->dsinks : NULL, {1, Hq, 1, 1}},
    };
    static const char *names[] = {"q", "k", "v", "out", "mask", "bias", "kv_len", "q_gain",
                                  "k_gain", "temperature", "lse", "stats", "dout", "dq",
                                  "dk", "dv", "dq_gain", "dk_gain", "dtemperature",
                                  "alibi_slopes", "sinks", "block_table", "dsinks"};
    uint64_t max_range = s->caps.max_storage_range;
    size_t esize[SDPA_VK_T_COUNT];
    uint64_t last[SDPA_VK_T_COUNT], base[SDPA_VK_T_COUNT], first[SDPA_VK_T_COUNT];
    bool written[SDPA_VK_T_COUNT];
    for (size_t i = 0; i < sizeof tl / sizeof tl[0]; i++) {
        int t = tl[i].t;
        const sdpa__ref *r = tl[i].r && tl[i].r->mem ? tl[i].r : NULL;
        bool kv = t == SDPA__VK_T_K || t == SDPA__VK_T_V || t == SDPA__VK_T_DK ||
                  t == SDPA__VK_T_DV;
        bool stored = t == SDPA__VK_T_Q || t == SDPA__VK_T_OUT || t == SDPA__VK_T_DOUT ||
                      t == SDPA__VK_T_DQ;
        /* block types are indexed in bytes (tensor_extent) */
        bool block = kv && sdpa__dtype_is_block(p->kv_dtype);
        uint64_t unit = block ? sdpa_dtype_size(p->kv_dtype) : 1;
        int64_t n[4] = {tl[i].n[0], tl[i].n[1], tl[i].n[2], tl[i].n[3]};
        if (block) n[3] /= sdpa_dtype_block_elems(p->kv_dtype);
        esize[t] = t == SDPA__VK_T_MASK || block ? 1
                   : kv                          ? sdpa_dtype_size(p->kv_dtype)
                   : stored                      ? sdpa_dtype_size(p->dtype)
                                                 : 4;
        written[t] = g ? (t >= SDPA__VK_T_DQ && t <= SDPA__VK_T_DT) || t == SDPA__VK_T_DSINKS
                       : (t == SDPA__VK_T_OUT || t == SDPA__VK_T_LSE || t == SDPA__VK_T_STATS);
        refs[t] = r;
        last[t] = 0;
        first[t] = base[t] = r ? r->offset * unit : 0;
        SDPA__CHECK(ctx, !r || tensor_extent(&pr, t, r, n, unit, &last[t]),
                    SDPA_ERR_UNSUPPORTED, "vulkan: tensor '%s' reaches past 2^32 elements",
                    names[t]);
    }
    if (pl->packed)
        SDPA__TRY(sdpa__vk_pack_prepare(ctx, s, pl, refs, esize, last, written, base, job));
    for (int t = 0; t < SDPA_VK_T_COUNT; t++) {
        uint64_t end = refs[t] ? base[t] + (last[t] - first[t]) : 0;
        /* a binding reaches at most maxStorageBufferRange bytes */
        SDPA__CHECK(ctx, end <= UINT32_MAX && (end + 1) * esize[t] <= max_range,
                    SDPA_ERR_UNSUPPORTED,
                    "vulkan: tensor '%s' reaches past 2^32 elements or past the device's "
                    "maxStorageBufferRange (%llu bytes)", names[t],
                    (unsigned long long)max_range);
        pr.toff[t / 4][t % 4] = refs[t] ? (uint32_t)base[t] : 0;
    }
    memcpy(pl->params->mapped, &pr, sizeof pr);
    return SDPA_OK;
}

static void write_descriptors(sdpa__vk_state *s, sdpa__vk_plan *pl, const sdpa__ref **refs)
{
    VkDescriptorBufferInfo bi[SDPA__VK_B_COUNT];
    VkWriteDescriptorSet w[SDPA__VK_B_COUNT];
    const sdpa__vk_buffer *dummy = s->dummy;
    const uint32_t n = sdpa__vk_binding_count(s), params = sdpa__vk_params_binding(s);
    for (uint32_t i = 0; i < n; i++) {
        const sdpa__vk_buffer *b = dummy;
        if (pl->packed) {
            b = i == SDPA_VK_PK_B_PACK ? pl->pack : i == SDPA_VK_PK_B_WS ? pl->ws : pl->params;
        } else {
            if (i < SDPA__VK_T_COUNT && refs[i] && refs[i]->mem) b = refs[i]->mem;
            if (i == SDPA__VK_B_WS) b = pl->ws;
            if (i == SDPA__VK_B_PARAMS) b = pl->params;
        }
        VkDeviceSize range = VK_WHOLE_SIZE;
        if (i != params && b->size > s->caps.max_storage_range)
            range = s->caps.max_storage_range; /* tensors were checked to fit */
        bi[i] = (VkDescriptorBufferInfo){.buffer = b->buffer, .offset = 0, .range = range};
        w[i] = (VkWriteDescriptorSet){
            .sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET,
            .dstSet = pl->desc_set,
            .dstBinding = i,
            .descriptorCount = 1,
            .descriptorType = i == params ? VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER
                                          : VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
            .pBufferInfo = &bi[i],
        };
    }
    vkUpdateDescriptorSets(s->device, n, w, 0, NULL);
}

void sdpa__vk_barrier(VkCommandBuffer cb, VkPipelineStageFlags src, VkAccessFlags sa,
                      VkPipelineStageFlags dst, VkAccessFlags da)
{
    VkMemoryBarrier mb = {.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
                          .srcAccessMask = sa, .dstAccessMask = da};
    vkCmdPipelineBarrier(cb, src, dst, 0, 1, &mb, 0, NULL, 0, NULL);
}

static sdpa_status dispatch(sdpa_context *ctx, sdpa__vk_state *s, sdpa__vk_plan *pl,
                            int pipe, uint64_t invocations, bool *first)
{
    if (invocations == 0) return SDPA_OK;
    VkCommandBuffer cb = pl->cmd;
    if (!*first)
        sdpa__vk_barrier(cb, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_ACCESS_SHADER_WRITE_BIT,
                VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
                VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT);
    *first = false;
    /* one or more pieces of bounded work each (vk_split.c) */
    sdpa__vk_split sp;
    SDPA__TRY(sdpa__vk_split_plan(ctx, s, pl, pipe, invocations, &sp));
    vkCmdBindPipeline(cb, VK_PIPELINE_BIND_POINT_COMPUTE, pl->pipes[pipe]);
    sdpa__vk_split_record(cb, &sp);
    return SDPA_OK;
}

typedef enum { RUN_FORWARD, RUN_BACKWARD } run_kind;

static sdpa_status run(sdpa_context *ctx, sdpa__vk_state *s, sdpa__vk_plan *pl,
                       const sdpa__problem *p, const sdpa__fwd_args *a,
                       const sdpa__bwd_args *g, run_kind kind)
{
    SDPA__TRY(sdpa__vk_plan_wait(ctx, s, pl));
    const sdpa__ref *refs[SDPA__VK_T_COUNT] = {0};
    sdpa__vk_pack_job job = {0};
    SDPA__TRY(fill_params(ctx, s, pl, p, a, g, refs, &job));
    write_descriptors(s, pl, refs);

    VkCommandBuffer cb = pl->cmd;
    VkResult r = vkResetCommandBuffer(cb, 0);
    VkCommandBufferBeginInfo bi = {
        .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
        .flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT,
    };
    if (r == VK_SUCCESS) r = vkBeginCommandBuffer(cb, &bi);
    if (r != VK_SUCCESS)
        return SDPA__FAIL_NATIVE(ctx, sdpa__vk_status(r, SDPA_ERR_DEVICE), r,
                                 "vulkan: recording failed (%s)", sdpa__vk_result_name(r));
    sdpa__vk_barrier(cb, VK_PIPELINE_STAGE_ALL_COMMANDS_BIT | VK_PIPELINE_STAGE_HOST_BIT,
                     VK_ACCESS_MEMORY_WRITE_BIT | VK_ACCESS_HOST_WRITE_BIT,
                     VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
                     VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT |
                     VK_ACCESS_UNIFORM_READ_BIT);
    if (pl->packed) sdpa__vk_pack_copy_in(cb, pl, &job);
    vkCmdBindDescriptorSets(cb, VK_PIPELINE_BIND_POINT_COMPUTE, s->pipe_layout, 0, 1,
                            &pl->desc_set, 0, NULL);
    uint64_t rows = (uint64_t)(p->B * p->Hq * p->Sq), kvrows = (uint64_t)(p->B * p->Hkv * p->Skv);
    bool first = true;
    sdpa_status st = SDPA_OK;
    if (pl->spec_flags & SDPA__VK_F_NORMED)
        st = dispatch(ctx, s, pl, SDPA__VK_P_QKNORM, rows + kvrows, &first);
    if (kind == RUN_FORWARD) {
        if (st == SDPA_OK)
            st = dispatch(ctx, s, pl, SDPA__VK_P_FWD, sdpa__vk_fwd_invocations(pl), &first);
        if (st == SDPA_OK && pl->nsplit > 1)
            st = dispatch(ctx, s, pl, SDPA__VK_P_COMBINE, rows, &first);
        if (st == SDPA_OK && p->has_stats && a->stats.mem)
            st = dispatch(ctx, s, pl, SDPA__VK_P_STATS, (uint64_t)(p->B * p->Hq), &first);
    } else {
        /* bwd_dq, bwd_dkv: one invocation per row, or the GPU-class
         * backward's work-groups (sdpa__vk_bwd_view) */
        sdpa__vk_plan bv;
        sdpa__vk_bwd_view(pl, &bv);
        if (st == SDPA_OK)
            st = dispatch(ctx, s, &bv, SDPA__VK_P_BWD_DQ,
                          sdpa__vk_bwd_invocations(&bv, SDPA__VK_P_BWD_DQ), &first);
        if (st == SDPA_OK)
            st = dispatch(ctx, s, &bv, SDPA__VK_P_BWD_DKV,
                          sdpa__vk_bwd_invocations(&bv, SDPA__VK_P_BWD_DKV), &first);
        if (st == SDPA_OK && pl->pipes[SDPA__VK_P_BWD_REDUCE] &&
            (g->dq_gain.mem || g->dk_gain.mem || g->dtemperature.mem || g->dsinks.mem))
            st = dispatch(ctx, s, pl, SDPA__VK_P_BWD_REDUCE,
                          (uint64_t)(2 * p->D + 2 * p->Hq), &first);
    }
    sdpa__vk_barrier(cb, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_ACCESS_SHADER_WRITE_BIT,
                     VK_PIPELINE_STAGE_ALL_COMMANDS_BIT | VK_PIPELINE_STAGE_HOST_BIT,
                     VK_ACCESS_MEMORY_READ_BIT | VK_ACCESS_MEMORY_WRITE_BIT |
                     VK_ACCESS_HOST_READ_BIT);
    if (pl->packed) sdpa__vk_pack_copy_out(cb, pl, &job);
    r = vkEndCommandBuffer(cb);
    if (st != SDPA_OK) return st;
    if (r != VK_SUCCESS)
        return SDPA__FAIL_NATIVE(ctx, sdpa__vk_status(r, SDPA_ERR_DEVICE), r,
                                 "vulkan: vkEndCommandBuffer failed (%s)", sdpa__vk_result_name(r));
    VkSubmitInfo si = {
        .sType = VK_STRUCTURE_TYPE_SUBMIT_INFO,
        .commandBufferCount = 1,
        .pCommandBuffers = &cb,
    };
    r = vkQueueSubmit(s->queue, 1, &si, pl->fence);
    if (r != VK_SUCCESS)
        return SDPA__FAIL_NATIVE(ctx, sdpa__vk_status(r, SDPA_ERR_DEVICE), r,
                                 "vulkan: vkQueueSubmit failed (%s)", sdpa__vk_result_name(r));
    pl->pending = true;
    return SDPA_OK;
}

sdpa_status sdpa__vk_forward(sdpa_context *ctx, void *state, void *plan_state,
                             const sdpa__problem *p, const sdpa__fwd_args *a)
{
    return run(ctx, state, plan_state, p, a, NULL, RUN_FORWARD);
}

sdpa_status sdpa__vk_backward(sdpa_context *ctx, void *state, void *plan_state,
                              const sdpa__problem *p, const sdpa__fwd_args *a,
                              const sdpa__bwd_args *g)
{
    sdpa__vk_plan *pl = plan_state;
    SDPA__CHECK(ctx, pl->pipes[SDPA__VK_P_BWD_DQ], SDPA_ERR_INVALID_ARG,
                "vulkan: plan was created without SDPA_PLAN_BACKWARD");
    SDPA__CHECK(ctx, a->lse.mem && a->out.mem, SDPA_ERR_INVALID_ARG,
                "vulkan: backward needs the forward's out and lse");
    return run(ctx, state, pl, p, a, g, RUN_BACKWARD);
}

sdpa_status sdpa__vk_finish(sdpa_context *ctx, void *state)
{
    sdpa__vk_state *s = state;
    if (!s) return SDPA_OK;
    VkResult r = vkQueueWaitIdle(s->queue);
    if (r != VK_SUCCESS)
        return SDPA__FAIL_NATIVE(ctx, sdpa__vk_status(r, SDPA_ERR_DEVICE), r,
                                 "vulkan: vkQueueWaitIdle failed (%s)", sdpa__vk_result_name(r));
    return SDPA_OK;
}
