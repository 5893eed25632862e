/*
 * sdpa_vulkan.h — Vulkan interop for libsdpa: run attention on an
 * application's own VkDevice and queue, on its own VkBuffers.
 *
 * Include after <vulkan/vulkan.h> or let this header include it.
 *
 * Synchronisation contract (see docs/vulkan.md for the long form):
 *  - libsdpa submits its work to the queue given here, from the thread that
 *    calls it. Vulkan requires external synchronisation of a VkQueue: the
 *    application must not submit to that queue from another thread while a
 *    libsdpa call runs.
 *  - Every libsdpa submission begins with a full memory barrier against
 *    earlier writes on the queue and ends with one that makes its writes
 *    visible to later commands. So on the SAME queue, work the application
 *    submitted before a libsdpa call is complete and visible to it, and work
 *    submitted after sees libsdpa's results: no extra semaphores needed.
 *  - On a DIFFERENT queue (or for host reads), call sdpa_context_finish()
 *    before consuming results, and make sure the application's own writes
 *    to the inputs have completed (fence or vkQueueWaitIdle) before calling
 *    libsdpa; a queue-family ownership transfer is the application's job if
 *    its buffers use VK_SHARING_MODE_EXCLUSIVE across families.
 *  - sdpa_buffer_read/write and sdpa_context_finish wait for the whole queue
 *    (vkQueueWaitIdle), including the application's work on it.
 */
#ifndef SDPA_VULKAN_H
#define SDPA_VULKAN_H

#include "sdpa.h"

#include <vulkan/vulkan.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The application's device. libsdpa borrows every handle: it never destroys
 * them, and they must outlive the context. */
typedef struct sdpa_vulkan_device {
    size_t struct_size;               /* set by _init */
    VkInstance instance;
    VkPhysicalDevice physical_device;
    VkDevice device;                  /* created with Vulkan >= 1.1 */
    uint32_t queue_family;            /* must support VK_QUEUE_COMPUTE_BIT */
    VkQueue queue;
    int storage16_enabled;            /* 1 if the device was created with
                                         storageBuffer16BitAccess (needed for
                                         f16 storage); default 0 */
} sdpa_vulkan_device;
#define SDPA_VULKAN_DEVICE_SIZE_V1 SDPA_SIZE_THROUGH(sdpa_vulkan_device, storage16_enabled)

SDPA_API void sdpa_vulkan_device_init(sdpa_vulkan_device *dev);

/* Creates a Vulkan-backend context on the application's device. `options`
 * may be NULL; its backend/device fields are ignored. The pipeline cache
 * is persisted under the options' cache directory as usual.
 * Returns SDPA_ERR_NULL, SDPA_ERR_INVALID_ARG, SDPA_ERR_UNSUPPORTED (built
 * without Vulkan, libvulkan.so.1 cannot be loaded: libsdpa opens it at run
 * time, or the device is older than 1.1), SDPA_ERR_DEVICE,
 * SDPA_ERR_OUT_OF_MEMORY. */
SDPA_API sdpa_status sdpa_vulkan_context_create(const sdpa_context_options *options,
                                                const sdpa_vulkan_device *dev,
                                                sdpa_context **out);

/* Wraps an application VkBuffer of `bytes` bytes (created on the context's
 * device with VK_BUFFER_USAGE_STORAGE_BUFFER_BIT, plus TRANSFER_SRC/DST for
 * sdpa_buffer_read/write; size a multiple of 4). The application keeps
 * ownership: sdpa_buffer_destroy frees only the wrapper. Returns
 * SDPA_ERR_NULL, SDPA_ERR_EMPTY, SDPA_ERR_MISMATCHED_CONTEXT (not a Vulkan
 * context), SDPA_ERR_OUT_OF_MEMORY. */
SDPA_API sdpa_status sdpa_vulkan_buffer_wrap(sdpa_context *ctx, VkBuffer buffer,
                                             size_t bytes, sdpa_buffer **out);

/* The VkBuffer behind a buffer of a Vulkan context (allocated by libsdpa or
 * wrapped), or VK_NULL_HANDLE. */
SDPA_API VkBuffer sdpa_vulkan_buffer_handle(const sdpa_buffer *buf);

#ifdef __cplusplus
}
#endif
#endif /* SDPA_VULKAN_H */
