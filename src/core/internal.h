/*
 * internal.h — helpers every part of libsdpa uses: error recording, logging,
 * checked size arithmetic and dtype conversion.
 *
 * Error handling follows zstd's style: SDPA__CHECK(ctx, cond, status, fmt...)
 * records the message (with file:line in the DEBUG log) on the context and
 * returns the status; SDPA__TRY forwards a failing status unchanged. Nothing
 * here aborts or prints: logging goes to the context's sink.
 */
#ifndef SDPA_CORE_INTERNAL_H
#define SDPA_CORE_INTERNAL_H

#include "backend.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#if defined(__MINGW32__)
/* MinGW's C99 printf (__USE_MINGW_ANSI_STDIO, meson.build): %zu, %lld */
#define SDPA__PRINTF(a, b) __attribute__((format(gnu_printf, a, b)))
#elif defined(__GNUC__)
#define SDPA__PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define SDPA__PRINTF(a, b)
#endif

/* Records status + message (+ native code) on ctx and returns status. ctx may
 * be NULL (then only the status travels). */
sdpa_status sdpa__fail(sdpa_context *ctx, sdpa_status status, const char *file,
                       int line, const char *fmt, ...) SDPA__PRINTF(5, 6);
sdpa_status sdpa__fail_native(sdpa_context *ctx, sdpa_status status,
                              int64_t native, const char *file, int line,
                              const char *fmt, ...) SDPA__PRINTF(6, 7);
/* Keeps a kernel build log on the context (copied; truncated at 64 KiB). */
void sdpa__set_build_log(sdpa_context *ctx, const char *log);

#define SDPA__FAIL(ctx, status, ...) \
    sdpa__fail((ctx), (status), __FILE__, __LINE__, __VA_ARGS__)
#define SDPA__FAIL_NATIVE(ctx, status, native, ...) \
    sdpa__fail_native((ctx), (status), (int64_t)(native), __FILE__, __LINE__, \
                      __VA_ARGS__)
#define SDPA__CHECK(ctx, cond, status, ...)                 \
    do {                                                    \
        if (!(cond)) return SDPA__FAIL(ctx, status, __VA_ARGS__); \
    } while (0)
/* A NULL argument of public function fn: SDPA_ERR_NULL with the message
 * "fn: arg is NULL" (every failing call sets its own message). */
#define SDPA__CHECK_ARG(ctx, ptr, fn, arg) \
    SDPA__CHECK(ctx, !!(ptr), SDPA_ERR_NULL, "%s: %s is NULL", fn, arg)
#define SDPA__TRY(expr)                             \
    do {                                            \
        sdpa_status sdpa__s_ = (expr);              \
        if (sdpa__s_ != SDPA_OK) return sdpa__s_;   \
    } while (0)

/* Logs one line through the context's sink if level is enabled. ctx may be
 * NULL (then nothing is logged). */
void sdpa__log(const sdpa_context *ctx, sdpa_log_level level, const char *fmt,
               ...) SDPA__PRINTF(3, 4);
bool sdpa__log_enabled(const sdpa_context *ctx, sdpa_log_level level);

/* Checked arithmetic: false on overflow of int64 / size_t. */
static inline bool sdpa__mul_i64(int64_t a, int64_t b, int64_t *out)
{
    return !__builtin_mul_overflow(a, b, out);
}
static inline bool sdpa__add_i64(int64_t a, int64_t b, int64_t *out)
{
    return !__builtin_add_overflow(a, b, out);
}
static inline bool sdpa__mul_size(size_t a, size_t b, size_t *out)
{
    return !__builtin_mul_overflow(a, b, out);
}
static inline bool sdpa__add_size(size_t a, size_t b, size_t *out)
{
    return !__builtin_add_overflow(a, b, out);
}

/* dtype conversion (round to nearest even; NaN stays NaN). */
float sdpa__f16_to_f32(uint16_t h);
uint16_t sdpa__f32_to_f16(float f);
static inline float sdpa__bf16_to_f32(uint16_t b)
{
    uint32_t u = (uint32_t)b << 16;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}
uint16_t sdpa__f32_to_bf16(float f);

/* Element e of a float tensor of dtype (f32, f16, bf16) at base. */
static inline float sdpa__load_float(const void *base, sdpa_dtype dtype, int64_t e)
{
    switch (dtype) {
    case SDPA_DTYPE_F16: return sdpa__f16_to_f32(((const uint16_t *)base)[e]);
    case SDPA_DTYPE_BF16: return sdpa__bf16_to_f32(((const uint16_t *)base)[e]);
    default: return ((const float *)base)[e];
    }
}
static inline void sdpa__store_float(void *base, sdpa_dtype dtype, int64_t e, float v)
{
    switch (dtype) {
    case SDPA_DTYPE_F16: ((uint16_t *)base)[e] = sdpa__f32_to_f16(v); break;
    case SDPA_DTYPE_BF16: ((uint16_t *)base)[e] = sdpa__f32_to_bf16(v); break;
    default: ((float *)base)[e] = v; break;
    }
}

/* Element offset of (i0,i1,i2,i3) in a ref. */
static inline int64_t sdpa__at(const sdpa__ref *r, int64_t i0, int64_t i1,
                               int64_t i2, int64_t i3)
{
    return (int64_t)r->offset + i0 * r->stride[0] + i1 * r->stride[1] +
           i2 * r->stride[2] + i3 * r->stride[3];
}

/* Fault injection (test builds with -Dfault_injection=true): every
 * allocation and backend call site asks sdpa__fault(site); when the armed
 * count reaches zero that call pretends to fail. Without the option the
 * checks compile to nothing. */
#ifdef SDPA_FAULT_INJECTION
bool sdpa__fault(const char *site);
#define SDPA__FAULT(site) sdpa__fault(site)
#else
#define SDPA__FAULT(site) false
#endif
/* Test hooks (always present, inert unless armed in a fault build): fail the
 * n-th fault site reached from now on (n >= 1; 0 disarms); count of sites
 * reached since the last arm; the site that last failed (or ""). */
void sdpa__fault_arm(int64_t n);
int64_t sdpa__fault_count(void);
const char *sdpa__fault_last_site(void);

/* malloc/calloc that honour fault injection (NULL on injected failure). */
void *sdpa__malloc(size_t bytes);
void *sdpa__calloc(size_t n, size_t size);
/* aligned_alloc with the size rounded up to the alignment (a power of two).
 * Freed with sdpa__aligned_free (Windows has no aligned free()able memory). */
void *sdpa__aligned_alloc(size_t align, size_t bytes);
void sdpa__aligned_free(void *p);

/* Monotonic clock in seconds. */
double sdpa__now(void);

/* Median of v[0..n) (sorts v ascending in place); INFINITY when n <= 0. */
double sdpa__median(double *v, int n);

/* Parses a whole decimal integer (optional sign, digits, nothing else) in
 * [lo, hi]: strtoll with errno, range and trailing-garbage checks. On failure
 * returns false and *why says what is wrong ("not a number", "out of range").
 * Every number the library reads from the environment goes through it. */
bool sdpa__parse_int(const char *s, int64_t lo, int64_t hi, int64_t *out, const char **why);
/* Whether s looks like an integer: an optional sign, then only digits. */
bool sdpa__looks_integer(const char *s);

/* Bounded string copy that always terminates (dst_size > 0). */
void sdpa__strlcpy(char *dst, const char *src, size_t dst_size);

/* Versioned structs (sdpa.h, "Versioned structs"); util.c. The caller's
 * struct_size (the first field of every versioned struct). */
size_t sdpa__struct_size(const void *s);
/* An input struct: *local holds the defaults (its _init); the caller's first
 * min(struct_size, local_size) bytes replace them, so fields past an older
 * caller's size keep their defaults. local's struct_size becomes local_size. */
void sdpa__struct_in(void *local, size_t local_size, const void *in);
/* sdpa__struct_in after checking in's size against v1 (the message as
 * SDPA__CHECK_STRUCT's, recorded on ctx, which may be NULL); in = NULL keeps
 * every default. */
sdpa_status sdpa__struct_take(sdpa_context *ctx, void *local, size_t local_size, const void *in,
                              size_t v1, const char *what, const char *hint);
/* An output struct: copies the first min(out's struct_size, full_size) bytes
 * of the filled *full into *out (nothing past the caller's size is written)
 * and sets out's struct_size to the bytes written. */
void sdpa__struct_out(void *out, const void *full, size_t full_size);
/* SDPA_ERR_INVALID_ARG, recorded on ctx (may be NULL), when the struct at s is
 * smaller than its v1 size: "<what>.struct_size is N, below its v1 size M:
 * <hint>". */
#define SDPA__CHECK_STRUCT(ctx, s, v1, what, hint)                                 \
    SDPA__CHECK(ctx, sdpa__struct_size(s) >= (size_t)(v1), SDPA_ERR_INVALID_ARG,   \
                "%s.struct_size is %zu, below its v1 size %zu: %s", what,          \
                sdpa__struct_size(s), (size_t)(v1), hint)

#endif /* SDPA_CORE_INTERNAL_H */
