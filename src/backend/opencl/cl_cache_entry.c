/*
 * cl_cache_entry.c — parser and encoder of one OpenCL program-binary cache
 * file (format in cl_cache_entry.h). Pure C over a byte span: no OpenCL, no
 * I/O, no allocation, so it builds without OpenCL headers.
 *
 * Invariants: the parser reads only data[0..len); every length field is
 * checked against the limits and against the bytes actually present before
 * it is used (sizes are compared by subtraction, never by adding untrusted
 * values), and an entry is accepted only when its size is exact, its
 * identity equals the expected one byte for byte and its checksum matches.
 * Callers: cl_diskcache.c (load and store), tests/fuzz/fuzz_clcache.c, the
 * cache-entry tests in tests/test_opencl.c.
 */
#include "cl_cache_entry.h"

#include <string.h>

#define FNV_INIT 1469598103934665603ull
#define FNV_PRIME 1099511628211ull

static uint64_t fnv1a(uint64_t h, const void *data, size_t n)
{
    const unsigned char *p = data;
    for (size_t i = 0; i < n; i++) {
        h ^= p[i];
        h *= FNV_PRIME;
    }
    return h;
}

static uint32_t get_u32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t get_u64(const unsigned char *p)
{
    return (uint64_t)get_u32(p) | (uint64_t)get_u32(p + 4) << 32;
}

static void put_u32(unsigned char *p, uint32_t v)
{
    for (int i = 0; i < 4; i++) p[i] = (unsigned char)(v >> (8 * i));
}

static void put_u64(unsigned char *p, uint64_t v)
{
    for (int i = 0; i < 8; i++) p[i] = (unsigned char)(v >> (8 * i));
}

uint64_t sdpa__cl_entry_checksum(const void *ident, size_t ident_len, const void *bin,
                                 size_t bin_len)
{
    return fnv1a(fnv1a(FNV_INIT, ident, ident_len), bin, bin_len);
}

sdpa__cl_entry_status sdpa__cl_entry_parse(const unsigned char *data, size_t len,
                                           const char *ident, size_t ident_len,
                                           sdpa__cl_entry *out)
{
    memset(out, 0, sizeof *out);
    if (!data || len < SDPA__CL_ENTRY_HEADER) return SDPA__CL_ENTRY_TRUNCATED_HEADER;
    if (memcmp(data, SDPA__CL_ENTRY_MAGIC, 8) != 0) return SDPA__CL_ENTRY_BAD_MAGIC;
    if (get_u32(data + 8) != SDPA__CL_ENTRY_FORMAT) return SDPA__CL_ENTRY_BAD_VERSION;
    uint32_t klen = get_u32(data + 12);
    uint64_t blen = get_u64(data + 16);
    if (blen == 0 || blen > SDPA__CL_ENTRY_MAX_BINARY || klen > SDPA__CL_ENTRY_MAX_IDENT)
        return SDPA__CL_ENTRY_BAD_SIZE;
    size_t rest = len - SDPA__CL_ENTRY_HEADER;
    if (klen > rest || blen > rest - klen) return SDPA__CL_ENTRY_TRUNCATED;
    if (blen < rest - klen) return SDPA__CL_ENTRY_TRAILING;
    const unsigned char *k = data + SDPA__CL_ENTRY_HEADER;
    const unsigned char *b = k + klen;
    if (ident && (klen != ident_len || memcmp(k, ident, klen) != 0))
        return SDPA__CL_ENTRY_KEY_MISMATCH; /* stale, or a file-name hash collision */
    if (sdpa__cl_entry_checksum(k, klen, b, (size_t)blen) != get_u64(data + 24))
        return SDPA__CL_ENTRY_CHECKSUM;
    out->ident = k;
    out->ident_len = klen;
    out->binary = b;
    out->binary_len = (size_t)blen;
    return SDPA__CL_ENTRY_OK;
}

const char *sdpa__cl_entry_reason(sdpa__cl_entry_status s)
{
    switch (s) {
    case SDPA__CL_ENTRY_OK: return "ok";
    case SDPA__CL_ENTRY_TRUNCATED_HEADER: return "truncated header";
    case SDPA__CL_ENTRY_BAD_MAGIC: return "bad magic";
    case SDPA__CL_ENTRY_BAD_VERSION: return "unknown format version";
    case SDPA__CL_ENTRY_BAD_SIZE: return "implausible size";
    case SDPA__CL_ENTRY_TRUNCATED: return "truncated (length field past the end of the file)";
    case SDPA__CL_ENTRY_TRAILING: return "trailing bytes after the binary";
    case SDPA__CL_ENTRY_KEY_MISMATCH: return "identity does not match";
    case SDPA__CL_ENTRY_CHECKSUM: return "checksum mismatch";
    }
    return "unknown reason";
}

void sdpa__cl_entry_header(unsigned char hdr[SDPA__CL_ENTRY_HEADER], const void *ident,
                           size_t ident_len, const void *bin, size_t bin_len)
{
    memcpy(hdr, SDPA__CL_ENTRY_MAGIC, 8);
    put_u32(hdr + 8, SDPA__CL_ENTRY_FORMAT);
    put_u32(hdr + 12, (uint32_t)ident_len);
    put_u64(hdr + 16, (uint64_t)bin_len);
    put_u64(hdr + 24, sdpa__cl_entry_checksum(ident, ident_len, bin, bin_len));
}

size_t sdpa__cl_entry_encode(unsigned char *out, size_t cap, const void *ident,
                             size_t ident_len, const void *bin, size_t bin_len)
{
    size_t need = SDPA__CL_ENTRY_HEADER + ident_len + bin_len;
    if (out && cap >= need) {
        sdpa__cl_entry_header(out, ident, ident_len, bin, bin_len);
        if (ident_len) memcpy(out + SDPA__CL_ENTRY_HEADER, ident, ident_len);
        if (bin_len) memcpy(out + SDPA__CL_ENTRY_HEADER + ident_len, bin, bin_len);
    }
    return need;
}
