/*
 * openblas_attention.c — the unfused OpenBLAS attention baseline of
 * scripts/bench-baselines.sh (not part of the library or its tests): per
 * (batch, KV head), S = scale * Q K^T with one cblas_sgemm over the G query
 * heads of the group stacked (G*Sq rows: BHSD keeps them contiguous), the
 * causal band (bottom-right diagonal, as sdpa-bench), a row softmax, then
 * O = P V with a second cblas_sgemm. f32, BHSD, random inputs in [-1, 1].
 *
 *   openblas_attention B Hq Hkv Sq Skv D Dv causal(0|1) repeat warmup
 *
 * Prints "median_ms min_ms" of the timed repetitions. Threads: OpenBLAS's
 * own (OPENBLAS_NUM_THREADS, set by the script).
 */
#include <cblas.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "timing.h"

static float *randbuf(size_t n)
{
    float *p = malloc(n * sizeof *p);
    if (!p) {
        fprintf(stderr, "openblas_attention: out of memory\n");
        exit(1);
    }
    for (size_t i = 0; i < n; i++) p[i] = 2.0f * (float)rand() / (float)RAND_MAX - 1.0f;
    return p;
}

int main(int argc, char **argv)
{
    if (argc != 11) {
        fprintf(stderr, "usage: openblas_attention B Hq Hkv Sq Skv D Dv causal repeat warmup\n");
        return 2;
    }
    long B = atol(argv[1]), Hq = atol(argv[2]), Hkv = atol(argv[3]), Sq = atol(argv[4]);
    long Skv = atol(argv[5]), D = atol(argv[6]), Dv = atol(argv[7]);
    int causal = atoi(argv[8]), repeat = atoi(argv[9]), warmup = atoi(argv[10]);
    if (B < 1 || Hq < 1 || Hkv < 1 || Hq % Hkv || Sq < 1 || Skv < 1 || D < 1 || Dv < 1 ||
        repeat < 1 || warmup < 0) {
        fprintf(stderr, "openblas_attention: bad arguments\n");
        return 2;
    }
    const long G = Hq / Hkv, off = Skv - Sq;
    const float scale = 1.0f / sqrtf((float)D);
    float *q = randbuf((size_t)(B * Hq * Sq * D)), *k = randbuf((size_t)(B * Hkv * Skv * D));
    float *v = randbuf((size_t)(B * Hkv * Skv * Dv)), *o = randbuf((size_t)(B * Hq * Sq * Dv));
    float *s = randbuf((size_t)(G * Sq * Skv));
    double *t = malloc((size_t)repeat * sizeof *t);
    for (int rep = 0; rep < warmup + repeat; rep++) {
        double t0 = now_ms();
        for (long b = 0; b < B; b++)
            for (long h = 0; h < Hkv; h++) {
                const float *qg = q + (b * Hq + h * G) * Sq * D;
                const float *kh = k + (b * Hkv + h) * Skv * D, *vh = v + (b * Hkv + h) * Skv * Dv;
                float *og = o + (b * Hq + h * G) * Sq * Dv;
                cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)(G * Sq), (int)Skv,
                            (int)D, scale, qg, (int)D, kh, (int)D, 0.0f, s, (int)Skv);
                for (long r = 0; r < G * Sq; r++) {
                    float *row = s + r * Skv;
                    const long hi = causal ? r % Sq + off : Skv - 1; /* last kept key */
                    float m = -INFINITY, l = 0.0f;
                    for (long j = 0; j <= hi && j < Skv; j++) m = row[j] > m ? row[j] : m;
                    for (long j = 0; j < Skv; j++) {
                        row[j] = j <= hi ? expf(row[j] - m) : 0.0f;
                        l += row[j];
                    }
                    const float il = l > 0 ? 1.0f / l : 0.0f;
                    for (long j = 0; j < Skv; j++) row[j] *= il;
                }
                cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)(G * Sq), (int)Dv,
                            (int)Skv, 1.0f, s, (int)Skv, vh, (int)Dv, 0.0f, og, (int)Dv);
            }
        if (rep >= warmup) t[rep - warmup] = now_ms() - t0;
    }
    print_median_min(t, repeat);
    free(q);
    free(k);
    free(v);
    free(o);
    free(s);
    free(t);
    return 0;
}
