/*
 * test_cpu.c — what is particular to the fast CPU backend; its parity with
 * the oracle on the shared case table is the parity suite's (test_parity.c).
 * Here: one thread (another task split, no split-KV) on a subset of the
 * table, forced tiles and split-KV, determinism (bits independent of reruns
 * and, without gains, of the thread count), empty rows, non-finite inputs,
 * a workspace that does not grow with Skv, the decode kernel choice, the
 * tuning slots, the issue-19 features (ALiBi, sinks and dsinks, K/V dtype
 * other than q's, q8_0 / q4_0 and paged K/V: TCase features), and the whole table again with every other kernel set the
 * CPU runs (SDPA_CPU_KERNELS=generic, avx2, avx512, neon: TCases kernels_<set>);
 * a set the CPU lacks is named on stderr as not run.
 *
 * Every output is poisoned with NaN first (testutil). Run time: about 5 s on
 * the 2-core development VM (the float64 reference dominates; the 1000 x 1000
 * cases keep B*H = 1). Set TEST_CPU_VERBOSE=1 to print each case's error.
 */
#include "fcase.h"
#include "backend.h"
#include "../src/backend/cpu/cpu_internal.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static sdpa_context *g_cpu, *g_cpu1, *g_ref;

static sdpa_context *cpu_context(int threads)
{
    sdpa_context_options o;
    sdpa_context_options_init(&o);
    o.backend = SDPA_BACKEND_CPU;
    o.threads = threads;
    o.log_level = SDPA_LOG_ERROR;
    sdpa_context *ctx = NULL;
    ck_assert_int_eq(sdpa_context_create(&o, &ctx), SDPA_OK);
    ck_assert_int_eq(sdpa_context_backend(ctx), SDPA_BACKEND_CPU);
    return ctx;
}

static void setup(void)
{
    g_cpu = cpu_context(2);
    g_cpu1 = cpu_context(1);
    sdpa_status st;
    g_ref = tcontext(SDPA_BACKEND_REFERENCE, &st);
    ck_assert_msg(g_ref != NULL, "reference context: %s", sdpa_status_name(st));
}

/* The kernel-set TCases: the contexts of setup() with SDPA_CPU_KERNELS=set. */
static const char *g_kset;

static void setup_kset(const char *set)
{
    g_kset = set;
    setenv("SDPA_CPU_KERNELS", set, 1);
    setup();
    unsetenv("SDPA_CPU_KERNELS");
}
static void setup_generic(void) { setup_kset("generic"); }
static void setup_avx2(void) { setup_kset("avx2"); }
static void setup_avx512(void) { setup_kset("avx512"); }
static void setup_neon(void) { setup_kset("neon"); }

static void teardown(void)
{
    sdpa_context_destroy(g_cpu);
    sdpa_context_destroy(g_cpu1);
    sdpa_context_destroy(g_ref);
    g_cpu = g_cpu1 = g_ref = NULL;
}

/* ---- forward ------------------------------------------------------------ */

/* The parity table (tests/common/parity_cases.c) is run on every backend by
 * the parity suite; here it runs again with each other CPU kernel set
 * (TCases kernels_<set>), against the reference backend. */

/* The parity rows the kernel sets run: every row, or under SDPA_TEST_MAX_LEN
 * (the sanitizer, qemu and Wine steps of .ci/run) those whose query length
 * is at most that, as test_parity.c does; the rows left out are counted on
 * stderr and not registered as tests. */
static int *g_frows, g_nfrows, *g_brows, g_nbrows;

static int pick_rows(const fcase *rows, int n, int **out)
{
    *out = malloc(sizeof(int) * (size_t)(n ? n : 1));
    if (!*out) return 0;
    int k = 0;
    for (int i = 0; i < n; i++)
        if (!tmax_len() || rows[i].Sq <= tmax_len()) (*out)[k++] = i;
    if (k < n)
        fprintf(stderr, "cpu suite: %d parity rows of query length > %lld not run per kernel set "
                "(SDPA_TEST_MAX_LEN)\n", n - k, (long long)tmax_len());
    return k;
}

START_TEST(forward_parity)
{
    const fcase *f = &tparity_fcases[g_frows[_i]];
    tcase c = fcase_make(f, 1234u);
    tcompare r = tparity_forward(g_cpu, g_ref, &c, NULL);
    if (getenv("TEST_CPU_VERBOSE"))
        fprintf(stderr, "%-20s max_abs %.3g rel_l2 %.3g n %zu\n", f->name, r.max_abs, r.rel_l2, r.n);
}
END_TEST

/* A subset with one thread (a different task split and no split-KV). */
START_TEST(forward_parity_one_thread)
{
    static const char *const pick[] = {"len63x65_d64", "len1000_causal_stats", "gqa_dv",
                                       "everything", "decode_gqa", "decode_long"};
    tcase c = fcase_make(tparity_fcase(pick[_i]), 1234u);
    tparity_forward(g_cpu1, g_ref, &c, NULL);
}
END_TEST

/* Forced split-KV and forced tiles through the experimental tile config. */
START_TEST(forward_forced_tiles)
{
    static const struct { int q, k, split; } cfg[] = {
        {16, 16, 1}, {32, 128, 3}, {128, 32, 7}, {SDPA_AUTO, SDPA_AUTO, 5},
    };
    sdpa_tile_config tc;
    sdpa_tile_config_init(&tc);
    sdpa_tile_config_set(&tc, SDPA_TILE_Q_TILE, cfg[_i].q);
    sdpa_tile_config_set(&tc, SDPA_TILE_K_TILE, cfg[_i].k);
    sdpa_tile_config_set(&tc, SDPA_TILE_SPLIT_KV, cfg[_i].split);
    sdpa_plan_options o;
    sdpa_plan_options_init(&o);
    o.tile = &tc;
    tcase c = fcase_make(tparity_fcase("gqa_dv"), 1234u); /* causal bottom-right */
    tparity_forward(g_cpu, g_ref, &c, &o);
    c = fcase_make(tparity_fcase("kvlen_br"), 1234u); /* kv_len */
    tparity_forward(g_cpu, g_ref, &c, &o);
}
END_TEST

/* ---- backward ------------------------------------------------------------------ */

START_TEST(backward_parity)
{
    tcase c = fcase_make(&tparity_bcases[g_brows[_i]], 1234u);
    tcompare r = tparity_backward(g_cpu, g_ref, &c, NULL);
    if (getenv("TEST_CPU_VERBOSE"))
        fprintf(stderr, "%-20s max_abs %.3g rel_l2 %.3g n %zu\n", c.name, r.max_abs, r.rel_l2, r.n);
}
END_TEST

START_TEST(backward_parity_one_thread)
{
    static const char *const pick[] = {"b_causal_gqa", "b_rms_gains", "b_everything"};
    tcase c = fcase_make(tparity_bcase(pick[_i]), 1234u);
    tparity_backward(g_cpu1, g_ref, &c, NULL);
}
END_TEST

/* Runs forward + backward of c on ctx into p (a fresh problem). */
static void run_fb(sdpa_context *ctx, tproblem *p, const tcase *c)
{
    tproblem_make(p, c);
    sdpa_plan_options o;
    sdpa_plan_options_init(&o);
    o.flags = SDPA_PLAN_BACKWARD;
    sdpa_plan *plan = NULL;
    ck_assert_int_eq(sdpa_plan_create(ctx, &p->desc, &o, &plan), SDPA_OK);
    ck_assert_int_eq(sdpa_plan_forward(plan, &p->desc.tensors), SDPA_OK);
    ck_assert_int_eq(sdpa_plan_backward(plan, &p->desc.tensors, &p->bwd), SDPA_OK);
    ck_assert_int_eq(sdpa_context_finish(ctx), SDPA_OK);
    sdpa_plan_destroy(plan);
}

/* Two runs with the same inputs and thread count give the same bits. */
START_TEST(backward_deterministic)
{
    tcase c = fcase_make(tparity_bcase("b_everything"), 1234u);
    c.B = 2;
    c.Sq = 200;
    c.Skv = 260;
    c.temperature = true;
    c.qk_norm = SDPA_QK_NORM_L2;
    tproblem a, b;
    run_fb(g_cpu, &a, &c);
    run_fb(g_cpu, &b, &c);
    const size_t es = c.dtype == SDPA_DTYPE_F32 ? 4 : 2;
    ck_assert(memcmp(a.out, b.out, a.n_out * es) == 0);
    ck_assert(memcmp(a.dq, b.dq, a.n_q * es) == 0);
    ck_assert(memcmp(a.dk, b.dk, a.n_k * es) == 0);
    ck_assert(memcmp(a.dv, b.dv, a.n_v * es) == 0);
    ck_assert(memcmp(a.dq_gain, b.dq_gain, (size_t)c.D * 4) == 0);
    ck_assert(memcmp(a.dk_gain, b.dk_gain, (size_t)c.D * 4) == 0);
    ck_assert(memcmp(a.dtemperature, b.dtemperature, (size_t)c.Hq * 4) == 0);
    tproblem_free(&a);
    tproblem_free(&b);
    /* Without gains or temperature (and without split-KV) the bits do not
     * even depend on the thread count. */
    c = fcase_make(tparity_bcase("b_softcap_bias_mask"), 1234u);
    c.Sq = 300;
    c.Skv = 333;
    c.window_left = 100; /* a band, so tasks start at different keys */
    c.window_right = 0;
    c.diagonal = SDPA_DIAGONAL_BOTTOM_RIGHT;
    run_fb(g_cpu, &a, &c);
    run_fb(g_cpu1, &b, &c);
    ck_assert(memcmp(a.out, b.out, a.n_out * 4) == 0);
    ck_assert(memcmp(a.dq, b.dq, a.n_q * 4) == 0);
    ck_assert(memcmp(a.dk, b.dk, a.n_k * 4) == 0);
    ck_assert(memcmp(a.dv, b.dv, a.n_v * 4) == 0);
    tproblem_free(&a);
    tproblem_free(&b);
}
END_TEST

/* Fully masked rows: out 0, lse -inf, no NaN anywhere, zero gradients. */
START_TEST(empty_rows_are_clean)
{
    tcase c;
    tcase_init(&c, "empty_rows", 2, 2, 2, 20, 30, 32, 32);
    c.kv_len = true; /* batch 0 gets a random kv_len, possibly 0 */
    c.diagonal = SDPA_DIAGONAL_EXPLICIT;
    c.diagonal_offset = -10; /* rows 0..9 see no key at all */
    c.window_right = 0;
    c.lse = true;
    tproblem p;
    run_fb(g_cpu, &p, &c);
    for (int64_t b = 0; b < c.B; b++)
        for (int64_t h = 0; h < c.Hq; h++)
            for (int64_t i = 0; i < 10; i++) {
                const size_t r = (size_t)((b * c.Hq + h) * c.Sq + i);
                ck_assert(isinf(p.lse[r]) && p.lse[r] < 0);
                for (int64_t d = 0; d < c.Dv; d++)
                    ck_assert(((float *)p.out)[r * (size_t)c.Dv + (size_t)d] == 0.0f);
                for (int64_t d = 0; d < c.D; d++)
                    ck_assert(((float *)p.dq)[r * (size_t)c.D + (size_t)d] == 0.0f);
            }
    for (size_t e = 0; e < p.n_out; e++) ck_assert(!isnan(((float *)p.out)[e]));
    for (size_t e = 0; e < p.n_q; e++) ck_assert(!isnan(((float *)p.dq)[e]));
    for (size_t e = 0; e < p.n_k; e++) ck_assert(!isnan(((float *)p.dk)[e]));
    for (size_t e = 0; e < p.n_v; e++) ck_assert(!isnan(((float *)p.dv)[e]));
    tproblem_free(&p);
    tparity_backward(g_cpu, g_ref, &c, NULL);
}
END_TEST

/* Runs only the forward of p on ctx. */
static void run_fwd(sdpa_context *ctx, tproblem *p)
{
    sdpa_plan *plan = NULL;
    ck_assert_int_eq(sdpa_plan_create(ctx, &p->desc, NULL, &plan), SDPA_OK);
    ck_assert_int_eq(sdpa_plan_forward(plan, &p->desc.tensors), SDPA_OK);
    ck_assert_int_eq(sdpa_context_finish(ctx), SDPA_OK);
    sdpa_plan_destroy(plan);
}

/* Non-finite inputs: NaN in one query row, +-inf in one key component, NaN in
 * a V row that a causal band drops for early rows. Non-finite outputs must
 * sit exactly where the reference has them, finite ones agree. */
START_TEST(nonfinite_inputs)
{
    tcase c;
    tcase_init(&c, "nonfinite", 1, 4, 2, 70, 70, 32, 32);
    c.lse = true;
    c.window_right = 0;
    tproblem got, want;
    tproblem_make(&got, &c);
    tproblem_make(&want, &c);
    tproblem *ps[2] = {&got, &want};
    for (int t = 0; t < 2; t++) {
        float *q = ps[t]->q, *k = ps[t]->k, *v = ps[t]->v;
        if (_i == 0) q[(size_t)((1 * 70 + 3) * 32 + 5)] = NAN;        /* head 1, row 3 */
        if (_i == 1) k[(size_t)((0 * 70 + 9) * 32 + 2)] = INFINITY;   /* kv head 0, key 9 */
        if (_i == 2) k[(size_t)((1 * 70 + 20) * 32 + 7)] = -INFINITY; /* kv head 1, key 20 */
        if (_i == 3) v[(size_t)((1 * 70 + 40) * 32 + 1)] = NAN;       /* kv head 1, key 40 */
    }
    run_fwd(g_cpu, &got);
    run_fwd(g_ref, &want);
    tcompare r = tcompare_arrays(got.out, SDPA_DTYPE_F32, want.out, SDPA_DTYPE_F32, got.n_out);
    ck_assert_msg(r.bad_nonfinite == 0 && r.max_abs < 1e-4,
                  "out: %zu non-finite mismatches, max_abs %g (element %zu: got %g want %g)",
                  r.bad_nonfinite, r.max_abs, r.worst, ((float *)got.out)[r.worst],
                  ((float *)want.out)[r.worst]);
    r = tcompare_arrays(got.lse, SDPA_DTYPE_F32, want.lse, SDPA_DTYPE_F32, (size_t)(4 * 70));
    ck_assert_msg(r.bad_nonfinite == 0 && r.max_abs < 1e-4,
                  "lse: %zu non-finite mismatches, max_abs %g", r.bad_nonfinite, r.max_abs);
    tproblem_free(&got);
    tproblem_free(&want);
}
END_TEST

/* The fused plan's workspace does not depend on Skv. */
static size_t workspace_for(sdpa_context *ctx, int64_t Sq, int64_t Skv, bool stats,
                            unsigned flags)
{
    static float dummy[16];
    sdpa_attention_desc d;
    sdpa_attention_desc_init(&d);
    sdpa_attention_desc_set_causal(&d, SDPA_DIAGONAL_BOTTOM_RIGHT);
    d.tensors.q = sdpa_tensor_host(dummy, SDPA_DTYPE_F32, 1, 8, Sq, 64);
    d.tensors.k = sdpa_tensor_host(dummy, SDPA_DTYPE_F32, 1, 8, Skv, 64);
    d.tensors.v = sdpa_tensor_host(dummy, SDPA_DTYPE_F32, 1, 8, Skv, 64);
    d.tensors.out = sdpa_tensor_host(dummy, SDPA_DTYPE_F32, 1, 8, Sq, 64);
    d.tensors.lse = sdpa_tensor_host(dummy, SDPA_DTYPE_F32, 1, 8, Sq, 1);
    if (stats)
        d.tensors.stats = sdpa_tensor_host(dummy, SDPA_DTYPE_F32, 1, 8, 1, SDPA_STAT_COUNT);
    sdpa_plan_options o;
    sdpa_plan_options_init(&o);
    o.flags = flags;
    sdpa_plan *plan = NULL;
    sdpa_status st = sdpa_plan_create(ctx, &d, &o, &plan);
    ck_assert_msg(st == SDPA_OK, "plan_create: %s", sdpa_status_name(st));
    size_t ws = sdpa_plan_workspace_size(plan);
    sdpa_plan_info info;
    memset(&info, 0, sizeof info);
    info.struct_size = sizeof info;
    ck_assert_int_eq(sdpa_plan_get_info(plan, &info), SDPA_OK);
    ck_assert_str_eq(info.kernel, "fused");
    sdpa_plan_destroy(plan);
    return ws;
}

START_TEST(workspace_independent_of_skv)
{
    const size_t a = workspace_for(g_cpu, 1024, 1024, false, 0);
    const size_t b = workspace_for(g_cpu, 1024, 65536, false, 0);
    ck_assert_uint_eq(a, b);
    ck_assert_uint_lt(a, (size_t)4 << 20);
    ck_assert_uint_eq(workspace_for(g_cpu, 1024, 1024, true, SDPA_PLAN_BACKWARD),
                      workspace_for(g_cpu, 1024, 65536, true, SDPA_PLAN_BACKWARD));
}
END_TEST

/* Sq = 1 with one KV head and a long cache takes the split-KV decode path
 * with two threads (its parity is checked by the decode_long case). */
/* sdpa_plan_get_info of g_cpu's default plan for forward case f. */
static sdpa_plan_info plan_info_of(const fcase *f)
{
    tcase c = fcase_make(f, 1234u);
    return tplan_info(g_cpu, &c);
}

START_TEST(decode_uses_split_kv)
{
    /* decode_long: B1 Hq4 Hkv1 Sq1 Skv4100 */
    sdpa_plan_info info = plan_info_of(tparity_fcase("decode_long"));
    ck_assert_msg(strcmp(info.kernel, "decode") == 0, "kernel %s (%s)", info.kernel, info.config);
}
END_TEST

/* The tuner's view of the backend (src/core/backend.h tuning slots): the
 * default equals what a plan without a tile uses, and every candidate the
 * backend offers computes the right answer, on a prefill and a decode shape. */
START_TEST(tile_candidates_are_valid)
{
    const sdpa__backend *be = sdpa__backend_get(SDPA_BACKEND_CPU);
    ck_assert(be && be->default_tile && be->tile_candidates && be->source_hash);
    ck_assert(strlen(be->source_hash()) > 0);
    tcase c;
    tcase_init(&c, "candidates prefill", 1, 2, 1, 65, 257, 64, 64);
    for (int shape = 0; shape < 2; shape++) {
        if (shape == 1) {
            tcase_init(&c, "candidates decode", 1, 4, 1, 1, 4099, 64, 32);
            c.kv_len = false;
        }
        c.lse = true;
        sdpa__problem p;
        memset(&p, 0, sizeof p);
        p.B = c.B; p.Hq = c.Hq; p.Hkv = c.Hkv; p.Sq = c.Sq; p.Skv = c.Skv;
        p.D = c.D; p.Dv = c.Dv; p.dtype = c.dtype; p.has_lse = true;
        p.window_left = p.window_right = -1;
        sdpa_tile_config tiles[64], def;
        int n = be->tile_candidates(NULL, NULL, &p, 0, tiles, 64);
        ck_assert_int_ge(n, 2);
        ck_assert_int_le(n, 64);
        be->default_tile(NULL, NULL, &p, 0, NULL, &def);
        bool has_default = false;
        for (int i = 0; i < n; i++) {
            if (TGET(&tiles[i], Q_TILE) == TGET(&def, Q_TILE) &&
                TGET(&tiles[i], K_TILE) == TGET(&def, K_TILE) &&
                TGET(&tiles[i], SPLIT_KV) == TGET(&def, SPLIT_KV))
                has_default = true;
            sdpa_plan_options o;
            sdpa_plan_options_init(&o);
            o.tile = &tiles[i];
            c.seed = (uint64_t)(100 + i);
            tparity_forward(g_cpu, g_ref, &c, &o);
        }
        ck_assert_msg(has_default, "the default tile is among the candidates");
    }
}
END_TEST

/* The fixture's kernel set is the one the plans run (the switch took effect). */
START_TEST(kset_in_effect)
{
    sdpa_plan_info info = plan_info_of(&tparity_fcases[0]);
    char want[64];
    snprintf(want, sizeof want, "kernels=%s", g_kset);
    ck_assert_msg(strstr(info.config, want) != NULL, "%s: %s", want, info.config);
}
END_TEST

/* Which kernels a cpu context picks with SDPA_CPU_KERNELS=set (NULL: unset),
 * and the reason (the cpu device's details). */
static void kernels_picked(const char *set, char *details, size_t cap)
{
    if (set)
        setenv("SDPA_CPU_KERNELS", set, 1);
    sdpa_device_info info;
    memset(&info, 0, sizeof info);
    info.struct_size = sizeof info;
    sdpa_status st = sdpa_device_get_info(SDPA_BACKEND_CPU, 0, &info);
    unsetenv("SDPA_CPU_KERNELS");
    snprintf(details, cap, "%s", st == SDPA_OK ? info.details : sdpa_status_name(st));
}

/* ---- issue 19: ALiBi, sinks, mixed-precision, q8_0 / q4_0 and paged K/V --
 * Each case against the float64 reference run on an equivalent problem the
 * first feature set expresses: q and the dequantized (and, when paged,
 * gathered) K/V as f32, ALiBi as its bias tensor -slope_h |i + off - j|, and
 * sinks applied to the reference's result exactly (out * e^{lse - lse_s},
 * lse_s = log(e^{lse} + e^{sink})). The backward with sinks runs the reference
 * on one more key with k = v = 0 whose bias is the sink (no band, so it is
 * kept), and dsinks is checked against -sum_i e^{sink - lse_i} rowsum(dO o O)
 * from the reference's out and lse. Random inputs (no zeros), outputs
 * poisoned with NaN, lengths 1, 7, 63, 65, 257, 1000 for decode (Sq 1) and
 * prefill (Sq = Skv). */

typedef struct xcase {
    const char *name;
    sdpa_dtype qdt, kvdt;
    bool alibi, sinks, paged, causal;
    int page;
    int64_t B, Hq, Hkv;
} xcase;

static const xcase k_xcases[] = {
    {"alibi", SDPA_DTYPE_F32, SDPA_DTYPE_F32, true, false, false, true, 0, 2, 4, 2},
    {"sinks", SDPA_DTYPE_F16, SDPA_DTYPE_F16, false, true, false, true, 0, 2, 4, 2},
    {"f32q_f16kv", SDPA_DTYPE_F32, SDPA_DTYPE_F16, false, false, false, true, 0, 2, 4, 2},
    {"bf16q_f32kv_alibi", SDPA_DTYPE_BF16, SDPA_DTYPE_F32, true, false, false, false, 0, 1, 4, 1},
    {"f16q_bf16kv_sinks", SDPA_DTYPE_F16, SDPA_DTYPE_BF16, false, true, false, false, 0, 1, 4, 4},
    {"f32q_q8_0", SDPA_DTYPE_F32, SDPA_DTYPE_Q8_0, false, false, false, true, 0, 2, 4, 2},
    {"f16q_q4_0", SDPA_DTYPE_F16, SDPA_DTYPE_Q4_0, false, false, false, false, 0, 1, 8, 2},
    {"paged16_f32", SDPA_DTYPE_F32, SDPA_DTYPE_F32, false, false, true, true, 16, 2, 4, 2},
    {"paged16_q8_0_sinks_alibi_f16q", SDPA_DTYPE_F16, SDPA_DTYPE_Q8_0, true, true, true, true,
     16, 2, 4, 2},
    {"paged5_q4_0_sinks", SDPA_DTYPE_F32, SDPA_DTYPE_Q4_0, false, true, true, false, 5, 2, 4, 1},
    {"split_q8_0_sinks_alibi", SDPA_DTYPE_F32, SDPA_DTYPE_Q8_0, true, true, false, false, 0, 1, 4,
     1},
    {"paged3_bf16_alibi_bf16q", SDPA_DTYPE_BF16, SDPA_DTYPE_BF16, true, false, true, true, 3, 2, 2,
     2},
};
#define N_XCASES ((int)(sizeof k_xcases / sizeof k_xcases[0]))
static const int64_t k_xlens[] = {1, 7, 63, 65, 257, 1000};
#define N_XLENS 6

/* SDPA_TEST_MAX_LEN=N bounds the features cases' lengths for the slow
 * instrumented runs (.ci/run's sanitizer, qemu and Wine steps, where the
 * float64 reference at 1000 x 1000 costs minutes); lengths above N are not
 * run and said so on stderr. The plain test step runs every length. */
static bool xlen_skipped(int64_t L)
{
    const int64_t max = tmax_len();
    if (max <= 0 || L <= max) return false;
    static bool said;
    if (!said)
        fprintf(stderr, "cpu suite: features cases of length > %lld not run (SDPA_TEST_MAX_LEN)\n",
                (long long)max);
    said = true;
    return true;
}
#define XD 64

static uint32_t xnext(uint32_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 17;
    *s ^= *s << 5;
    return *s;
}
/* Uniform in [-1, 1), never 0. */
static float xuni(uint32_t *s)
{
    const float u = (float)(xnext(s) >> 8) / 8388608.0f - 1.0f;
    return u == 0.0f ? 0.5f : u;
}

static void xstore(void *base, sdpa_dtype dt, size_t e, float v) { tstore(base, dt, e, v); }
static float xload(const void *base, sdpa_dtype dt, size_t e) { return (float)tload(base, dt, e); }
static const char *xerr(sdpa_context *ctx)
{
    sdpa_error_info info;
    memset(&info, 0, sizeof info);
    sdpa_context_last_error(ctx, &info);
    return info.message ? info.message : "";
}
/* Element d of a row of dtype dt starting at byte p (the test's own decoder). */
static float xrow_elem(const unsigned char *p, sdpa_dtype dt, int64_t d)
{
    if (dt == SDPA_DTYPE_Q8_0 || dt == SDPA_DTYPE_Q4_0) {
        const unsigned char *blk = p + (size_t)(d / 32) * (dt == SDPA_DTYPE_Q8_0 ? 34 : 18);
        const uint16_t h = (uint16_t)(blk[0] | blk[1] << 8);
        const float s = xload(&h, SDPA_DTYPE_F16, 0);
        const int t = (int)(d % 32);
        if (dt == SDPA_DTYPE_Q8_0) return s * (float)(int8_t)blk[2 + t];
        return s * (float)((t < 16 ? blk[2 + t] & 15 : blk[2 + t - 16] >> 4) - 8);
    }
    return xload(p, dt, (size_t)d);
}
/* Fills n rows of D elements of dtype dt with random values (random blocks:
 * an f16 scale in [0.02, 0.05) and random q, never all zero). */
static void xfill_rows(unsigned char *p, sdpa_dtype dt, int64_t n, int64_t D, uint32_t *s)
{
    if (dt == SDPA_DTYPE_Q8_0 || dt == SDPA_DTYPE_Q4_0) {
        const size_t ub = dt == SDPA_DTYPE_Q8_0 ? 34 : 18;
        for (int64_t b = 0; b < n * D / 32; b++) {
            unsigned char *blk = p + (size_t)b * ub;
            uint16_t h;
            xstore(&h, SDPA_DTYPE_F16, 0, 0.035f + 0.015f * xuni(s));
            blk[0] = (unsigned char)(h & 255);
            blk[1] = (unsigned char)(h >> 8);
            for (size_t t = 2; t < ub; t++) {
                unsigned char v = (unsigned char)(xnext(s) >> 11);
                if (dt == SDPA_DTYPE_Q8_0 && (v == 0 || v == 128)) v = 77;
                blk[t] = v;
            }
        }
        return;
    }
    for (int64_t e = 0; e < n * D; e++) xstore(p, dt, (size_t)e, xuni(s));
}
static size_t xrow_bytes(sdpa_dtype dt, int64_t D)
{
    return (size_t)(D / sdpa_dtype_block_elems(dt)) * sdpa_dtype_size(dt);
}

/* One problem: the tested call's tensors and the oracle's f32 equivalents. */
typedef struct xprob {
    int64_t B, Hq, Hkv, Sq, Skv, D, pages, maxp;
    unsigned char *q, *k, *v, *out; /* tested call's storage */
    int32_t *kv_len, *table;
    float *slopes, *sinks, *lse, *stats;
    float *oq, *ok, *ov, *obias, *oout, *olse; /* oracle (f32, SkvL keys) */
    int64_t oskv;                              /* the oracle's key count */
} xprob;

static void xprob_free(xprob *x)
{
    free(x->q); free(x->k); free(x->v); free(x->out); free(x->kv_len); free(x->table);
    free(x->slopes); free(x->sinks); free(x->lse); free(x->stats); free(x->oq); free(x->ok);
    free(x->ov); free(x->obias); free(x->oout); free(x->olse);
    memset(x, 0, sizeof *x);
}

/* Builds the problem of case c with head dim D (= Dv), Sq queries and Skv
 * keys; fills d (the tested call) and od (the oracle's). extra_key: one more
 * oracle key with k = v = 0 and bias = sink (the backward's sink check). */
static void xprob_make_d(xprob *x, const xcase *c, int64_t D, int64_t Sq, int64_t Skv,
                         uint32_t seed, bool extra_key, sdpa_attention_desc *d,
                         sdpa_attention_desc *od)
{
    uint32_t s = seed * 2654435761u + 12345u;
    memset(x, 0, sizeof *x);
    x->B = c->B; x->Hq = c->Hq; x->Hkv = c->Hkv; x->Sq = Sq; x->D = D;
    const int64_t B = c->B, Hq = c->Hq, Hkv = c->Hkv;
    const size_t qe = sdpa_dtype_size(c->qdt), rb = xrow_bytes(c->kvdt, D);
    x->q = malloc((size_t)(B * Hq * Sq * D) * qe);
    xfill_rows(x->q, c->qdt, B * Hq * Sq, D, &s);
    /* keys: logical Skv (paged: max_pages * page) */
    int64_t nrows; /* K/V rows in storage per head */
    if (c->paged) {
        x->maxp = (Skv + c->page - 1) / c->page;
        x->Skv = x->maxp * c->page;
        x->pages = B * x->maxp + 3; /* a few pages nobody uses */
        nrows = x->pages * c->page;
    } else {
        x->Skv = Skv;
        nrows = B * Skv;
    }
    x->k = malloc((size_t)(nrows * Hkv) * rb);
    x->v = malloc((size_t)(nrows * Hkv) * rb);
    xfill_rows(x->k, c->kvdt, nrows * Hkv, D, &s);
    xfill_rows(x->v, c->kvdt, nrows * Hkv, D, &s);
    const bool use_len = c->paged || c->causal;
    x->kv_len = malloc((size_t)B * sizeof(int32_t));
    for (int64_t b = 0; b < B; b++) /* batch 0: any count; others at least Skv / 2 */
        x->kv_len[b] = (int32_t)(b == 0 ? xnext(&s) % (uint32_t)(Skv + 1)
                                        : Skv - (int64_t)(xnext(&s) % (uint32_t)(Skv / 2 + 1)));
    if (c->paged) { /* a random permutation of the pool's pages */
        int32_t *perm = malloc((size_t)x->pages * sizeof(int32_t));
        for (int64_t i = 0; i < x->pages; i++) perm[i] = (int32_t)i;
        for (int64_t i = x->pages - 1; i > 0; i--) {
            const int64_t j = xnext(&s) % (uint32_t)(i + 1);
            const int32_t t = perm[i]; perm[i] = perm[j]; perm[j] = t;
        }
        x->table = malloc((size_t)(B * x->maxp) * sizeof(int32_t));
        for (int64_t i = 0; i < B * x->maxp; i++) x->table[i] = perm[i];
        free(perm);
    }
    x->slopes = malloc((size_t)Hq * sizeof(float));
    x->sinks = malloc((size_t)Hq * sizeof(float));
    for (int64_t h = 0; h < Hq; h++) {
        x->slopes[h] = (float)(h + 1) * 0.05f * (0.5f + 0.5f * fabsf(xuni(&s)));
        x->sinks[h] = h == 1 ? -INFINITY : 2.0f * xuni(&s); /* head 1: no sink */
    }
    x->out = malloc((size_t)(B * Hq * Sq * D) * qe);
    x->lse = malloc((size_t)(B * Hq * Sq) * sizeof(float));
    for (size_t e = 0; e < (size_t)(B * Hq * Sq * D); e++) xstore(x->out, c->qdt, e, NAN);
    for (size_t e = 0; e < (size_t)(B * Hq * Sq); e++) x->lse[e] = NAN;

    /* the tested call */
    sdpa_attention_desc_init(d);
    if (c->causal) {
        sdpa_attention_desc_set_causal(d, SDPA_DIAGONAL_BOTTOM_RIGHT);
    }
    sdpa_forward_tensors *t = &d->tensors;
    t->q = sdpa_tensor_host(x->q, c->qdt, B, Hq, Sq, D);
    if (c->paged) {
        t->k_pages = sdpa_tensor_host(x->k, c->kvdt, x->pages, Hkv, c->page, D);
        t->v_pages = sdpa_tensor_host(x->v, c->kvdt, x->pages, Hkv, c->page, D);
        t->block_table = sdpa_tensor_host(x->table, SDPA_DTYPE_I32, B, 1, 1, x->maxp);
    } else {
        t->k = sdpa_tensor_host(x->k, c->kvdt, B, Hkv, Skv, D);
        t->v = sdpa_tensor_host(x->v, c->kvdt, B, Hkv, Skv, D);
    }
    if (use_len) t->kv_len = sdpa_tensor_host(x->kv_len, SDPA_DTYPE_I32, B, 1, 1, 1);
    if (c->alibi) t->alibi_slopes = sdpa_tensor_host(x->slopes, SDPA_DTYPE_F32, 1, Hq, 1, 1);
    if (c->sinks) t->sinks = sdpa_tensor_host(x->sinks, SDPA_DTYPE_F32, 1, Hq, 1, 1);
    t->out = sdpa_tensor_host(x->out, c->qdt, B, Hq, Sq, D);
    t->lse = sdpa_tensor_host(x->lse, SDPA_DTYPE_F32, B, Hq, Sq, 1);

    /* the oracle: f32 q, the dequantized / gathered K/V, ALiBi as a bias */
    const int64_t L = x->Skv + (extra_key ? 1 : 0);
    x->oskv = L;
    x->oq = malloc((size_t)(B * Hq * Sq * D) * sizeof(float));
    for (size_t e = 0; e < (size_t)(B * Hq * Sq * D); e++) x->oq[e] = xload(x->q, c->qdt, e);
    x->ok = calloc((size_t)(B * Hkv * L * D), sizeof(float));
    x->ov = calloc((size_t)(B * Hkv * L * D), sizeof(float));
    for (int64_t b = 0; b < B; b++)
        for (int64_t h = 0; h < Hkv; h++)
            for (int64_t j = 0; j < x->Skv; j++) {
                size_t row; /* storage row of (b, h, j) */
                if (c->paged)
                    row = (size_t)((x->table[b * x->maxp + j / c->page] * Hkv + h) * c->page +
                                   j % c->page);
                else
                    row = (size_t)((b * Hkv + h) * Skv + j);
                for (int64_t dd = 0; dd < D; dd++) {
                    const size_t o = (size_t)(((b * Hkv + h) * L + j) * D + dd);
                    x->ok[o] = xrow_elem(x->k + row * rb, c->kvdt, dd);
                    x->ov[o] = xrow_elem(x->v + row * rb, c->kvdt, dd);
                }
            }
    x->oout = malloc((size_t)(B * Hq * Sq * D) * sizeof(float));
    x->olse = malloc((size_t)(B * Hq * Sq) * sizeof(float));
    sdpa_attention_desc_init(od);
    od->window_left = d->window_left;
    od->window_right = d->window_right;
    od->diagonal = d->diagonal;
    sdpa_forward_tensors *o = &od->tensors;
    o->q = sdpa_tensor_host(x->oq, SDPA_DTYPE_F32, B, Hq, Sq, D);
    o->k = sdpa_tensor_host(x->ok, SDPA_DTYPE_F32, B, Hkv, L, D);
    o->v = sdpa_tensor_host(x->ov, SDPA_DTYPE_F32, B, Hkv, L, D);
    o->out = sdpa_tensor_host(x->oout, SDPA_DTYPE_F32, B, Hq, Sq, D);
    o->lse = sdpa_tensor_host(x->olse, SDPA_DTYPE_F32, B, Hq, Sq, 1);
    if (use_len) o->kv_len = t->kv_len;
    if (c->alibi || extra_key) {
        x->obias = malloc((size_t)(B * Hq * Sq * L) * sizeof(float));
        for (int64_t b = 0; b < B; b++) {
            const int64_t off = c->causal ? (use_len ? x->kv_len[b] : x->Skv) - Sq : 0;
            for (int64_t h = 0; h < Hq; h++)
                for (int64_t i = 0; i < Sq; i++)
                    for (int64_t j = 0; j < L; j++) {
                        const int64_t dist = llabs(i + off - j);
                        float v = c->alibi ? -x->slopes[h] * (float)dist : 0.0f;
                        if (extra_key && j == x->Skv) v = x->sinks[h];
                        x->obias[((b * Hq + h) * Sq + i) * L + j] = v;
                    }
        }
        o->bias = sdpa_tensor_host(x->obias, SDPA_DTYPE_F32, B, Hq, Sq, L);
    }
}

/* The same at the features cases' head dim XD. */
static void xprob_make(xprob *x, const xcase *c, int64_t Sq, int64_t Skv, uint32_t seed,
                       bool extra_key, sdpa_attention_desc *d, sdpa_attention_desc *od)
{
    xprob_make_d(x, c, XD, Sq, Skv, seed, extra_key, d, od);
}

static void xrun_forward(sdpa_context *ctx, sdpa_attention_desc *d)
{
    sdpa_plan *plan = NULL;
    const sdpa_status st = sdpa_plan_create(ctx, d, NULL, &plan);
    ck_assert_msg(st == SDPA_OK, "plan: %s: %s", sdpa_status_name(st),
                  xerr(ctx));
    ck_assert_int_eq(sdpa_plan_forward(plan, &d->tensors), SDPA_OK);
    ck_assert_int_eq(sdpa_context_finish(ctx), SDPA_OK);
    sdpa_plan_destroy(plan);
}

static double xtol(sdpa_dtype dt)
{
    return dt == SDPA_DTYPE_BF16 ? 1.6e-2 : dt == SDPA_DTYPE_F16 ? 2.5e-3 : 2e-5;
}

/* Case c at head dim D, Sq queries x Skv keys on g_cpu against the oracle. */
static void xcheck_forward_d(const xcase *c, int64_t D, int64_t Sq, int64_t Skv, uint32_t seed)
{
    xprob x;
    sdpa_attention_desc d, od;
    xprob_make_d(&x, c, D, Sq, Skv, seed, false, &d, &od);
    xrun_forward(g_cpu, &d);
    xrun_forward(g_ref, &od);
    const int64_t rows = x.B * x.Hq * x.Sq;
    const double tol = xtol(c->qdt);
    for (int64_t r = 0; r < rows; r++) {
        const int64_t h = r / x.Sq % x.Hq;
        double lse = x.olse[r], f = 1.0;
        if (c->sinks && x.sinks[h] > -INFINITY) {
            const double sk = x.sinks[h];
            const double ls = lse == -INFINITY ? sk : fmax(lse, sk) + log1p(exp(-fabs(lse - sk)));
            f = lse == -INFINITY ? 0.0 : exp(lse - ls);
            lse = ls;
        }
        const float gl = x.lse[r];
        ck_assert_msg(lse == -INFINITY ? gl == -INFINITY : fabs(gl - lse) <= 1e-4 * (1 + fabs(lse)),
                      "%s Sq%lld Skv%lld: lse[%lld] = %g, want %g", c->name, (long long)Sq,
                      (long long)Skv, (long long)r, gl, lse);
        for (int64_t e = 0; e < x.D; e++) {
            const double want = x.oout[r * x.D + e] * f;
            const float got = xload(x.out, c->qdt, (size_t)(r * x.D + e));
            ck_assert_msg(fabs(got - want) <= tol * (1 + fabs(want)),
                          "%s Sq%lld Skv%lld: out[%lld][%lld] = %g, want %g", c->name,
                          (long long)Sq, (long long)Skv, (long long)r, (long long)e, got, want);
        }
    }
    xprob_free(&x);
}

static void xcheck_forward(const xcase *c, int64_t Sq, int64_t Skv, uint32_t seed)
{
    xcheck_forward_d(c, XD, Sq, Skv, seed);
}

/* Decode (Sq 1) and prefill (Sq = Skv) of case _i / N_XLENS at length _i % N_XLENS. */
START_TEST(features_forward)
{
    const xcase *c = &k_xcases[_i / N_XLENS];
    const int64_t L = k_xlens[_i % N_XLENS];
    if (xlen_skipped(L)) return;
    xcheck_forward(c, 1, L, (uint32_t)_i + 1);
    xcheck_forward(c, L, L, (uint32_t)_i + 101);
}
END_TEST

/* The same with each other kernel set, up to length 257. */
START_TEST(features_forward_short)
{
    const xcase *c = &k_xcases[_i / (N_XLENS - 1)];
    const int64_t L = k_xlens[_i % (N_XLENS - 1)];
    if (xlen_skipped(L)) return;
    xcheck_forward(c, 1, L, (uint32_t)_i + 7);
    xcheck_forward(c, L, L, (uint32_t)_i + 107);
}
END_TEST

/* Decode (Sq 1) with the head dims and group sizes the decode kernels
 * (dots_kv / pv_kv) split unevenly: groups of 5 and 3 query heads (row
 * blocks of 4 and 1, or 3), D = 96 and 160 (block rows of 3 and 5 blocks,
 * a last pv_kv column chunk of 32 on AVX-512) and D = 40 / 24 (partial
 * vectors of f16 / bf16 / f32), f32 at D = 160 and 100 (AVX-512's pv_kv
 * passes of 2 rows x 128 columns, then 1 row; masked at 100 and in the last
 * 32 of 160; AVX2's walks over whole rows of 128 columns, then 32), f16 at
 * D = 100 (a partial last vector converted), contiguous and paged (pages of 3, 17 and 1
 * key: page ends inside the kernels' blocks of 4 (or 2) keys and inside a
 * 64-key tile, whose row table then spans several pages), at lengths 1, 7,
 * 65, 200 (partial key groups and tiles) and 1000 (past a decode task's
 * 256-key tile: the second tile rescales O as pv_kv loads it). */
static const struct { xcase c; int64_t D; } k_xdcases[] = {
    {{"dec_q8_0_g5_d96", SDPA_DTYPE_F32, SDPA_DTYPE_Q8_0, false, false, false, false, 0, 1, 5, 1},
     96},
    {{"dec_q4_0_g3_d160_paged16", SDPA_DTYPE_F32, SDPA_DTYPE_Q4_0, false, false, true, false, 16, 1,
      6, 2},
     160},
    {{"dec_q4_0_g5_d96_sinks", SDPA_DTYPE_F16, SDPA_DTYPE_Q4_0, false, true, false, true, 0, 2, 5,
      1},
     96},
    {{"dec_q8_0_g4_d128_paged16", SDPA_DTYPE_F32, SDPA_DTYPE_Q8_0, false, false, true, false, 16, 1,
      8, 2},
     128},
    {{"dec_f16_g5_d40", SDPA_DTYPE_F32, SDPA_DTYPE_F16, false, false, false, false, 0, 1, 5, 1}, 40},
    {{"dec_bf16_g3_d24", SDPA_DTYPE_F32, SDPA_DTYPE_BF16, false, false, false, true, 0, 2, 3, 1},
     24},
    {{"dec_f32_g5_d40_paged3", SDPA_DTYPE_F32, SDPA_DTYPE_F32, false, false, true, false, 3, 1, 5,
      1},
     40},
    {{"dec_f16_g4_d128_paged17", SDPA_DTYPE_F32, SDPA_DTYPE_F16, false, false, true, false, 17, 1,
      4, 1},
     128},
    {{"dec_q4_0_g3_d64_paged1", SDPA_DTYPE_F32, SDPA_DTYPE_Q4_0, false, true, true, false, 1, 2, 3,
      1},
     64},
    {{"dec_f32_g5_d160", SDPA_DTYPE_F32, SDPA_DTYPE_F32, false, false, false, false, 0, 1, 5, 1},
     160},
    {{"dec_f32_g3_d100_paged5", SDPA_DTYPE_F32, SDPA_DTYPE_F32, false, false, true, false, 5, 1, 3,
      1},
     100},
    {{"dec_f16_g2_d100", SDPA_DTYPE_F32, SDPA_DTYPE_F16, false, false, false, false, 0, 1, 2, 1},
     100},
};
#define N_XDCASES ((int)(sizeof k_xdcases / sizeof k_xdcases[0]))
static const int64_t k_xdlens[] = {1, 7, 65, 200, 1000};
#define N_XDLENS 5

START_TEST(features_decode_widths)
{
    xcheck_forward_d(&k_xdcases[_i / N_XDLENS].c, k_xdcases[_i / N_XDLENS].D, 1,
                     k_xdlens[_i % N_XDLENS], (uint32_t)_i + 301);
}
END_TEST

/* Backward with ALiBi and / or sinks (dsinks), mixed K/V dtype. */
static const xcase k_xbcases[] = {
    {"bwd_alibi", SDPA_DTYPE_F32, SDPA_DTYPE_F32, true, false, false, false, 0, 2, 4, 2},
    {"bwd_sinks", SDPA_DTYPE_F32, SDPA_DTYPE_F32, false, true, false, false, 0, 2, 4, 2},
    {"bwd_alibi_sinks_f16q_bf16kv", SDPA_DTYPE_F16, SDPA_DTYPE_BF16, true, true, false, false, 0,
     1, 4, 1},
    {"bwd_f32q_f16kv", SDPA_DTYPE_F32, SDPA_DTYPE_F16, false, false, false, false, 0, 1, 2, 2},
};
#define N_XBCASES ((int)(sizeof k_xbcases / sizeof k_xbcases[0]))

static void xcheck_backward(const xcase *c, int64_t Sq, int64_t Skv, uint32_t seed)
{
    xprob x;
    sdpa_attention_desc d, od;
    xprob_make(&x, c, Sq, Skv, seed, c->sinks, &d, &od);
    const int64_t B = x.B, Hq = x.Hq, Hkv = x.Hkv, D = x.D, L = x.oskv;
    const size_t nq = (size_t)(B * Hq * Sq * D), nk = (size_t)(B * Hkv * Skv * D);
    const size_t qe = sdpa_dtype_size(c->qdt), ke = sdpa_dtype_size(c->kvdt);
    uint32_t s = seed + 99u;
    unsigned char *dout = malloc(nq * qe), *dq = malloc(nq * qe), *dk = malloc(nk * ke),
                  *dv = malloc(nk * ke);
    float *odout = malloc(nq * sizeof(float)), *odq = malloc(nq * sizeof(float));
    float *odk = malloc((size_t)(B * Hkv * L * D) * sizeof(float));
    float *odv = malloc((size_t)(B * Hkv * L * D) * sizeof(float));
    float dsinks[16];
    for (size_t e = 0; e < nq; e++) {
        xstore(dout, c->qdt, e, xuni(&s));
        odout[e] = xload(dout, c->qdt, e);
        xstore(dq, c->qdt, e, NAN);
    }
    for (size_t e = 0; e < nk; e++) {
        xstore(dk, c->kvdt, e, NAN);
        xstore(dv, c->kvdt, e, NAN);
    }
    for (int h = 0; h < 16; h++) dsinks[h] = NAN;
    sdpa_backward_tensors g, og;
    memset(&g, 0, sizeof g);
    memset(&og, 0, sizeof og);
    g.dout = sdpa_tensor_host(dout, c->qdt, B, Hq, Sq, D);
    g.dq = sdpa_tensor_host(dq, c->qdt, B, Hq, Sq, D);
    g.dk = sdpa_tensor_host(dk, c->kvdt, B, Hkv, Skv, D);
    g.dv = sdpa_tensor_host(dv, c->kvdt, B, Hkv, Skv, D);
    if (c->sinks) g.dsinks = sdpa_tensor_host(dsinks, SDPA_DTYPE_F32, 1, Hq, 1, 1);
    og.dout = sdpa_tensor_host(odout, SDPA_DTYPE_F32, B, Hq, Sq, D);
    og.dq = sdpa_tensor_host(odq, SDPA_DTYPE_F32, B, Hq, Sq, D);
    og.dk = sdpa_tensor_host(odk, SDPA_DTYPE_F32, B, Hkv, L, D);
    og.dv = sdpa_tensor_host(odv, SDPA_DTYPE_F32, B, Hkv, L, D);
    sdpa_context *ctxs[2] = {g_cpu, g_ref};
    sdpa_attention_desc *ds[2] = {&d, &od};
    sdpa_backward_tensors *gs[2] = {&g, &og};
    for (int w = 0; w < 2; w++) {
        sdpa_plan_options po;
        sdpa_plan_options_init(&po);
        po.flags = SDPA_PLAN_BACKWARD;
        sdpa_plan *plan = NULL;
        const sdpa_status st = sdpa_plan_create(ctxs[w], ds[w], &po, &plan);
        ck_assert_msg(st == SDPA_OK, "%s: plan: %s", c->name, xerr(ctxs[w]));
        ck_assert_int_eq(sdpa_plan_forward(plan, &ds[w]->tensors), SDPA_OK);
        ck_assert_int_eq(sdpa_plan_backward(plan, &ds[w]->tensors, gs[w]), SDPA_OK);
        ck_assert_int_eq(sdpa_context_finish(ctxs[w]), SDPA_OK);
        sdpa_plan_destroy(plan);
    }
    const double tq = xtol(c->qdt) * 5, tk = xtol(c->kvdt) * 5;
    for (size_t e = 0; e < nq; e++) {
        const float got = xload(dq, c->qdt, e);
        ck_assert_msg(fabs(got - odq[e]) <= tq * (1 + fabs(odq[e])), "%s Sq%lld: dq[%zu] %g want %g",
                      c->name, (long long)Sq, e, got, odq[e]);
    }
    for (int64_t b = 0; b < B; b++)
        for (int64_t h = 0; h < Hkv; h++)
            for (int64_t j = 0; j < Skv; j++)
                for (int64_t e = 0; e < D; e++) {
                    const size_t i = (size_t)(((b * Hkv + h) * Skv + j) * D + e);
                    const size_t oi = (size_t)(((b * Hkv + h) * L + j) * D + e);
                    const float gk = xload(dk, c->kvdt, i), gv = xload(dv, c->kvdt, i);
                    ck_assert_msg(fabs(gk - odk[oi]) <= tk * (1 + fabs(odk[oi])),
                                  "%s Sq%lld: dk[%zu] %g want %g", c->name, (long long)Sq, i, gk,
                                  odk[oi]);
                    ck_assert_msg(fabs(gv - odv[oi]) <= tk * (1 + fabs(odv[oi])),
                                  "%s Sq%lld: dv[%zu] %g want %g", c->name, (long long)Sq, i, gv,
                                  odv[oi]);
                }
    if (c->sinks)
        for (int64_t h = 0; h < Hq; h++) {
            double want = 0, mag = 0;
            for (int64_t b = 0; b < B; b++)
                for (int64_t i = 0; i < Sq; i++) {
                    const int64_t r = (b * Hq + h) * Sq + i;
                    double dr = 0;
                    for (int64_t e = 0; e < D; e++) dr += (double)odout[r * D + e] * x.oout[r * D + e];
                    const double ps = x.sinks[h] == -INFINITY ? 0 : exp(x.sinks[h] - x.olse[r]);
                    want -= ps * dr;
                    mag += fabs(ps * dr);
                }
            ck_assert_msg(fabs(dsinks[h] - want) <= tq * (1 + mag), "%s Sq%lld: dsinks[%lld] %g want %g",
                          c->name, (long long)Sq, (long long)h, dsinks[h], want);
        }
    free(dout); free(dq); free(dk); free(dv); free(odout); free(odq); free(odk); free(odv);
    xprob_free(&x);
}

START_TEST(features_backward)
{
    const xcase *c = &k_xbcases[_i / (N_XLENS - 1)];
    const int64_t L = k_xlens[_i % (N_XLENS - 1)];
    if (xlen_skipped(L)) return;
    xcheck_backward(c, L, L, (uint32_t)_i + 3);
    xcheck_backward(c, 1, L, (uint32_t)_i + 33);
}
END_TEST


/* With the reference backend's own support (f19ref): the same call on both,
 * statistics included (sinks count as one more outcome), for the cases with
 * sinks and a decode and a prefill length each. */
static void xcheck_stats(const xcase *c, int64_t Sq, int64_t Skv, uint32_t seed)
{
    xprob x;
    sdpa_attention_desc d, od;
    xprob_make(&x, c, Sq, Skv, seed, false, &d, &od);
    const size_t ns = (size_t)(x.B * x.Hq * SDPA_STAT_COUNT), no = (size_t)(x.B * x.Hq * Sq * x.D);
    const size_t nl = (size_t)(x.B * x.Hq * Sq), qe = sdpa_dtype_size(c->qdt);
    float *st[2], *lse[2];
    unsigned char *out[2];
    for (int w = 0; w < 2; w++) {
        st[w] = malloc(ns * sizeof(float));
        for (size_t e = 0; e < ns; e++) st[w][e] = NAN;
        d.tensors.stats = sdpa_tensor_host(st[w], SDPA_DTYPE_F32, x.B, x.Hq, 1, SDPA_STAT_COUNT);
        for (size_t e = 0; e < no; e++) xstore(x.out, c->qdt, e, NAN);
        for (size_t e = 0; e < nl; e++) x.lse[e] = NAN;
        xrun_forward(w == 0 ? g_cpu : g_ref, &d);
        out[w] = malloc(no * qe);
        memcpy(out[w], x.out, no * qe);
        lse[w] = malloc(nl * sizeof(float));
        memcpy(lse[w], x.lse, nl * sizeof(float));
    }
    const double tol = xtol(c->qdt);
    for (size_t e = 0; e < no; e++) {
        const float g = xload(out[0], c->qdt, e), w = xload(out[1], c->qdt, e);
        ck_assert_msg(fabs(g - w) <= tol * (1 + fabs(w)), "%s Sq%lld: out[%zu] %g want %g",
                      c->name, (long long)Sq, e, g, w);
    }
    for (size_t e = 0; e < nl; e++)
        ck_assert_msg(lse[1][e] == -INFINITY ? lse[0][e] == -INFINITY
                                             : fabs(lse[0][e] - lse[1][e]) <= 1e-4 * (1 + fabs(lse[1][e])),
                      "%s Sq%lld: lse[%zu] %g want %g", c->name, (long long)Sq, e, lse[0][e], lse[1][e]);
    for (size_t e = 0; e < ns; e++)
        ck_assert_msg(fabs(st[0][e] - st[1][e]) <= 2e-3 * (1 + fabs(st[1][e])),
                      "%s Sq%lld Skv%lld: stats[%zu] (column %zu) %g want %g", c->name,
                      (long long)Sq, (long long)Skv, e, e % SDPA_STAT_COUNT, st[0][e], st[1][e]);
    for (int w = 0; w < 2; w++) {
        free(st[w]);
        free(out[w]);
        free(lse[w]);
    }
    xprob_free(&x);
}

START_TEST(features_stats)
{
    const int64_t L = k_xlens[_i % (N_XLENS - 1)];
    if (xlen_skipped(L)) return;
    for (int i = 0; i < N_XCASES; i++) {
        xcase c = k_xcases[i];
        if (!c.sinks && !c.alibi) continue;
        xcheck_stats(&c, 1, L, (uint32_t)(_i * 31 + i));
        xcheck_stats(&c, L, L, (uint32_t)(_i * 37 + i));
    }
}
END_TEST

/* The kernel sets: each one's name, the TCase that runs the parity cases
 * with it forced, and that TCase's fixture (main below); and the table
 * SDPA_CPU_KERNELS=set selects, or NULL where this CPU or build lacks the
 * set (the selection falls back). */
static const struct { const char *name, *tcase; void (*setup)(void); } k_ksets[] = {
    {"generic", "kernels_generic", setup_generic},
    {"avx2", "kernels_avx2", setup_avx2},
    {"avx512", "kernels_avx512", setup_avx512},
    {"neon", "kernels_neon", setup_neon}};
#define N_KSETS (sizeof k_ksets / sizeof k_ksets[0])
static const sdpa__cpu_kernels *kernels_forced(const char *set)
{
    setenv("SDPA_CPU_KERNELS", set, 1);
    const sdpa__cpu_kernels *k = sdpa__cpu_kernels_select(NULL, 0, NULL);
    unsetenv("SDPA_CPU_KERNELS");
    return strcmp(k->name, set) == 0 ? k : NULL;
}

/* The kernels' transpose (Q rows into the D x rows tile of S^T = K Q^T) in
 * every set this CPU runs: every element lands where the plain loops put it,
 * ragged blocks included (rows and columns 1..40 around the 8 and 16 wide
 * register blocks), times the scale, and nothing outside the R x C block is
 * written. */
START_TEST(transpose_kernels)
{
    enum { MAXN = 40, LDS = MAXN + 3, LDD = MAXN + 5 };
    static float src[MAXN * LDS], dst[MAXN * LDD];
    for (int e = 0; e < MAXN * LDS; e++) src[e] = (float)e + 0.25f;
    int ran = 0;
    for (size_t si = 0; si < N_KSETS; si++) {
        const sdpa__cpu_kernels *k = kernels_forced(k_ksets[si].name);
        if (!k) continue; /* not on this CPU */
        ran++;
        for (int R = 1; R <= MAXN; R++)
            for (int C = 1; C <= MAXN; C++) {
                for (int e = 0; e < MAXN * LDD; e++) dst[e] = NAN;
                const float mul = (R + C) % 2 ? 1.0f : 0.375f; /* exact in binary */
                k->transpose(R, C, src, LDS, dst, LDD, mul);
                for (int c = 0; c < MAXN; c++)
                    for (int r = 0; r < LDD; r++) {
                        const float got = dst[c * LDD + r];
                        if (r < R && c < C)
                            ck_assert_msg(got == src[r * LDS + c] * mul, "%s R%d C%d (%d,%d): %g",
                                          k->name, R, C, r, c, (double)got);
                        else
                            ck_assert_msg(isnan(got), "%s R%d C%d wrote (%d,%d) outside",
                                          k->name, R, C, r, c);
                    }
            }
    }
    ck_assert_int_ge(ran, 1);
}
END_TEST

/* The kernels' expsub (S = exp(S - sub), column sums) in every set this CPU
 * runs, against exp in double over -110..95 in small steps and the special
 * values: at most 1e-6 relative (plus |x| 2^-24: x log2 e is rounded),
 * exactly 0 for -inf, inf past the largest float, NaN for NaN; results under
 * 2^-125 may be 0 (the AVX2 exp flushes them) or off by a subnormal's step.
 * 13 columns: full vectors and masked tails in every set. */
START_TEST(expsub_kernels)
{
    enum { NQ = 13, NK = 1200 };
    static float S[NK * NQ], x[NK * NQ];
    const float sub[NQ] = {0, 1, -1, 0.5f, 2, -3, 0, 0.25f, 10, -10, 0, 1e-3f, -0.75f};
    for (int j = 0; j < NK; j++)
        for (int i = 0; i < NQ; i++) x[j * NQ + i] = -110.0f + 0.1713f * (float)(j * NQ + i) / NQ;
    const float special[] = {-INFINITY, INFINITY, NAN, 0.0f, -0.0f, 88.72f, 88.73f, 500.0f,
                             -86.6f, -86.7f, -87.4f, -103.0f, -1e30f};
    for (int e = 0; e < (int)(sizeof special / sizeof special[0]); e++) x[e * 7] = special[e];
    int ran = 0;
    for (size_t si = 0; si < N_KSETS; si++) {
        const sdpa__cpu_kernels *k = kernels_forced(k_ksets[si].name);
        if (!k) continue; /* not on this CPU */
        ran++;
        for (int e = 0; e < NK * NQ; e++) S[e] = x[e] + sub[e % NQ];
        k->expsub(S, NQ, NK, NQ, sub, NULL);
        for (int e = 0; e < NK * NQ; e++) {
            /* the argument the kernel sees: (x + sub) - sub in float */
            const float a = (x[e] + sub[e % NQ]) - sub[e % NQ];
            const double want = exp((double)a), got = S[e];
            if (isnan(a))
                ck_assert_msg(isnan(got), "%s exp(NaN) = %g", k->name, got);
            else if (want > FLT_MAX)
                ck_assert_msg(isinf(got) && got > 0, "%s exp(%g) = %g, not inf", k->name,
                              (double)a, got);
            else if (a == -INFINITY)
                ck_assert_msg(got == 0.0 && !signbit(got), "%s exp(-inf) = %g", k->name, got);
            else {
                const double tol = 1e-6 + fabs((double)a) * 0x1p-24; /* t = a log2 e rounded */
                /* under 2^-125: 0, or the value to within a subnormal's step */
                const bool ok = fabs(got - want) <= tol * want ||
                                (want < 0x1p-125 &&
                                 (got == 0.0 || fabs(got - want) <= tol * want + 0x1p-149));
                ck_assert_msg(ok, "%s exp(%.9g) = %.9g, want %.9g", k->name, (double)a, got,
                              want);
            }
        }
        /* Column sums, added to what sum held, over rows past the special
         * values whose arguments are all negative (finite sums). */
        enum { R0 = 8, R1 = 600 };
        float sum[NQ];
        double want_sum[NQ];
        for (int i = 0; i < NQ; i++) sum[i] = 1.0f, want_sum[i] = 1.0;
        for (int e = R0 * NQ; e < R1 * NQ; e++) {
            S[e] = x[e] + sub[e % NQ];
            want_sum[e % NQ] += exp((double)(S[e] - sub[e % NQ]));
        }
        k->expsub(S + R0 * NQ, NQ, R1 - R0, NQ, sub, sum);
        for (int i = 0; i < NQ; i++)
            ck_assert_msg(fabs(sum[i] - want_sum[i]) <= 1e-5 * want_sum[i],
                          "%s column %d sum %g, want %g", k->name, i, (double)sum[i],
                          want_sum[i]);
    }
    ck_assert_int_ge(ran, 1);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("cpu");
    TCase *tc = tcase_create("forward");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 600);
    tcase_add_loop_test(tc, forward_parity_one_thread, 0, 6);
    tcase_add_loop_test(tc, forward_forced_tiles, 0, 4);
    tcase_add_test(tc, workspace_independent_of_skv);
    tcase_add_loop_test(tc, nonfinite_inputs, 0, 4);
    tcase_add_test(tc, decode_uses_split_kv);
    tcase_add_test(tc, tile_candidates_are_valid);
    tcase_add_test(tc, transpose_kernels);
    tcase_add_test(tc, expsub_kernels);
    suite_add_tcase(s, tc);
    tc = tcase_create("backward");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 600);
    tcase_add_loop_test(tc, backward_parity_one_thread, 0, 3);
    tcase_add_test(tc, backward_deterministic);
    tcase_add_test(tc, empty_rows_are_clean);
    suite_add_tcase(s, tc);
    tc = tcase_create("features"); /* issue 19 */
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 900);
    tcase_add_loop_test(tc, features_forward, 0, N_XCASES * N_XLENS);
    tcase_add_loop_test(tc, features_backward, 0, N_XBCASES * (N_XLENS - 1));
    tcase_add_loop_test(tc, features_stats, 0, N_XLENS - 1);
    tcase_add_loop_test(tc, features_decode_widths, 0, N_XDCASES * N_XDLENS);
    suite_add_tcase(s, tc);
    /* Every kernel set this CPU runs besides its default: the parity cases again. */
    char def[1024], forced[1024], want[64];
    g_nfrows = pick_rows(tparity_fcases, tparity_n_fcases, &g_frows);
    g_nbrows = pick_rows(tparity_bcases, tparity_n_bcases, &g_brows);
    kernels_picked(NULL, def, sizeof def);
    for (size_t i = 0; i < N_KSETS; i++) {
        snprintf(want, sizeof want, "kernels %s:", k_ksets[i].name);
        if (strncmp(def, want, strlen(want)) == 0)
            continue; /* the default TCases above ran it */
        kernels_picked(k_ksets[i].name, forced, sizeof forced);
        if (strncmp(forced, want, strlen(want)) != 0) {
            fprintf(stderr, "cpu suite: %s kernels not run on this CPU (%s)\n", k_ksets[i].name,
                    forced);
            continue;
        }
        tc = tcase_create(k_ksets[i].tcase);
        tcase_add_checked_fixture(tc, k_ksets[i].setup, teardown);
        tcase_set_timeout(tc, 600);
        tcase_add_test(tc, kset_in_effect);
        tcase_add_loop_test(tc, forward_parity, 0, g_nfrows);
        tcase_add_loop_test(tc, nonfinite_inputs, 0, 4);
        tcase_add_loop_test(tc, backward_parity, 0, g_nbrows);
        tcase_add_loop_test(tc, features_forward_short, 0, N_XCASES * (N_XLENS - 1));
        tcase_add_loop_test(tc, features_decode_widths, 0, N_XDCASES * N_XDLENS);
        suite_add_tcase(s, tc);
    }
    return trun_suite(s);
}
