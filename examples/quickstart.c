/*
 * quickstart.c — the smallest complete use of libsdpa, and the main job of
 * scripts/demo.sh: causal attention at B=1, H=8, S=1024, D=64 on the default
 * backend (AUTO, or SDPA_BACKEND), checked against the float64 reference, with
 * the per-head diagnostics the fused kernel computes in the same pass.
 *
 * Build against an install (README, "Install and use it from your program"):
 *   cc quickstart.c -o quickstart $(pkg-config --cflags --libs sdpa) -lm
 * (-lm for fmax: the program's own need; scripts/install-check.sh builds it so.)
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "sdpa.h"

enum { B = 1, H = 8, S = 1024, D = 64 };

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

static int fail(sdpa_context *ctx, const char *what, sdpa_status st)
{
    sdpa_error_info info = {0};
    if (ctx) sdpa_context_last_error(ctx, &info);
    fprintf(stderr, "quickstart: %s: %s (%s)\n", what, sdpa_status_string(st),
            info.message ? info.message : "");
    return 1;
}

/* Runs causal attention on ctx; out/lse/stats are written. */
static sdpa_status run(sdpa_context *ctx, float *q, float *k, float *v, float *out, float *lse,
                       float *stats, double *ms)
{
    sdpa_attention_desc desc;
    sdpa_attention_desc_init(&desc);
    sdpa_attention_desc_set_causal(&desc, SDPA_DIAGONAL_BOTTOM_RIGHT);
    desc.tensors.q = sdpa_tensor_host(q, SDPA_DTYPE_F32, B, H, S, D);
    desc.tensors.k = sdpa_tensor_host(k, SDPA_DTYPE_F32, B, H, S, D);
    desc.tensors.v = sdpa_tensor_host(v, SDPA_DTYPE_F32, B, H, S, D);
    desc.tensors.out = sdpa_tensor_host(out, SDPA_DTYPE_F32, B, H, S, D);
    desc.tensors.lse = sdpa_tensor_host(lse, SDPA_DTYPE_F32, B, H, S, 1);
    desc.tensors.stats = sdpa_tensor_host(stats, SDPA_DTYPE_F32, B, H, 1, SDPA_STAT_COUNT);
    sdpa_plan *plan = NULL;
    sdpa_status st = sdpa_plan_create(ctx, &desc, NULL, &plan);
    if (st != SDPA_OK) return st;
    double t0 = now();
    st = sdpa_plan_forward(plan, &desc.tensors);
    if (st == SDPA_OK) st = sdpa_context_finish(ctx);
    *ms = 1e3 * (now() - t0);
    sdpa_plan_destroy(plan);
    return st;
}

int main(void)
{
    size_t n = (size_t)B * H * S * D;
    float *q = malloc(n * 4), *k = malloc(n * 4), *v = malloc(n * 4);
    float *out = malloc(n * 4), *ref_out = malloc(n * 4);
    float *lse = malloc((size_t)B * H * S * 4), *ref_lse = malloc((size_t)B * H * S * 4);
    float stats[B * H * SDPA_STAT_COUNT], ref_stats[B * H * SDPA_STAT_COUNT];
    if (!q || !k || !v || !out || !ref_out || !lse || !ref_lse) return 1;
    srand(42);
    for (size_t i = 0; i < n; i++) { /* roughly unit-variance inputs */
        q[i] = (float)((rand() / (double)RAND_MAX - 0.5) * 3.46);
        k[i] = (float)((rand() / (double)RAND_MAX - 0.5) * 3.46);
        v[i] = (float)((rand() / (double)RAND_MAX - 0.5) * 3.46);
    }

    sdpa_context *ctx = NULL, *ref = NULL;
    sdpa_status st = sdpa_context_create(NULL, &ctx);
    if (st != SDPA_OK) return fail(ctx, "context", st);
    sdpa_context_options ro;
    sdpa_context_options_init(&ro);
    ro.backend = SDPA_BACKEND_REFERENCE;
    st = sdpa_context_create(&ro, &ref);
    if (st != SDPA_OK) return fail(ref, "reference context", st);

    printf("libsdpa %s: causal attention B=%d H=%d S=%d D=%d\n", sdpa_version_string(), B, H, S, D);
    double ms, ref_ms;
    if ((st = run(ctx, q, k, v, out, lse, stats, &ms)) != SDPA_OK) return fail(ctx, "forward", st);
    if ((st = run(ref, q, k, v, ref_out, ref_lse, ref_stats, &ref_ms)) != SDPA_OK)
        return fail(ref, "reference forward", st);
    double flops = 4.0 * B * H * D * (S * (S + 1.0) / 2.0);
    printf("backend %-9s (%s): %8.2f ms  %7.2f GFLOP/s (first call, includes plan warm-up)\n",
           sdpa_backend_name(sdpa_context_backend(ctx)), sdpa_context_device_name(ctx), ms,
           flops / ms * 1e-6);
    printf("backend %-9s: %8.2f ms  (float64 oracle)\n", "reference", ref_ms);

    double max_err = 0, max_lse_err = 0;
    for (size_t i = 0; i < n; i++) max_err = fmax(max_err, fabs(out[i] - ref_out[i]));
    for (size_t i = 0; i < (size_t)B * H * S; i++)
        max_lse_err = fmax(max_lse_err, fabs(lse[i] - ref_lse[i]));
    int ok = max_err < 1e-4 && max_lse_err < 1e-4;
    printf("max |out - reference| = %.2e, max |lse - reference| = %.2e: %s\n", max_err,
           max_lse_err, ok ? "OK" : "MISMATCH");

    printf("\nper-head diagnostics (computed inside the kernel):\n%4s", "head");
    int cols[] = {SDPA_STAT_LOGIT_MEAN, SDPA_STAT_LOGIT_STD, SDPA_STAT_ENTROPY_MEAN,
                  SDPA_STAT_PMAX_MEAN, SDPA_STAT_SATURATED_FRAC, SDPA_STAT_JACOBIAN_FRO_MEAN,
                  SDPA_STAT_SINK_MASS};
    for (size_t c = 0; c < sizeof cols / sizeof cols[0]; c++) printf(" %17s", sdpa_stat_name(cols[c]));
    printf("\n");
    for (int h = 0; h < H; h++) {
        printf("%4d", h);
        for (size_t c = 0; c < sizeof cols / sizeof cols[0]; c++)
            printf(" %17.4f", stats[h * SDPA_STAT_COUNT + cols[c]]);
        printf("\n");
    }
    sdpa_context_destroy(ctx);
    sdpa_context_destroy(ref);
    free(q); free(k); free(v); free(out); free(ref_out); free(lse); free(ref_lse);
    return ok ? 0 : 1;
}
