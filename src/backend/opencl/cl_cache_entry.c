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

#include "../../core/bytes.h"

#include <string.h>

uint64_t sdpa__cl_entry_checksum(const void *ident, size_t ident_len, const void *bin,
                                 size_t bin_len)
{
    return sdpa__fnv1a64(sdpa__fnv1a64(SDPA__FNV_INIT, ident, ident_len), bin, bin_len);
}

sdpa__cl_entry_status sdpa__cl_entry_parse(const unsigned char *data, size_t len,
                                           const char *ident, size_t ident_len,
                                           sdpa__cl_entry *out)
{
    memset(out, 0, sizeof *out);
    if (!data || len < SDPA__CL_ENTRY_HEADER) return SDPA__CL_ENTRY_TRUNCATED_HEADER;
    if (memcmp(data, SDPA__CL_ENTRY_MAGIC, 8) != 0) return SDPA__CL_ENTRY_BAD_MAGIC;
    if (sdpa__get_u32le(data + 8) != SDPA__CL_ENTRY_FORMAT) return SDPA__CL_ENTRY_BAD_VERSION;
    uint32_t klen = sdpa__get_u32le(data + 12);
    uint64_t blen = sdpa__get_u64le(data + 16);
    if (blen == 0 || blen > SDPA__CL_ENTRY_MAX_BINARY || klen > SDPA__CL_ENTRY_MAX_IDENT)
        return SDPA__CL_ENTRY_BAD_SIZE;
    size_t rest = len - SDPA__CL_ENTRY_HEADER;
    if (klen > rest || blen > rest - klen) return SDPA__CL_ENTRY_TRUNCATED;
    if (blen < rest - klen) return SDPA__CL_ENTRY_TRAILING;
    const unsigned char *k = data + SDPA__CL_ENTRY_HEADER;
    const unsigned char *b = k + klen;
    if (ident && (klen != ident_len || memcmp(k, ident, klen) != 0))
        return SDPA__CL_ENTRY_KEY_MISMATCH; /* stale, or a file-name hash collision */
    if (sdpa__cl_entry_checksum(k, klen, b, (size_t)blen) != sdpa__get_u64le(data + 24))
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
    sdpa__put_u32le(hdr + 8, SDPA__CL_ENTRY_FORMAT);
    sdpa__put_u32le(hdr + 12, (uint32_t)ident_len);
    sdpa__put_u64le(hdr + 16, (uint64_t)bin_len);
    sdpa__put_u64le(hdr + 24, sdpa__cl_entry_checksum(ident, ident_len, bin, bin_len));
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
