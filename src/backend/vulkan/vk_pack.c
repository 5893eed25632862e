/*
 * vk_pack.c — the packed descriptor layout, for devices whose
 * maxPerStageDescriptorStorageBuffers is below the 24 storage buffers of the
 * wide layout (Vulkan guarantees only 4; many Mali drivers report 4 or 8).
 * The shaders' *_pk variants (common.glsl, SDPA_PACKED) read every tensor
 * through typed views of one binding; this file puts the call's tensors
 * there: tensors are grouped by the buffer holding them, each group's byte
 * span (start rounded down to 16 bytes, so element parity and word
 * alignment survive) is copied into the plan's pack buffer with
 * vkCmdCopyBuffer before the dispatches, and spans holding a written tensor
 * are copied back after them. Tensors sharing a buffer share one copy, so
 * aliased or interleaved tensors stay consistent. Costs one copy of the
 * inputs and outputs per call; only such devices pay it. base[t] holds
 * tensor t's first index in its own buffer (in esize[t] units: elements, or
 * bytes for block-quantized K/V) on entry and in the pack buffer on return.
 * Called by vk_dispatch.c (run).
 */
#include "vk_internal.h"

sdpa_status sdpa__vk_pack_prepare(sdpa_context *ctx, sdpa__vk_state *s, sdpa__vk_plan *pl,
                                  const sdpa__ref *const *refs, const size_t *esize,
                                  const uint64_t *last, const bool *written, uint64_t *base,
                                  sdpa__vk_pack_job *job)
{
    int group[SDPA_VK_T_COUNT];
    job->n = 0;
    for (int t = 0; t < SDPA_VK_T_COUNT; t++) {
        group[t] = -1;
        if (!refs[t] || !refs[t]->mem) continue;
        const sdpa__vk_buffer *src = refs[t]->mem;
        VkDeviceSize lo = (VkDeviceSize)base[t] * esize[t];
        VkDeviceSize hi = (VkDeviceSize)(last[t] + 1) * esize[t];
        int g = 0;
        while (g < job->n && job->g[g].src != src) g++;
        if (g == job->n) {
            job->n++;
            job->g[g].src = src;
            job->g[g].lo = lo;
            job->g[g].hi = hi;
            job->g[g].written = false;
        }
        if (lo < job->g[g].lo) job->g[g].lo = lo;
        if (hi > job->g[g].hi) job->g[g].hi = hi;
        job->g[g].written = job->g[g].written || written[t];
        group[t] = g;
    }
    VkDeviceSize total = 0;
    for (int g = 0; g < job->n; g++) {
        job->g[g].lo &= ~(VkDeviceSize)15;
        job->g[g].dst = total;
        total += (job->g[g].hi - job->g[g].lo + 15) & ~(VkDeviceSize)15;
    }
    SDPA__CHECK(ctx, total <= s->caps.max_storage_range, SDPA_ERR_UNSUPPORTED,
                "vulkan: the call's tensors (%llu bytes) exceed the device's "
                "maxStorageBufferRange (%llu bytes) in the packed descriptor layout",
                (unsigned long long)total, (unsigned long long)s->caps.max_storage_range);
    for (int t = 0; t < SDPA_VK_T_COUNT; t++) {
        if (group[t] < 0) continue;
        const VkDeviceSize first = (VkDeviceSize)base[t] * esize[t];
        base[t] = (job->g[group[t]].dst + first - job->g[group[t]].lo) / esize[t];
    }
    if (!pl->pack || pl->pack->size < total) {
        if (pl->pack) sdpa__vk_buffer_destroy(s, pl->pack);
        pl->pack = NULL;
        SDPA__TRY(sdpa__vk_buffer_create(ctx, s, total ? total : 16,
                                         VK_BUFFER_USAGE_STORAGE_BUFFER_BIT |
                                         VK_BUFFER_USAGE_TRANSFER_SRC_BIT |
                                         VK_BUFFER_USAGE_TRANSFER_DST_BIT, false, &pl->pack));
    }
    return SDPA_OK;
}

void sdpa__vk_pack_copy_in(VkCommandBuffer cb, const sdpa__vk_plan *pl,
                           const sdpa__vk_pack_job *job)
{
    sdpa__vk_barrier(cb, VK_PIPELINE_STAGE_ALL_COMMANDS_BIT | VK_PIPELINE_STAGE_HOST_BIT,
                     VK_ACCESS_MEMORY_WRITE_BIT | VK_ACCESS_HOST_WRITE_BIT,
                     VK_PIPELINE_STAGE_TRANSFER_BIT,
                     VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_TRANSFER_WRITE_BIT);
    for (int g = 0; g < job->n; g++) {
        VkBufferCopy c = {.srcOffset = job->g[g].lo, .dstOffset = job->g[g].dst,
                          .size = job->g[g].hi - job->g[g].lo};
        vkCmdCopyBuffer(cb, job->g[g].src->buffer, pl->pack->buffer, 1, &c);
    }
    sdpa__vk_barrier(cb, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_WRITE_BIT,
                     VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
                     VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT);
}

void sdpa__vk_pack_copy_out(VkCommandBuffer cb, const sdpa__vk_plan *pl,
                            const sdpa__vk_pack_job *job)
{
    sdpa__vk_barrier(cb, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_ACCESS_SHADER_WRITE_BIT,
                     VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_READ_BIT);
    for (int g = 0; g < job->n; g++) {
        if (!job->g[g].written) continue;
        VkBufferCopy c = {.srcOffset = job->g[g].dst, .dstOffset = job->g[g].lo,
                          .size = job->g[g].hi - job->g[g].lo};
        vkCmdCopyBuffer(cb, pl->pack->buffer, job->g[g].src->buffer, 1, &c);
    }
    sdpa__vk_barrier(cb, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_WRITE_BIT,
                     VK_PIPELINE_STAGE_ALL_COMMANDS_BIT | VK_PIPELINE_STAGE_HOST_BIT,
                     VK_ACCESS_MEMORY_READ_BIT | VK_ACCESS_MEMORY_WRITE_BIT |
                     VK_ACCESS_HOST_READ_BIT);
}

int sdpa__vk_packed_layout(sdpa_context *ctx)
{
    if (!ctx || sdpa_context_backend(ctx) != SDPA_BACKEND_VULKAN) return -1;
    sdpa__vk_state *s = sdpa__context_primary_state(ctx, &sdpa__backend_vulkan);
    return s ? s->caps.packed : -1;
}
