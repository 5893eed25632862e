/*
 * vk_backend.c — the Vulkan backend's function table (sdpa__backend_vulkan)
 * and the interop entry points of include/sdpa_vulkan.h: a context on an
 * application's VkDevice/queue (borrowed, never destroyed) and wrappers
 * around application VkBuffers.
 * The table is registered by src/core/registry.c when SDPA_HAVE_VULKAN.
 */
#include "vk_internal.h"
#include "capabilities.h"
#include "sdpa_vulkan.h"

#include <stdlib.h>

const sdpa__backend sdpa__backend_vulkan = {
    .api_version = SDPA__BACKEND_API_VERSION,
    .kind = SDPA_BACKEND_VULKAN,
    .name = "vulkan",
    .host_memory = false,
    .features = SDPA__FEAT_ALL, /* every optional capability (capabilities.h) */
    .load = sdpa__vk_api_load,
    .device_count = sdpa__vk_device_count,
    .device_info = sdpa__vk_device_info,
    .context_init = sdpa__vk_context_init,
    .context_free = sdpa__vk_context_free,
    .buffer_alloc = sdpa__vk_buffer_alloc,
    .buffer_free = sdpa__vk_buffer_free,
    .buffer_write = sdpa__vk_buffer_write,
    .buffer_read = sdpa__vk_buffer_read,
    .supports = sdpa__vk_supports,
    .plan_create = sdpa__vk_plan_create,
    .plan_free = sdpa__vk_plan_free,
    .plan_workspace = sdpa__vk_plan_workspace,
    .plan_describe = sdpa__vk_plan_describe,
    .forward = sdpa__vk_forward,
    .backward = sdpa__vk_backward,
    .finish = sdpa__vk_finish,
    .default_tile = sdpa__vk_default_tile,
    .tile_params = sdpa__vk_tile_params,
    .n_tile_params = SDPA__VK_TILE_PARAMS,
    .tile_candidates = sdpa__vk_tile_candidates,
    .source_hash = sdpa__vk_source_hash,
    .measure_peak = sdpa__vk_measure_peak,
};

SDPA_API void sdpa_vulkan_device_init(sdpa_vulkan_device *dev)
{
    if (!dev) return;
    memset(dev, 0, sizeof *dev);
    dev->struct_size = sizeof *dev;
}

SDPA_API sdpa_status sdpa_vulkan_context_create(const sdpa_context_options *options,
                                                const sdpa_vulkan_device *dev,
                                                sdpa_context **out)
{
    if (!out) return SDPA_ERR_NULL;
    *out = NULL;
    if (!dev) return SDPA_ERR_NULL;
    sdpa_vulkan_device full; /* fields past an older caller's size: defaults */
    sdpa_vulkan_device_init(&full);
    SDPA__TRY(sdpa__struct_take(NULL, &full, sizeof full, dev, SDPA_VULKAN_DEVICE_SIZE_V1,
                                "vulkan device", "call sdpa_vulkan_device_init first"));
    dev = &full;
    if (!dev->instance || !dev->physical_device || !dev->device || !dev->queue)
        return SDPA_ERR_NULL;
    if (sdpa__vk_api_load()) return SDPA_ERR_UNSUPPORTED; /* no libvulkan.so.1 */
    sdpa__vk_state *s = sdpa__calloc(1, sizeof *s);
    if (!s) return SDPA_ERR_OUT_OF_MEMORY;
    s->owns_device = false;
    s->instance = dev->instance;
    s->phys = dev->physical_device;
    s->device = dev->device;
    s->queue_family = dev->queue_family;
    s->queue = dev->queue;
    sdpa__vk_probe(s->phys, &s->caps, &s->props);
    /* Only what the application enabled may be used. */
    s->caps.storage16 = s->caps.storage16 && dev->storage16_enabled;
    /* whether VK_KHR_shader_float_controls is enabled is not known: the
     * SPIR-V is not patched to request it (docs/vulkan.md "Float controls") */
    s->caps.float_controls = false;
    /* nor whether shaderFloat16 is: fwd_fa2h (q in f16 registers) is not used */
    s->caps.fp16 = false;
    s->caps.denorm_widths = 0; /* no DenormPreserve request either */
    if (s->props.apiVersion < VK_API_VERSION_1_1) {
        free(s);
        return SDPA_ERR_UNSUPPORTED;
    }
    sdpa_context *ctx = NULL;
    sdpa_status st = sdpa__context_create_with_state(options, &sdpa__backend_vulkan, s,
                                                     s->props.deviceName, &ctx);
    if (st != SDPA_OK) {
        free(s);
        return st;
    }
    s->ctx = ctx;
    st = sdpa__vk_state_setup(ctx, s);
    if (st != SDPA_OK) {
        sdpa_context_destroy(ctx); /* frees s through context_free */
        return st;
    }
    *out = ctx;
    return SDPA_OK;
}

SDPA_API sdpa_status sdpa_vulkan_buffer_wrap(sdpa_context *ctx, VkBuffer buffer, size_t bytes,
                                             sdpa_buffer **out)
{
    if (out) *out = NULL;
    if (!ctx) return SDPA_ERR_NULL;
    SDPA__CHECK_ARG(ctx, out, "sdpa_vulkan_buffer_wrap", "out");
    *out = NULL;
    SDPA__CHECK(ctx, buffer != VK_NULL_HANDLE, SDPA_ERR_NULL,
                "sdpa_vulkan_buffer_wrap: buffer is VK_NULL_HANDLE");
    SDPA__CHECK(ctx, bytes > 0, SDPA_ERR_EMPTY, "sdpa_vulkan_buffer_wrap: bytes is 0");
    if (sdpa_context_backend(ctx) != SDPA_BACKEND_VULKAN)
        return SDPA__FAIL(ctx, SDPA_ERR_MISMATCHED_CONTEXT,
                          "sdpa_vulkan_buffer_wrap: context is not a Vulkan context");
    sdpa__vk_buffer *b = sdpa__calloc(1, sizeof *b);
    SDPA__CHECK(ctx, b, SDPA_ERR_OUT_OF_MEMORY, "vulkan: out of host memory");
    b->buffer = buffer; /* memory stays VK_NULL_HANDLE: the app owns it */
    b->size = bytes;
    /* owned = true: our buffer_free frees only this wrapper. */
    sdpa_status st = sdpa__buffer_wrap(ctx, b, bytes, true, out);
    if (st != SDPA_OK) free(b);
    return st;
}

SDPA_API VkBuffer sdpa_vulkan_buffer_handle(const sdpa_buffer *buf)
{
    if (!buf) return VK_NULL_HANDLE;
    sdpa_context *ctx = sdpa__buffer_context(buf);
    if (!ctx || sdpa_context_backend(ctx) != SDPA_BACKEND_VULKAN) return VK_NULL_HANDLE;
    const sdpa__vk_buffer *b = sdpa__buffer_handle(buf);
    return b ? b->buffer : VK_NULL_HANDLE;
}
