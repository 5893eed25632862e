/*
 * fuzz_vkcache.c — libFuzzer target for the Vulkan pipeline cache file parser
 * sdpa__vk_entry_parse (src/backend/vulkan/vk_cache_entry.c): the input is
 * one .pcache file as read from disk (libsdpa header + the driver's data with
 * its VkPipelineCacheHeaderVersionOne). It is parsed twice, for the device
 * the seeds were written for (FUZZ_DEVICE, kept in step with
 * make_cache_seeds.py) and with the device check off. Cache files are
 * untrusted input (docs/reliability.md): only statuses, no crash, no read
 * outside the input, and nothing reaches the driver unless it is well formed
 * and for this device.
 *
 * Invariants checked on every input:
 * - a refusal has a non-empty reason and leaves the payload empty;
 * - an accepted payload lies inside the input, is everything after the
 *   32-byte header, starts with a driver header of a valid size that names
 *   the device, re-deriving the header from it gives back the input's header
 *   (reserved field aside), and the same file one byte shorter is refused.
 * Built by tests/fuzz/meson.build without the library (pure C, builds with
 * -Dvulkan=disabled); run by scripts/hardening.sh from the seeds in
 * tests/fuzz/corpus/vkcache.
 */
#include "vk_cache_entry.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static const sdpa__vk_entry_device FUZZ_DEVICE = {
    0x10005u, 0x0u,
    {'s', 'd', 'p', 'a', '-', 'f', 'u', 'z', 'z', '-', 'u', 'u', 'i', 'd', '0', '1'}};

static uint32_t get_u32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static void check(const uint8_t *data, size_t size, const sdpa__vk_entry_device *dev)
{
    const unsigned char *payload = (const unsigned char *)"x";
    size_t n = 12345;
    sdpa__vk_entry_status s = sdpa__vk_entry_parse(data, size, dev, &payload, &n);
    const char *why = sdpa__vk_entry_reason(s);
    if (!why || !why[0]) abort();
    if (s != SDPA__VK_ENTRY_OK) {
        if (payload || n) abort();
        return;
    }
    if (size < SDPA__VK_ENTRY_HEADER || payload != data + SDPA__VK_ENTRY_HEADER ||
        n != size - SDPA__VK_ENTRY_HEADER || n == 0 || n > SDPA__VK_ENTRY_MAX)
        abort();
    if (n < SDPA__VK_ENTRY_DRIVER_HEADER_SIZE) abort();
    uint32_t hsize = get_u32(payload);
    if (hsize < SDPA__VK_ENTRY_DRIVER_HEADER_SIZE || hsize > n) abort();
    if (get_u32(payload + 4) != SDPA__VK_ENTRY_DRIVER_HEADER_VERSION) abort();
    if (dev && (get_u32(payload + 8) != dev->vendor_id || get_u32(payload + 12) != dev->device_id ||
                memcmp(payload + 16, dev->uuid, SDPA__VK_ENTRY_UUID_SIZE) != 0))
        abort();
    unsigned char hdr[SDPA__VK_ENTRY_HEADER];
    sdpa__vk_entry_header(hdr, payload, n);
    if (memcmp(hdr, data, 12) != 0 || memcmp(hdr + 16, data + 16, 16) != 0) abort();
    const unsigned char *p2;
    size_t n2;
    if (sdpa__vk_entry_parse(data, size - 1, dev, &p2, &n2) == SDPA__VK_ENTRY_OK) abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    check(data, size, &FUZZ_DEVICE);
    check(data, size, NULL);
    return 0;
}
