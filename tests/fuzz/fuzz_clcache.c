/*
 * fuzz_clcache.c — libFuzzer target for the OpenCL program-binary cache file
 * parser sdpa__cl_entry_parse (src/backend/opencl/cl_cache_entry.c): the
 * input is one cache file as read from disk. It is parsed twice, against the
 * identity the seeds were written for (FUZZ_IDENT, kept in step with
 * make_cache_seeds.py) and with the identity check off, so mutations get
 * past the key comparison too. Cache files are untrusted input
 * (docs/reliability.md): only statuses, no crash, no read outside the input.
 *
 * Invariants checked on every input:
 * - a refusal has a non-empty reason and leaves the output spans empty;
 * - an accepted entry's identity and binary spans lie inside the input, the
 *   binary is non-empty, the identity is the expected one, re-encoding the
 *   spans gives back the input byte for byte, and the same file one byte
 *   shorter is refused.
 * Built by tests/fuzz/meson.build without the library (the parser is pure C,
 * so this builds with -Dopencl=disabled); run by scripts/hardening.sh from the
 * seeds in tests/fuzz/corpus/clcache.
 */
#include "cl_cache_entry.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define FUZZ_IDENT "Portable Computing Language\ncpu-fuzz\n6.0\n0123456789abcdef -cl-std=CL1.2"

/* Whether [p, p+n) lies inside [base, base+size). */
static int inside(const uint8_t *base, size_t size, const unsigned char *p, size_t n)
{
    if (!p) return 0;
    uintptr_t b = (uintptr_t)base, q = (uintptr_t)p;
    return q >= b && q - b <= size && n <= size - (q - b);
}

static void check(const uint8_t *data, size_t size, const char *ident, size_t ident_len)
{
    sdpa__cl_entry e;
    memset(&e, 0xa5, sizeof e);
    sdpa__cl_entry_status s = sdpa__cl_entry_parse(data, size, ident, ident_len, &e);
    const char *why = sdpa__cl_entry_reason(s);
    if (!why || !why[0]) abort();
    if (s != SDPA__CL_ENTRY_OK) {
        if (e.ident || e.ident_len || e.binary || e.binary_len) abort();
        return;
    }
    if (!inside(data, size, e.ident, e.ident_len) || !inside(data, size, e.binary, e.binary_len))
        abort();
    if (e.binary_len == 0 || e.binary_len > SDPA__CL_ENTRY_MAX_BINARY) abort();
    if (ident && (e.ident_len != ident_len || memcmp(e.ident, ident, ident_len) != 0)) abort();
    unsigned char *again = malloc(size);
    if (!again) abort();
    size_t n = sdpa__cl_entry_encode(again, size, e.ident, e.ident_len, e.binary, e.binary_len);
    if (n != size || memcmp(again, data, size) != 0) abort();
    free(again);
    sdpa__cl_entry shorter;
    if (sdpa__cl_entry_parse(data, size - 1, ident, ident_len, &shorter) == SDPA__CL_ENTRY_OK)
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    check(data, size, FUZZ_IDENT, strlen(FUZZ_IDENT));
    check(data, size, NULL, 0);
    return 0;
}
