/*
 * test_clblast.c — CLBlast's own GEMM parameters on the unfused OpenCL path
 * (src/backend/opencl/cl_gemm.c, tile field gemm_params; issue 6).
 *
 * One test, in order, because the parameter set in force is process-wide
 * per device (that is the behaviour under test):
 *  1. an unfused plan under CLBlast's own parameters (gemm_params 0) passes
 *     parity with the float64 reference (poisoned outputs, GQA, Sq 65 and
 *     Skv 257 across tile edges, mask, bias, kv_len, window, LSE, stats);
 *  2. the first libsdpa set that suits the device passes the same parity,
 *     its plan info names the set, and AUTO then reports it as in force;
 *  3. gemm_params 0 is now refused (CLBlast cannot go back to its own
 *     parameters) with SDPA_ERR_UNSUPPORTED and a message saying so;
 *  4. the plan made in step 1 still runs after the set changed: its output
 *     matches the reference, or it returns SDPA_ERR_WORKSPACE asking for the
 *     plan to be recreated (the documented outcomes);
 *  5. bad values are refused: gemm_params on the fused path, out of range,
 *     a set meant for the other device style;
 *  6. the tuner's candidate list offers the unfused path once per suitable
 *     set and gemm_params survives a profile record round trip.
 * A second test runs every conformance case (tests/conformance, and any extra
 * corpus of tests/common/corpus.h) through the unfused path (as `sdpa-check
 * --unfused` does): forward cases pass, backward ones are UNSUPPORTED (the
 * path is forward only).
 * Run time: two CLBlast kernel builds (~15 s each on a cold PoCL cache, well
 * under a second warm) plus a few small plans.
 */
#include "testutil.h"
#include "case.h"
#include "corpus.h"
#include "../src/core/backend.h"
#include "../src/tune/tune.h"
#include "sdpa_opencl.h"

#define GEMM_PARAMS SDPA_TILE_OPENCL_GEMM_PARAMS

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static tcase unfused_case(void)
{
    tcase c;
    tcase_init(&c, "clblast", 2, 4, 2, 65, 257, 64, 64);
    c.mask = c.bias = c.kv_len = c.lse = c.stats = true;
    c.diagonal = SDPA_DIAGONAL_BOTTOM_RIGHT;
    c.window_left = 100;
    c.window_right = 0;
    c.seed = 77;
    return c;
}

static sdpa_status plan_with(sdpa_context *ctx, const tproblem *tp, int unfused, int gemm,
                             sdpa_plan **plan)
{
    sdpa_tile_config t;
    sdpa_tile_config_init(&t);
    sdpa_tile_config_set(&t, SDPA_TILE_UNFUSED, unfused);
    sdpa_tile_config_set(&t, GEMM_PARAMS, gemm);
    sdpa_plan_options o;
    sdpa_plan_options_init(&o);
    o.tile = &t;
    *plan = NULL;
    return sdpa_plan_create(ctx, &tp->desc, &o, plan);
}

static void plan_config(sdpa_plan *plan, char *out, size_t size)
{
    sdpa_plan_info info;
    memset(&info, 0, sizeof info);
    info.struct_size = sizeof info;
    ck_assert_int_eq(sdpa_plan_get_info(plan, &info), SDPA_OK);
    ck_assert_str_eq(info.kernel, "unfused");
    snprintf(out, size, "%s", info.config);
}

static const char *last_message(sdpa_context *ctx)
{
    static char msg[1024];
    sdpa_error_info e;
    sdpa_context_last_error(ctx, &e);
    snprintf(msg, sizeof msg, "%s", e.message ? e.message : "");
    return msg;
}

/* Runs the plan on the problem's inputs and compares with want (the
 * reference output). */
static void check_against(sdpa_plan *plan, tproblem *tp, const float *want, const char *what)
{
    tproblem_poison(tp);
    ck_assert_int_eq(sdpa_plan_forward(plan, &tp->desc.tensors), SDPA_OK);
    tcompare r = tcompare_arrays(tp->out, SDPA_DTYPE_F32, want, SDPA_DTYPE_F32, tp->n_out);
    ck_assert_msg(r.bad_nonfinite == 0 && r.max_abs < 2e-5, "%s: max abs %g, %zu non-finite",
                  what, r.max_abs, r.bad_nonfinite);
}

START_TEST(parameter_sets)
{
    sdpa_status st;
    sdpa_context *cl = tcontext(SDPA_BACKEND_OPENCL, &st);
    ck_assert_msg(cl != NULL, "opencl context: %s", sdpa_status_name(st));
    sdpa_context *ref = tcontext(SDPA_BACKEND_REFERENCE, &st);
    ck_assert_ptr_nonnull(ref);
    tcase c = unfused_case();
    tproblem tp;
    tproblem_make(&tp, &c);

    /* 1. CLBlast's own parameters (nothing in force yet in this process) */
    sdpa_plan *p0 = NULL;
    st = plan_with(cl, &tp, 1, 0, &p0);
    if (st == SDPA_ERR_UNSUPPORTED && strstr(last_message(cl), "CLBlast")) {
        fprintf(stderr, "test_clblast: no CLBlast in this build: %s\n", last_message(cl));
        tproblem_free(&tp);
        sdpa_context_destroy(cl);
        sdpa_context_destroy(ref);
        return;
    }
    ck_assert_msg(st == SDPA_OK, "unfused plan, gemm_params 0: %s", last_message(cl));
    char cfg[320];
    plan_config(p0, cfg, sizeof cfg);
    ck_assert_msg(strstr(cfg, "gemm_params=0") != NULL, "%s", cfg);
    sdpa_tile_config t;
    sdpa_tile_config_init(&t);
    sdpa_tile_config_set(&t, SDPA_TILE_UNFUSED, 1);
    sdpa_tile_config_set(&t, GEMM_PARAMS, 0);
    sdpa_plan_options o;
    sdpa_plan_options_init(&o);
    o.tile = &t;
    tparity_forward(cl, ref, &c, &o);

    /* the reference output of these inputs, for steps 2 and 4 */
    sdpa_plan *pr = NULL;
    ck_assert_int_eq(sdpa_plan_create(ref, &tp.desc, NULL, &pr), SDPA_OK);
    tproblem_poison(&tp);
    ck_assert_int_eq(sdpa_plan_forward(pr, &tp.desc.tensors), SDPA_OK);
    float *want = malloc(tp.n_out * sizeof *want);
    memcpy(want, tp.out, tp.n_out * sizeof *want);
    sdpa_plan_destroy(pr);
    check_against(p0, &tp, want, "gemm_params 0");

    /* 2. the first libsdpa set this device takes */
    int k = 0;
    sdpa_plan *pk = NULL;
    for (int i = 1; i <= 16 && !pk; i++) {
        st = plan_with(cl, &tp, 1, i, &pk);
        if (st == SDPA_OK) {
            k = i;
        } else {
            ck_assert_msg(st == SDPA_ERR_UNSUPPORTED || st == SDPA_ERR_INVALID_ARG,
                          "set %d: %s (%s)", i, sdpa_status_name(st), last_message(cl));
            if (strstr(last_message(cl), "outside")) break; /* past the table */
        }
    }
    ck_assert_msg(k > 0, "no CLBlast parameter set suits this device");
    plan_config(pk, cfg, sizeof cfg);
    char expect[32];
    snprintf(expect, sizeof expect, "gemm_params=%d", k);
    ck_assert_msg(strstr(cfg, expect) != NULL, "%s", cfg);
    sdpa_tile_config_set(&t, GEMM_PARAMS, k);
    tparity_forward(cl, ref, &c, &o);
    check_against(pk, &tp, want, "libsdpa set");
    /* AUTO keeps the set in force */
    sdpa_plan *pa = NULL;
    ck_assert_int_eq(plan_with(cl, &tp, 1, SDPA_AUTO, &pa), SDPA_OK);
    plan_config(pa, cfg, sizeof cfg);
    ck_assert_msg(strstr(cfg, expect) != NULL, "AUTO after set %d: %s", k, cfg);
    sdpa_plan_destroy(pa);

    /* 3. no way back to CLBlast's own parameters */
    sdpa_plan *pz = NULL;
    ck_assert_int_eq(plan_with(cl, &tp, 1, 0, &pz), SDPA_ERR_UNSUPPORTED);
    ck_assert_ptr_null(pz);
    ck_assert_msg(strstr(last_message(cl), "cannot go back") != NULL, "%s", last_message(cl));

    /* 4. the plan made under CLBlast's own parameters still answers */
    tproblem_poison(&tp);
    st = sdpa_plan_forward(p0, &tp.desc.tensors);
    if (st == SDPA_OK) {
        tcompare r = tcompare_arrays(tp.out, SDPA_DTYPE_F32, want, SDPA_DTYPE_F32, tp.n_out);
        ck_assert_msg(r.bad_nonfinite == 0 && r.max_abs < 2e-5, "old plan: %g", r.max_abs);
    } else {
        ck_assert_int_eq(st, SDPA_ERR_WORKSPACE);
        ck_assert_msg(strstr(last_message(cl), "recreate the plan") != NULL, "%s",
                      last_message(cl));
    }
    /* and the set's own plan still runs under it */
    check_against(pk, &tp, want, "libsdpa set, again");

    /* 5. refusals */
    sdpa_plan *bad = NULL;
    ck_assert_int_ne(plan_with(cl, &tp, 0, k, &bad), SDPA_OK);
    ck_assert_msg(strstr(last_message(cl), "unfused path only") != NULL, "%s",
                  last_message(cl));
    ck_assert_int_ne(plan_with(cl, &tp, 1, 65, &bad), SDPA_OK);
    ck_assert_msg(strstr(last_message(cl), "tile.gemm_params 65 is out of range") != NULL, "%s",
                  last_message(cl));
    ck_assert_ptr_null(bad);
    /* the table holds sets for both device styles, so some set does not
     * suit this device and is refused by name */
    int unsuited = 0;
    for (int i = 1; i <= 64 && !unsuited; i++) {
        st = plan_with(cl, &tp, 1, i, &bad);
        sdpa_plan_destroy(bad);
        bad = NULL;
        if (st != SDPA_OK && strstr(last_message(cl), "outside")) break; /* past the table */
        if (st == SDPA_ERR_UNSUPPORTED && strstr(last_message(cl), "does not suit")) unsuited = i;
    }
    ck_assert_msg(unsuited > 0, "no CLBlast parameter set was refused for this device");

    /* 6. candidates: the unfused path once per suitable set (0 is no longer
     * offered, a set is in force), each accepted by plan creation */
    const sdpa__backend *be = sdpa__backend_get(SDPA_BACKEND_OPENCL);
    sdpa__problem prob;
    memset(&prob, 0, sizeof prob);
    prob.B = c.B, prob.Hq = c.Hq, prob.Hkv = c.Hkv, prob.Sq = c.Sq, prob.Skv = c.Skv;
    prob.D = c.D, prob.Dv = c.Dv, prob.dtype = SDPA_DTYPE_F32, prob.scale = 0.125;
    prob.window_left = prob.window_right = -1;
    sdpa_tile_config cand[64];
    int n = be->tile_candidates(cl, sdpa__context_primary_state(cl, be), &prob, 0, cand, 64);
    int n_unf = 0, saw_k = 0;
    for (int i = 0; i < n && i < 64; i++) {
        if (TGET(&cand[i], UNFUSED) != 1) {
            ck_assert_int_eq(sdpa_tile_config_get(&cand[i], GEMM_PARAMS), SDPA_AUTO);
            continue;
        }
        n_unf++;
        ck_assert_int_ge(sdpa_tile_config_get(&cand[i], GEMM_PARAMS), 1);
        if (sdpa_tile_config_get(&cand[i], GEMM_PARAMS) == k) saw_k = 1;
    }
    ck_assert_int_ge(n_unf, 1);
    ck_assert_int_eq(saw_k, 1);

    /* profile record round trip keeps gemm_params */
    sdpa__profile_record rec, back;
    memset(&rec, 0, sizeof rec);
    rec.format = SDPA__PROFILE_FORMAT;
    snprintf(rec.dev.backend, sizeof rec.dev.backend, "opencl");
    snprintf(rec.dev.vendor, sizeof rec.dev.vendor, "v");
    snprintf(rec.dev.device, sizeof rec.dev.device, "d");
    rec.dev.compute_units = 2;
    sdpa__bucket_of(&prob, 0, &rec.bucket);
    sdpa_tile_config_init(&rec.tile);
    sdpa_tile_config_set(&rec.tile, SDPA_TILE_UNFUSED, 1);
    sdpa_tile_config_set(&rec.tile, GEMM_PARAMS, k);
    rec.best_ms = 1.0, rec.default_ms = 2.0;
    char *json = sdpa__profile_record_to_json(&rec);
    ck_assert_ptr_nonnull(json);
    const char *why = NULL;
    ck_assert_msg(sdpa__profile_record_parse(json, strlen(json), &back, &why), "%s: %s", json,
                  why ? why : "");
    ck_assert_int_eq(sdpa_tile_config_get(&back.tile, GEMM_PARAMS), k);
    ck_assert_int_eq(TGET(&back.tile, UNFUSED), 1);
    free(json);

    free(want);
    sdpa_plan_destroy(p0);
    sdpa_plan_destroy(pk);
    tproblem_free(&tp);
    sdpa_context_destroy(cl);
    sdpa_context_destroy(ref);
}
END_TEST

START_TEST(conformance_cases_unfused)
{
    sdpa_status st;
    sdpa_context *cl = tcontext(SDPA_BACKEND_OPENCL, &st);
    ck_assert_msg(cl != NULL, "opencl context: %s", sdpa_status_name(st));
    sdpa_tile_config t;
    sdpa_tile_config_init(&t);
    sdpa_tile_config_set(&t, SDPA_TILE_UNFUSED, 1);
    char dirs[TCORPUS_MAX][1024];
    int nd = tcorpus_dirs(dirs, TCORPUS_MAX), no_clblast = 0;
    for (int k = 0; k < nd && !no_clblast; k++) {
        sc_list list = {0};
        char err[512];
        ck_assert_msg(sc_find(dirs[k], &list, err, sizeof err), "%s", err);
        ck_assert_uint_ge(list.n, k == 0 ? 18 : 1);
        int passed = 0, backward = 0, skipped = 0;
        for (size_t i = 0; i < list.n; i++) {
            sc_result r;
            sc_check_dir_tile(cl, list.paths[i], &t, &r);
            if (r.verdict == SC_UNSUPPORTED && strstr(r.reason, "CLBlast")) {
                fprintf(stderr, "test_clblast: no CLBlast in this build: %s\n", r.reason);
                no_clblast = 1;
                break;
            }
            if (r.verdict == SC_UNSUPPORTED && strstr(r.reason, "forward only")) {
                backward++;
                continue;
            }
            if (k > 0 && r.verdict == SC_UNSUPPORTED &&
                strstr(r.reason, "is not implemented by this backend")) { /* capabilities.h */
                skipped++;
                continue;
            }
            ck_assert_msg(r.verdict == SC_PASS, "%s unfused: %s", list.paths[i], r.reason);
            ck_assert_int_gt(r.ncmp, 0);
            for (int c = 0; c < r.ncmp; c++) ck_assert(r.cmp[c].ok && r.cmp[c].bad_nonfinite == 0);
            passed++;
        }
        fprintf(stderr, "test_clblast: %s through the unfused path: %d passed, %d backward "
                        "cases unsupported, %d skipped\n", dirs[k], passed, backward, skipped);
        if (!no_clblast) {
            ck_assert_int_eq(passed + backward + skipped, (int)list.n);
            ck_assert_int_gt(passed, 0);
        }
        sc_list_free(&list);
    }
    sdpa_context_destroy(cl);
}
END_TEST

int main(void)
{
    if (!sdpa_backend_compiled(SDPA_BACKEND_OPENCL)) {
        fprintf(stderr, "test_clblast: no OpenCL backend in this build; skipping\n");
        return 77;
    }
    /* Asked in a throwaway child: PoCL's threads do not survive Check's
     * fork, so the parent must not load the OpenCL runtime. */
    pid_t pid = fork();
    if (pid == 0) {
        int count = 0;
        sdpa_device_count(SDPA_BACKEND_OPENCL, &count);
        _exit(count > 0 ? 0 : 1);
    }
    int status = 0;
    if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
        WEXITSTATUS(status) != 0) {
        fprintf(stderr, "test_clblast: no OpenCL device; skipping\n");
        return 77;
    }
    Suite *s = suite_create("clblast");
    TCase *tc = tcase_create("gemm_params");
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, parameter_sets);
    tcase_add_test(tc, conformance_cases_unfused);
    suite_add_tcase(s, tc);
    return trun_suite(s);
}
