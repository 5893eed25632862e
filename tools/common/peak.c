/*
 * peak.c — the host CPU's fp32 FMA peak, measured (see peak.h).
 *
 * Each thread runs 12 independent FMA chains (enough to cover an FMA latency
 * of 4-6 cycles on two pipes) over registers of the widest ISA the CPU
 * reports at run time; the functions carry GCC target attributes so the
 * library's build flags need no -march. The chains converge (x*a + b with
 * a < 1), so values stay finite; the result is summed and returned so the
 * compiler cannot drop the loop. Called by sdpa-bench once per run.
 */
#include "peak.h"
#include "util.h"

#include <pthread.h>
#include <stdlib.h>

#if defined(__GNUC__) && defined(__x86_64__)
#include <immintrin.h>
#define TP_X86 1
#endif

enum { ISA_SCALAR, ISA_AVX2, ISA_AVX512 };

#ifdef TP_X86
__attribute__((target("avx512f"))) static float chains_avx512(long iters)
{
    const __m512 a = _mm512_set1_ps(0.999f), b = _mm512_set1_ps(0.001f);
    __m512 x[12];
    for (int c = 0; c < 12; c++)
        x[c] = _mm512_set1_ps((float)c);
    for (long i = 0; i < iters; i++) {
#pragma GCC unroll 12
        for (int c = 0; c < 12; c++)
            x[c] = _mm512_fmadd_ps(x[c], a, b);
    }
    __m512 s = x[0];
    for (int c = 1; c < 12; c++)
        s = _mm512_add_ps(s, x[c]);
    return _mm512_reduce_add_ps(s);
}

__attribute__((target("avx2,fma"))) static float chains_avx2(long iters)
{
    const __m256 a = _mm256_set1_ps(0.999f), b = _mm256_set1_ps(0.001f);
    __m256 x[12];
    for (int c = 0; c < 12; c++)
        x[c] = _mm256_set1_ps((float)c);
    for (long i = 0; i < iters; i++) {
#pragma GCC unroll 12
        for (int c = 0; c < 12; c++)
            x[c] = _mm256_fmadd_ps(x[c], a, b);
    }
    __m256 s = x[0];
    for (int c = 1; c < 12; c++)
        s = _mm256_add_ps(s, x[c]);
    float f[8];
    _mm256_storeu_ps(f, s);
    return f[0] + f[1] + f[2] + f[3] + f[4] + f[5] + f[6] + f[7];
}
#endif

static float chains_scalar(long iters)
{
    float x[12];
    for (int c = 0; c < 12; c++)
        x[c] = (float)c;
    for (long i = 0; i < iters; i++)
        for (int c = 0; c < 12; c++)
            x[c] = x[c] * 0.999f + 0.001f;
    float s = 0;
    for (int c = 0; c < 12; c++)
        s += x[c];
    return s;
}

static int lanes(int isa) { return isa == ISA_AVX512 ? 16 : isa == ISA_AVX2 ? 8 : 1; }

static float run_chains(int isa, long iters)
{
#ifdef TP_X86
    if (isa == ISA_AVX512)
        return chains_avx512(iters);
    if (isa == ISA_AVX2)
        return chains_avx2(iters);
#endif
    return chains_scalar(iters);
}

typedef struct worker {
    int isa;
    long iters;
    volatile float sink;
} worker;

static void *worker_main(void *arg)
{
    worker *w = arg;
    w->sink = run_chains(w->isa, w->iters);
    return NULL;
}

double tp_cpu_peak_gflops(int threads, double seconds, const char **isa_name)
{
    int isa = ISA_SCALAR;
#ifdef TP_X86
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f"))
        isa = ISA_AVX512;
    else if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
        isa = ISA_AVX2;
#endif
    if (isa_name)
        *isa_name = isa == ISA_AVX512 ? "avx512" : isa == ISA_AVX2 ? "avx2" : "scalar";
    if (threads < 1)
        threads = 1;
    if (threads > 1024)
        threads = 1024;

    /* Calibrate on one thread: grow until a run takes >= 20 ms. */
    volatile float sink = 0;
    long iters = 1 << 14;
    double dt = 0;
    for (;;) {
        double t0 = tu_now();
        sink += run_chains(isa, iters);
        dt = tu_now() - t0;
        if (dt >= 0.02 || iters > (1L << 40))
            break;
        iters *= 4;
    }
    (void)sink;
    if (dt <= 0)
        return 0;
    long run_iters = (long)((double)iters * (seconds / dt));
    if (run_iters < iters)
        run_iters = iters;

    worker *w = calloc((size_t)threads, sizeof *w);
    pthread_t *tid = calloc((size_t)threads, sizeof *tid);
    if (!w || !tid) {
        free(w);
        free(tid);
        return 0;
    }
    /* Three rounds; the best one is the least disturbed by other load. */
    double best = 0;
    for (int round = 0; round < 3; round++) {
        double t0 = tu_now();
        int started = 0;
        for (int t = 0; t < threads; t++) {
            w[t].isa = isa;
            w[t].iters = run_iters / 3 + 1;
            if (pthread_create(&tid[t], NULL, worker_main, &w[t]) != 0)
                break;
            started++;
        }
        for (int t = 0; t < started; t++)
            pthread_join(tid[t], NULL);
        double wall = tu_now() - t0;
        if (started == 0 || wall <= 0)
            break;
        double flops = (double)started * (double)(run_iters / 3 + 1) * 12.0 * lanes(isa) * 2.0;
        if (flops / wall / 1e9 > best)
            best = flops / wall / 1e9;
    }
    free(w);
    free(tid);
    return best;
}
