/*
 * test_clgpu.c — the OpenCL GPU-class decode (shaders/opencl/decode_gpu.cl)
 * and FlashAttention-2 backward (shaders/opencl/bwd_fa2.cl) executed on
 * PoCL under a GPU persona (issue 17; docs/opencl.md "GPU-class decode",
 * "GPU-class backward").
 *
 * The process runs under SDPA_TEST_PERSONA (cl-discrete unless the
 * environment names another cl- persona: the persona is read once per
 * process, src/backend/opencl/cl_persona.c), so the library chooses what it
 * would on that GPU and PoCL builds and runs it. Each test asserts that the
 * default plan takes the new kernel (its configuration names the file),
 * then compares forward / backward with the float64 reference on random
 * inputs with poisoned (NaN) outputs (testutil's tparity_*), at lengths
 * 1, 7, 63, 65, 257, 1000: decode with GQA, kv_len, a bottom-right causal
 * window, mask + bias with -inf, softcap, f16 / bf16, Dv != D and D = 256;
 * backward with GQA, causal bottom-right, softcap, mask + bias, kv_len, a
 * local window, f16; backward reruns are bit-identical (no atomics). Plans
 * the new kernels do not cover (head size 17, QK-norm in the backward)
 * keep decode.cl / bwd.cl and still match.
 * Cost (2-core machine, PoCL): 9 program builds; 95-103 s of CPU time
 * cold (6-20 minutes wall at load average 20-25).
 */
#include "backend.h"
#include "internal.h"
#include "fcase.h"
#include "tfeatures.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static sdpa_context *g_cl, *g_ref;

static void setup(void)
{
    sdpa_status st;
    g_cl = tcontext(SDPA_BACKEND_OPENCL, &st);
    ck_assert_msg(g_cl != NULL, "opencl context: %s", sdpa_status_name(st));
    g_ref = tcontext(SDPA_BACKEND_REFERENCE, &st);
    ck_assert_msg(g_ref != NULL, "reference context: %s", sdpa_status_name(st));
}

static void teardown(void)
{
    sdpa_context_destroy(g_cl);
    sdpa_context_destroy(g_ref);
    g_cl = g_ref = NULL;
}

/* "kernel config" of c's default plan (flags: plan flags). */
static void plan_text(const tcase *c, unsigned flags, char *out, size_t n)
{
    tproblem tp;
    tproblem_make(&tp, c);
    sdpa_plan_options o;
    sdpa_plan_options_init(&o);
    o.flags = flags;
    sdpa_plan *plan = NULL;
    sdpa_status st = sdpa_plan_create(g_cl, &tp.desc, &o, &plan);
    sdpa_error_info ei;
    memset(&ei, 0, sizeof ei);
    sdpa_context_last_error(g_cl, &ei);
    ck_assert_msg(st == SDPA_OK, "%s: plan: %s", c->name, ei.message);
    sdpa_plan_info info;
    memset(&info, 0, sizeof info);
    info.struct_size = sizeof info;
    ck_assert_int_eq(sdpa_plan_get_info(plan, &info), SDPA_OK);
    snprintf(out, n, "%s %s", info.kernel, info.config);
    sdpa_plan_destroy(plan);
    tproblem_free(&tp);
    if (getenv("TEST_CLGPU_VERBOSE")) fprintf(stderr, "%s: %s\n", c->name, out);
}

/* Decode rows (one program each, lengths looped inside). */
static const struct {
    const char *name;
    int64_t B, Hq, Hkv, Sq, D, Dv;
    unsigned f;
    int64_t skv[6];
} dcases[] = {
    {"gd_gqa_d128_kvlen", 2, 8, 2, 1, 128, 128, F_KVLEN, {1, 7, 63, 65, 257, 1000}},
    {"gd_sq7_dv48_br_win", 1, 8, 2, 7, 64, 48, F_CAUSAL | F_BR, {8, 63, 65, 257, 1000, 0}},
    {"gd_f16_mask_bias_cap", 1, 4, 1, 1, 64, 64, F_F16 | F_MASK | F_BIAS | F_CAP,
     {1, 7, 65, 1000, 0}},
    {"gd_bf16_mha_d256", 1, 2, 2, 1, 256, 256, F_BF16, {63, 257, 0}},
};
#define N_DCASES (int)(sizeof dcases / sizeof dcases[0])

START_TEST(decode_gpu_parity)
{
    for (int k = 0; k < 6 && dcases[_i].skv[k] > 0; k++) {
        fcase f = {dcases[_i].name, dcases[_i].B, dcases[_i].Hq, dcases[_i].Hkv,
                   dcases[_i].Sq, dcases[_i].skv[k], dcases[_i].D, dcases[_i].Dv,
                   dcases[_i].f};
        tcase c = fcase_make(&f, 1717u + (uint64_t)k);
        if (f.f & F_BR) c.window_left = 100; /* bottom-right causal window */
        char got[512];
        plan_text(&c, 0, got, sizeof got);
        ck_assert_msg(strstr(got, "direct_kv=1") && strstr(got, "decode_gpu.cl"),
                      "%s Skv %lld: not the GPU-class decode: %s", c.name,
                      (long long)c.Skv, got);
        tparity_forward(g_cl, g_ref, &c, NULL);
    }
}
END_TEST

/* Backward rows: (Sq, Skv) pairs crossing the tiles; one program each. */
static const struct {
    const char *name;
    int64_t B, Hq, Hkv, D, Dv;
    unsigned f;
    int64_t len[6][2];
} bcases[] = {
    {"fa_gqa_causal_cap", 2, 4, 2, 64, 48, F_CAUSAL | F_BR | F_CAP,
     {{1, 1}, {7, 7}, {63, 63}, {65, 65}, {257, 257}, {0, 0}}},
    {"fa_mask_bias_kvlen", 1, 2, 1, 128, 128, F_MASK | F_BIAS | F_KVLEN,
     {{1, 1000}, {7, 63}, {65, 257}, {257, 7}, {0, 0}}},
    {"fa_f16_window", 1, 2, 2, 64, 64, F_F16 | F_WIN2, {{63, 65}, {1000, 1000}, {0, 0}}},
};
#define N_BCASES (int)(sizeof bcases / sizeof bcases[0])

START_TEST(bwd_fa2_parity)
{
    for (int k = 0; k < 6 && bcases[_i].len[k][0] > 0; k++) {
        fcase f = {bcases[_i].name, bcases[_i].B, bcases[_i].Hq, bcases[_i].Hkv,
                   bcases[_i].len[k][0], bcases[_i].len[k][1], bcases[_i].D, bcases[_i].Dv,
                   bcases[_i].f};
        tcase c = fcase_make(&f, 1818u + (uint64_t)k);
        char got[512];
        plan_text(&c, SDPA_PLAN_BACKWARD, got, sizeof got);
        ck_assert_msg(strstr(got, "bwd_fa2.cl"), "%s Sq %lld Skv %lld: not bwd_fa2.cl: %s",
                      c.name, (long long)c.Sq, (long long)c.Skv, got);
        tparity_backward(g_cl, g_ref, &c, NULL);
    }
}
END_TEST

/* Two backward runs give bit-identical gradients (fixed summation order). */
START_TEST(bwd_fa2_deterministic)
{
    fcase f = {"fa_det", 1, 4, 2, 65, 257, 64, 64, F_CAUSAL | F_BR | F_MASK};
    tcase c = fcase_make(&f, 99u);
    tproblem a, b;
    tproblem_make(&a, &c);
    tproblem_make(&b, &c);
    sdpa_plan_options o;
    sdpa_plan_options_init(&o);
    o.flags = SDPA_PLAN_BACKWARD;
    trun_problem(g_cl, &a, true, &o);
    trun_problem(g_cl, &b, true, &o);
    size_t es = c.dtype == SDPA_DTYPE_F32 ? 4 : 2;
    ck_assert(memcmp(a.dq, b.dq, a.n_q * es) == 0);
    ck_assert(memcmp(a.dk, b.dk, a.n_k * es) == 0);
    ck_assert(memcmp(a.dv, b.dv, a.n_v * es) == 0);
    tproblem_free(&a);
    tproblem_free(&b);
}
END_TEST

/* What the new kernels do not cover keeps the old ones, correctly: a head
 * size that is not a multiple of 4 (decode.cl, bwd.cl) and QK-norm in the
 * backward (bwd.cl: only it has the norm's gradient). */
START_TEST(old_kernels_kept)
{
    fcase fd = {"gd_d17", 1, 4, 2, 1, 300, 17, 17, 0};
    tcase c = fcase_make(&fd, 5u);
    char got[512];
    plan_text(&c, 0, got, sizeof got);
    ck_assert_msg(strstr(got, "direct_kv=1") && strstr(got, "(decode.cl"), "%s", got);
    tparity_forward(g_cl, g_ref, &c, NULL);
    fcase fb = {"fa_rms", 1, 2, 1, 33, 65, 64, 64, F_RMS | F_CAUSAL};
    c = fcase_make(&fb, 6u);
    plan_text(&c, SDPA_PLAN_BACKWARD, got, sizeof got);
    ck_assert_msg(!strstr(got, "bwd_fa2"), "%s", got);
    tparity_backward(g_cl, g_ref, &c, NULL);
}
END_TEST

/* The subgroup forms (SDPA_SUBGROUPS; prelude.cl) under the cl-subgroups
 * persona (cl-discrete listing cl_khr_subgroups): the fixture sets the
 * persona before the OpenCL table is loaded, in the test's own process
 * (Check forks each test; the parent never loads the table). PoCL's
 * compiler has no subgroup built-ins, so the kernels run their subgroup
 * code with one-work-item subgroups: the per-row state in local memory,
 * the row loop over subgroups, the NaN flag and the key loop, not the
 * cross-lane reductions (only the static gate compiles those). */
static void setup_sg(void)
{
    setenv("SDPA_TEST_PERSONA", "cl-subgroups", 1);
    setup();
}

/* Asserts that plan text `got` of case `name` is the subgroup form of `file`. */
static void assert_sg(const char *name, const char *got, const char *file)
{
    ck_assert_msg(strstr(got, file) && strstr(got, "row reductions over subgroups"),
                  "%s: not the subgroup form of %s (CK_FORK=no runs every test under the "
                  "first persona): %s", name, file, got);
}

/* Decode (GQA, mask + bias with -inf, softcap) and the block forward (the
 * per-key pipeline: causal bottom-right, mask, bias, kv_len; then whole
 * tiles: no band, f16) at lengths 1, 7, 63, 65, 257, 1000. */
START_TEST(subgroup_parity)
{
    static const int64_t lens[] = {1, 7, 63, 65, 257, 1000};
    char got[512];
    for (int k = 0; k < 6; k++) {
        fcase f = {"sg_decode", 1, 8, 2, 1, lens[k], 64, 64, F_MASK | F_BIAS | F_CAP};
        tcase c = fcase_make(&f, 4242u + (uint64_t)k);
        plan_text(&c, 0, got, sizeof got);
        assert_sg(c.name, got, "decode_gpu.cl");
        tparity_forward(g_cl, g_ref, &c, NULL);
    }
    for (int k = 1; k < 6; k++) { /* Sq = Skv = 1 is a decode shape */
        fcase f = {"sg_block_perkey", 2, 4, 2, lens[k], lens[k], 64, 64,
                   F_CAUSAL | F_BR | F_MASK | F_BIAS | F_KVLEN};
        tcase c = fcase_make(&f, 4343u + (uint64_t)k);
        plan_text(&c, 0, got, sizeof got);
        assert_sg(c.name, got, "fwd_block.cl");
        tparity_forward(g_cl, g_ref, &c, NULL);
        fcase g = {"sg_block_f16", 1, 2, 1, lens[k], lens[k], 128, 128, F_F16};
        c = fcase_make(&g, 4444u + (uint64_t)k);
        plan_text(&c, 0, got, sizeof got);
        assert_sg(c.name, got, "fwd_block.cl");
        tparity_forward(g_cl, g_ref, &c, NULL);
    }
}
END_TEST

/* Sinks (the state starts at the sink: m and l handed to the subgroups
 * through local memory) and ALiBi in the block forward's subgroup form. */
START_TEST(subgroup_sinks_alibi)
{
    static const int64_t lens[] = {7, 65, 257};
    tfcase c = {"sg_sinks_alibi", SDPA_DTYPE_F32, SDPA_DTYPE_F32, 1, 4, 2, 64, 64,
                SDPA_DIAGONAL_BOTTOM_RIGHT, 0, -1, 0, 0.0, true, true, false, false, 0};
    for (int k = 0; k < 3; k++) {
        sdpa_plan_info info;
        memset(&info, 0, sizeof info);
        info.struct_size = sizeof info;
        tfeatures_parity_info(g_cl, g_ref, &c, lens[k], lens[k], false, NULL,
                              4545u + (uint64_t)k, &info);
        char got[512];
        snprintf(got, sizeof got, "%s %s", info.kernel, info.config);
        assert_sg(c.name, got, "fwd_block.cl");
    }
}
END_TEST

int main(void)
{
    const char *p = getenv("SDPA_TEST_PERSONA");
    if (!p || strncmp(p, "cl-", 3) != 0) setenv("SDPA_TEST_PERSONA", "cl-discrete", 1);
    /* Whether an OpenCL device exists, asked in a throwaway child (PoCL's
     * threads do not survive Check's fork). */
    if (!tdevice_present(SDPA_BACKEND_OPENCL)) {
        fprintf(stderr, "test_clgpu: no OpenCL device; skipping\n");
        return 77;
    }
    Suite *s = suite_create("clgpu");
    TCase *tc = tcase_create("decode");
    tcase_set_tags(tc, TTAG_DEVICE_PARITY);
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 600);
    tcase_add_loop_test(tc, decode_gpu_parity, 0, N_DCASES);
    suite_add_tcase(s, tc);
    tc = tcase_create("backward");
    tcase_set_tags(tc, TTAG_DEVICE_PARITY);
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 900);
    tcase_add_loop_test(tc, bwd_fa2_parity, 0, N_BCASES);
    tcase_add_test(tc, bwd_fa2_deterministic);
    tcase_add_test(tc, old_kernels_kept);
    suite_add_tcase(s, tc);
    tc = tcase_create("subgroups");
    tcase_set_tags(tc, TTAG_DEVICE_PARITY); /* and it needs fork mode, as the sanitizers' runs are not */
    tcase_add_checked_fixture(tc, setup_sg, teardown);
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, subgroup_parity);
    tcase_add_test(tc, subgroup_sinks_alibi);
    suite_add_tcase(s, tc);
    return trun_suite(s);
}
