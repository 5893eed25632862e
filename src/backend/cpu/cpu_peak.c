/*
 * cpu_peak.c — the host CPU's fp32 FMA peak, measured: the measure_peak slot
 * of the cpu and reference backends (both run on the host CPU).
 *
 * Each thread runs 12 independent FMA chains (enough to cover an FMA latency
 * of 4-6 cycles on two pipes) over registers of one vector width: the cpu
 * backend measures the width of the kernel set its context runs
 * (sdpa__cpu_measure_peak_for: "avx512", "avx2", else the portable kernels'
 * 16-byte vectors, which the compiler maps to SSE, NEON, ...), so `% peak` is
 * against the kernels' own width; the reference backend measures the widest
 * ISA the CPU reports at run time. The x86 functions carry GCC target
 * attributes so this file needs no -march. The chains converge
 * (x*a + b with a < 1), so values stay finite; the result is summed into a
 * volatile sink so the compiler cannot drop the loop. One pthread per thread
 * of the context (sdpa__context_threads), all running at once; the common
 * loop sdpa__peak_rounds (src/core/peak_rounds.c) sizes the runs and keeps
 * the best of a few. Threads are joined before each run returns, so
 * no thread outlives the call. Called through the backend tables by
 * src/core/peak.c.
 */
#include "host_buffers.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(__GNUC__) && defined(__x86_64__)
#include <immintrin.h>
#define CPU_PEAK_X86 1
#endif

enum { ISA_VEC4, ISA_AVX2, ISA_AVX512 };
#define CHAINS 12

#ifdef CPU_PEAK_X86
__attribute__((target("avx512f"))) static float chains_avx512(long long iters)
{
    const __m512 a = _mm512_set1_ps(0.999f), b = _mm512_set1_ps(0.001f);
    __m512 x[CHAINS];
    for (int c = 0; c < CHAINS; c++) x[c] = _mm512_set1_ps((float)c);
    for (long long i = 0; i < iters; i++) {
#pragma GCC unroll 12
        for (int c = 0; c < CHAINS; c++) x[c] = _mm512_fmadd_ps(x[c], a, b);
    }
    __m512 s = x[0];
    for (int c = 1; c < CHAINS; c++) s = _mm512_add_ps(s, x[c]);
    return _mm512_reduce_add_ps(s);
}

__attribute__((target("avx2,fma"))) static float chains_avx2(long long iters)
{
    const __m256 a = _mm256_set1_ps(0.999f), b = _mm256_set1_ps(0.001f);
    __m256 x[CHAINS];
    for (int c = 0; c < CHAINS; c++) x[c] = _mm256_set1_ps((float)c);
    for (long long i = 0; i < iters; i++) {
#pragma GCC unroll 12
        for (int c = 0; c < CHAINS; c++) x[c] = _mm256_fmadd_ps(x[c], a, b);
    }
    __m256 s = x[0];
    for (int c = 1; c < CHAINS; c++) s = _mm256_add_ps(s, x[c]);
    float f[8];
    _mm256_storeu_ps(f, s);
    return f[0] + f[1] + f[2] + f[3] + f[4] + f[5] + f[6] + f[7];
}
#endif

/* The portable kernels' width: 16-byte vectors of the build's baseline ISA
 * (x86-64: SSE mul + add; aarch64: NEON, contracted to FMA). */
typedef float vec4 __attribute__((vector_size(16)));

static float chains_vec4(long long iters)
{
    const vec4 a = {0.999f, 0.999f, 0.999f, 0.999f}, b = {0.001f, 0.001f, 0.001f, 0.001f};
    vec4 x[CHAINS];
    for (int c = 0; c < CHAINS; c++) x[c] = (vec4){(float)c, (float)c, (float)c, (float)c};
    for (long long i = 0; i < iters; i++) {
#pragma GCC unroll 12
        for (int c = 0; c < CHAINS; c++) x[c] = x[c] * a + b;
    }
    vec4 s = x[0];
    for (int c = 1; c < CHAINS; c++) s += x[c];
    return s[0] + s[1] + s[2] + s[3];
}

static int lanes(int isa) { return isa == ISA_AVX512 ? 16 : isa == ISA_AVX2 ? 8 : 4; }

static float run_chains(int isa, long long iters)
{
#ifdef CPU_PEAK_X86
    if (isa == ISA_AVX512) return chains_avx512(iters);
    if (isa == ISA_AVX2) return chains_avx2(iters);
#endif
    return chains_vec4(iters);
}

typedef struct worker {
    int isa;
    long long iters;
    volatile float sink;
} worker;

static void *worker_main(void *arg)
{
    worker *w = arg;
    w->sink = run_chains(w->isa, w->iters);
    return NULL;
}

/* The threads of one measurement. */
typedef struct peak_threads {
    sdpa_context *ctx;
    int isa, threads;
    worker *w;
    pthread_t *tid;
} peak_threads;

/* sdpa__peak_run_fn: every thread runs `size` iterations at once; the wall
 * time of the slowest is the run's. */
static sdpa_status peak_step(void *user, double size, double *seconds, double *flops, int *full)
{
    peak_threads *pt = user;
    long long iters = size >= (double)(1LL << 40) ? 1LL << 40 : (long long)size;
    *full = iters == 1LL << 40;
    double t0 = sdpa__now();
    int started = 0;
    for (int t = 0; t < pt->threads; t++) {
        pt->w[t].isa = pt->isa;
        pt->w[t].iters = iters;
        if (pthread_create(&pt->tid[t], NULL, worker_main, &pt->w[t]) != 0) break;
        started++;
    }
    for (int t = 0; t < started; t++) pthread_join(pt->tid[t], NULL);
    *seconds = sdpa__now() - t0;
    *flops = (double)started * (double)iters * CHAINS * lanes(pt->isa) * 2.0;
    SDPA__CHECK(pt->ctx, started == pt->threads, SDPA_ERR_OUT_OF_MEMORY,
                "cpu peak: could not start %d threads (started %d)", pt->threads, started);
    return SDPA_OK;
}

static int detect_isa(void)
{
#ifdef CPU_PEAK_X86
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f")) return ISA_AVX512;
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return ISA_AVX2;
#endif
    return ISA_VEC4;
}

static const char *isa_name(int isa)
{
    return isa == ISA_AVX512 ? "avx512" : isa == ISA_AVX2 ? "avx2" : "generic";
}

const char *sdpa__cpu_peak_widest(sdpa_context *ctx, void *state)
{
    (void)ctx;
    (void)state;
    return isa_name(detect_isa());
}

sdpa_status sdpa__cpu_measure_peak(sdpa_context *ctx, void *state, double seconds, double *gflops,
                                   char *method, size_t method_len)
{
    return sdpa__cpu_measure_peak_for(ctx, sdpa__cpu_peak_widest(ctx, state), seconds, gflops,
                                      method, method_len);
}

sdpa_status sdpa__cpu_measure_peak_for(sdpa_context *ctx, const char *kernels, double seconds,
                                       double *gflops, char *method, size_t method_len)
{
    /* a set the CPU lacks is never selected (cpu_kernels_select.c), so the
     * named width runs here */
    const int isa = strcmp(kernels, "avx512") == 0 ? ISA_AVX512
                    : strcmp(kernels, "avx2") == 0 ? ISA_AVX2
                                                   : ISA_VEC4;
    int threads = sdpa__context_threads(ctx);
    if (threads < 1) threads = 1;
    if (threads > 1024) threads = 1024;
    if (!(seconds > 0)) seconds = 0.25;

    peak_threads pt = {ctx, isa, threads, NULL, NULL};
    pt.w = sdpa__calloc((size_t)threads, sizeof *pt.w);
    pt.tid = sdpa__calloc((size_t)threads, sizeof *pt.tid);
    double best = 0;
    sdpa_status st = pt.w && pt.tid
                         ? sdpa__peak_rounds(peak_step, &pt, 1 << 14, seconds, &best)
                         : SDPA__FAIL(ctx, SDPA_ERR_OUT_OF_MEMORY, "cpu peak: thread table");
    free(pt.w);
    free(pt.tid);
    SDPA__TRY(st);
    SDPA__CHECK(ctx, best > 0, SDPA_ERR_INTERNAL, "cpu peak: the clock did not advance");
    *gflops = best;
    if (method && method_len)
        snprintf(method, method_len, "cpu %s %d thread%s", kernels, threads,
                 threads == 1 ? "" : "s");
    return SDPA_OK;
}
