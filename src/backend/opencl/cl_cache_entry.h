/*
 * cl_cache_entry.h — the on-disk format of one OpenCL program-binary cache
 * file, as pure functions over bytes (no OpenCL, no file I/O), so that the
 * fuzz target tests/fuzz/fuzz_clcache.c and the unit tests can link it
 * without a device. Used by cl_diskcache.c.
 *
 * Format (all integers little-endian):
 *   offset  0  8 bytes  magic "SDPACLB1"
 *   offset  8  u32      format version (1)
 *   offset 12  u32      identity length K
 *   offset 16  u64      binary length B (1 .. 256 MiB)
 *   offset 24  u64      checksum: FNV-1a 64 over identity then binary
 *   offset 32  K bytes  identity text (platform, device, driver, key)
 *   offset 32+K B bytes program binary
 * The file is exactly 32 + K + B bytes long.
 *
 * The checksum only catches accidents: whoever can write the cache folder can
 * write a matching checksum (docs/reliability.md, trust model). So the
 * binary itself is checked as far as its format is known before a driver
 * sees it: a PoCL binary ("poclbin", formats 9 to 12) must be well formed —
 * every length inside it within its bytes, every embedded file name short
 * without "..", and nothing after its last kernel. Other drivers' binaries
 * are opaque and handed over as they are.
 */
#ifndef SDPA_CL_CACHE_ENTRY_H
#define SDPA_CL_CACHE_ENTRY_H

#include <stddef.h>
#include <stdint.h>

#define SDPA__CL_ENTRY_MAGIC "SDPACLB1"
#define SDPA__CL_ENTRY_FORMAT 1u
#define SDPA__CL_ENTRY_HEADER 32u
#define SDPA__CL_ENTRY_MAX_BINARY ((uint64_t)256 << 20)
/* Longest identity the writer produces is far below this; a larger one is
 * not ours. Together with MAX_BINARY it bounds the file size a loader reads. */
#define SDPA__CL_ENTRY_MAX_IDENT ((uint32_t)64 << 10)

typedef enum sdpa__cl_entry_status {
    SDPA__CL_ENTRY_OK = 0,
    SDPA__CL_ENTRY_TRUNCATED_HEADER, /* fewer than 32 bytes */
    SDPA__CL_ENTRY_BAD_MAGIC,
    SDPA__CL_ENTRY_BAD_VERSION,
    SDPA__CL_ENTRY_BAD_SIZE,     /* binary length 0 or over the limit, identity too long */
    SDPA__CL_ENTRY_TRUNCATED,    /* identity or binary runs past the end of the data */
    SDPA__CL_ENTRY_TRAILING,     /* bytes after the binary */
    SDPA__CL_ENTRY_KEY_MISMATCH, /* another identity (driver, device, source, options) */
    SDPA__CL_ENTRY_CHECKSUM,
    SDPA__CL_ENTRY_BAD_BINARY,   /* a PoCL binary whose own structure is broken */
} sdpa__cl_entry_status;

/* Spans inside the parsed data (valid while it is). */
typedef struct sdpa__cl_entry {
    const unsigned char *ident;
    size_t ident_len;
    const unsigned char *binary;
    size_t binary_len;
} sdpa__cl_entry;

/* Validates one cache file held in data[0..len). ident/ident_len is the
 * identity the caller expects; ident NULL skips that comparison (fuzzing,
 * inspection). On SDPA__CL_ENTRY_OK fills *out with spans inside data; on any
 * other status *out is zeroed. Never reads outside data[0..len). */
sdpa__cl_entry_status sdpa__cl_entry_parse(const unsigned char *data, size_t len,
                                           const char *ident, size_t ident_len,
                                           sdpa__cl_entry *out);

/* SDPA__CL_ENTRY_OK, or SDPA__CL_ENTRY_BAD_BINARY when bin is a PoCL binary
 * (or claims to be one) whose structure does not fit in bin[0..len).
 * Called by sdpa__cl_entry_parse; never reads outside bin[0..len). */
sdpa__cl_entry_status sdpa__cl_binary_check(const unsigned char *bin, size_t len);

/* Short text for a status ("bad magic", ...); never NULL. */
const char *sdpa__cl_entry_reason(sdpa__cl_entry_status s);

/* The checksum field for an identity and a binary. */
uint64_t sdpa__cl_entry_checksum(const void *ident, size_t ident_len, const void *bin,
                                 size_t bin_len);

/* Fills the 32-byte header for an identity and binary (lengths must be
 * within the limits above; the writer checks that). */
void sdpa__cl_entry_header(unsigned char hdr[SDPA__CL_ENTRY_HEADER], const void *ident,
                           size_t ident_len, const void *bin, size_t bin_len);

/* Writes a whole entry into out[0..cap) when it fits; returns its size
 * (32 + ident_len + bin_len) either way. For tests and seed generation. */
size_t sdpa__cl_entry_encode(unsigned char *out, size_t cap, const void *ident,
                             size_t ident_len, const void *bin, size_t bin_len);

#endif
