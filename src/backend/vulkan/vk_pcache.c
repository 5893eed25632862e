/*
 * vk_pcache.c — persists the context's VkPipelineCache on disk, one file per
 * device under sdpa__context_cache_dir(ctx):
 *   vk-<vendor>-<device>-<pipelineCacheUUID>.pcache
 * The file is a 32-byte libsdpa header (magic "SDPAVKPC", format version,
 * payload size, FNV-1a 64 of the payload) followed by the driver's cache data
 * (format in vk_cache_entry.h). On load the file size is bounded before it is
 * read, then the pure parser sdpa__vk_entry_parse (vk_cache_entry.c, fuzzed
 * by tests/fuzz/fuzz_vkcache.c) checks the header, size limit (256 MiB),
 * exact size, checksum and the driver's own VkPipelineCacheHeaderVersionOne
 * (header size and version, vendor, device, UUID); anything wrong discards
 * the file with a WARN log line and starts an empty cache, never trusting it.
 * Files go through src/core/fileio.c: the folder is created 0700 and used
 * only when it is ours and not group/other-writable; the file (0600) is
 * opened without following a symlink and without blocking, and refused when
 * it is not a regular file of ours; writes go to a temp file in the same
 * directory, are fsynced and renamed over the old one, so a crash or a
 * concurrent process never leaves a torn file (trust model:
 * docs/reliability.md).
 * Called by vk_device.c (open at context setup, save at context free) and
 * vk_plan.c (save after a plan created new pipelines).
 */
#include "vk_internal.h"
#include "vk_cache_entry.h"
#include "../../core/fileio.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

_Static_assert(SDPA__VK_ENTRY_UUID_SIZE == VK_UUID_SIZE, "pipelineCacheUUID size");
_Static_assert(SDPA__VK_ENTRY_DRIVER_HEADER_SIZE == sizeof(VkPipelineCacheHeaderVersionOne),
               "VkPipelineCacheHeaderVersionOne size");
_Static_assert(SDPA__VK_ENTRY_DRIVER_HEADER_VERSION == VK_PIPELINE_CACHE_HEADER_VERSION_ONE,
               "pipeline cache header version");

/* Reads and checks the file; returns malloc'd file contents (the payload at
 * *payload, *size bytes) or NULL. The folder must be ours and private and the
 * file a regular file of ours, not a symlink, within the format's size, before
 * a byte is read (src/core/fileio.c); then the format is checked. */
static unsigned char *load_file(sdpa_context *ctx, const sdpa__vk_state *s,
                                const unsigned char **payload, size_t *size)
{
    char dir[sizeof s->pcache_path], *raw = NULL;
    size_t len = 0;
    sdpa__file_why fw = {0};
    const char *why = NULL;
    sdpa__file_result fr = SDPA__FILE_REFUSED;
    if (sdpa__path_dir(s->pcache_path, dir, sizeof dir) &&
        sdpa__dir_check_private(dir, &fw) != SDPA__FILE_OK) {
        if (fw.err == ENOENT) return NULL; /* no folder, no cache yet */
        /* untrusted (owner, mode): WARN; a failing stat: INFO */
        sdpa__log(ctx, fw.err ? SDPA_LOG_INFO : SDPA_LOG_WARN,
                  "vulkan: pipeline cache folder %s not used (%s)", dir, fw.text);
        return NULL;
    }
    fr = sdpa__file_read(s->pcache_path, SDPA__VK_ENTRY_HEADER + SDPA__VK_ENTRY_MAX,
                         SDPA__FILE_NOFOLLOW | SDPA__FILE_PRIVATE, &raw, &len, &fw);
    if (fr == SDPA__FILE_MISSING) return NULL;
    if (fr != SDPA__FILE_OK) why = fw.text;
    unsigned char *data = (unsigned char *)raw;
    if (!why) {
        sdpa__vk_entry_device dev = {s->props.vendorID, s->props.deviceID, {0}};
        memcpy(dev.uuid, s->props.pipelineCacheUUID, VK_UUID_SIZE);
        sdpa__vk_entry_status es = sdpa__vk_entry_parse(data, len, &dev, payload, size);
        if (es != SDPA__VK_ENTRY_OK) why = sdpa__vk_entry_reason(es);
    }
    if (why) {
        sdpa__log(ctx, SDPA_LOG_WARN, "vulkan: pipeline cache '%s' discarded (%s)",
                  s->pcache_path, why);
        free(data);
        return NULL;
    }
    return data;
}

sdpa_status sdpa__vk_pcache_open(sdpa_context *ctx, sdpa__vk_state *s)
{
    const char *dir = sdpa__context_cache_dir(ctx);
    s->pcache_path[0] = '\0';
    if (dir && *dir) {
        char uuid[2 * VK_UUID_SIZE + 1];
        for (unsigned i = 0; i < VK_UUID_SIZE; i++)
            snprintf(uuid + 2 * i, 3, "%02x", s->props.pipelineCacheUUID[i]);
        int n = snprintf(s->pcache_path, sizeof s->pcache_path, "%s/vk-%04x-%04x-%s.pcache",
                         dir, s->props.vendorID, s->props.deviceID, uuid);
        if (n < 0 || (size_t)n >= sizeof s->pcache_path) s->pcache_path[0] = '\0';
    }
    size_t size = 0;
    const unsigned char *payload = NULL;
    unsigned char *data = s->pcache_path[0] ? load_file(ctx, s, &payload, &size) : NULL;
    VkPipelineCacheCreateInfo ci = {
        .sType = VK_STRUCTURE_TYPE_PIPELINE_CACHE_CREATE_INFO,
        .initialDataSize = data ? size : 0,
        .pInitialData = data ? payload : NULL,
    };
    VkResult r = vkCreatePipelineCache(s->device, &ci, NULL, &s->pcache);
    if (r != VK_SUCCESS && data) {
        sdpa__log(ctx, SDPA_LOG_WARN, "vulkan: driver rejected pipeline cache '%s' (%s); starting empty",
                  s->pcache_path, sdpa__vk_result_name(r));
        ci.initialDataSize = 0;
        ci.pInitialData = NULL;
        r = vkCreatePipelineCache(s->device, &ci, NULL, &s->pcache);
    }
    if (data) {
        sdpa__log(ctx, SDPA_LOG_DEBUG, "vulkan: loaded pipeline cache '%s' (%zu bytes)",
                  s->pcache_path, size);
        s->pcache_saved_size = size;
    }
    free(data);
    if (r != VK_SUCCESS)
        return SDPA__FAIL_NATIVE(ctx, sdpa__vk_status(r, SDPA_ERR_DEVICE), r,
                                 "vulkan: vkCreatePipelineCache failed (%s)",
                                 sdpa__vk_result_name(r));
    return SDPA_OK;
}

void sdpa__vk_pcache_save(sdpa_context *ctx, sdpa__vk_state *s)
{
    if (!s->pcache || !s->pcache_path[0]) return;
    size_t n = 0;
    if (vkGetPipelineCacheData(s->device, s->pcache, &n, NULL) != VK_SUCCESS || n == 0 ||
        n > SDPA__VK_ENTRY_MAX || n == s->pcache_saved_size)
        return;
    /* plain malloc, outside fault injection: a cache that cannot be written
     * is never an error (docs/vulkan.md), so a failure here is absorbed by
     * design, which the fault walk (tests/test_faults.c) does not allow */
    unsigned char *buf = malloc(SDPA__VK_ENTRY_HEADER + n);
    if (!buf) return;
    if (vkGetPipelineCacheData(s->device, s->pcache, &n, buf + SDPA__VK_ENTRY_HEADER) !=
        VK_SUCCESS) {
        free(buf);
        return;
    }
    sdpa__vk_entry_header(buf, buf + SDPA__VK_ENTRY_HEADER, n);

    char dir[sizeof s->pcache_path];
    sdpa__file_why why = {0};
    bool ok = sdpa__path_dir(s->pcache_path, dir, sizeof dir) &&
              sdpa__dir_make(dir, 0700, &why) == SDPA__FILE_OK &&
              sdpa__dir_check_private(dir, &why) == SDPA__FILE_OK &&
              sdpa__file_write_atomic(s->pcache_path, buf, SDPA__VK_ENTRY_HEADER + n, 0600, 0,
                                      &why) == SDPA__FILE_OK;
    if (ok) {
        s->pcache_saved_size = n;
        sdpa__log(ctx, SDPA_LOG_DEBUG, "vulkan: saved pipeline cache '%s' (%zu bytes)",
                  s->pcache_path, n);
    } else {
        sdpa__log(ctx, SDPA_LOG_INFO, "vulkan: could not write pipeline cache '%s' (%s)",
                  s->pcache_path, why.text);
    }
    free(buf);
}
