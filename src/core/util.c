/*
 * util.c — small portable helpers: monotonic time, the median of samples
 * (the tuner's and sdpa_context_read_time's), bounded string copy and
 * IEEE half / bfloat16 conversion (round to nearest even, NaN preserved), used
 * by the CPU backends, staging and the reference.
 */
#include "internal.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <time.h>

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double sdpa__median(double *v, int n)
{
    if (n <= 0) return INFINITY;
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

bool sdpa__looks_integer(const char *s)
{
    if (!s) return false;
    if (*s == '+' || *s == '-') s++;
    if (!*s) return false;
    for (; *s; s++)
        if (!isdigit((unsigned char)*s)) return false;
    return true;
}

bool sdpa__parse_int(const char *s, int64_t lo, int64_t hi, int64_t *out, const char **why)
{
    if (!sdpa__looks_integer(s)) {
        *why = "not a whole decimal number";
        return false;
    }
    errno = 0;
    char *end = NULL;
    long long v = strtoll(s, &end, 10);
    if (errno == ERANGE || v < lo || v > hi) {
        *why = "out of range";
        return false;
    }
    if (!end || *end) { /* unreachable after sdpa__looks_integer; kept for safety */
        *why = "has trailing characters";
        return false;
    }
    *out = (int64_t)v;
    return true;
}

double sdpa__now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

void sdpa__strlcpy(char *dst, const char *src, size_t dst_size)
{
    if (!dst_size) return;
    size_t n = src ? strlen(src) : 0;
    if (n >= dst_size) n = dst_size - 1;
    if (n) memcpy(dst, src, n);
    dst[n] = '\0';
}

float sdpa__f16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1fu;
    uint32_t man = h & 0x3ffu;
    uint32_t u;
    if (exp == 0) {
        if (man == 0) {
            u = sign;
        } else { /* subnormal: normalise */
            exp = 127 - 15 + 1;
            while (!(man & 0x400u)) {
                man <<= 1;
                exp--;
            }
            man &= 0x3ffu;
            u = sign | (exp << 23) | (man << 13);
        }
    } else if (exp == 0x1f) {
        u = sign | 0x7f800000u | (man << 13);
    } else {
        u = sign | ((exp + 127 - 15) << 23) | (man << 13);
    }
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

uint16_t sdpa__f32_to_f16(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
    uint32_t absu = u & 0x7fffffffu;
    if (absu >= 0x7f800000u) /* inf or nan */
        return (uint16_t)(sign | 0x7c00u | (absu > 0x7f800000u ? 0x200u : 0));
    if (absu >= 0x477ff000u) /* rounds to >= 65520: overflow to inf */
        return (uint16_t)(sign | 0x7c00u);
    if (absu < 0x38800000u) { /* subnormal or zero in half */
        if (absu < 0x33000000u) return sign; /* < 2^-25 rounds to 0 */
        uint32_t exp = absu >> 23;
        uint32_t man = (absu & 0x7fffffu) | 0x800000u;
        uint32_t shift = 126 - exp; /* 14 + (113 - exp) */
        uint32_t half = man >> shift;
        uint32_t rem = man & ((1u << shift) - 1);
        uint32_t mid = 1u << (shift - 1);
        if (rem > mid || (rem == mid && (half & 1))) half++;
        return (uint16_t)(sign | half);
    }
    uint32_t exp = (absu >> 23) - 127 + 15;
    uint32_t man = absu & 0x7fffffu;
    uint32_t half = (exp << 10) | (man >> 13);
    uint32_t rem = man & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (half & 1))) half++;
    return (uint16_t)(sign | half);
}

uint16_t sdpa__f32_to_bf16(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40u);
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

/* ---- versioned structs (sdpa.h, "Versioned structs") ----------------------- */

size_t sdpa__struct_size(const void *s)
{
    size_t n;
    memcpy(&n, s, sizeof n); /* struct_size is every versioned struct's first field */
    return n;
}

void sdpa__struct_in(void *local, size_t local_size, const void *in)
{
    size_t n = sdpa__struct_size(in);
    memcpy(local, in, n < local_size ? n : local_size);
    memcpy(local, &local_size, sizeof local_size);
}

void sdpa__struct_out(void *out, const void *full, size_t full_size)
{
    size_t n = sdpa__struct_size(out);
    if (n > full_size) n = full_size;
    memcpy(out, full, n);
    memcpy(out, &n, sizeof n);
}

sdpa_status sdpa__struct_take(sdpa_context *ctx, void *local, size_t local_size, const void *in,
                              size_t v1, const char *what, const char *hint)
{
    if (!in) return SDPA_OK;
    SDPA__CHECK_STRUCT(ctx, in, v1, what, hint);
    sdpa__struct_in(local, local_size, in);
    return SDPA_OK;
}
