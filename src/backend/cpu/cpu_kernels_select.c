/*
 * cpu_kernels_select.c — picks the fast CPU backend's kernel table at context
 * creation: AVX-512 (cpu_kernels_avx512.c), AVX2 + FMA + F16C
 * (cpu_kernels_avx2.c), NEON on aarch64 (cpu_kernels_neon.c) or the portable
 * loops (cpu_kernels_generic.c), the best this build has and this CPU runs
 * (x86: __builtin_cpu_supports, which also checks that the OS saves the
 * vector registers; aarch64: getauxval(AT_HWCAP) & HWCAP_ASIMD).
 * SDPA_CPU_KERNELS=generic, avx2, avx512 or neon forces one (a developer and
 * test switch); a set this CPU or build lacks falls back to the best one, and
 * the reason says so. The reason reaches the INFO log line of cpu context
 * creation and the cpu device's details (sdpa-info), which also list the
 * sets this build has (sdpa__cpu_kernels_built).
 */
#include "cpu_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(SDPA_CPU_HAVE_NEON) && defined(__linux__)
#include <sys/auxv.h>
#ifndef HWCAP_ASIMD
#define HWCAP_ASIMD (1 << 1) /* linux/arch/arm64/include/uapi/asm/hwcap.h */
#endif
#define SDPA__NEON_WHY "the CPU has Advanced SIMD (HWCAP_ASIMD: NEON, f16 conversions)"
#else
#define SDPA__NEON_WHY "AArch64: Advanced SIMD (NEON) is part of the platform ABI"
#endif

/* clang (14, 15) rejects "f16c" in __builtin_cpu_supports; every CPU with
 * AVX2 (hence every one with AVX-512F) has F16C, so the checks imply it. */
#if defined(__clang__)
#define SDPA__CPU_HAS_F16C 1
#else
#define SDPA__CPU_HAS_F16C __builtin_cpu_supports("f16c")
#endif

#ifdef SDPA_CPU_HAVE_AVX512
static bool cpu_has_avx512(void)
{
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
           __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl") &&
           __builtin_cpu_supports("fma") && SDPA__CPU_HAS_F16C;
}
#endif

#ifdef SDPA_CPU_HAVE_AVX2
static bool cpu_has_avx2(void)
{
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
           SDPA__CPU_HAS_F16C;
}
#endif

#ifdef SDPA_CPU_HAVE_NEON
/* Advanced SIMD, with its f16 <-> f32 conversions (fcvtl/fcvtn), is part of
 * every AArch64 Linux CPU; the kernel says so in HWCAP_ASIMD. Elsewhere
 * (macOS, Windows on Arm) the ABI requires it: no query. */
static bool cpu_has_neon(void)
{
#ifdef __linux__
    return (getauxval(AT_HWCAP) & HWCAP_ASIMD) != 0;
#else
    return true;
#endif
}
#endif

static bool cpu_runs_anything(void) { return true; }

/* The sets this build has, best first; the last always runs. */
static const struct kset {
    const char *name;
    const sdpa__cpu_kernels *k;
    bool (*runs)(void);
    const char *why; /* why it is the best when it is */
} ksets[] = {
#ifdef SDPA_CPU_HAVE_AVX512
    {"avx512", &sdpa__cpu_kernels_avx512, cpu_has_avx512,
     "the CPU has AVX-512 (F, BW, DQ, VL), FMA and F16C"},
#endif
#ifdef SDPA_CPU_HAVE_AVX2
    {"avx2", &sdpa__cpu_kernels_avx2, cpu_has_avx2,
     "the CPU has AVX2, FMA and F16C, and no AVX-512 (or this build lacks its kernels)"},
#endif
#ifdef SDPA_CPU_HAVE_NEON
    {"neon", &sdpa__cpu_kernels_neon, cpu_has_neon, SDPA__NEON_WHY},
#endif
    {"generic", &sdpa__cpu_kernels_generic, cpu_runs_anything,
#if defined(__aarch64__)
     "the CPU (or this build) has no NEON"},
#else
     "the CPU (or this build) has neither AVX-512 nor AVX2+FMA+F16C"},
#endif
};
enum { N_KSETS = sizeof ksets / sizeof ksets[0] };

const sdpa__cpu_kernels *sdpa__cpu_kernels_select(char *why, size_t cap, bool *ignored)
{
    char dummy[1];
    if (!why || cap == 0) {
        why = dummy;
        cap = sizeof dummy;
    }
    if (ignored) *ignored = false;
    int best = 0;
    while (!ksets[best].runs()) best++;
    const char *env = getenv("SDPA_CPU_KERNELS");
    if (!env || !*env || strcmp(env, "auto") == 0) {
        snprintf(why, cap, "%s", ksets[best].why);
        return ksets[best].k;
    }
    for (int i = 0; i < N_KSETS; i++)
        if (strcmp(env, ksets[i].name) == 0 && ksets[i].runs()) {
            snprintf(why, cap, "forced by SDPA_CPU_KERNELS=%s", env);
            return ksets[i].k;
        }
    if (ignored) *ignored = true;
    static const char *const known[] = {"generic", "avx2", "avx512", "neon"};
    for (size_t i = 0; i < sizeof known / sizeof known[0]; i++)
        if (strcmp(env, known[i]) == 0) {
            snprintf(why, cap, "SDPA_CPU_KERNELS=%s: this CPU or build lacks them; %s", env,
                     ksets[best].why);
            return ksets[best].k;
        }
    snprintf(why, cap, "SDPA_CPU_KERNELS=%.32s is not generic, avx2, avx512, neon or auto; %s",
             env, ksets[best].why);
    return ksets[best].k;
}

void sdpa__cpu_kernels_built(char *out, size_t cap)
{
    size_t used = 0;
    if (cap) out[0] = '\0';
    for (int i = 0; i < N_KSETS && used < cap; i++) {
        int w = snprintf(out + used, cap - used, "%s%s%s", i ? ", " : "", ksets[i].name,
                         ksets[i].runs() ? "" : " (not on this CPU)");
        if (w < 0) break;
        used += (size_t)w;
    }
}
