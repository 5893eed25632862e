/*
 * test_reference.c — the float64 reference backend (the oracle every other
 * backend is tested against) checked against closed forms and against an
 * independent float64 loop (naive_attention.h): identical keys, one key, a
 * huge-margin key, LSE as a direct logsumexp, causal diagonals on Sq != Skv,
 * empty rows from a negative offset, windows, kv_len, mask + bias, softcap,
 * GQA head mapping, QK-norm against pre-normalised inputs, temperature,
 * f16/bf16 storage, all 11 statistics, NaN and Inf inputs. The wave-2
 * inputs by their identities: zero slopes and -inf sinks change nothing;
 * ALiBi equals the same distances given as a bias; a sink equals one more
 * key of score sink_h whose value is 0 (out, lse, and the statistics' p);
 * q8_0 K/V equal f32 K/V holding the dequantized values; f16 K/V equal f32
 * K/V holding the same values; paged K/V equal the same keys gathered.
 *
 * Every output is poisoned with NaN before each run. Run time: about a
 * second (shapes are small; the reference is O(B H Sq Skv D) in float64).
 */
#include "naive_attention.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static sdpa_context *g_ctx;
static void setup(void) { g_ctx = nv_context(); }
static void teardown(void) { sdpa_context_destroy(g_ctx); g_ctx = NULL; }

static double resolved_scale(const nv_problem *p)
{
    if (p->scale == SDPA_SCALE_DEFAULT) return 1.0 / sqrt((double)p->D);
    if (p->scale == SDPA_SCALE_MUP) return 1.0 / (double)p->D;
    return p->scale;
}

/* q.k for (b, query head h, row i) against (b, kv head hk, key j). */
static double dot_qk(const nv_problem *p, int64_t b, int64_t h, int64_t i,
                     int64_t hk, int64_t j)
{
    double acc = 0;
    for (int64_t d = 0; d < p->D; d++)
        acc += (double)p->q[((b * p->Hq + h) * p->Sq + i) * p->D + d] *
               (double)p->k[((b * p->Hkv + hk) * p->Skv + j) * p->D + d];
    return acc;
}
static float *out_row(const nv_problem *p, int64_t b, int64_t h, int64_t i)
{
    return p->out + ((b * p->Hq + h) * p->Sq + i) * p->Dv;
}
static const float *v_row(const nv_problem *p, int64_t b, int64_t hk, int64_t j)
{
    return p->v + ((b * p->Hkv + hk) * p->Skv + j) * p->Dv;
}
#define LSE(p, b, h, i) ((p)->lse[((b) * (p)->Hq + (h)) * (p)->Sq + (i)])

/* ---- closed forms ---------------------------------------------------------- */

/* All keys of a head identical: p is uniform, out = mean of V, lse = s + log Skv. */
START_TEST(identical_keys_give_mean_of_v)
{
    trng r;
    nv_problem p;
    trng_seed(&r, 11);
    nv_make(&p, &r, 2, 4, 2, 7, 65, 32, 48);
    for (int64_t b = 0; b < 2; b++)
        for (int64_t hk = 0; hk < 2; hk++)
            for (int64_t j = 1; j < p.Skv; j++)
                memcpy(&p.k[((b * 2 + hk) * p.Skv + j) * p.D],
                       &p.k[((b * 2 + hk) * p.Skv) * p.D], (size_t)p.D * sizeof(float));
    ck_assert_int_eq(nv_run(g_ctx, &p), SDPA_OK);
    for (int64_t b = 0; b < 2; b++)
        for (int64_t h = 0; h < 4; h++)
            for (int64_t i = 0; i < p.Sq; i++) {
                int64_t hk = h / 2;
                double s = dot_qk(&p, b, h, i, hk, 0) / sqrt((double)p.D);
                ck_assert_double_eq_tol(LSE(&p, b, h, i), s + log((double)p.Skv), 1e-5);
                for (int64_t c = 0; c < p.Dv; c++) {
                    double mean = 0;
                    for (int64_t j = 0; j < p.Skv; j++) mean += v_row(&p, b, hk, j)[c];
                    mean /= (double)p.Skv;
                    ck_assert_double_eq_tol(out_row(&p, b, h, i)[c], mean, 1e-6);
                }
            }
    nv_free(&p);
}
END_TEST

/* One key: out = its V row exactly, lse = its score. */
START_TEST(one_key_gives_its_value)
{
    trng r;
    nv_problem p;
    trng_seed(&r, 12);
    nv_make(&p, &r, 1, 4, 2, 63, 1, 64, 16);
    ck_assert_int_eq(nv_run(g_ctx, &p), SDPA_OK);
    for (int64_t h = 0; h < 4; h++)
        for (int64_t i = 0; i < p.Sq; i++) {
            ck_assert_double_eq_tol(LSE(&p, 0, h, i), dot_qk(&p, 0, h, i, h / 2, 0) / 8.0, 1e-5);
            ck_assert_mem_eq(out_row(&p, 0, h, i), v_row(&p, 0, h / 2, 0),
                             (size_t)p.Dv * sizeof(float));
        }
    nv_free(&p);
}
END_TEST

/* One key aligned with q by a margin of ~40 logits: out = its V row. */
START_TEST(huge_margin_key_dominates)
{
    trng r;
    nv_problem p;
    const int64_t t = 100;
    trng_seed(&r, 13);
    nv_make(&p, &r, 1, 2, 2, 1, 257, 128, 32);
    for (int64_t h = 0; h < 2; h++) {
        double n2 = 0;
        for (int64_t d = 0; d < p.D; d++) n2 += (double)p.q[h * p.D + d] * p.q[h * p.D + d];
        for (int64_t d = 0; d < p.D; d++)
            p.k[(h * p.Skv + t) * p.D + d] = (float)(p.q[h * p.D + d] * 40.0 * sqrt((double)p.D) / n2);
    }
    ck_assert_int_eq(nv_run(g_ctx, &p), SDPA_OK);
    for (int64_t h = 0; h < 2; h++) {
        ck_assert_double_eq_tol(LSE(&p, 0, h, 0), 40.0, 1e-4);
        for (int64_t c = 0; c < p.Dv; c++)
            ck_assert_double_eq_tol(out_row(&p, 0, h, 0)[c], v_row(&p, 0, h, t)[c], 1e-6);
    }
    nv_free(&p);
}
END_TEST

/* lse = logsumexp_j(scale q.k_j) and out = softmax-weighted V, computed here
 * directly, for the default, muP and an explicit scale. */
START_TEST(lse_is_direct_logsumexp)
{
    const double scales[] = {SDPA_SCALE_DEFAULT, SDPA_SCALE_MUP, 0.37};
    for (int sc = 0; sc < 3; sc++) {
        trng r;
        nv_problem p;
        trng_seed(&r, 14 + (uint64_t)sc);
        nv_make(&p, &r, 2, 2, 1, 65, 7, 40, 24);
        p.scale = scales[sc];
        ck_assert_int_eq(nv_run(g_ctx, &p), SDPA_OK);
        for (int64_t b = 0; b < 2; b++)
            for (int64_t h = 0; h < 2; h++)
                for (int64_t i = 0; i < p.Sq; i++) {
                    double s[7], m = -INFINITY, l = 0, L;
                    for (int j = 0; j < 7; j++) {
                        s[j] = resolved_scale(&p) * dot_qk(&p, b, h, i, 0, j);
                        m = fmax(m, s[j]);
                    }
                    for (int j = 0; j < 7; j++) l += exp(s[j] - m);
                    L = m + log(l);
                    ck_assert_double_eq_tol(LSE(&p, b, h, i), L, 1e-5 * fmax(1, fabs(L)));
                    for (int64_t c = 0; c < p.Dv; c++) {
                        double o = 0;
                        for (int j = 0; j < 7; j++) o += exp(s[j] - L) * v_row(&p, b, 0, j)[c];
                        ck_assert_double_eq_tol(out_row(&p, b, h, i)[c], o, 2e-6);
                    }
                }
        nv_free(&p);
    }
}
END_TEST

/* Causal on Sq=5, Skv=9 with each diagonal, checked by closed forms on the
 * first and last rows and by the independent loop everywhere. */
START_TEST(causal_diagonals)
{
    trng r;
    nv_problem p, full;
    trng_seed(&r, 20);
    nv_make(&p, &r, 1, 2, 2, 5, 9, 32, 32);
    p.window_left = -1;
    p.window_right = 0;

    /* top-left: row 0 sees key 0 only */
    p.diagonal = SDPA_DIAGONAL_TOP_LEFT;
    nv_check_forward(g_ctx, &p, "top_left");
    for (int64_t h = 0; h < 2; h++) {
        ck_assert_mem_eq(out_row(&p, 0, h, 0), v_row(&p, 0, h, 0), 32 * sizeof(float));
        ck_assert_double_eq_tol(LSE(&p, 0, h, 0), dot_qk(&p, 0, h, 0, h, 0) / sqrt(32.0), 1e-5);
    }
    /* bottom-right: the last row sees every key = the unmasked result */
    p.diagonal = SDPA_DIAGONAL_BOTTOM_RIGHT;
    nv_check_forward(g_ctx, &p, "bottom_right");
    full = p;
    full.window_right = -1;
    full.out = nv_floats(2 * 5 * 32);
    full.lse = nv_floats(2 * 5);
    full.stats = nv_floats(2 * SDPA_STAT_COUNT);
    ck_assert_int_eq(nv_run(g_ctx, &full), SDPA_OK);
    for (int64_t h = 0; h < 2; h++) {
        for (int64_t c = 0; c < 32; c++)
            ck_assert_float_eq_tol(out_row(&p, 0, h, 4)[c], out_row(&full, 0, h, 4)[c], 1e-6);
        ck_assert_float_eq_tol(LSE(&p, 0, h, 4), LSE(&full, 0, h, 4), 1e-6);
    }
    free(full.out); free(full.lse); free(full.stats);
    /* explicit offset 2: row i sees keys 0..i+2 */
    p.diagonal = SDPA_DIAGONAL_EXPLICIT;
    p.diagonal_offset = 2;
    nv_check_forward(g_ctx, &p, "explicit2");
    nv_free(&p);

    /* Sq > Skv bottom-right: off = -4, rows 0..3 empty */
    trng_seed(&r, 21);
    nv_make(&p, &r, 1, 2, 1, 9, 5, 16, 8);
    p.window_right = 0;
    p.diagonal = SDPA_DIAGONAL_BOTTOM_RIGHT;
    p.want_stats = true;
    nv_check_forward(g_ctx, &p, "bottom_right Sq>Skv");
    for (int64_t h = 0; h < 2; h++) {
        for (int64_t i = 0; i < 4; i++) {
            ck_assert(LSE(&p, 0, h, i) == -INFINITY);
            for (int64_t c = 0; c < 8; c++) ck_assert(out_row(&p, 0, h, i)[c] == 0.0f);
        }
        ck_assert_mem_eq(out_row(&p, 0, h, 4), v_row(&p, 0, 0, 0), 8 * sizeof(float));
        ck_assert(p.stats[h * SDPA_STAT_COUNT + SDPA_STAT_EMPTY_ROWS] == 4.0f);
    }
    nv_free(&p);
}
END_TEST

/* A negative explicit offset empties the first rows: out exactly 0, lse -inf,
 * stats count them. */
START_TEST(negative_offset_empty_rows)
{
    trng r;
    nv_problem p;
    trng_seed(&r, 22);
    nv_make(&p, &r, 2, 3, 3, 6, 6, 32, 32);
    p.diagonal = SDPA_DIAGONAL_EXPLICIT;
    p.diagonal_offset = -3;
    p.window_right = 0;
    p.want_stats = true;
    nv_check_forward(g_ctx, &p, "offset -3");
    for (int64_t b = 0; b < 2; b++)
        for (int64_t h = 0; h < 3; h++) {
            for (int64_t i = 0; i < 3; i++) {
                ck_assert(LSE(&p, b, h, i) == -INFINITY);
                for (int64_t c = 0; c < 32; c++) ck_assert(out_row(&p, b, h, i)[c] == 0.0f);
            }
            ck_assert(isfinite(LSE(&p, b, h, 3)));
            ck_assert(p.stats[(b * 3 + h) * SDPA_STAT_COUNT + SDPA_STAT_EMPTY_ROWS] == 3.0f);
            /* row 3 sees key 0 only */
            ck_assert_mem_eq(out_row(&p, b, h, 3), v_row(&p, b, h, 0), 32 * sizeof(float));
        }
    nv_free(&p);
}
END_TEST

START_TEST(windows)
{
    static const struct { int64_t l, r; sdpa_diagonal dg; int64_t sq, skv; } cases[] = {
        {3, 0, SDPA_DIAGONAL_TOP_LEFT, 65, 65},
        {2, 2, SDPA_DIAGONAL_TOP_LEFT, 65, 65},
        {4, 4, SDPA_DIAGONAL_BOTTOM_RIGHT, 7, 65},
        {0, 3, SDPA_DIAGONAL_BOTTOM_RIGHT, 65, 7},
        {5, -1, SDPA_DIAGONAL_TOP_LEFT, 7, 63},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        trng r;
        nv_problem p;
        char name[64];
        trng_seed(&r, 30 + c);
        nv_make(&p, &r, 1, 2, 1, cases[c].sq, cases[c].skv, 32, 16);
        p.window_left = cases[c].l;
        p.window_right = cases[c].r;
        p.diagonal = cases[c].dg;
        p.want_stats = true;
        snprintf(name, sizeof name, "window (%lld,%lld)", (long long)cases[c].l,
                 (long long)cases[c].r);
        nv_check_forward(g_ctx, &p, name);
        nv_free(&p);
    }
    /* (0, 0) on the diagonal: row i attends key i alone. */
    {
        trng r;
        nv_problem p;
        trng_seed(&r, 39);
        nv_make(&p, &r, 1, 1, 1, 65, 65, 32, 16);
        p.window_left = p.window_right = 0;
        ck_assert_int_eq(nv_run(g_ctx, &p), SDPA_OK);
        for (int64_t i = 0; i < 65; i++)
            ck_assert_mem_eq(out_row(&p, 0, 0, i), v_row(&p, 0, 0, i), 16 * sizeof(float));
        nv_free(&p);
    }
}
END_TEST

/* kv_len[b] = n behaves as if K/V had n keys; 0 empties the batch. */
START_TEST(kv_len_truncates)
{
    trng r;
    nv_problem p, cut;
    const int32_t lens[3] = {65, 17, 0};
    trng_seed(&r, 40);
    nv_make(&p, &r, 3, 2, 2, 7, 65, 32, 24);
    nv_add_kv_len(&p, lens);
    p.want_stats = true;
    nv_check_forward(g_ctx, &p, "kv_len");
    /* batch 1 against a problem sliced to 17 keys */
    trng_seed(&r, 41);
    nv_make(&cut, &r, 1, 2, 2, 7, 17, 32, 24);
    memcpy(cut.q, p.q + 1 * 2 * 7 * 32, 2 * 7 * 32 * sizeof(float));
    for (int64_t h = 0; h < 2; h++) {
        memcpy(cut.k + h * 17 * 32, p.k + ((1 * 2 + h) * 65) * 32, 17 * 32 * sizeof(float));
        memcpy(cut.v + h * 17 * 24, p.v + ((1 * 2 + h) * 65) * 24, 17 * 24 * sizeof(float));
    }
    ck_assert_int_eq(nv_run(g_ctx, &cut), SDPA_OK);
    for (int64_t h = 0; h < 2; h++)
        for (int64_t i = 0; i < 7; i++) {
            ck_assert_float_eq_tol(LSE(&p, 1, h, i), LSE(&cut, 0, h, i), 1e-6);
            for (int64_t c = 0; c < 24; c++)
                ck_assert_float_eq_tol(out_row(&p, 1, h, i)[c], out_row(&cut, 0, h, i)[c], 1e-6);
            ck_assert(LSE(&p, 2, h, i) == -INFINITY);
            for (int64_t c = 0; c < 24; c++) ck_assert(out_row(&p, 2, h, i)[c] == 0.0f);
        }
    ck_assert(p.stats[(2 * 2 + 1) * SDPA_STAT_COUNT + SDPA_STAT_EMPTY_ROWS] == 7.0f);
    ck_assert(p.stats[(2 * 2 + 1) * SDPA_STAT_COUNT + SDPA_STAT_LOGIT_MEAN] == 0.0f);
    /* with bottom-right causal the offset follows kv_len per batch */
    p.window_right = 0;
    p.diagonal = SDPA_DIAGONAL_BOTTOM_RIGHT;
    nv_check_forward(g_ctx, &p, "kv_len bottom_right");
    nv_free(&cut);
    nv_free(&p);
}
END_TEST

/* Mask and bias compose; a row whose bias is all -inf, and a row whose mask
 * is all false, are empty. */
START_TEST(mask_and_bias)
{
    trng r;
    nv_problem p;
    trng_seed(&r, 50);
    nv_make(&p, &r, 2, 3, 1, 9, 33, 32, 32);
    nv_add_mask(&p, &r, 2, 3, 0.7);
    nv_add_bias(&p, &r, 1, 3, 0.1);
    p.want_stats = true;
    for (int64_t j = 0; j < 33; j++) {
        p.bias[(1 * 9 + 4) * 33 + j] = -INFINITY; /* head 1, row 4, both batches */
        p.mask[((1 * 3 + 2) * 9 + 6) * 33 + j] = 0; /* batch 1, head 2, row 6 */
    }
    nv_check_forward(g_ctx, &p, "mask+bias");
    for (int64_t b = 0; b < 2; b++) {
        ck_assert(LSE(&p, b, 1, 4) == -INFINITY);
        for (int64_t c = 0; c < 32; c++) ck_assert(out_row(&p, b, 1, 4)[c] == 0.0f);
    }
    ck_assert(LSE(&p, 1, 2, 6) == -INFINITY);
    ck_assert(isfinite(LSE(&p, 0, 2, 6)));
    /* broadcast mask (1,1,Sq,Skv) with a causal band */
    nv_add_mask(&p, &r, 1, 1, 0.6);
    p.window_right = 0;
    nv_check_forward(g_ctx, &p, "bcast mask+bias+causal");
    nv_free(&p);
}
END_TEST

/* Softcap bounds every score by c: lse <= c + log(kept keys). */
START_TEST(softcap_bounds_scores)
{
    trng r;
    nv_problem p;
    trng_seed(&r, 60);
    nv_make(&p, &r, 1, 2, 2, 17, 65, 64, 32);
    for (size_t e = 0; e < (size_t)(2 * 17 * 64); e++) p.q[e] *= 6.0f;
    p.softcap = 2.5;
    p.want_stats = true;
    nv_check_forward(g_ctx, &p, "softcap");
    for (int64_t e = 0; e < 2 * 17; e++) ck_assert(p.lse[e] <= 2.5 + log(65.0) + 1e-5);
    for (int64_t h = 0; h < 2; h++) {
        ck_assert(p.stats[h * SDPA_STAT_COUNT + SDPA_STAT_LOGIT_MAX] <= 2.5f);
        ck_assert(p.stats[h * SDPA_STAT_COUNT + SDPA_STAT_LOGIT_MIN] >= -2.5f);
    }
    /* softcap is applied before the bias: bias shifts beyond c */
    nv_add_bias(&p, &r, 1, 1, 0.0);
    nv_check_forward(g_ctx, &p, "softcap+bias");
    nv_free(&p);
}
END_TEST

/* Query head h reads KV head h / (Hq/Hkv): each head equals a 1-head problem. */
START_TEST(gqa_head_mapping)
{
    trng r;
    nv_problem p, one;
    trng_seed(&r, 70);
    nv_make(&p, &r, 2, 6, 2, 7, 19, 32, 16);
    ck_assert_int_eq(nv_run(g_ctx, &p), SDPA_OK);
    trng_seed(&r, 71);
    nv_make(&one, &r, 1, 1, 1, 7, 19, 32, 16);
    for (int64_t b = 0; b < 2; b++)
        for (int64_t h = 0; h < 6; h++) {
            int64_t hk = h / 3;
            memcpy(one.q, p.q + (b * 6 + h) * 7 * 32, 7 * 32 * sizeof(float));
            memcpy(one.k, p.k + (b * 2 + hk) * 19 * 32, 19 * 32 * sizeof(float));
            memcpy(one.v, p.v + (b * 2 + hk) * 19 * 16, 19 * 16 * sizeof(float));
            nv_poison(&one);
            ck_assert_int_eq(nv_run(g_ctx, &one), SDPA_OK);
            ck_assert_mem_eq(one.out, out_row(&p, b, h, 0), 7 * 16 * sizeof(float));
            ck_assert_mem_eq(one.lse, &LSE(&p, b, h, 0), 7 * sizeof(float));
        }
    nv_free(&one);
    nv_check_forward(g_ctx, &p, "gqa");
    nv_free(&p);
}
END_TEST

/* QK-norm (rms, layer, l2) with gains equals attention over inputs normalised
 * here, per vector, before the call. */
static void normalise_vec(float *x, int64_t n, sdpa_qk_norm kind, double eps,
                          const float *gain)
{
    double mean = 0, ss = 0, var = 0, den;
    for (int64_t d = 0; d < n; d++) { mean += x[d]; ss += (double)x[d] * x[d]; }
    mean /= (double)n;
    for (int64_t d = 0; d < n; d++) var += (x[d] - mean) * (x[d] - mean);
    var /= (double)n;
    if (kind == SDPA_QK_NORM_RMS) { den = sqrt(ss / (double)n + eps); mean = 0; }
    else if (kind == SDPA_QK_NORM_LAYER) den = sqrt(var + eps);
    else { den = sqrt(ss + eps); mean = 0; }
    for (int64_t d = 0; d < n; d++) x[d] = (float)((x[d] - mean) / den * (gain ? gain[d] : 1.0));
}

START_TEST(qk_norm_matches_prenormalised)
{
    const sdpa_qk_norm kinds[] = {SDPA_QK_NORM_RMS, SDPA_QK_NORM_LAYER, SDPA_QK_NORM_L2};
    const double eps[] = {1e-6, 0.5};
    for (int kk = 0; kk < 3; kk++)
        for (int ee = 0; ee < 2; ee++)
            for (int gains = 0; gains < 2; gains++) {
                trng r;
                nv_problem p, pre;
                char name[64];
                trng_seed(&r, 80 + (uint64_t)(kk * 4 + ee * 2 + gains));
                nv_make(&p, &r, 1, 4, 2, 9, 21, 48, 16);
                for (size_t e = 0; e < (size_t)(4 * 9 * 48); e++) p.q[e] = p.q[e] * 3.0f + 0.5f;
                p.qk_norm = kinds[kk];
                p.eps = eps[ee];
                if (kinds[kk] == SDPA_QK_NORM_L2) p.scale = 6.0;
                if (gains) nv_add_gains(&p, &r);
                p.want_stats = true;
                snprintf(name, sizeof name, "qk_norm %d eps %g gains %d", kk, eps[ee], gains);
                nv_check_forward(g_ctx, &p, name);

                trng_seed(&r, 99);
                nv_make(&pre, &r, 1, 4, 2, 9, 21, 48, 16);
                memcpy(pre.q, p.q, 4 * 9 * 48 * sizeof(float));
                memcpy(pre.k, p.k, 2 * 21 * 48 * sizeof(float));
                memcpy(pre.v, p.v, 2 * 21 * 16 * sizeof(float));
                pre.scale = p.scale;
                for (int64_t e = 0; e < 4 * 9; e++) normalise_vec(pre.q + e * 48, 48, kinds[kk], eps[ee], p.q_gain);
                for (int64_t e = 0; e < 2 * 21; e++) normalise_vec(pre.k + e * 48, 48, kinds[kk], eps[ee], p.k_gain);
                ck_assert_int_eq(nv_run(g_ctx, &pre), SDPA_OK);
                for (int64_t e = 0; e < 4 * 9 * 16; e++)
                    ck_assert_msg(fabs(pre.out[e] - p.out[e]) < 1e-5, "%s out[%lld] %g vs %g",
                                  name, (long long)e, p.out[e], pre.out[e]);
                for (int64_t e = 0; e < 4 * 9; e++)
                    ck_assert_msg(fabs(pre.lse[e] - p.lse[e]) < 1e-5 * fmax(1, fabs(pre.lse[e])),
                                  "%s lse[%lld] %g vs %g", name, (long long)e, p.lse[e], pre.lse[e]);
                nv_free(&pre);
                nv_free(&p);
            }
}
END_TEST

/* A per-head temperature replaces the scale (the scale field is ignored). */
START_TEST(temperature_replaces_scale)
{
    trng r;
    nv_problem p;
    float *first;
    trng_seed(&r, 90);
    nv_make(&p, &r, 2, 4, 2, 7, 33, 32, 16);
    p.qk_norm = SDPA_QK_NORM_L2;
    nv_add_temperature(&p, &r);
    nv_add_gains(&p, &r);
    p.want_stats = true;
    nv_check_forward(g_ctx, &p, "temperature");
    first = nv_floats(2 * 4 * 7 * 16);
    memcpy(first, p.out, 2 * 4 * 7 * 16 * sizeof(float));
    p.scale = 123.0;
    nv_poison(&p);
    ck_assert_int_eq(nv_run(g_ctx, &p), SDPA_OK);
    ck_assert_mem_eq(first, p.out, 2 * 4 * 7 * 16 * sizeof(float));
    free(first);
    /* head h with temperature T equals scale T without a temperature tensor */
    for (int64_t h = 0; h < 4; h++) {
        nv_problem one = p;
        double *want = nv_doubles(2 * 4 * 7 * 16);
        one.temperature = NULL;
        one.scale = p.temperature[h];
        nv_forward(&one, want, NULL, NULL);
        for (int64_t b = 0; b < 2; b++)
            for (int64_t e = 0; e < 7 * 16; e++)
                ck_assert_double_eq_tol(out_row(&p, b, h, 0)[e],
                                        want[((b * 4 + h) * 7) * 16 + e], 2e-6);
        free(want);
    }
    nv_free(&p);
}
END_TEST

/* ---- storage dtypes -------------------------------------------------------- */

START_TEST(half_storage)
{
    const sdpa_dtype dts[] = {SDPA_DTYPE_F16, SDPA_DTYPE_BF16};
    ck_assert(from_f16(to_f16(1.0f / 3.0f)) == 0.333251953125f);
    ck_assert(from_bf16(to_bf16(1.0f / 3.0f)) == 0.333984375f);
    for (int t = 0; t < 2; t++) {
        sdpa_dtype dt = dts[t];
        trng r;
        nv_problem p;
        sdpa_attention_desc d;
        size_t nq, nk, nv, no;
        uint16_t *q16, *k16, *v16, *o16;
        double *want, tol = dt == SDPA_DTYPE_F16 ? 2e-3 : 1.6e-2;
        trng_seed(&r, 100 + (uint64_t)t);
        nv_make(&p, &r, 1, 4, 2, 33, 65, 64, 32);
        p.window_right = 0;
        p.diagonal = SDPA_DIAGONAL_BOTTOM_RIGHT;
        nq = 4 * 33 * 64; nk = 2 * 65 * 64; nv = 2 * 65 * 32; no = 4 * 33 * 32;
        q16 = malloc(nq * 2); k16 = malloc(nk * 2); v16 = malloc(nv * 2); o16 = malloc(no * 2);
        ck_assert(q16 && k16 && v16 && o16);
#define ROUND(arr, a16, n)                                                          \
    for (size_t e = 0; e < (n); e++) {                                              \
        a16[e] = dt == SDPA_DTYPE_F16 ? to_f16(arr[e]) : to_bf16(arr[e]);           \
        arr[e] = dt == SDPA_DTYPE_F16 ? from_f16(a16[e]) : from_bf16(a16[e]);       \
    }
        ROUND(p.q, q16, nq)
        ROUND(p.k, k16, nk)
        ROUND(p.v, v16, nv)
#undef ROUND
        memset(o16, 0xff, no * 2); /* NaN in both formats */
        nv_desc(&p, &d);
        d.tensors.q.host = q16; d.tensors.q.dtype = dt;
        d.tensors.k.host = k16; d.tensors.k.dtype = dt;
        d.tensors.v.host = v16; d.tensors.v.dtype = dt;
        d.tensors.out.host = o16; d.tensors.out.dtype = dt;
        ck_assert_int_eq(sdpa_attention_forward(g_ctx, &d), SDPA_OK);
        want = nv_doubles(no);
        nv_forward(&p, want, NULL, NULL);
        for (size_t e = 0; e < no; e++) {
            double g = dt == SDPA_DTYPE_F16 ? from_f16(o16[e]) : from_bf16(o16[e]);
            ck_assert_msg(fabs(g - want[e]) <= tol * fmax(0.25, fabs(want[e])),
                          "%s out[%zu] %g vs %g", sdpa_dtype_name(dt), e, g, want[e]);
        }
        /* lse stays f32 and is computed from the stored (rounded) inputs */
        {
            double *wl = nv_doubles(4 * 33);
            nv_forward(&p, NULL, wl, NULL);
            nv_expect_close("half lse", p.lse, wl, 4 * 33, 2e-6, 2e-6);
            free(wl);
        }
        free(want); free(q16); free(k16); free(v16); free(o16);
        nv_free(&p);
    }
}
END_TEST

/* ---- statistics --------------------------------------------------------------- */

START_TEST(statistics_all_columns)
{
    trng r;
    nv_problem p;
    double st[3 * SDPA_STAT_COUNT];
    trng_seed(&r, 110);
    nv_make(&p, &r, 1, 3, 3, 7, 9, 16, 8);
    nv_add_mask(&p, &r, 1, 3, 0.75);
    for (int64_t j = 0; j < 9; j++) {
        p.mask[(0 * 7 + 2) * 9 + j] = 0;   /* head 0, row 2: empty */
        for (int64_t i = 0; i < 7; i++) p.mask[(2 * 7 + i) * 9 + j] = 0; /* head 2: all empty */
    }
    p.mask[(1 * 7 + 0) * 9 + 0] = 0; /* head 1: key 0 dropped on row 0 */
    for (int64_t j = 0; j < 9; j++) /* head 1, row 3: one key, p_max = 1, entropy 0 */
        p.mask[(1 * 7 + 3) * 9 + j] = j == 4;
    for (int64_t d = 0; d < 16; d++) /* head 1, row 5: large logits */
        p.q[(1 * 7 + 5) * 16 + d] *= 8.0f;
    p.want_stats = true;
    nv_check_forward(g_ctx, &p, "stats");
    nv_forward(&p, NULL, NULL, st);
    ck_assert(st[SDPA_STAT_EMPTY_ROWS] == 1.0);
    ck_assert(st[1 * SDPA_STAT_COUNT + SDPA_STAT_SATURATED_FRAC] > 0.0);
    ck_assert(p.stats[1 * SDPA_STAT_COUNT + SDPA_STAT_ENTROPY_MIN] == 0.0f);
    for (int c = 0; c < SDPA_STAT_COUNT; c++)
        ck_assert(p.stats[2 * SDPA_STAT_COUNT + c] == (c == SDPA_STAT_EMPTY_ROWS ? 7.0f : 0.0f));

    /* The Jacobian column against the explicit matrix diag(p) - p p^T for
     * head 0, done here without the closed form. */
    {
        double sum = 0, s[9];
        int keep[9], rows = 0;
        for (int64_t i = 0; i < 7; i++) {
            double m = -INFINITY, l = 0, pr[9], f = 0;
            if (nv_row_scores(&p, 0, 0, i, s, keep) == 0) continue;
            for (int j = 0; j < 9; j++) if (keep[j]) m = fmax(m, s[j]);
            for (int j = 0; j < 9; j++) l += keep[j] ? exp(s[j] - m) : 0;
            for (int j = 0; j < 9; j++) pr[j] = keep[j] ? exp(s[j] - m) / l : 0;
            for (int a = 0; a < 9; a++)
                for (int c = 0; c < 9; c++) {
                    double jac = (a == c ? pr[a] : 0) - pr[a] * pr[c];
                    f += jac * jac;
                }
            sum += sqrt(f);
            rows++;
        }
        ck_assert_double_eq_tol(p.stats[SDPA_STAT_JACOBIAN_FRO_MEAN], sum / rows, 1e-5);
    }
    /* a custom saturation threshold */
    p.saturation = 0.5;
    nv_check_forward(g_ctx, &p, "stats sat 0.5");
    nv_free(&p);
}
END_TEST

/* ---- non-finite inputs ---------------------------------------------------------- */

START_TEST(nan_query_row_stays_in_its_row)
{
    trng r;
    nv_problem p;
    float *clean_out, *clean_lse;
    const size_t no = 2 * 2 * 9 * 16, nl = 2 * 2 * 9;
    trng_seed(&r, 120);
    nv_make(&p, &r, 2, 2, 1, 9, 17, 32, 16);
    ck_assert_int_eq(nv_run(g_ctx, &p), SDPA_OK);
    clean_out = nv_floats(no);
    clean_lse = nv_floats(nl);
    memcpy(clean_out, p.out, no * 4);
    memcpy(clean_lse, p.lse, nl * 4);
    p.q[((0 * 2 + 1) * 9 + 3) * 32 + 5] = NAN;
    nv_poison(&p);
    ck_assert_int_eq(nv_run(g_ctx, &p), SDPA_OK);
    for (size_t row = 0; row < nl; row++) {
        if (row == (0 * 2 + 1) * 9 + 3) {
            ck_assert(isnan(p.lse[row]));
            for (int c = 0; c < 16; c++) ck_assert(isnan(p.out[row * 16 + c]));
        } else {
            ck_assert_mem_eq(&p.lse[row], &clean_lse[row], 4);
            ck_assert_mem_eq(&p.out[row * 16], &clean_out[row * 16], 16 * 4);
        }
    }
    free(clean_out);
    free(clean_lse);
    nv_free(&p);
}
END_TEST

/* +inf in one component of key j: rows whose score becomes -inf drop key j
 * (as if masked); rows whose score becomes +inf are NaN per IEEE (or exactly
 * that key); heads that do not read the key are bit-identical. */
START_TEST(inf_key)
{
    trng r;
    nv_problem p, masked;
    float *clean_out;
    const int64_t j0 = 5, d0 = 2, bb = 1;
    const size_t no = 2 * 4 * 9 * 16;
    trng_seed(&r, 130);
    nv_make(&p, &r, 2, 4, 2, 9, 17, 32, 16);
    ck_assert_int_eq(nv_run(g_ctx, &p), SDPA_OK);
    clean_out = nv_floats(no);
    memcpy(clean_out, p.out, no * 4);
    /* the same problem with key j0 masked out, for the -inf rows */
    trng_seed(&r, 131);
    nv_make(&masked, &r, 2, 4, 2, 9, 17, 32, 16);
    memcpy(masked.q, p.q, 2 * 4 * 9 * 32 * 4);
    memcpy(masked.k, p.k, 2 * 2 * 17 * 32 * 4);
    memcpy(masked.v, p.v, 2 * 2 * 17 * 16 * 4);
    nv_add_mask(&masked, &r, 1, 1, 2.0);
    for (int64_t i = 0; i < 9; i++) masked.mask[i * 17 + j0] = 0;
    ck_assert_int_eq(nv_run(g_ctx, &masked), SDPA_OK);

    p.k[((bb * 2 + 0) * 17 + j0) * 32 + d0] = INFINITY; /* batch 1, kv head 0 */
    nv_poison(&p);
    ck_assert_int_eq(nv_run(g_ctx, &p), SDPA_OK);
    for (int64_t b = 0; b < 2; b++)
        for (int64_t h = 0; h < 4; h++)
            for (int64_t i = 0; i < 9; i++) {
                float *o = out_row(&p, b, h, i);
                size_t e = (size_t)(o - p.out);
                if (b != bb || h / 2 != 0) {
                    ck_assert_mem_eq(o, &clean_out[e], 16 * 4);
                } else if (p.q[((b * 4 + h) * 9 + i) * 32 + d0] < 0) {
                    for (int c = 0; c < 16; c++)
                        ck_assert_float_eq_tol(o[c], out_row(&masked, b, h, i)[c], 1e-6);
                } else {
                    for (int c = 0; c < 16; c++)
                        ck_assert(isnan(o[c]) || fabsf(o[c] - v_row(&p, b, 0, j0)[c]) < 1e-6f);
                }
            }
    free(clean_out);
    nv_free(&masked);
    nv_free(&p);
}
END_TEST

/* Extreme but valid band values behave as unbounded: no int64 wrap in
 * i + off + right (off and right may each be up to 2^62 - 1). */
/* The front end rewrites every band into a canonical one (validate.c,
 * canonical_band). Random offsets and windows, small and large, on every
 * diagonal, must keep exactly the keys the definition keeps. */
START_TEST(band_canonicalisation_random)
{
    static const int64_t picks[] = {-1, 0, 1, 2, 3, 5, 8, 13, 1000000, ((int64_t)1 << 40)};
    trng r;
    nv_problem p;
    trng_seed(&r, 4242);
    nv_make(&p, &r, 2, 2, 1, 7, 9, 8, 8);
    int32_t kv[2] = {6, 9};
    nv_add_kv_len(&p, kv);
    p.want_lse = true;
    for (int it = 0; it < 300; it++) {
        p.diagonal = (sdpa_diagonal)(trng_next(&r) % 3);
        int64_t off = (int64_t)(trng_next(&r) % 41) - 20;
        if (trng_next(&r) % 8 == 0) off = (trng_next(&r) & 1) ? 1000000 : -1000000;
        p.diagonal_offset = off;
        p.window_left = picks[trng_next(&r) % 10];
        p.window_right = picks[trng_next(&r) % 10];
        char what[96];
        snprintf(what, sizeof what, "diag %d off %lld window (%lld, %lld)", (int)p.diagonal,
                 (long long)off, (long long)p.window_left, (long long)p.window_right);
        nv_check_forward(g_ctx, &p, what);
    }
    nv_free(&p);
}
END_TEST

START_TEST(extreme_band_values)
{
    const int64_t big = ((int64_t)1 << 62) - 1;
    static const struct { int64_t off, l, r; } cases[] = {
        {((int64_t)1 << 62) - 1, -1, ((int64_t)1 << 62) - 1},
        {-(((int64_t)1 << 62) - 1), ((int64_t)1 << 62) - 1, -1},
        {0, ((int64_t)1 << 62) - 1, ((int64_t)1 << 62) - 1},
    };
    trng r;
    nv_problem p;
    float *want_o, *want_l;
    trng_seed(&r, 140);
    nv_make(&p, &r, 1, 2, 1, 7, 9, 16, 8);
    ck_assert_int_eq(nv_run(g_ctx, &p), SDPA_OK);
    want_o = nv_floats(2 * 7 * 8);
    want_l = nv_floats(2 * 7);
    memcpy(want_o, p.out, 2 * 7 * 8 * 4);
    memcpy(want_l, p.lse, 2 * 7 * 4);
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        p.diagonal = SDPA_DIAGONAL_EXPLICIT;
        p.diagonal_offset = cases[c].off;
        p.window_left = cases[c].l;
        p.window_right = cases[c].r;
        nv_poison(&p);
        ck_assert_int_eq(nv_run(g_ctx, &p), SDPA_OK);
        for (int e = 0; e < 2 * 7; e++)
            ck_assert_msg(p.lse[e] == want_l[e], "case %zu lse[%d] %g vs %g", c, e, p.lse[e], want_l[e]);
        ck_assert_mem_eq(p.out, want_o, 2 * 7 * 8 * 4);
    }
    /* off = big - 2, left = big: the left edge is i - 2, the right edge
     * i + off + right + 1 passes 2^63 from row 1 on; = window (2, -1) */
    p.diagonal = SDPA_DIAGONAL_TOP_LEFT;
    p.window_left = 2;
    p.window_right = -1;
    ck_assert_int_eq(nv_run(g_ctx, &p), SDPA_OK);
    memcpy(want_o, p.out, 2 * 7 * 8 * 4);
    memcpy(want_l, p.lse, 2 * 7 * 4);
    p.diagonal = SDPA_DIAGONAL_EXPLICIT;
    p.diagonal_offset = big - 2;
    p.window_left = big;
    p.window_right = big;
    nv_poison(&p);
    ck_assert_int_eq(nv_run(g_ctx, &p), SDPA_OK);
    ck_assert_mem_eq(p.lse, want_l, 2 * 7 * 4);
    ck_assert_mem_eq(p.out, want_o, 2 * 7 * 8 * 4);
    /* ...and a band entirely after / before the keys empties every row */
    p.diagonal_offset = big;
    p.window_left = 0;
    p.window_right = 0;
    nv_poison(&p);
    ck_assert_int_eq(nv_run(g_ctx, &p), SDPA_OK);
    for (int e = 0; e < 2 * 7; e++) ck_assert(p.lse[e] == -INFINITY);
    p.diagonal_offset = -big;
    nv_poison(&p);
    ck_assert_int_eq(nv_run(g_ctx, &p), SDPA_OK);
    for (int e = 0; e < 2 * 7; e++) ck_assert(p.lse[e] == -INFINITY);
    free(want_o);
    free(want_l);
    nv_free(&p);
}
END_TEST

/* Lengths across tile edges and head sizes up to 256 against the loop. */
START_TEST(sizes)
{
    static const struct { int64_t sq, skv, d, dv; } cases[] = {
        {1, 1000, 256, 128}, {257, 63, 64, 64}, {65, 257, 128, 32}, {63, 65, 32, 256},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        trng r;
        nv_problem p;
        char name[64];
        trng_seed(&r, 150 + c);
        nv_make(&p, &r, 1, 2, 1, cases[c].sq, cases[c].skv, cases[c].d, cases[c].dv);
        p.window_right = 0;
        p.diagonal = SDPA_DIAGONAL_BOTTOM_RIGHT;
        nv_add_mask(&p, &r, 1, 1, 0.9);
        p.want_stats = true;
        snprintf(name, sizeof name, "Sq %lld Skv %lld D %lld Dv %lld", (long long)cases[c].sq,
                 (long long)cases[c].skv, (long long)cases[c].d, (long long)cases[c].dv);
        nv_check_forward(g_ctx, &p, name);
        nv_free(&p);
    }
}
END_TEST

/* Keys a row does not keep must not influence it, even when they hold NaN or
 * Inf: a KV cache past kv_len is uninitialised memory, and a masked key may
 * be garbage. Outputs equal a run with clean values there. */
START_TEST(garbage_in_dropped_keys)
{
    trng r;
    nv_problem p;
    float *want_o, *want_l;
    const int32_t lens[2] = {9, 4};
    const size_t no = 2 * 2 * 5 * 8, nl = 2 * 2 * 5;
    trng_seed(&r, 160);
    nv_make(&p, &r, 2, 2, 1, 5, 13, 16, 8);
    nv_add_kv_len(&p, lens);
    nv_add_mask(&p, &r, 2, 2, 1.0);
    for (int64_t b = 0; b < 2; b++)   /* key 2 dropped everywhere by the mask */
        for (int64_t h = 0; h < 2; h++)
            for (int64_t i = 0; i < 5; i++) p.mask[((b * 2 + h) * 5 + i) * 13 + 2] = 0;
    ck_assert_int_eq(nv_run(g_ctx, &p), SDPA_OK);
    want_o = nv_floats(no);
    want_l = nv_floats(nl);
    memcpy(want_o, p.out, no * 4);
    memcpy(want_l, p.lse, nl * 4);
    for (int64_t b = 0; b < 2; b++)
        for (int64_t j = 0; j < 13; j++) {
            if (j < lens[b] && j != 2) continue;
            for (int64_t d = 0; d < 16; d++) p.k[(b * 13 + j) * 16 + d] = (d & 1) ? NAN : INFINITY;
            for (int64_t d = 0; d < 8; d++) p.v[(b * 13 + j) * 8 + d] = (d & 1) ? -INFINITY : NAN;
        }
    nv_poison(&p);
    ck_assert_int_eq(nv_run(g_ctx, &p), SDPA_OK);
    ck_assert_mem_eq(p.out, want_o, no * 4);
    ck_assert_mem_eq(p.lse, want_l, nl * 4);
    /* the backward too: every gradient finite, dk/dv of dropped keys 0 */
    {
        sdpa_attention_desc d;
        sdpa_backward_tensors g;
        sdpa_plan *plan = NULL;
        sdpa_plan_options po;
        nv_add_backward(&p, &r);
        nv_desc(&p, &d);
        nv_bwd(&p, &g);
        sdpa_plan_options_init(&po);
        po.flags = SDPA_PLAN_BACKWARD;
        ck_assert_int_eq(sdpa_plan_create(g_ctx, &d, &po, &plan), SDPA_OK);
        ck_assert_int_eq(sdpa_plan_forward(plan, &d.tensors), SDPA_OK);
        ck_assert_int_eq(sdpa_plan_backward(plan, &d.tensors, &g), SDPA_OK);
        for (size_t e = 0; e < 2 * 2 * 5 * 16; e++) ck_assert_msg(isfinite(p.dq[e]), "dq[%zu]", e);
        for (int64_t b = 0; b < 2; b++)
            for (int64_t j = 0; j < 13; j++) {
                int dropped = j >= lens[b] || j == 2;
                for (int64_t dd = 0; dd < 16; dd++) {
                    float x = p.dk[(b * 13 + j) * 16 + dd];
                    ck_assert_msg(dropped ? x == 0.0f : isfinite(x), "dk b%lld j%lld = %g",
                                  (long long)b, (long long)j, x);
                }
                for (int64_t dd = 0; dd < 8; dd++) {
                    float x = p.dv[(b * 13 + j) * 8 + dd];
                    ck_assert_msg(dropped ? x == 0.0f : isfinite(x), "dv b%lld j%lld = %g",
                                  (long long)b, (long long)j, x);
                }
            }
        sdpa_plan_destroy(plan);
    }
    free(want_o);
    free(want_l);
    nv_free(&p);
}
END_TEST

/* ---- wave 2: identities ------------------------------------------------------ */

enum { WB = 2, WH = 4, WHK = 2, WSQ = 5, WSK = 64, WD = 32 };
#define WNQ ((size_t)WB * WH * WSQ * WD)
#define WNK ((size_t)WB * WHK * WSK * WD)
#define WNO ((size_t)WB * WH * WSQ * WD)
#define WNL ((size_t)WB * WH * WSQ)

typedef struct wrun { float out[WNO], lse[WNL], stats[WNL / WSQ * SDPA_STAT_COUNT]; } wrun;

/* Runs d (q, k, v and attributes set) into r with out, lse and stats. */
static void wrun_into(sdpa_attention_desc *d, wrun *r)
{
    nv_fill_nan(r->out, WNO);
    nv_fill_nan(r->lse, WNL);
    nv_fill_nan(r->stats, sizeof r->stats / sizeof *r->stats);
    d->tensors.out = sdpa_tensor_host(r->out, SDPA_DTYPE_F32, WB, WH, WSQ, WD);
    d->tensors.lse = sdpa_tensor_host(r->lse, SDPA_DTYPE_F32, WB, WH, WSQ, 1);
    d->tensors.stats = sdpa_tensor_host(r->stats, SDPA_DTYPE_F32, WB, WH, 1, SDPA_STAT_COUNT);
    ck_assert_int_eq(sdpa_attention_forward(g_ctx, d), SDPA_OK);
}

static void wsame(const wrun *a, const wrun *b, double tol, const char *what)
{
    for (size_t e = 0; e < WNO; e++)
        ck_assert_msg(fabs(a->out[e] - b->out[e]) <= tol, "%s out[%zu] %g vs %g", what, e,
                      a->out[e], b->out[e]);
    for (size_t e = 0; e < WNL; e++)
        ck_assert_msg(a->lse[e] == b->lse[e] || fabs(a->lse[e] - b->lse[e]) <= tol,
                      "%s lse[%zu] %g vs %g", what, e, a->lse[e], b->lse[e]);
}

START_TEST(wave2_identities)
{
    trng r;
    trng_seed(&r, 77);
    float *q = nv_randn(&r, WNQ, 1.0), *k = nv_randn(&r, WNK, 1.0), *v = nv_randn(&r, WNK, 1.0);
    float slopes[WH] = {0.5f, 0.25f, 0.125f, 0.0625f}, sinks[WH] = {0.5f, -1.0f, 2.0f, 0.0f};
    float zero[WH] = {0}, none[WH] = {-INFINITY, -INFINITY, -INFINITY, -INFINITY};
    wrun *a = malloc(sizeof *a), *b = malloc(sizeof *b);
    sdpa_attention_desc d;
#define BASE()                                                                              \
    (sdpa_attention_desc_init(&d), sdpa_attention_desc_set_causal(&d, SDPA_DIAGONAL_BOTTOM_RIGHT), \
     d.tensors.q = sdpa_tensor_host(q, SDPA_DTYPE_F32, WB, WH, WSQ, WD),                    \
     d.tensors.k = sdpa_tensor_host(k, SDPA_DTYPE_F32, WB, WHK, WSK, WD),                   \
     d.tensors.v = sdpa_tensor_host(v, SDPA_DTYPE_F32, WB, WHK, WSK, WD))
    BASE();
    wrun_into(&d, a);
    /* zero slopes and -inf sinks are nothing */
    BASE();
    d.tensors.alibi_slopes = sdpa_tensor_host(zero, SDPA_DTYPE_F32, 1, WH, 1, 1);
    d.tensors.sinks = sdpa_tensor_host(none, SDPA_DTYPE_F32, 1, WH, 1, 1);
    wrun_into(&d, b);
    wsame(a, b, 0, "zero slopes, -inf sinks");
    ck_assert_mem_eq(a->stats, b->stats, sizeof a->stats);

    /* ALiBi = a bias of -slope |i + off - j|, off = Skv - Sq (bottom right) */
    float *bias = nv_floats((size_t)WH * WSQ * WSK);
    for (int h = 0; h < WH; h++)
        for (int i = 0; i < WSQ; i++)
            for (int j = 0; j < WSK; j++)
                bias[(h * WSQ + i) * WSK + j] = -slopes[h] * fabsf((float)(i + WSK - WSQ - j));
    BASE();
    d.tensors.bias = sdpa_tensor_host(bias, SDPA_DTYPE_F32, 1, WH, WSQ, WSK);
    wrun_into(&d, a);
    BASE();
    d.tensors.alibi_slopes = sdpa_tensor_host(slopes, SDPA_DTYPE_F32, 1, WH, 1, 1);
    wrun_into(&d, b);
    wsame(a, b, 1e-6, "ALiBi vs the same bias");

    /* a sink = one more key with score sink_h and value 0: key WSK - 1 made
     * that key by a bias (its score replaced) and a zero value row; the
     * causal band keeps it for the last query row only, so use no band */
    float *k2 = malloc(WNK * sizeof *k2), *v2 = malloc(WNK * sizeof *v2);
    memcpy(k2, k, WNK * sizeof *k2);
    memcpy(v2, v, WNK * sizeof *v2);
    for (int bb = 0; bb < WB; bb++)
        for (int hk = 0; hk < WHK; hk++)
            for (int x = 0; x < WD; x++) {
                k2[((bb * WHK + hk) * WSK + WSK - 1) * WD + x] = 0; /* q.k = 0 */
                v2[((bb * WHK + hk) * WSK + WSK - 1) * WD + x] = 0;
            }
    for (int h = 0; h < WH; h++)
        for (int i = 0; i < WSQ; i++)
            for (int j = 0; j < WSK; j++)
                bias[(h * WSQ + i) * WSK + j] = j == WSK - 1 ? sinks[h] : 0.0f;
    sdpa_attention_desc_init(&d);
    d.tensors.q = sdpa_tensor_host(q, SDPA_DTYPE_F32, WB, WH, WSQ, WD);
    d.tensors.k = sdpa_tensor_host(k2, SDPA_DTYPE_F32, WB, WHK, WSK, WD);
    d.tensors.v = sdpa_tensor_host(v2, SDPA_DTYPE_F32, WB, WHK, WSK, WD);
    d.tensors.bias = sdpa_tensor_host(bias, SDPA_DTYPE_F32, 1, WH, WSQ, WSK);
    wrun_into(&d, a);
    d.tensors.bias.dtype = SDPA_DTYPE_NONE;
    d.tensors.k.shape[2] = d.tensors.v.shape[2] = WSK - 1; /* the real keys only */
    d.tensors.sinks = sdpa_tensor_host(sinks, SDPA_DTYPE_F32, 1, WH, 1, 1);
    wrun_into(&d, b);
    wsame(a, b, 1e-6, "sink vs a zero-value key");
    for (int bh = 0; bh < WB * WH; bh++) /* the sink as an outcome, not a logit */
        for (int c = SDPA_STAT_ENTROPY_MEAN; c <= SDPA_STAT_JACOBIAN_FRO_MEAN; c++)
            ck_assert_msg(fabsf(a->stats[bh * SDPA_STAT_COUNT + c] -
                                b->stats[bh * SDPA_STAT_COUNT + c]) <= 1e-5f,
                          "stat %d of head %d: %g vs %g", c, bh, a->stats[bh * SDPA_STAT_COUNT + c],
                          b->stats[bh * SDPA_STAT_COUNT + c]);

    /* q8_0 K/V = f32 K/V holding the dequantized values; f16 K/V = f32 K/V
     * holding the f16 values (q in f32 either way) */
    uint8_t *kq = malloc(WNK / 32 * 34), *vq = malloc(WNK / 32 * 34);
    float *kd = malloc(WNK * sizeof *kd), *vd = malloc(WNK * sizeof *vd);
    uint16_t *kh = malloc(WNK * 2), *vh = malloc(WNK * 2);
    for (size_t blk = 0; blk < WNK / 32; blk++)
        for (int t = 0; t < 2; t++) {
            uint8_t *o = (t ? vq : kq) + blk * 34;
            float *dq = (t ? vd : kd) + blk * 32;
            const uint16_t d16 = to_f16(0.03125f * (float)(blk % 7 + 1) * (blk % 2 ? -1 : 1));
            memcpy(o, &d16, 2);
            for (int e = 0; e < 32; e++) {
                int8_t qv = (int8_t)((int)(trng_next(&r) % 256) - 128);
                o[2 + e] = (uint8_t)qv;
                dq[e] = from_f16(d16) * (float)qv;
            }
        }
    for (size_t e = 0; e < WNK; e++) {
        kh[e] = to_f16(k[e]);
        vh[e] = to_f16(v[e]);
    }
    BASE();
    d.tensors.k.host = kd;
    d.tensors.v.host = vd;
    wrun_into(&d, a);
    BASE();
    d.tensors.k = sdpa_tensor_host(kq, SDPA_DTYPE_Q8_0, WB, WHK, WSK, WD);
    d.tensors.v = sdpa_tensor_host(vq, SDPA_DTYPE_Q8_0, WB, WHK, WSK, WD);
    wrun_into(&d, b);
    wsame(a, b, 0, "q8_0 vs its dequantized values");
    for (size_t e = 0; e < WNK; e++) {
        kd[e] = from_f16(kh[e]);
        vd[e] = from_f16(vh[e]);
    }
    BASE();
    d.tensors.k.host = kd;
    d.tensors.v.host = vd;
    wrun_into(&d, a);
    BASE();
    d.tensors.k = sdpa_tensor_host(kh, SDPA_DTYPE_F16, WB, WHK, WSK, WD);
    d.tensors.v = sdpa_tensor_host(vh, SDPA_DTYPE_F16, WB, WHK, WSK, WD);
    wrun_into(&d, b);
    wsame(a, b, 0, "f16 K/V vs f32 K/V of the same values");

    /* paged: pages of 8 keys in a shuffled pool, batch 1 sharing batch 0's
     * first page, equal the same keys gathered */
    enum { PGS = 8, TW = WSK / PGS, NP = WB * TW + 1 };
    float *kp = nv_randn(&r, (size_t)NP * WHK * PGS * WD, 1.0),
          *vp = nv_randn(&r, (size_t)NP * WHK * PGS * WD, 1.0);
    int32_t table[WB * TW], lens[WB] = {WSK, WSK - 20};
    for (int e = 0; e < WB * TW; e++) table[e] = (e * 5 + 2) % NP;
    table[TW] = table[0];
    for (int bb = 0; bb < WB; bb++)
        for (int hk = 0; hk < WHK; hk++)
            for (int j = 0; j < WSK; j++) {
                size_t src = (((size_t)table[bb * TW + j / PGS] * WHK + hk) * PGS + j % PGS) * WD;
                memcpy(kd + ((bb * WHK + hk) * WSK + j) * WD, kp + src, WD * sizeof(float));
                memcpy(vd + ((bb * WHK + hk) * WSK + j) * WD, vp + src, WD * sizeof(float));
            }
    BASE();
    d.tensors.k.host = kd;
    d.tensors.v.host = vd;
    d.tensors.kv_len = sdpa_tensor_host(lens, SDPA_DTYPE_I32, WB, 1, 1, 1);
    d.tensors.alibi_slopes = sdpa_tensor_host(slopes, SDPA_DTYPE_F32, 1, WH, 1, 1);
    d.tensors.sinks = sdpa_tensor_host(sinks, SDPA_DTYPE_F32, 1, WH, 1, 1);
    wrun_into(&d, a);
    d.tensors.k.dtype = d.tensors.v.dtype = SDPA_DTYPE_NONE;
    d.tensors.k_pages = sdpa_tensor_host(kp, SDPA_DTYPE_F32, NP, WHK, PGS, WD);
    d.tensors.v_pages = sdpa_tensor_host(vp, SDPA_DTYPE_F32, NP, WHK, PGS, WD);
    d.tensors.block_table = sdpa_tensor_host(table, SDPA_DTYPE_I32, WB, 1, 1, TW);
    wrun_into(&d, b);
    wsame(a, b, 0, "paged vs gathered");
    ck_assert_mem_eq(a->stats, b->stats, sizeof a->stats);
#undef BASE
    free(q); free(k); free(v); free(k2); free(v2); free(bias); free(kq); free(vq);
    free(kd); free(vd); free(kh); free(vh); free(kp); free(vp); free(a); free(b);
}
END_TEST

static Suite *reference_suite(void)
{
    Suite *s = suite_create("reference");
    TCase *t = tcase_create("closed_forms");
    tcase_add_checked_fixture(t, setup, teardown);
    tcase_add_test(t, identical_keys_give_mean_of_v);
    tcase_add_test(t, one_key_gives_its_value);
    tcase_add_test(t, huge_margin_key_dominates);
    tcase_add_test(t, lse_is_direct_logsumexp);
    suite_add_tcase(s, t);
    t = tcase_create("masking");
    tcase_add_checked_fixture(t, setup, teardown);
    tcase_add_test(t, causal_diagonals);
    tcase_add_test(t, negative_offset_empty_rows);
    tcase_add_test(t, windows);
    tcase_add_test(t, kv_len_truncates);
    tcase_add_test(t, mask_and_bias);
    tcase_add_test(t, extreme_band_values);
    tcase_add_test(t, band_canonicalisation_random);
    tcase_add_test(t, sizes);
    suite_add_tcase(s, t);
    t = tcase_create("features");
    tcase_add_checked_fixture(t, setup, teardown);
    tcase_add_test(t, softcap_bounds_scores);
    tcase_add_test(t, gqa_head_mapping);
    tcase_add_test(t, qk_norm_matches_prenormalised);
    tcase_add_test(t, temperature_replaces_scale);
    tcase_add_test(t, half_storage);
    tcase_add_test(t, statistics_all_columns);
    tcase_add_test(t, wave2_identities);
    suite_add_tcase(s, t);
    t = tcase_create("nonfinite");
    tcase_add_checked_fixture(t, setup, teardown);
    tcase_add_test(t, nan_query_row_stays_in_its_row);
    tcase_add_test(t, inf_key);
    tcase_add_test(t, garbage_in_dropped_keys);
    suite_add_tcase(s, t);
    return s;
}

int main(void) { return trun_suite(reference_suite()); }
