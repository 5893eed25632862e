/*
 * cpu_kernels_select.c — picks the fast CPU backend's kernel table at context
 * creation: AVX-512 (cpu_kernels_avx512.c), AVX2 + FMA + F16C
 * (cpu_kernels_avx2.c) or the portable loops (cpu_kernels_generic.c), the
 * best this build has and this CPU runs (__builtin_cpu_supports, which also
 * checks that the OS saves the vector registers). SDPA_CPU_KERNELS=generic,
 * avx2 or avx512 forces one (a developer and test switch); a set this CPU or
 * build lacks falls back to the best one, and the reason says so. The reason
 * reaches the INFO log line of cpu context creation and the cpu device's
 * details (sdpa-info).
 */
#include "cpu_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* clang (14, 15) rejects "f16c" in __builtin_cpu_supports; every CPU with
 * AVX2 (hence every one with AVX-512F) has F16C, so the checks imply it. */
#if defined(__clang__)
#define SDPA__CPU_HAS_F16C 1
#else
#define SDPA__CPU_HAS_F16C __builtin_cpu_supports("f16c")
#endif

static bool cpu_has_avx512(void)
{
#ifdef SDPA_CPU_HAVE_AVX512
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
           __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl") &&
           __builtin_cpu_supports("fma") && SDPA__CPU_HAS_F16C;
#else
    return false;
#endif
}

static bool cpu_has_avx2(void)
{
#ifdef SDPA_CPU_HAVE_AVX2
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
           SDPA__CPU_HAS_F16C;
#else
    return false;
#endif
}

const sdpa__cpu_kernels *sdpa__cpu_kernels_select(char *why, size_t cap, bool *ignored)
{
    if (ignored) *ignored = false;
    char dummy[1];
    if (!why || cap == 0) {
        why = dummy;
        cap = sizeof dummy;
    }
    const bool avx512 = cpu_has_avx512(), avx2 = cpu_has_avx2();
    const sdpa__cpu_kernels *best = &sdpa__cpu_kernels_generic;
    const char *best_why = "the CPU (or this build) has neither AVX-512 nor AVX2+FMA+F16C";
#ifdef SDPA_CPU_HAVE_AVX2
    if (avx2) {
        best = &sdpa__cpu_kernels_avx2;
        best_why = "the CPU has AVX2, FMA and F16C but not AVX-512";
    }
#endif
#ifdef SDPA_CPU_HAVE_AVX512
    if (avx512) {
        best = &sdpa__cpu_kernels_avx512;
        best_why = "the CPU has AVX-512 (F, BW, DQ, VL), FMA and F16C";
    }
#endif
    const char *env = getenv("SDPA_CPU_KERNELS");
    if (!env || !*env || strcmp(env, "auto") == 0) {
        snprintf(why, cap, "%s", best_why);
        return best;
    }
    const sdpa__cpu_kernels *want = NULL;
    bool runs = false;
    if (strcmp(env, "generic") == 0) {
        want = &sdpa__cpu_kernels_generic;
        runs = true;
    }
#ifdef SDPA_CPU_HAVE_AVX2
    if (strcmp(env, "avx2") == 0) {
        want = &sdpa__cpu_kernels_avx2;
        runs = avx2;
    }
#endif
#ifdef SDPA_CPU_HAVE_AVX512
    if (strcmp(env, "avx512") == 0) {
        want = &sdpa__cpu_kernels_avx512;
        runs = avx512;
    }
#endif
    if (want && runs) {
        snprintf(why, cap, "forced by SDPA_CPU_KERNELS=%s", env);
        return want;
    }
    if (ignored) *ignored = true;
    if (strcmp(env, "avx2") == 0 || strcmp(env, "avx512") == 0)
        snprintf(why, cap, "SDPA_CPU_KERNELS=%.32s: this CPU or build lacks them; %s", env,
                 best_why);
    else
        snprintf(why, cap, "SDPA_CPU_KERNELS=%.32s is not generic, avx2, avx512 or auto; %s",
                 env, best_why);
    return best;
}
