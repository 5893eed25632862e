/*
 * test_random.c — random combinations of every input the API takes, on the
 * cpu backend against the reference backend. The parity table
 * (tests/common/parity_cases.c) and the features cases (tests/common/
 * tfeatures.h) name the combinations someone thought of; here each test
 * draws one problem from a seeded generator, every choice independent:
 *  - TCase `scores` (testutil's tcase): shapes at tile-crossing lengths,
 *    groups of 1-32 query heads per KV head, Dv != D, f32 / f16 / bf16,
 *    windows and diagonals, softcap, QK-norm and gains, temperature, a
 *    mask or bias (broadcast or not), kv_len, statistics, BSHD strides,
 *    hot inputs; forward, and backward for one draw in three;
 *  - TCase `kv` (tfeatures' tfcase): a K/V dtype of its own (f32, f16,
 *    bf16, q8_0, q4_0), pages of 1-64 keys through a block table, ALiBi,
 *    sinks, kv_len, windows, statistics; forward, and backward where the
 *    API allows it (contiguous K/V of a non-block dtype).
 * Every output is poisoned before each run and compared with the
 * reference's (the bounds of testutil.h / tfeatures.h). A failure names the
 * draw: the seed, the index and every choice, so `SDPA_RANDOM_SEED=s
 * CK_RUN_CASE=scores` reproduces it. SDPA_RANDOM_SEED (default 1) picks
 * another set of draws; SDPA_RANDOM_DRAWS (default 120 per TCase) runs more
 * of them, for a longer campaign than CI's.
 */
#include "testutil.h"
#include "tfeatures.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static sdpa_context *g_cpu, *g_ref;
static char g_name[512];

static uint64_t env_u64(const char *name, uint64_t def)
{
    const char *v = getenv(name);
    return v && *v ? strtoull(v, NULL, 10) : def;
}
static uint64_t seed_base(void) { return env_u64("SDPA_RANDOM_SEED", 1); }
static int draws(void) { return (int)env_u64("SDPA_RANDOM_DRAWS", 120); }

/* Draw i's generator. */
static trng draw_rng(int i)
{
    trng r;
    trng_seed(&r, seed_base() * 1000003u + (uint64_t)i);
    return r;
}
static int pick(trng *r, int n) { return (int)(trng_next(r) % (uint64_t)n); }
static bool coin(trng *r, double p) { return trng_uniform(r) < p; }
#define PICK(r, a) ((a)[pick((r), (int)(sizeof(a) / sizeof((a)[0])))])

/* The contexts of draw i: odd draws run on one thread (another task split,
 * no split-KV), even ones on every core. */
static void setup_draw(int i)
{
    sdpa_context_options o;
    sdpa_context_options_init(&o);
    o.backend = SDPA_BACKEND_CPU;
    o.threads = i % 2 ? 1 : SDPA_AUTO;
    o.log_level = SDPA_LOG_ERROR;
    ck_assert_int_eq(sdpa_context_create(&o, &g_cpu), SDPA_OK);
    sdpa_status st;
    g_ref = tcontext(SDPA_BACKEND_REFERENCE, &st);
    ck_assert_msg(g_ref != NULL, "reference context: %s", sdpa_status_name(st));
}

static void teardown(void)
{
    sdpa_context_destroy(g_cpu);
    sdpa_context_destroy(g_ref);
    g_cpu = g_ref = NULL;
}

/* Lengths at and across the kernels' tile edges (16, 64, 256 keys). */
static const int64_t k_sq[] = {1, 1, 2, 7, 16, 63, 65, 130};
static const int64_t k_skv[] = {1, 7, 63, 65, 257, 300, 1000};
static const int64_t k_group[] = {1, 2, 3, 4, 5, 8, 16, 32};

START_TEST(scores)
{
    setup_draw(_i);
    trng r = draw_rng(_i);
    static const int64_t dims[] = {16, 32, 33, 64, 80, 96, 128};
    static const sdpa_dtype dts[] = {SDPA_DTYPE_F32, SDPA_DTYPE_F32, SDPA_DTYPE_F16,
                                     SDPA_DTYPE_BF16};
    const int64_t Hkv = 1 + pick(&r, 3), G = PICK(&r, k_group), D = PICK(&r, dims);
    int64_t Sq = PICK(&r, k_sq), Skv = PICK(&r, k_skv);
    const bool backward = pick(&r, 3) == 0;
    if (backward && Sq * Skv > 65 * 300) Skv = 300; /* the reference's backward is slow */
    tcase c;
    tcase_init(&c, g_name, 1 + pick(&r, 2), Hkv * G, Hkv, Sq, Skv, D,
               coin(&r, 0.3) ? PICK(&r, dims) : D);
    c.dtype = PICK(&r, dts);
    c.seed = trng_next(&r);
    switch (pick(&r, 5)) {
    case 1: c.window_right = 0; break; /* causal */
    case 2: c.window_left = pick(&r, 40), c.window_right = coin(&r, 0.5) ? pick(&r, 9) : -1; break;
    case 3: c.window_left = pick(&r, 40), c.window_right = pick(&r, 9); break;
    default: break;
    }
    const int diag = pick(&r, 3);
    c.diagonal = (sdpa_diagonal)diag;
    if (diag == SDPA_DIAGONAL_EXPLICIT) c.diagonal_offset = pick(&r, (int)Skv + 1);
    if (coin(&r, 0.2)) c.softcap = 2.0 + 30.0 * trng_uniform(&r);
    if (coin(&r, 0.15)) c.qk_norm = (sdpa_qk_norm)(1 + pick(&r, 3));
    c.gains = c.qk_norm && coin(&r, 0.5);
    c.temperature = coin(&r, 0.1);
    if (coin(&r, 0.15)) c.mask = true, c.mask_broadcast = coin(&r, 0.5),
                        c.mask_keep = coin(&r, 0.2) ? 0.05 : 0.7;
    if (coin(&r, 0.15)) c.bias = true, c.bias_broadcast = coin(&r, 0.5);
    c.kv_len = coin(&r, 0.25);
    c.stats = !backward && coin(&r, 0.2);
    c.lse = true;
    c.bshd = coin(&r, 0.25);
    if (coin(&r, 0.1)) c.input_scale = 3.0;
    snprintf(g_name, sizeof g_name,
             "scores draw %d seed %" PRIu64 ": B%lld Hq%lld Hkv%lld Sq%lld Skv%lld D%lld Dv%lld %s "
             "window (%lld,%lld) diagonal %d off %lld softcap %.2f norm %d gains %d temp %d "
             "mask %d/%d bias %d/%d kv_len %d stats %d bshd %d hot %d %s, %s",
             _i, seed_base(), (long long)c.B, (long long)c.Hq, (long long)c.Hkv, (long long)c.Sq,
             (long long)c.Skv, (long long)c.D, (long long)c.Dv, sdpa_dtype_name(c.dtype),
             (long long)c.window_left, (long long)c.window_right, diag,
             (long long)c.diagonal_offset, c.softcap, (int)c.qk_norm, c.gains, c.temperature,
             c.mask, c.mask_broadcast, c.bias, c.bias_broadcast, c.kv_len, c.stats, c.bshd,
             c.input_scale != 1.0, backward ? "backward" : "forward",
             _i % 2 ? "1 thread" : "all threads");
    if (backward)
        tparity_backward(g_cpu, g_ref, &c, NULL);
    else
        tparity_forward(g_cpu, g_ref, &c, NULL);
    teardown();
}
END_TEST

START_TEST(kv)
{
    setup_draw(_i);
    trng r = draw_rng(_i + 1000000);
    static const sdpa_dtype qdts[] = {SDPA_DTYPE_F32, SDPA_DTYPE_F16, SDPA_DTYPE_BF16};
    static const sdpa_dtype kvdts[] = {SDPA_DTYPE_F32, SDPA_DTYPE_F16, SDPA_DTYPE_BF16,
                                       SDPA_DTYPE_Q8_0, SDPA_DTYPE_Q4_0};
    static const int64_t dims[] = {32, 64, 96, 128}, pages[] = {1, 3, 16, 17, 64};
    tfcase c;
    memset(&c, 0, sizeof c);
    c.name = g_name;
    c.qdt = PICK(&r, qdts);
    c.kvdt = coin(&r, 0.3) ? c.qdt : PICK(&r, kvdts);
    c.Hkv = 1 + pick(&r, 2);
    c.Hq = c.Hkv * k_group[pick(&r, 7)]; /* at most 2 x 16: tfeatures' 64 heads */
    c.B = 1 + pick(&r, 2);
    c.D = PICK(&r, dims);
    c.Dv = coin(&r, 0.3) ? PICK(&r, dims) : c.D;
    c.wl = c.wr = -1;
    switch (pick(&r, 4)) {
    case 1: c.wr = 0, c.diagonal = SDPA_DIAGONAL_BOTTOM_RIGHT; break;
    case 2: c.wl = pick(&r, 40), c.wr = pick(&r, 9), c.diagonal = (sdpa_diagonal)pick(&r, 2); break;
    case 3: c.wr = 0, c.diagonal = SDPA_DIAGONAL_EXPLICIT, c.offset = pick(&r, 20); break;
    default: break;
    }
    if (coin(&r, 0.2)) c.softcap = 2.0 + 30.0 * trng_uniform(&r);
    c.alibi = coin(&r, 0.3);
    c.sinks = coin(&r, 0.3);
    c.page = coin(&r, 0.35) ? PICK(&r, pages) : 0;
    c.kv_len = c.page || coin(&r, 0.25);
    const bool block = c.kvdt == SDPA_DTYPE_Q8_0 || c.kvdt == SDPA_DTYPE_Q4_0;
    const bool backward = !block && !c.page && pick(&r, 3) == 0;
    c.stats = !backward && coin(&r, 0.2);
    const int64_t Sq = PICK(&r, k_sq);
    const int64_t Skv = backward && Sq > 16 ? 257 : PICK(&r, k_skv);
    const uint64_t seed = trng_next(&r);
    snprintf(g_name, sizeof g_name,
             "kv draw %d seed %" PRIu64 ": B%lld Hq%lld Hkv%lld Sq%lld Skv%lld D%lld Dv%lld q %s "
             "K/V %s page %lld window (%lld,%lld) diagonal %d off %lld softcap %.2f alibi %d "
             "sinks %d kv_len %d stats %d %s, %s",
             _i, seed_base(), (long long)c.B, (long long)c.Hq, (long long)c.Hkv, (long long)Sq,
             (long long)Skv, (long long)c.D, (long long)c.Dv, sdpa_dtype_name(c.qdt),
             sdpa_dtype_name(c.kvdt), (long long)c.page, (long long)c.wl, (long long)c.wr,
             (int)c.diagonal, (long long)c.offset, c.softcap, c.alibi, c.sinks, c.kv_len, c.stats,
             backward ? "backward" : "forward", _i % 2 ? "1 thread" : "all threads");
    tfeatures_parity(g_cpu, g_ref, &c, Sq, Skv, backward, NULL, seed);
    teardown();
}
END_TEST

int main(void)
{
    Suite *s = suite_create("random");
    TCase *tc = tcase_create("scores");
    tcase_set_timeout(tc, 600);
    tcase_add_loop_test(tc, scores, 0, draws());
    suite_add_tcase(s, tc);
    tc = tcase_create("kv");
    tcase_set_timeout(tc, 600);
    tcase_add_loop_test(tc, kv, 0, draws());
    suite_add_tcase(s, tc);
    return trun_suite(s);
}
