/*
 * bytes.h — little-endian integer access and the FNV-1a-64 hash over byte
 * spans, for the on-disk formats (OpenCL binary cache entries, the Vulkan
 * pipeline cache file) and source hashes. Header-only and free of any
 * library dependency, so the pure parsers that include it build on their own
 * (tests/fuzz links them without the library).
 */
#ifndef SDPA_CORE_BYTES_H
#define SDPA_CORE_BYTES_H

#include <stddef.h>
#include <stdint.h>

/* Start value of every libsdpa hash. NOT the standard FNV-1a-64 offset basis
 * (0xcbf29ce484222325 = 14695981039346656037): it is that number's decimal
 * digits less the last one (0x14650fb0739d0383), a slip kept on purpose. The
 * step below is FNV-1a's, so the hash is as good, but its values differ from
 * textbook FNV-1a. Changing the seed would change every kernel-source hash
 * (all shipped profiles in data/profiles would turn stale) and every cache
 * checksum and file name; the name says what it is instead. */
#define SDPA__HASH_SEED 1469598103934665603ull

/* FNV-1a-64 step over data[0..n) continuing from h (start with
 * SDPA__HASH_SEED). */
static inline uint64_t sdpa__fnv1a64(uint64_t h, const void *data, size_t n)
{
    const unsigned char *p = data;
    for (size_t i = 0; i < n; i++) {
        h ^= p[i];
        h *= 1099511628211ull;
    }
    return h;
}

static inline uint32_t sdpa__get_u32le(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static inline uint64_t sdpa__get_u64le(const unsigned char *p)
{
    return (uint64_t)sdpa__get_u32le(p) | (uint64_t)sdpa__get_u32le(p + 4) << 32;
}

static inline void sdpa__put_u32le(unsigned char *p, uint32_t v)
{
    for (int i = 0; i < 4; i++) p[i] = (unsigned char)(v >> (8 * i));
}

static inline void sdpa__put_u64le(unsigned char *p, uint64_t v)
{
    for (int i = 0; i < 8; i++) p[i] = (unsigned char)(v >> (8 * i));
}

#endif /* SDPA_CORE_BYTES_H */
