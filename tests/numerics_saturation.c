/*
 * numerics_saturation.c — the statistics of saturated rows (p_max -> 1) on
 * every backend against the float64 reference: jacobian_fro_mean,
 * entropy_mean and pmax_mean within 1e-3 relative while the reference value
 * is >= 1e-6 (below that, only >= 0 and at most twice the reference: float32
 * squares of probabilities under ~1e-19 underflow). Part of the numerics
 * suite (test_numerics.c runs the fixture).
 *
 * Scores come from the bias alone (q = 0), so they are exact and the same for
 * every backend: head h holds one pattern (top key first, in the middle,
 * last, a maximum that rises on every key, four tied tops, two of them in one
 * tile), every row adds its own constant (softmax-invariant, but it moves the
 * running maximum), and the spread is multiplied by a scale t from 1 (flat)
 * to 64 (one-hot to float32). Rows span several key tiles on every backend,
 * so the running maximum moves between tiles and, on Vulkan, split-KV
 * partials merge. A form with cancelling running sums reads these values
 * half or 0 below about 1e-5.
 */
#include "numerics.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

enum { SAT_HEADS = 5, SAT_ROWS = 3, SAT_KEYS = 300 };

/* Spread z <= 0 of key j in head h (0 at the top keys, below -1 elsewhere). */
static double sat_pattern(int h, int j)
{
    double u = fmod(j * 0.6180339887, 1.0); /* in [0, 1), no ties */
    double z = -1.0 - u;
    switch (h) {
    case 0: return j == 0 ? 0.0 : z;
    case 1: return j == SAT_KEYS / 2 ? 0.0 : z;
    case 2: return j == SAT_KEYS - 1 ? 0.0 : z;
    case 3: return j == SAT_KEYS - 1 ? 0.0 : -1.0 - (double)(SAT_KEYS - 1 - j) / SAT_KEYS;
    default: return (j == 20 || j == 41 || j == 42 || j == 250) ? 0.0 : z;
    }
}

static void sat_fill(tproblem *p, double t)
{
    for (int h = 0; h < SAT_HEADS; h++)
        for (int i = 0; i < SAT_ROWS; i++)
            for (int j = 0; j < SAT_KEYS; j++)
                p->bias[((size_t)h * SAT_ROWS + i) * SAT_KEYS + j] =
                    (float)(t * sat_pattern(h, j) + 25.0 * i);
}

/* One forward with a plan made earlier; stats as doubles. */
static void sat_forward(sdpa_plan *plan, tproblem *p, double *stats)
{
    tproblem_poison(p);
    ck_assert_int_eq(sdpa_plan_forward(plan, &p->desc.tensors), SDPA_OK);
    for (int e = 0; e < SAT_HEADS * SDPA_STAT_COUNT; e++) stats[e] = p->stats[e];
}

static const int k_sat_stats[] = {SDPA_STAT_JACOBIAN_FRO_MEAN, SDPA_STAT_ENTROPY_MEAN,
                                  SDPA_STAT_PMAX_MEAN};
static const char *const k_sat_names[] = {"jacobian_fro_mean", "entropy_mean", "pmax_mean"};

/* Tile configurations that reach other code paths: OpenCL's unfused
 * (materialised scores) softmax, Vulkan's split-KV merge and multi-row
 * invocations. Refused ones (SDPA_ERR_UNSUPPORTED) are reported and skipped. */
typedef struct sat_tile {
    sdpa_backend_kind kind;
    const char *name;
    int unfused, split_kv, q_tile;
} sat_tile;
static const sat_tile k_sat_tiles[] = {
    {SDPA_BACKEND_OPENCL, "unfused", 1, SDPA_AUTO, SDPA_AUTO},
    {SDPA_BACKEND_VULKAN, "split_kv 7", SDPA_AUTO, 7, SDPA_AUTO},
    {SDPA_BACKEND_VULKAN, "q_tile 4", SDPA_AUTO, SDPA_AUTO, 4},
};

static void sat_check(sdpa_context *ctx, const char *bn, const char *cfg, sdpa_dtype dt,
                      const sdpa_tile_config *tile, int *n_small)
{
    static const double scales[] = {1, 4, 8, 12, 16, 20, 24, 28, 32, 40, 64};
    tcase c;
    tcase_init(&c, "saturation", 1, SAT_HEADS, 1, SAT_ROWS, SAT_KEYS, 32, 16);
    c.dtype = dt;
    c.bias = true;
    c.stats = true;
    tproblem got, want;
    tproblem_make(&got, &c);
    tproblem_make(&want, &c);
    memset(got.q, 0, got.n_q * sdpa_dtype_size(dt)); /* 0 in f32 and f16 */
    memset(want.q, 0, want.n_q * sdpa_dtype_size(dt));
    sdpa_plan_options po;
    sdpa_plan_options_init(&po);
    po.tile = tile;
    sdpa_plan *plan = NULL, *ref = NULL;
    sdpa_status st = sdpa_plan_create(ctx, &got.desc, &po, &plan);
    if (st == SDPA_ERR_UNSUPPORTED && tile) {
        printf("saturation on %s (%s): configuration unsupported here, skipped\n", bn, cfg);
    } else {
        ck_assert_msg(st == SDPA_OK, "saturation on %s (%s): plan: %s", bn, cfg,
                      sdpa_status_name(st));
        ck_assert_int_eq(sdpa_plan_create(g_ref, &want.desc, NULL, &ref), SDPA_OK);
        for (size_t s = 0; s < sizeof scales / sizeof scales[0]; s++) {
            double g[SAT_HEADS * SDPA_STAT_COUNT], w[SAT_HEADS * SDPA_STAT_COUNT];
            sat_fill(&got, scales[s]);
            sat_fill(&want, scales[s]);
            sat_forward(plan, &got, g);
            ck_assert_int_eq(sdpa_context_finish(ctx), SDPA_OK);
            sat_forward(ref, &want, w);
            for (int h = 0; h < SAT_HEADS; h++)
                for (size_t k = 0; k < sizeof k_sat_stats / sizeof k_sat_stats[0]; k++) {
                    const int e = h * SDPA_STAT_COUNT + k_sat_stats[k];
                    const bool exact = w[e] >= 1e-6;
                    *n_small += !exact;
                    ck_assert_msg(exact ? fabs(g[e] - w[e]) <= 1e-3 * w[e]
                                        : g[e] >= 0 && g[e] <= 2 * w[e],
                                  "saturation on %s (%s, %s), scale %g, head %d: %s = %.7g, "
                                  "reference %.7g", bn, cfg, sdpa_dtype_name(dt), scales[s],
                                  h, k_sat_names[k], g[e], w[e]);
                }
        }
        sdpa_plan_destroy(ref);
        sdpa_plan_destroy(plan);
    }
    tproblem_free(&got);
    tproblem_free(&want);
}

START_TEST(saturated_stats)
{
    sdpa_context *ctx = backend_ctx(_i, "saturated_stats");
    if (!ctx) return;
    const char *bn = sdpa_backend_name(k_kinds[_i]);
    static const sdpa_dtype dts[] = {SDPA_DTYPE_F32, SDPA_DTYPE_F16};
    int n_small = 0;
    for (int d = 0; d < 2; d++) {
        sat_check(ctx, bn, "default", dts[d], NULL, &n_small);
        for (size_t k = 0; k < sizeof k_sat_tiles / sizeof k_sat_tiles[0]; k++) {
            const sat_tile *st = &k_sat_tiles[k];
            if (st->kind != k_kinds[_i]) continue;
            sdpa_tile_config tc;
            sdpa_tile_config_init(&tc);
            sdpa_tile_config_set(&tc, SDPA_TILE_UNFUSED, st->unfused);
            sdpa_tile_config_set(&tc, SDPA_TILE_SPLIT_KV, st->split_kv);
            sdpa_tile_config_set(&tc, SDPA_TILE_Q_TILE, st->q_tile);
            sat_check(ctx, bn, st->name, dts[d], &tc, &n_small);
        }
    }
    /* the scales must reach below 1e-6, or the test checks nothing hard */
    ck_assert_int_gt(n_small, 0);
    sdpa_context_destroy(ctx);
}
END_TEST

void numerics_add_saturation(TCase *t)
{
    tcase_add_loop_test(t, saturated_stats, 0, N_KINDS);
}
