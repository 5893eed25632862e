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

#include <stdbool.h>
#include <string.h>

uint64_t sdpa__cl_entry_checksum(const void *ident, size_t ident_len, const void *bin,
                                 size_t bin_len)
{
    return sdpa__fnv1a64(sdpa__fnv1a64(SDPA__HASH_SEED, ident, ident_len), bin, bin_len);
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
    if (sdpa__cl_binary_check(b, (size_t)blen) != SDPA__CL_ENTRY_OK)
        return SDPA__CL_ENTRY_BAD_BINARY;
    out->ident = k;
    out->ident_len = klen;
    out->binary = b;
    out->binary_len = (size_t)blen;
    return SDPA__CL_ENTRY_OK;
}

/* ---- PoCL binaries (pocl_binary.c, formats 9 to 12: PoCL 3.0 to 7.x) -----
 * header: "poclbin\0", u64 device id, u32 version, u32 kernel count, u64
 * flags, u32 root-entry count, 41-byte build hash, [v10+ with flag bit 1: u64
 * program-scope variable bytes]; per root entry: u64 size, then files filling
 * exactly that size; per kernel: u64 record size, u64 size of its files, u32
 * arginfo size, name, u32 arg count, u32 local count, version-specific
 * metadata, and its files filling the record's last bytes. A string is u32
 * length + bytes; a file is two strings (path inside PoCL's cache folder,
 * non-empty; contents). PoCL trusts every length (it asserts, allocas the
 * argument count and writes each file under its cache folder), so each is
 * checked here: within the bytes present, paths short and without "..", the
 * counts bounded by the bytes that would hold them, nothing after the last
 * kernel. The version-specific metadata is not walked. */

typedef struct cursor {
    const unsigned char *p;
    size_t left;
    bool ok;
} cursor;

static uint64_t take(cursor *c, size_t n)
{
    if (!c->ok || n > c->left) return c->ok = false, 0;
    uint64_t v = n == 4 ? sdpa__get_u32le(c->p) : n == 8 ? sdpa__get_u64le(c->p) : 0;
    c->p += n;
    c->left -= n;
    return v;
}

/* The next n bytes as their own cursor. */
static cursor take_span(cursor *c, uint64_t n)
{
    cursor sub = {c->p, 0, c->ok && n <= c->left};
    if (!sub.ok) return c->ok = false, sub;
    sub.left = (size_t)n;
    take(c, (size_t)n);
    return sub;
}

/* Files until the cursor is used up. */
static bool take_files(cursor *c)
{
    while (c->ok && c->left) {
        cursor path = take_span(c, take(c, 4));
        if (!c->ok || path.left == 0 || path.left > 256 || memchr(path.p, '\0', path.left))
            return false;
        for (size_t i = 0; i + 1 < path.left; i++) /* no ".." component */
            if (path.p[i] == '.' && path.p[i + 1] == '.' && (i == 0 || path.p[i - 1] == '/') &&
                (i + 2 == path.left || path.p[i + 2] == '/'))
                return false;
        take_span(c, take(c, 4)); /* contents */
    }
    return c->ok;
}

static bool check_kernel(cursor *c)
{
    uint64_t size = take(c, 8);
    cursor rec = take_span(c, size >= 8 ? size - 8 : UINT64_MAX);
    uint64_t files = take(&rec, 8);
    take(&rec, 4);
    if (!rec.ok || files > rec.left) return false;
    cursor meta = take_span(&rec, rec.left - (size_t)files);
    take_span(&meta, take(&meta, 4)); /* name */
    uint64_t args = take(&meta, 4), locals = take(&meta, 4);
    return meta.ok && args <= meta.left / 16 && locals <= meta.left / 8 && take_files(&rec);
}

sdpa__cl_entry_status sdpa__cl_binary_check(const unsigned char *bin, size_t len)
{
    if (!bin || len < 7 || memcmp(bin, "poclbin", 7) != 0) return SDPA__CL_ENTRY_OK;
    cursor c = {bin, len, true};
    take(&c, 8); /* magic */
    take(&c, 8); /* device id */
    uint32_t version = (uint32_t)take(&c, 4), kernels = (uint32_t)take(&c, 4);
    uint64_t flags = take(&c, 8);
    uint32_t roots = (uint32_t)take(&c, 4);
    take_span(&c, 41); /* build hash */
    if (version >= 10 && (flags & 2)) take(&c, 8);
    if (!c.ok || version < 9 || version > 12 || kernels > c.left / 20 || roots > c.left / 8)
        return SDPA__CL_ENTRY_BAD_BINARY;
    for (uint32_t i = 0; i < roots && c.ok; i++) {
        cursor files = take_span(&c, take(&c, 8));
        if (!take_files(&files)) c.ok = false;
    }
    for (uint32_t k = 0; k < kernels && c.ok; k++)
        if (!check_kernel(&c)) c.ok = false;
    return c.ok && c.left == 0 ? SDPA__CL_ENTRY_OK : SDPA__CL_ENTRY_BAD_BINARY;
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
    case SDPA__CL_ENTRY_BAD_BINARY: return "malformed PoCL binary (a length inside it is wrong)";
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
