/*
 * test_cpu.c — what is particular to the fast CPU backend; its parity with
 * the oracle on the shared case table is the parity suite's (test_parity.c).
 * Here: one thread (another task split, no split-KV) on a subset of the
 * table, forced tiles and split-KV, determinism (bits independent of reruns
 * and, without gains, of the thread count), empty rows, non-finite inputs,
 * a workspace that does not grow with Skv, the decode kernel choice, the
 * tuning slots, and the whole table again with every other kernel set the
 * CPU runs (SDPA_CPU_KERNELS=generic, avx2, avx512, neon: TCases kernels_<set>);
 * a set the CPU lacks is named on stderr as not run.
 *
 * Every output is poisoned with NaN first (testutil). Run time: about 5 s on
 * the 2-core development VM (the float64 reference dominates; the 1000 x 1000
 * cases keep B*H = 1). Set TEST_CPU_VERBOSE=1 to print each case's error.
 */
#include "fcase.h"
#include "backend.h"

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

START_TEST(forward_parity)
{
    const fcase *f = &tparity_fcases[_i];
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
    tcase c = fcase_make(&tparity_bcases[_i], 1234u);
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
    tproblem p;
    tproblem_make(&p, &c);
    sdpa_plan *plan = NULL;
    ck_assert_int_eq(sdpa_plan_create(g_cpu, &p.desc, NULL, &plan), SDPA_OK);
    sdpa_plan_info info;
    memset(&info, 0, sizeof info);
    info.struct_size = sizeof info;
    ck_assert_int_eq(sdpa_plan_get_info(plan, &info), SDPA_OK);
    sdpa_plan_destroy(plan);
    tproblem_free(&p);
    return info;
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
    suite_add_tcase(s, tc);
    tc = tcase_create("backward");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 600);
    tcase_add_loop_test(tc, backward_parity_one_thread, 0, 3);
    tcase_add_test(tc, backward_deterministic);
    tcase_add_test(tc, empty_rows_are_clean);
    suite_add_tcase(s, tc);
    /* Every kernel set this CPU runs besides its default: the parity cases again. */
    static const struct { const char *name, *tcase; void (*setup)(void); } ksets[] = {
        {"generic", "kernels_generic", setup_generic},
        {"avx2", "kernels_avx2", setup_avx2},
        {"avx512", "kernels_avx512", setup_avx512},
        {"neon", "kernels_neon", setup_neon}};
    char def[1024], forced[1024], want[64];
    kernels_picked(NULL, def, sizeof def);
    for (size_t i = 0; i < sizeof ksets / sizeof ksets[0]; i++) {
        snprintf(want, sizeof want, "kernels %s:", ksets[i].name);
        if (strncmp(def, want, strlen(want)) == 0)
            continue; /* the default TCases above ran it */
        kernels_picked(ksets[i].name, forced, sizeof forced);
        if (strncmp(forced, want, strlen(want)) != 0) {
            fprintf(stderr, "cpu suite: %s kernels not run on this CPU (%s)\n", ksets[i].name,
                    forced);
            continue;
        }
        tc = tcase_create(ksets[i].tcase);
        tcase_add_checked_fixture(tc, ksets[i].setup, teardown);
        tcase_set_timeout(tc, 600);
        tcase_add_test(tc, kset_in_effect);
        tcase_add_loop_test(tc, forward_parity, 0, tparity_n_fcases);
        tcase_add_loop_test(tc, nonfinite_inputs, 0, 4);
        tcase_add_loop_test(tc, backward_parity, 0, tparity_n_bcases);
        suite_add_tcase(s, tc);
    }
    return trun_suite(s);
}
