/*
 * vk_buffer.c — buffers for the Vulkan backend: one VkBuffer per sdpa buffer,
 * bound to a range of a shared memory block (vk_alloc.c), in host-visible
 * coherent memory when the device has it (every integrated GPU and lavapipe),
 * mapped once per block so writes and reads are memcpy after the queue is
 * idle; otherwise (no such type, or its heap full: a small BAR heap)
 * device-local memory reached through a temporary staging buffer and
 * vkCmdCopyBuffer. Wrapped application buffers (sdpa_vulkan.h)
 * have no mapping and always use staging.
 *
 * Invariants: sizes are rounded up to 16 bytes (shaders read u8 masks and
 * bf16 values as 32-bit words); reads and writes wait for all pending work on
 * the queue first (sdpa.h: "They wait for pending work").
 * Called through the backend table and by vk_plan.c for workspace/params.
 */
#include "vk_internal.h"

#include <stdlib.h>

static int find_memory(const sdpa__vk_state *s, uint32_t bits, VkMemoryPropertyFlags want)
{
    for (uint32_t i = 0; i < s->mem_props.memoryTypeCount; i++)
        if ((bits & (1u << i)) &&
            (s->mem_props.memoryTypes[i].propertyFlags & want) == want)
            return (int)i;
    return -1;
}

sdpa_status sdpa__vk_buffer_create(sdpa_context *ctx, sdpa__vk_state *s, size_t bytes,
                                   VkBufferUsageFlags usage, bool want_mapped,
                                   sdpa__vk_buffer **out)
{
    *out = NULL;
    size_t size;
    SDPA__CHECK(ctx, sdpa__add_size(bytes, 15, &size), SDPA_ERR_OUT_OF_MEMORY,
                "vulkan: buffer size overflows");
    size &= ~(size_t)15;
    sdpa__vk_buffer *b = sdpa__calloc(1, sizeof *b);
    SDPA__CHECK(ctx, b, SDPA_ERR_OUT_OF_MEMORY, "vulkan: out of host memory");
    b->size = bytes;
    b->owned = true;
    VkBufferCreateInfo bci = {
        .sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO,
        .size = size,
        .usage = usage,
        .sharingMode = VK_SHARING_MODE_EXCLUSIVE,
    };
    VkResult r = vkCreateBuffer(s->device, &bci, NULL, &b->buffer);
    sdpa_status st = SDPA_OK;
    if (r != VK_SUCCESS) {
        st = SDPA__FAIL_NATIVE(ctx, sdpa__vk_status(r, SDPA_ERR_DEVICE), r,
                               "vulkan: vkCreateBuffer(%zu bytes) failed (%s)", size,
                               sdpa__vk_result_name(r));
        goto fail;
    }
    VkMemoryRequirements req;
    vkGetBufferMemoryRequirements(s->device, b->buffer, &req);
    /* Preference order: host-visible device-local (mapped, no staging),
     * then host-visible for what must be mapped, then device-local (reached
     * through staging), then any host-visible. A type whose heap is full
     * (a ~256 MiB BAR heap on a discrete GPU) falls through to the next. */
    const VkMemoryPropertyFlags hv = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT |
                                     VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
    const VkMemoryPropertyFlags order[4] = {
        hv | VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT, want_mapped ? hv : 0,
        VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT, hv};
    int tried[4], ntried = 0;
    st = SDPA_ERR_DEVICE;
    for (int i = 0; i < 4 && st != SDPA_OK; i++) {
        if (!order[i]) continue;
        int type = find_memory(s, req.memoryTypeBits, order[i]);
        bool seen = type < 0;
        for (int k = 0; k < ntried && !seen; k++) seen = tried[k] == type;
        if (seen) continue;
        tried[ntried++] = type;
        st = sdpa__vk_alloc_bind(ctx, s, b, &req, (uint32_t)type);
        if (st != SDPA_OK && st != SDPA_ERR_OUT_OF_MEMORY) goto fail;
        if (st != SDPA_OK)
            sdpa__log(ctx, SDPA_LOG_DEBUG, "vulkan: memory type %d full for %zu bytes, "
                      "trying the next", type, size);
    }
    if (ntried == 0)
        st = SDPA__FAIL(ctx, SDPA_ERR_DEVICE, "vulkan: no memory type for a storage buffer");
    if (st != SDPA_OK) goto fail;
    *out = b;
    return SDPA_OK;
fail:
    sdpa__vk_buffer_destroy(s, b);
    return st;
}

void sdpa__vk_buffer_destroy(sdpa__vk_state *s, sdpa__vk_buffer *b)
{
    if (!b) return;
    if (b->owned) { /* wrapped application buffers: only the wrapper */
        if (b->buffer) vkDestroyBuffer(s->device, b->buffer, NULL);
        sdpa__vk_alloc_release(s, b); /* no-op when never bound */
    }
    free(b);
}

sdpa_status sdpa__vk_buffer_alloc(sdpa_context *ctx, void *state, size_t bytes, void **handle)
{
    sdpa__vk_state *s = state;
    sdpa__vk_buffer *b;
    SDPA__TRY(sdpa__vk_buffer_create(ctx, s, bytes,
                                     VK_BUFFER_USAGE_STORAGE_BUFFER_BIT |
                                     VK_BUFFER_USAGE_TRANSFER_SRC_BIT |
                                     VK_BUFFER_USAGE_TRANSFER_DST_BIT, false, &b));
    *handle = b;
    return SDPA_OK;
}

void sdpa__vk_buffer_free(sdpa_context *ctx, void *state, void *handle)
{
    (void)ctx;
    sdpa__vk_state *s = state;
    if (!s || !handle) return;
    vkQueueWaitIdle(s->queue); /* "after pending work that uses it" */
    sdpa__vk_buffer_destroy(s, handle);
}

static sdpa_status wait_idle(sdpa_context *ctx, sdpa__vk_state *s)
{
    VkResult r = vkQueueWaitIdle(s->queue);
    if (r != VK_SUCCESS)
        return SDPA__FAIL_NATIVE(ctx, sdpa__vk_status(r, SDPA_ERR_DEVICE), r,
                                 "vulkan: vkQueueWaitIdle failed (%s)", sdpa__vk_result_name(r));
    return SDPA_OK;
}

/* One blocking copy between `b` and a mapped staging buffer. */
static sdpa_status staged_copy(sdpa_context *ctx, sdpa__vk_state *s, sdpa__vk_buffer *b,
                               size_t offset, void *host, size_t bytes, bool to_device)
{
    sdpa__vk_buffer *st_buf = NULL;
    SDPA__TRY(sdpa__vk_buffer_create(ctx, s, bytes,
                                     VK_BUFFER_USAGE_TRANSFER_SRC_BIT |
                                     VK_BUFFER_USAGE_TRANSFER_DST_BIT, true, &st_buf));
    sdpa_status st = SDPA_OK;
    VkCommandBuffer cb = VK_NULL_HANDLE;
    VkFence fence = VK_NULL_HANDLE;
    VkResult r;
    if (!st_buf->mapped) {
        st = SDPA__FAIL(ctx, SDPA_ERR_DEVICE, "vulkan: no host-visible memory for staging");
        goto done;
    }
    if (to_device) memcpy(st_buf->mapped, host, bytes);
    VkCommandBufferAllocateInfo ai = {
        .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
        .commandPool = s->cmd_pool,
        .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
        .commandBufferCount = 1,
    };
    r = vkAllocateCommandBuffers(s->device, &ai, &cb);
    if (r != VK_SUCCESS) goto vkfail;
    VkFenceCreateInfo fci = {.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
    r = vkCreateFence(s->device, &fci, NULL, &fence);
    if (r != VK_SUCCESS) goto vkfail;
    VkCommandBufferBeginInfo bi = {
        .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
        .flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT,
    };
    vkBeginCommandBuffer(cb, &bi);
    VkMemoryBarrier mb = {
        .sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
        .srcAccessMask = VK_ACCESS_MEMORY_WRITE_BIT,
        .dstAccessMask = VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_TRANSFER_WRITE_BIT,
    };
    vkCmdPipelineBarrier(cb, VK_PIPELINE_STAGE_ALL_COMMANDS_BIT, VK_PIPELINE_STAGE_TRANSFER_BIT,
                         0, 1, &mb, 0, NULL, 0, NULL);
    VkBufferCopy reg = {
        .srcOffset = to_device ? 0 : offset,
        .dstOffset = to_device ? offset : 0,
        .size = bytes,
    };
    if (to_device) vkCmdCopyBuffer(cb, st_buf->buffer, b->buffer, 1, &reg);
    else vkCmdCopyBuffer(cb, b->buffer, st_buf->buffer, 1, &reg);
    VkMemoryBarrier mb2 = {
        .sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
        .srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT,
        .dstAccessMask = VK_ACCESS_HOST_READ_BIT | VK_ACCESS_MEMORY_READ_BIT,
    };
    vkCmdPipelineBarrier(cb, VK_PIPELINE_STAGE_TRANSFER_BIT,
                         VK_PIPELINE_STAGE_HOST_BIT | VK_PIPELINE_STAGE_ALL_COMMANDS_BIT,
                         0, 1, &mb2, 0, NULL, 0, NULL);
    r = vkEndCommandBuffer(cb);
    if (r != VK_SUCCESS) goto vkfail;
    VkSubmitInfo si = {
        .sType = VK_STRUCTURE_TYPE_SUBMIT_INFO,
        .commandBufferCount = 1,
        .pCommandBuffers = &cb,
    };
    r = vkQueueSubmit(s->queue, 1, &si, fence);
    if (r != VK_SUCCESS) goto vkfail;
    r = vkWaitForFences(s->device, 1, &fence, VK_TRUE, UINT64_MAX);
    if (r != VK_SUCCESS) goto vkfail;
    if (!to_device) memcpy(host, st_buf->mapped, bytes);
    goto done;
vkfail:
    st = SDPA__FAIL_NATIVE(ctx, sdpa__vk_status(r, SDPA_ERR_DEVICE), r,
                           "vulkan: staging copy failed (%s)", sdpa__vk_result_name(r));
done:
    if (fence) vkDestroyFence(s->device, fence, NULL);
    if (cb) vkFreeCommandBuffers(s->device, s->cmd_pool, 1, &cb);
    sdpa__vk_buffer_destroy(s, st_buf);
    return st;
}

sdpa_status sdpa__vk_buffer_write(sdpa_context *ctx, void *state, void *handle, size_t offset,
                                  const void *src, size_t bytes)
{
    sdpa__vk_state *s = state;
    sdpa__vk_buffer *b = handle;
    SDPA__TRY(wait_idle(ctx, s));
    if (bytes == 0) return SDPA_OK;
    if (b->mapped) {
        memcpy((char *)b->mapped + offset, src, bytes);
        return SDPA_OK;
    }
    return staged_copy(ctx, s, b, offset, (void *)src, bytes, true);
}

sdpa_status sdpa__vk_buffer_read(sdpa_context *ctx, void *state, void *handle, size_t offset,
                                 void *dst, size_t bytes)
{
    sdpa__vk_state *s = state;
    sdpa__vk_buffer *b = handle;
    SDPA__TRY(wait_idle(ctx, s));
    if (bytes == 0) return SDPA_OK;
    if (b->mapped) {
        memcpy(dst, (const char *)b->mapped + offset, bytes);
        return SDPA_OK;
    }
    return staged_copy(ctx, s, b, offset, dst, bytes, false);
}
