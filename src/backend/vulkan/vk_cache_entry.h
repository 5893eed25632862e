/*
 * vk_cache_entry.h — the on-disk format of the persisted Vulkan pipeline
 * cache, as pure functions over bytes (no Vulkan, no file I/O), so that the
 * fuzz target tests/fuzz/fuzz_vkcache.c and the unit tests can link it
 * without a device or the Vulkan headers. Used by vk_pcache.c.
 *
 * Format (integers little-endian):
 *   offset  0  8 bytes  magic "SDPAVKPC"
 *   offset  8  u32      format version (1)
 *   offset 12  u32      reserved, written as 0, not checked
 *   offset 16  u64      payload size N (1 .. 256 MiB)
 *   offset 24  u64      FNV-1a 64 of the payload
 *   offset 32  N bytes  the driver's pipeline cache data, which starts with
 *                       VkPipelineCacheHeaderVersionOne: u32 header size
 *                       (>= 32, <= N), u32 header version (1), u32 vendorID,
 *                       u32 deviceID, u8 pipelineCacheUUID[16]
 * The file is exactly 32 + N bytes long.
 */
#ifndef SDPA_VK_CACHE_ENTRY_H
#define SDPA_VK_CACHE_ENTRY_H

#include <stddef.h>
#include <stdint.h>

#define SDPA__VK_ENTRY_MAGIC "SDPAVKPC"
#define SDPA__VK_ENTRY_VERSION 1u
#define SDPA__VK_ENTRY_HEADER 32u
#define SDPA__VK_ENTRY_MAX ((uint64_t)256 << 20)
#define SDPA__VK_ENTRY_UUID_SIZE 16u /* VK_UUID_SIZE */
/* sizeof(VkPipelineCacheHeaderVersionOne) and its version value. */
#define SDPA__VK_ENTRY_DRIVER_HEADER_SIZE (16u + SDPA__VK_ENTRY_UUID_SIZE)
#define SDPA__VK_ENTRY_DRIVER_HEADER_VERSION 1u

typedef enum sdpa__vk_entry_status {
    SDPA__VK_ENTRY_OK = 0,
    SDPA__VK_ENTRY_TRUNCATED_HEADER, /* fewer than 32 bytes */
    SDPA__VK_ENTRY_BAD_MAGIC,
    SDPA__VK_ENTRY_BAD_VERSION,
    SDPA__VK_ENTRY_BAD_SIZE,      /* payload size 0 or over the limit */
    SDPA__VK_ENTRY_TRUNCATED,     /* payload size past the end of the data */
    SDPA__VK_ENTRY_TRAILING,      /* bytes after the payload */
    SDPA__VK_ENTRY_CHECKSUM,
    SDPA__VK_ENTRY_BAD_DRIVER_HEADER, /* payload's VkPipelineCacheHeaderVersionOne malformed */
    SDPA__VK_ENTRY_WRONG_DEVICE,  /* vendorID, deviceID or pipelineCacheUUID differ */
} sdpa__vk_entry_status;

/* What the device reports (VkPhysicalDeviceProperties). */
typedef struct sdpa__vk_entry_device {
    uint32_t vendor_id;
    uint32_t device_id;
    unsigned char uuid[SDPA__VK_ENTRY_UUID_SIZE];
} sdpa__vk_entry_device;

/* Validates one pipeline cache file held in data[0..len) for device `dev`
 * (NULL: check the driver header's shape only, not whose it is). On
 * SDPA__VK_ENTRY_OK sets *payload / *payload_len to the driver data inside
 * `data`; otherwise sets them to NULL / 0. Never reads outside data[0..len). */
sdpa__vk_entry_status sdpa__vk_entry_parse(const unsigned char *data, size_t len,
                                           const sdpa__vk_entry_device *dev,
                                           const unsigned char **payload, size_t *payload_len);

/* Short text for a status ("bad magic", ...); never NULL. */
const char *sdpa__vk_entry_reason(sdpa__vk_entry_status s);

/* Fills the 32-byte header for a payload of n bytes (n within the limit). */
void sdpa__vk_entry_header(unsigned char hdr[SDPA__VK_ENTRY_HEADER], const void *payload,
                           size_t n);

#endif
