/*
 * vk_cache_entry.c — parser and header writer of the persisted Vulkan
 * pipeline cache file (format in vk_cache_entry.h). Pure C over a byte span:
 * no Vulkan, no I/O, no allocation.
 *
 * Invariants: reads only data[0..len); the payload size is checked against
 * the limit and the bytes present before use (by subtraction, no untrusted
 * additions); a file is accepted only when its size is exact, its checksum
 * matches, and the driver header inside is well formed and (given a device)
 * names that device's vendorID, deviceID and pipelineCacheUUID — so the
 * driver is never handed data meant for another device.
 * Callers: vk_pcache.c (load and save), tests/fuzz/fuzz_vkcache.c, the
 * cache-entry tests in tests/test_vulkan.c.
 */
#include "vk_cache_entry.h"

#include "../../core/bytes.h"

#include <string.h>

/* The driver's VkPipelineCacheHeaderVersionOne at the start of d[0..n). */
static sdpa__vk_entry_status driver_header(const unsigned char *d, size_t n,
                                           const sdpa__vk_entry_device *dev)
{
    if (n < SDPA__VK_ENTRY_DRIVER_HEADER_SIZE) return SDPA__VK_ENTRY_BAD_DRIVER_HEADER;
    uint32_t hsize = sdpa__get_u32le(d), hver = sdpa__get_u32le(d + 4);
    if (hsize < SDPA__VK_ENTRY_DRIVER_HEADER_SIZE || hsize > n)
        return SDPA__VK_ENTRY_BAD_DRIVER_HEADER;
    if (hver != SDPA__VK_ENTRY_DRIVER_HEADER_VERSION) return SDPA__VK_ENTRY_BAD_DRIVER_HEADER;
    if (dev && (sdpa__get_u32le(d + 8) != dev->vendor_id ||
                sdpa__get_u32le(d + 12) != dev->device_id ||
                memcmp(d + 16, dev->uuid, SDPA__VK_ENTRY_UUID_SIZE) != 0))
        return SDPA__VK_ENTRY_WRONG_DEVICE;
    return SDPA__VK_ENTRY_OK;
}

sdpa__vk_entry_status sdpa__vk_entry_parse(const unsigned char *data, size_t len,
                                           const sdpa__vk_entry_device *dev,
                                           const unsigned char **payload, size_t *payload_len)
{
    *payload = NULL;
    *payload_len = 0;
    if (!data || len < SDPA__VK_ENTRY_HEADER) return SDPA__VK_ENTRY_TRUNCATED_HEADER;
    if (memcmp(data, SDPA__VK_ENTRY_MAGIC, 8) != 0) return SDPA__VK_ENTRY_BAD_MAGIC;
    if (sdpa__get_u32le(data + 8) != SDPA__VK_ENTRY_VERSION) return SDPA__VK_ENTRY_BAD_VERSION;
    uint64_t n = sdpa__get_u64le(data + 16);
    if (n == 0 || n > SDPA__VK_ENTRY_MAX) return SDPA__VK_ENTRY_BAD_SIZE;
    size_t rest = len - SDPA__VK_ENTRY_HEADER;
    if (n > rest) return SDPA__VK_ENTRY_TRUNCATED;
    if (n < rest) return SDPA__VK_ENTRY_TRAILING;
    const unsigned char *p = data + SDPA__VK_ENTRY_HEADER;
    if (sdpa__fnv1a64(SDPA__HASH_SEED, p, rest) != sdpa__get_u64le(data + 24))
        return SDPA__VK_ENTRY_CHECKSUM;
    sdpa__vk_entry_status s = driver_header(p, rest, dev);
    if (s != SDPA__VK_ENTRY_OK) return s;
    *payload = p;
    *payload_len = rest;
    return SDPA__VK_ENTRY_OK;
}

const char *sdpa__vk_entry_reason(sdpa__vk_entry_status s)
{
    switch (s) {
    case SDPA__VK_ENTRY_OK: return "ok";
    case SDPA__VK_ENTRY_TRUNCATED_HEADER: return "truncated header";
    case SDPA__VK_ENTRY_BAD_MAGIC: return "bad magic";
    case SDPA__VK_ENTRY_BAD_VERSION: return "unknown format version";
    case SDPA__VK_ENTRY_BAD_SIZE: return "implausible size";
    case SDPA__VK_ENTRY_TRUNCATED: return "size mismatch (payload past the end of the file)";
    case SDPA__VK_ENTRY_TRAILING: return "size mismatch (bytes after the payload)";
    case SDPA__VK_ENTRY_CHECKSUM: return "checksum mismatch";
    case SDPA__VK_ENTRY_BAD_DRIVER_HEADER: return "malformed driver header";
    case SDPA__VK_ENTRY_WRONG_DEVICE: return "driver header does not match this device";
    }
    return "unknown reason";
}

void sdpa__vk_entry_header(unsigned char hdr[SDPA__VK_ENTRY_HEADER], const void *payload,
                           size_t n)
{
    memcpy(hdr, SDPA__VK_ENTRY_MAGIC, 8);
    sdpa__put_u32le(hdr + 8, SDPA__VK_ENTRY_VERSION);
    sdpa__put_u32le(hdr + 12, 0);
    sdpa__put_u64le(hdr + 16, (uint64_t)n);
    sdpa__put_u64le(hdr + 24, sdpa__fnv1a64(SDPA__HASH_SEED, payload, n));
}
