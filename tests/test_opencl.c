/*
 * test_opencl.c — the OpenCL backend (on PoCL here) against the float64
 * reference, plus its error paths, caches and interop.
 *
 * Parity on the shared case table is the parity suite's (test_parity.c);
 * here, rows of that table by name: forced tile configurations (GPU-style
 * local-memory staging, small vectors, forced split-KV) forward and
 * backward, the decode kernel choice, bit-identical reruns. Error paths: a
 * broken kernel through SDPA_KERNEL_DIR gives SDPA_ERR_BUILD with a build log, and AUTO falls back
 * to the CPU; no OpenCL platform (OCL_ICD_VENDORS pointing at an empty
 * folder, in a forked child because the ICD loader caches its platform list)
 * gives SDPA_ERR_NO_DEVICE; buffers of another context are rejected; forced
 * unsupported configurations are refused. Disk cache (forced on PoCL):
 * entries are written, and corrupt entries are rebuilt. Interop: a context
 * around an application's cl_context/queue and wrapped cl_mem buffers.
 * Test case "tuning": the backend table's tuning slots (default_tile is the
 * automatic plan, candidates complete and pruned, a sample passes parity,
 * source hash stable); NaN/Inf in K/V at dropped keys never reach an output
 * (forward, split-KV forward and backward); the unfused (CLBlast) path: parity with the
 * reference and the fused path, refusals (SDPA_ERR_WORKSPACE, backward).
 * Test case "direct" (~3 s warm, 6 kernel variants): the direct decode path
 * (decode.cl, K/V read in place): parity at Sq 1 / 7, Skv 1..4099, GQA 8/2,
 * D 64 / 128, Dv 48, f32/f16/bf16, kv_len, bottom-right causal window, mask
 * + bias with -inf, softcap, temperature, a forced split count; kv_len 0
 * (empty rows), NaN at a kept key, NaN/Inf at dropped keys; strided K/V
 * (padded head / sequence strides, offset, last stride 2); plans with
 * statistics, QK-norm, backward or a forced work-group keep the packed path.
 * Test case "cache_entry" (no device, < 1 s): the disk cache's pure file
 * parser sdpa__cl_entry_parse accepts a valid entry with spans inside the
 * file and refuses each corruption (bad magic, version, key, truncated
 * header / identity / binary, length fields past the end or over the limit,
 * trailing bytes, checksum) with its own reason.
 *
 * Test case "block": the GPU-class forward (fwd_block.cl) forced on PoCL's
 * CPU device over every forward row of the parity table and forced block
 * shapes; the CPU default keeps fwd.cl; refusals of fwd_kernel = 1.
 * Test case "personas" (a fresh process per persona, SDPA_TEST_PERSONA): each
 * GPU persona of src/backend/opencl/cl_persona.c reports its limits, plans
 * its exact default configuration for prefill, decode, statistics and
 * backward, and matches the reference. Test case "retry" (fault-injection
 * builds only): an enqueue refused with CL_OUT_OF_RESOURCES is retried on a
 * smaller configuration.
 *
 * Every output is poisoned with NaN first (testutil). Contexts are created
 * per test inside Check's forked child (PoCL's threads do not survive fork).
 * Kernel variants are kept few (each costs ~1 s to build cold on PoCL; PoCL
 * caches them on disk afterwards). Run time on the 2-core machine (load
 * average ~3): ~5 minutes cold (PoCL cache empty, 293 s measured), ~25 s warm.
 */
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>

#include "backend.h"
#include "internal.h"
#include "sdpa_opencl.h"
#include "fcase.h"
#include "tfeatures.h"
/* The pure cache-file parser, by relative path (tests/meson.build does not
 * put src/backend/opencl on the include path). */
#include "../src/backend/opencl/cl_cache_entry.h"
#include "../src/core/bytes.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static sdpa_context *g_cl, *g_ref;

static sdpa_context *cl_context_or_fail(void)
{
    sdpa_status st;
    sdpa_context *ctx = tcontext(SDPA_BACKEND_OPENCL, &st);
    ck_assert_msg(ctx != NULL, "opencl context: %s", sdpa_status_name(st));
    ck_assert_int_eq(sdpa_context_backend(ctx), SDPA_BACKEND_OPENCL);
    return ctx;
}

static void setup(void)
{
    g_cl = cl_context_or_fail();
    sdpa_status st;
    g_ref = tcontext(SDPA_BACKEND_REFERENCE, &st);
    ck_assert_msg(g_ref != NULL, "reference context: %s", sdpa_status_name(st));
}

static void teardown(void)
{
    sdpa_context_destroy(g_cl);
    sdpa_context_destroy(g_ref);
    g_cl = g_ref = NULL;
}

/* Forced tile configurations: GPU-style staging in local memory, small
 * vectors, larger work-groups, forced split-KV; each on a masked causal
 * case and on a kv_len case. */
START_TEST(forward_forced_tiles)
{
    static const struct { int wg, q, kt, vec, stage, split; } cfg[] = {
        {16, SDPA_AUTO, 8, 4, 1, SDPA_AUTO}, /* GPU style: local-memory tiles */
        {8, SDPA_AUTO, 4, 1, 0, 3},          /* scalar accumulators, forced split */
        {32, SDPA_AUTO, 16, 8, 1, 2},        /* staged + split */
        {8, 16, 16, 4, 1, SDPA_AUTO},        /* 2 rows per work-item, staged */
        {4, 16, 64, 8, 0, 2},                /* 4 rows per work-item, split */
    };
    sdpa_tile_config tc;
    sdpa_tile_config_init(&tc);
    sdpa_tile_config_set(&tc, SDPA_TILE_WG_SIZE, cfg[_i].wg);
    sdpa_tile_config_set(&tc, SDPA_TILE_Q_TILE, cfg[_i].q);
    sdpa_tile_config_set(&tc, SDPA_TILE_K_TILE, cfg[_i].kt);
    sdpa_tile_config_set(&tc, SDPA_TILE_VEC_WIDTH, cfg[_i].vec);
    sdpa_tile_config_set(&tc, SDPA_TILE_STAGE_KV, cfg[_i].stage);
    sdpa_tile_config_set(&tc, SDPA_TILE_SPLIT_KV, cfg[_i].split);
    sdpa_plan_options o;
    sdpa_plan_options_init(&o);
    o.tile = &tc;
    tcase c = fcase_make(tparity_fcase("gqa_dv"), 4321u);
    tparity_forward(g_cl, g_ref, &c, &o);
    c = fcase_make(tparity_fcase("kvlen_br"), 4321u);
    tparity_forward(g_cl, g_ref, &c, &o);
    c = fcase_make(tparity_fcase("decode_window"), 4321u);
    tparity_forward(g_cl, g_ref, &c, &o);
    c = fcase_make(tparity_fcase("everything"), 4321u);
    tparity_forward(g_cl, g_ref, &c, &o);
}
END_TEST

/* ---- GPU-class block forward (fwd_block.cl, issue 17) ------------------------ */

/* Plans p with tile o and returns its kernel + config ("" and *st on refusal). */
static sdpa_status block_plan(const tcase *c, const sdpa_plan_options *o, char *got,
                               size_t size)
{
    tproblem tp;
    tproblem_make(&tp, c);
    sdpa_plan *plan = NULL;
    sdpa_status st = sdpa_plan_create(g_cl, &tp.desc, o, &plan);
    got[0] = 0;
    if (st == SDPA_OK) {
        sdpa_plan_info info;
        memset(&info, 0, sizeof info);
        info.struct_size = sizeof info;
        ck_assert_int_eq(sdpa_plan_get_info(plan, &info), SDPA_OK);
        snprintf(got, size, "%s %s", info.kernel, info.config);
    }
    sdpa_plan_destroy(plan);
    tproblem_free(&tp);
    return st;
}

/* Every forward row of the parity table (lengths 1, 7, 63, 65, 257, 1000;
 * D 9..256, Dv != D, GQA, mask, bias with -inf, softcap, windows, kv_len,
 * QK-norm, gains, temperature, statistics, f16/bf16, decode shapes through
 * the split path) with fwd_kernel = 1 forced, so PoCL's CPU device runs the
 * GPU-class kernel: the plan says fwd_block.cl and matches the reference.
 * Rows whose head size the block split does not divide are refused with
 * SDPA_ERR_UNSUPPORTED and a message naming fwd_kernel; at most those. */
START_TEST(block_forward_parity)
{
    sdpa_tile_config tc;
    sdpa_tile_config_init(&tc);
    sdpa_tile_config_set(&tc, SDPA_TILE_OPENCL_FWD_KERNEL, 1);
    sdpa_plan_options o;
    sdpa_plan_options_init(&o);
    o.tile = &tc;
    int ran = 0, refused = 0;
    for (int i = 0; i < tparity_n_fcases; i++) {
        tcase c = fcase_make(&tparity_fcases[i], 4321u);
        char got[512];
        sdpa_status st = block_plan(&c, &o, got, sizeof got);
        if (st != SDPA_OK) {
            sdpa_error_info ei;
            memset(&ei, 0, sizeof ei);
            sdpa_context_last_error(g_cl, &ei);
            ck_assert_msg(st == SDPA_ERR_UNSUPPORTED && strstr(ei.message, "fwd_kernel 1"),
                          "%s: %s: %s", c.name, sdpa_status_name(st), ei.message);
            refused++;
            continue;
        }
        ck_assert_msg(strstr(got, "fwd_kernel=1") && strstr(got, "fwd_block.cl"), "%s: %s",
                      c.name, got);
        tparity_forward(g_cl, g_ref, &c, &o);
        ran++;
    }
    ck_assert_msg(refused <= 4 && ran >= tparity_n_fcases - 4, "ran %d, refused %d", ran,
                  refused);
}
END_TEST

/* Forced block shapes: one work-item's score block of 1 x 2, 2 x 4 and 8 x
 * 4 keys (two vector reads per row group), output blocks of 1..4 rows;
 * split-KV; a work-group of rows equal to its size. */
START_TEST(block_forward_shapes)
{
    static const struct { int q, kt, wg, split; } cfg[] = {
        {16, 8, 64, SDPA_AUTO}, {32, 16, 64, 3}, {64, 32, 64, SDPA_AUTO}, {8, 4, 8, 2},
    };
    sdpa_tile_config tc;
    sdpa_tile_config_init(&tc);
    sdpa_tile_config_set(&tc, SDPA_TILE_OPENCL_FWD_KERNEL, 1);
    sdpa_tile_config_set(&tc, SDPA_TILE_Q_TILE, cfg[_i].q);
    sdpa_tile_config_set(&tc, SDPA_TILE_K_TILE, cfg[_i].kt);
    sdpa_tile_config_set(&tc, SDPA_TILE_WG_SIZE, cfg[_i].wg);
    sdpa_tile_config_set(&tc, SDPA_TILE_SPLIT_KV, cfg[_i].split);
    sdpa_plan_options o;
    sdpa_plan_options_init(&o);
    o.tile = &tc;
    static const char *const rows[] = {"gqa_dv", "kvlen_br", "everything", "len1000_window"};
    for (int i = 0; i < 4; i++) {
        tcase c = fcase_make(tparity_fcase(rows[i]), 4321u);
        char got[512];
        ck_assert_int_eq(block_plan(&c, &o, got, sizeof got), SDPA_OK);
        ck_assert_msg(strstr(got, "fwd_block.cl"), "%s: %s", c.name, got);
        tparity_forward(g_cl, g_ref, &c, &o);
    }
}
END_TEST

/* PoCL's CPU device keeps fwd.cl by default; fwd_kernel = 0 forces fwd.cl;
 * backward plans and a split the head size does not divide refuse
 * fwd_kernel = 1. */
START_TEST(block_forward_selection)
{
    tcase c = fcase_make(tparity_fcase("gqa_dv"), 4321u);
    char got[512];
    ck_assert_int_eq(block_plan(&c, NULL, got, sizeof got), SDPA_OK);
    ck_assert_msg(!strstr(got, "fwd_kernel"), "CPU default %s", got);
    sdpa_tile_config tc;
    sdpa_tile_config_init(&tc);
    sdpa_tile_config_set(&tc, SDPA_TILE_OPENCL_FWD_KERNEL, 0);
    sdpa_plan_options o;
    sdpa_plan_options_init(&o);
    o.tile = &tc;
    ck_assert_int_eq(block_plan(&c, &o, got, sizeof got), SDPA_OK);
    ck_assert_msg(!strstr(got, "fwd_block"), "fwd_kernel=0: %s", got);
    sdpa_tile_config_set(&tc, SDPA_TILE_OPENCL_FWD_KERNEL, 1);
    o.flags = SDPA_PLAN_BACKWARD;
    ck_assert_int_eq(block_plan(&c, &o, got, sizeof got), SDPA_ERR_UNSUPPORTED);
    o.flags = 0;
    sdpa_tile_config_set(&tc, SDPA_TILE_Q_TILE, 128); /* more rows than work-items */
    sdpa_tile_config_set(&tc, SDPA_TILE_WG_SIZE, 64);
    sdpa_tile_config_set(&tc, SDPA_TILE_K_TILE, 8);
    ck_assert_int_eq(block_plan(&c, &o, got, sizeof got), SDPA_ERR_UNSUPPORTED);
}
END_TEST

/* Decode shapes pick the split-KV kernel; its plan says so. */
START_TEST(decode_uses_split)
{
    tcase c = fcase_make(tparity_fcase("decode_long"), 4321u);
    tproblem p;
    tproblem_make(&p, &c);
    sdpa_plan *plan = NULL;
    ck_assert_int_eq(sdpa_plan_create(g_cl, &p.desc, NULL, &plan), SDPA_OK);
    sdpa_plan_info info;
    memset(&info, 0, sizeof info);
    info.struct_size = sizeof info;
    ck_assert_int_eq(sdpa_plan_get_info(plan, &info), SDPA_OK);
    ck_assert_int_eq(info.backend, SDPA_BACKEND_OPENCL);
    ck_assert_msg(strcmp(info.kernel, "decode") == 0, "kernel %s (%s)", info.kernel, info.config);
    ck_assert_uint_gt(sdpa_plan_workspace_size(plan), 0);
    sdpa_plan_destroy(plan);
    tproblem_free(&p);
}
END_TEST

/* NaN/Inf stored in K and V at keys that every row of a batch drops (kv_len,
 * band, an all-zero mask column, an all -inf bias column) must not reach any
 * output: forward (out, lse, stats) matches the reference run on clean
 * inputs, and the backward's dq is finite with dk = dv = 0 at those keys.
 * Mask + bias + stats at D 64 share the kernel variant of
 * bias_bcast_mask_stats; Skv 77 crosses a tile edge. */
static void poison_dropped(tproblem *tp, const tcase *c, bool *dropped)
{
    sdpa__problem q;
    memset(&q, 0, sizeof q);
    q.Sq = c->Sq;
    q.diagonal = c->diagonal;
    q.diagonal_offset = c->diagonal_offset;
    q.window_left = c->window_left;
    q.window_right = c->window_right;
    float *k = tp->k, *v = tp->v;
    for (int64_t b = 0; b < c->B; b++) {
        int64_t kvl = tp->kv_len ? tp->kv_len[b] : c->Skv;
        for (int64_t j = 0; j < c->Skv; j++) {
            bool all = true;
            for (int64_t h = 0; h < c->Hq && all; h++)
                for (int64_t i = 0; i < c->Sq && all; i++) {
                    int64_t lo, hi;
                    sdpa__row_range(&q, kvl, i, &lo, &hi);
                    size_t e = (size_t)(((b * c->Hq + h) * c->Sq + i) * c->Skv + j);
                    bool keep = j >= lo && j < hi && tp->mask[e] && tp->bias[e] != -INFINITY;
                    if (keep) all = false;
                }
            dropped[b * c->Skv + j] = all;
            if (!all) continue;
            for (int64_t hk = 0; hk < c->Hkv; hk++) {
                size_t r = (size_t)((b * c->Hkv + hk) * c->Skv + j);
                for (int64_t d = 0; d < c->D; d++) k[r * c->D + d] = (d & 1) ? NAN : INFINITY;
                for (int64_t d = 0; d < c->Dv; d++) v[r * c->Dv + d] = (d & 1) ? -INFINITY : NAN;
            }
        }
    }
}

START_TEST(garbage_in_dropped_keys)
{
    tcase c;
    tcase_init(&c, "garbage", 2, 2, 1, 33, 77, 64, 64);
    c.seed = 99;
    c.lse = true;
    c.stats = true;
    c.mask = true;
    c.mask_keep = 0.9;
    c.bias = true;
    c.kv_len = true;
    c.diagonal = SDPA_DIAGONAL_EXPLICIT;
    c.diagonal_offset = 30;
    c.window_left = 20;
    c.window_right = 3;
    tproblem tp;
    tproblem_make(&tp, &c);
    tp.kv_len[0] = 70; /* batch 0: keys 70..76 dropped by kv_len */
    for (int64_t b = 0; b < 2; b++)
        for (int64_t h = 0; h < 2; h++)
            for (int64_t i = 0; i < c.Sq; i++) {
                size_t e = (size_t)(((b * 2 + h) * c.Sq + i) * c.Skv);
                tp.mask[e + 40] = 0;          /* key 40: masked everywhere */
                tp.bias[e + 45] = -INFINITY;  /* key 45: -inf bias everywhere */
            }
    size_t nl = (size_t)(c.B * c.Hq * c.Sq), ns = (size_t)(c.B * c.Hq) * SDPA_STAT_COUNT;
    ck_assert_int_eq(sdpa_attention_forward(g_ref, &tp.desc), SDPA_OK);
    float *want_o = malloc(tp.n_out * 4), *want_l = malloc(nl * 4), *want_s = malloc(ns * 4);
    memcpy(want_o, tp.out, tp.n_out * 4);
    memcpy(want_l, tp.lse, nl * 4);
    memcpy(want_s, tp.stats, ns * 4);
    bool dropped[2 * 77];
    poison_dropped(&tp, &c, dropped);
    int ndrop = 0;
    for (int j = 0; j < 2 * 77; j++) ndrop += dropped[j];
    ck_assert_int_ge(ndrop, 12); /* band, kv_len, mask and bias columns */
    ck_assert_msg(dropped[40] && dropped[45] && dropped[76] && dropped[77 + 40],
                  "forced drops not detected");

    sdpa_plan_options po;
    sdpa_plan_options_init(&po);
    po.flags = SDPA_PLAN_BACKWARD;
    sdpa_plan *plan = NULL;
    ck_assert_int_eq(sdpa_plan_create(g_cl, &tp.desc, &po, &plan), SDPA_OK);
    tproblem_poison(&tp);
    ck_assert_int_eq(sdpa_plan_forward(plan, &tp.desc.tensors), SDPA_OK);
    tcompare r = tcompare_arrays(tp.out, SDPA_DTYPE_F32, want_o, SDPA_DTYPE_F32, tp.n_out);
    ck_assert_msg(r.bad_nonfinite == 0 && r.max_abs < tbound(SDPA_DTYPE_F32),
                  "out: %zu non-finite mismatches, max_abs %g", r.bad_nonfinite, r.max_abs);
    r = tcompare_arrays(tp.lse, SDPA_DTYPE_F32, want_l, SDPA_DTYPE_F32, nl);
    ck_assert_msg(r.bad_nonfinite == 0 && r.max_abs < tbound(SDPA_DTYPE_F32), "lse");
    for (size_t e = 0; e < ns; e++)
        ck_assert_msg(isfinite(tp.stats[e]) == isfinite(want_s[e]) &&
                      (!isfinite(want_s[e]) ||
                       fabs(tp.stats[e] - want_s[e]) <= 1e-3 * (1.0 + fabs(want_s[e]))),
                      "stats[%zu] = %g, want %g", e, tp.stats[e], want_s[e]);
    ck_assert_int_eq(sdpa_plan_backward(plan, &tp.desc.tensors, &tp.bwd), SDPA_OK);
    const float *dq = tp.dq, *dk = tp.dk, *dv = tp.dv;
    for (size_t e = 0; e < (size_t)(c.B * c.Hq * c.Sq * c.D); e++)
        ck_assert_msg(isfinite(dq[e]), "dq[%zu] = %g", e, dq[e]);
    for (int64_t b = 0; b < 2; b++)
        for (int64_t j = 0; j < c.Skv; j++) {
            bool dr = dropped[b * c.Skv + j];
            size_t rk = (size_t)(b * c.Skv + j); /* Hkv = 1 */
            for (int64_t d = 0; d < c.D; d++) {
                float x = dk[rk * c.D + d];
                ck_assert_msg(dr ? x == 0.0f : isfinite(x), "dk b%lld j%lld = %g",
                              (long long)b, (long long)j, x);
            }
            for (int64_t d = 0; d < c.Dv; d++) {
                float x = dv[rk * c.Dv + d];
                ck_assert_msg(dr ? x == 0.0f : isfinite(x), "dv b%lld j%lld = %g",
                              (long long)b, (long long)j, x);
            }
        }
    sdpa_plan_destroy(plan);

    /* The split-KV (decode) kernel and its merge, forced to 3 splits
     * (statistics off: they never split). */
    sdpa_tile_config tc;
    sdpa_tile_config_init(&tc);
    sdpa_tile_config_set(&tc, SDPA_TILE_SPLIT_KV, 3);
    sdpa_plan_options_init(&po);
    po.tile = &tc;
    memset(&tp.desc.tensors.stats, 0, sizeof tp.desc.tensors.stats);
    ck_assert_int_eq(sdpa_plan_create(g_cl, &tp.desc, &po, &plan), SDPA_OK);
    sdpa_plan_info info;
    memset(&info, 0, sizeof info);
    info.struct_size = sizeof info;
    ck_assert_int_eq(sdpa_plan_get_info(plan, &info), SDPA_OK);
    ck_assert_str_eq(info.kernel, "decode");
    tproblem_poison(&tp);
    ck_assert_int_eq(sdpa_plan_forward(plan, &tp.desc.tensors), SDPA_OK);
    r = tcompare_arrays(tp.out, SDPA_DTYPE_F32, want_o, SDPA_DTYPE_F32, tp.n_out);
    ck_assert_msg(r.bad_nonfinite == 0 && r.max_abs < tbound(SDPA_DTYPE_F32),
                  "split out: %zu non-finite mismatches, max_abs %g", r.bad_nonfinite,
                  r.max_abs);
    r = tcompare_arrays(tp.lse, SDPA_DTYPE_F32, want_l, SDPA_DTYPE_F32, nl);
    ck_assert_msg(r.bad_nonfinite == 0 && r.max_abs < tbound(SDPA_DTYPE_F32), "split lse");
    sdpa_plan_destroy(plan);
    free(want_o);
    free(want_l);
    free(want_s);
    tproblem_free(&tp);
}
END_TEST

/* ---- direct decode path (decode.cl: K/V read in place) ------------------------ */

/* The plan's kernel and config for a problem (and options). */
static void direct_config(const tproblem *tp, const sdpa_plan_options *o, char *out, size_t n)
{
    sdpa_plan *plan = NULL;
    sdpa_status st = sdpa_plan_create(g_cl, &tp->desc, o, &plan);
    sdpa_error_info ei;
    memset(&ei, 0, sizeof ei);
    sdpa_context_last_error(g_cl, &ei);
    ck_assert_msg(st == SDPA_OK, "%s: plan: %s", tp->c.name, ei.message);
    sdpa_plan_info info;
    memset(&info, 0, sizeof info);
    info.struct_size = sizeof info;
    ck_assert_int_eq(sdpa_plan_get_info(plan, &info), SDPA_OK);
    snprintf(out, n, "%s %s", info.kernel, info.config);
    /* no packed K/V: workspace is packed q + partials, far below K + V */
    if (strstr(info.config, "direct_kv=1") && tp->c.Skv >= 1000)
        ck_assert_uint_lt(sdpa_plan_workspace_size(plan), tp->n_k * 4);
    sdpa_plan_destroy(plan);
}

/* Asserts that c (with options o) plans the direct path, then parity. */
static void direct_parity(const tcase *c, const sdpa_plan_options *o)
{
    tproblem tp;
    tproblem_make(&tp, c);
    char cfg[320];
    direct_config(&tp, o, cfg, sizeof cfg);
    ck_assert_msg(strncmp(cfg, "decode ", 7) == 0 && strstr(cfg, "direct_kv=1"),
                  "%s: not the direct decode path: %s", c->name, cfg);
    tproblem_free(&tp);
    tparity_forward(g_cl, g_ref, c, o);
}

/* Decode shapes (Sq 1 and 7) across chunk, tile (16 keys) and vector edges;
 * one kernel variant per row, lengths looped inside it. */
static const struct {
    const char *name;
    int64_t B, Hq, Hkv, Sq, D, Dv;
    unsigned f;
    int64_t skv[6];
} dcases[] = {
    {"dd_gqa_d128_kvlen", 2, 8, 2, 1, 128, 128, F_KVLEN, {1, 63, 65, 257, 1000, 4099}},
    {"dd_sq7_dv48_br_win", 1, 8, 2, 7, 64, 48, F_CAUSAL | F_BR, {8, 63, 65, 257, 1000, 0}},
    {"dd_f16_mask_bias_cap", 1, 8, 2, 1, 128, 128, F_F16 | F_MASK | F_BIAS | F_CAP,
     {65, 1000, 0}},
    {"dd_sq7_temp_mask_bias", 1, 4, 1, 7, 64, 64, F_MASK | F_BIAS, {63, 257, 0}},
    {"dd_bf16", 1, 2, 1, 1, 64, 64, F_BF16, {300, 0}},
};
#define N_DCASES (int)(sizeof dcases / sizeof dcases[0])

START_TEST(direct_decode_parity)
{
    for (int k = 0; k < 6 && dcases[_i].skv[k] > 0; k++) {
        fcase f = {dcases[_i].name, dcases[_i].B, dcases[_i].Hq, dcases[_i].Hkv,
                   dcases[_i].Sq, dcases[_i].skv[k], dcases[_i].D, dcases[_i].Dv,
                   dcases[_i].f};
        tcase c = fcase_make(&f, 777u + (uint64_t)k);
        if (f.f & F_BR) c.window_left = 100; /* bottom-right causal window */
        if (_i == 3) c.temperature = true;
        direct_parity(&c, NULL);
    }
    if (_i == 0) { /* a forced split count keeps the direct path: chunks of 334 */
        sdpa_tile_config tc;
        sdpa_tile_config_init(&tc);
        sdpa_tile_config_set(&tc, SDPA_TILE_SPLIT_KV, 3);
        sdpa_plan_options o;
        sdpa_plan_options_init(&o);
        o.tile = &tc;
        fcase f = {"dd_split3", 2, 8, 2, 1, 1000, 128, 128, F_KVLEN};
        tcase c = fcase_make(&f, 4321u);
        direct_parity(&c, &o);
    }
}
END_TEST

/* Runs `tp` (inputs possibly edited) on the OpenCL direct path and the
 * reference copy `want` on the reference; returns out / lse comparisons
 * after checking the path. */
static void direct_run(tproblem *tp, tproblem *want, tcompare *ro, tcompare *rl)
{
    char cfg[320];
    direct_config(tp, NULL, cfg, sizeof cfg);
    ck_assert_msg(strstr(cfg, "direct_kv=1"), "%s: %s", tp->c.name, cfg);
    tproblem_poison(want);
    ck_assert_int_eq(sdpa_attention_forward(g_ref, &want->desc), SDPA_OK);
    tproblem_poison(tp);
    sdpa_plan *plan = NULL;
    ck_assert_int_eq(sdpa_plan_create(g_cl, &tp->desc, NULL, &plan), SDPA_OK);
    ck_assert_int_eq(sdpa_plan_forward(plan, &tp->desc.tensors), SDPA_OK);
    sdpa_plan_destroy(plan);
    size_t nl = (size_t)(tp->c.B * tp->c.Hq * tp->c.Sq);
    *ro = tcompare_arrays(tp->out, tp->c.dtype, want->out, want->c.dtype, tp->n_out);
    *rl = tcompare_arrays(tp->lse, SDPA_DTYPE_F32, want->lse, SDPA_DTYPE_F32, nl);
}

/* kv_len 0 (empty rows: out 0, lse -inf); NaN/Inf in K and V at keys a
 * batch drops by kv_len, by an all-zero mask column and by an all -inf bias
 * column, inside the walked range (never reach a row: select, not multiply);
 * NaN in K at a kept key (every row of that batch becomes NaN, the others
 * stay exact). The reference runs on the same inputs without the garbage
 * (it is not required to be garbage-proof). B 3, Hq 4 / Hkv 1, Sq 7, Skv 257, D 64, mask + bias (the
 * variant of dd_sq7_temp_mask_bias). */
START_TEST(direct_decode_empty_and_nan)
{
    tcase c;
    tcase_init(&c, "dd_nan", 3, 4, 1, 7, 257, 64, 64);
    c.seed = 4242;
    c.lse = true;
    c.kv_len = true;
    c.mask = true;
    c.mask_keep = 0.9;
    c.bias = true;
    tproblem tp, want;
    tproblem_make(&tp, &c);
    tproblem_make(&want, &c);
    const int64_t S = 257, D = 64, SQ = 7, HQ = 4;
    int32_t kvl[3] = {0, 200, 257};
    tproblem *ps[2] = {&tp, &want};
    for (int s = 0; s < 2; s++) {
        float *k = ps[s]->k, *v = ps[s]->v;
        for (int b = 0; b < 3; b++) ps[s]->kv_len[b] = kvl[b];
        for (int64_t h = 0; h < HQ; h++)
            for (int64_t i = 0; i < SQ; i++) {
                size_t e1 = (size_t)(((1 * HQ + h) * SQ + i) * S);
                size_t e2 = (size_t)(((2 * HQ + h) * SQ + i) * S);
                ps[s]->mask[e1 + 50] = 0;          /* batch 1 key 50: masked */
                ps[s]->bias[e1 + 60] = -INFINITY;  /* batch 1 key 60: -inf bias */
                ps[s]->mask[e2 + 100] = 1;         /* batch 2 key 100: kept */
                ps[s]->bias[e2 + 100] = 0.5f;
            }
        /* batch 1: garbage in K and V at keys 50, 60 and 200..256 (OpenCL
         * side only: the reference runs on clean values there) */
        for (int64_t j = 50; j < S && s == 0; j++) {
            if (j != 50 && j != 60 && j < 200) continue;
            for (int64_t d = 0; d < D; d++) {
                k[(1 * S + j) * D + d] = (d & 1) ? NAN : INFINITY;
                v[(1 * S + j) * D + d] = (d & 1) ? INFINITY : NAN;
            }
        }
        k[(2 * S + 100) * D + 5] = NAN; /* batch 2: NaN at a kept key */
    }
    tcompare ro, rl;
    direct_run(&tp, &want, &ro, &rl);
    ck_assert_msg(ro.bad_nonfinite == 0 && ro.max_abs < tbound(SDPA_DTYPE_F32),
                  "out: %zu non-finite mismatches, max_abs %g", ro.bad_nonfinite, ro.max_abs);
    ck_assert_msg(rl.bad_nonfinite == 0 && rl.max_abs < 1e-4, "lse: %zu, %g",
                  rl.bad_nonfinite, rl.max_abs);
    const float *o = tp.out;
    for (int64_t r = 0; r < HQ * SQ; r++) {
        size_t r0 = (size_t)r, r1 = (size_t)(HQ * SQ + r), r2 = (size_t)(2 * HQ * SQ + r);
        ck_assert_msg(tp.lse[r0] == -INFINITY, "empty row lse %g", tp.lse[r0]);
        ck_assert_msg(isfinite(tp.lse[r1]), "garbage reached lse of row %lld", (long long)r);
        ck_assert_msg(isnan(tp.lse[r2]), "NaN in K: lse %g", tp.lse[r2]);
        for (int64_t d = 0; d < D; d++) {
            ck_assert_msg(o[r0 * D + d] == 0.0f, "empty row out %g", o[r0 * D + d]);
            ck_assert_msg(isfinite(o[r1 * D + d]), "garbage reached row %lld", (long long)r);
            ck_assert_msg(isnan(o[r2 * D + d]), "NaN in K: out %g", o[r2 * D + d]);
        }
    }
    tproblem_free(&tp);
    tproblem_free(&want);
}
END_TEST

/* K and V through non-contiguous strides: pass 0, K laid out (B, S, H, D)
 * with a padded sequence stride and an element offset (vector loads) and V
 * with a padded head stride and last stride 2 (scalar path); pass 1, K with
 * last stride 2 and V dense. Gaps hold NaN; the results match the reference
 * on the dense copies. */
START_TEST(direct_decode_strided_kv)
{
    tcase c;
    tcase_init(&c, "dd_strided", 2, 8, 2, 1, 1000, 128, 128);
    c.seed = 99;
    c.lse = true;
    c.kv_len = true;
    const int64_t B = 2, H = 2, S = 1000, D = 128, koff = 3, kss = H * D + 8;
    const int64_t vhs = S * D * 2 + 40;
    for (int pass = 0; pass < 2; pass++) {
        tproblem tp, want;
        tproblem_make(&tp, &c);
        tproblem_make(&want, &c);
        size_t nk = (size_t)(pass == 0 ? koff + B * S * kss : B * H * S * D * 2);
        size_t nv = (size_t)(pass == 0 ? B * H * vhs : B * H * S * D);
        float *ks = malloc(nk * 4), *vs = malloc(nv * 4);
        ck_assert_ptr_nonnull(ks);
        ck_assert_ptr_nonnull(vs);
        for (size_t e = 0; e < nk; e++) ks[e] = NAN; /* gaps */
        for (size_t e = 0; e < nv; e++) vs[e] = NAN;
        const float *k = tp.k, *v = tp.v;
        sdpa_tensor *kt = &tp.desc.tensors.k, *vt = &tp.desc.tensors.v;
        *kt = sdpa_tensor_host(ks, SDPA_DTYPE_F32, B, H, S, D);
        *vt = sdpa_tensor_host(vs, SDPA_DTYPE_F32, B, H, S, D);
        if (pass == 0) {
            kt->offset = koff;
            kt->stride[0] = S * kss;
            kt->stride[1] = D;
            kt->stride[2] = kss;
            kt->stride[3] = 1;
            vt->stride[0] = H * vhs;
            vt->stride[1] = vhs;
            vt->stride[2] = 2 * D;
            vt->stride[3] = 2;
        } else {
            kt->stride[0] = H * S * D * 2;
            kt->stride[1] = S * D * 2;
            kt->stride[2] = D * 2;
            kt->stride[3] = 2;
        }
        for (int64_t b = 0; b < B; b++)
            for (int64_t h = 0; h < H; h++)
                for (int64_t j = 0; j < S; j++)
                    for (int64_t d = 0; d < D; d++) {
                        size_t src = (size_t)(((b * H + h) * S + j) * D + d);
                        ks[kt->offset + b * kt->stride[0] + h * kt->stride[1] +
                           j * kt->stride[2] + d * kt->stride[3]] = k[src];
                        vs[vt->offset + b * vt->stride[0] + h * vt->stride[1] +
                           j * vt->stride[2] + d * vt->stride[3]] = v[src];
                    }
        tcompare ro, rl;
        direct_run(&tp, &want, &ro, &rl);
        ck_assert_msg(ro.bad_nonfinite == 0 && ro.max_abs < tbound(SDPA_DTYPE_F32),
                      "pass %d out: %zu non-finite mismatches, max_abs %g", pass,
                      ro.bad_nonfinite, ro.max_abs);
        ck_assert_msg(rl.bad_nonfinite == 0 && rl.max_abs < 1e-4, "pass %d lse", pass);
        free(ks);
        free(vs);
        tproblem_free(&tp);
        tproblem_free(&want);
    }
}
END_TEST

/* Plans that need the packed K (QK-norm; gains need it) or whole rows (statistics),
 * backward plans, and tiles forcing another configuration keep the packed
 * path; parity on the QK-norm one. */
START_TEST(direct_decode_not_taken)
{
    fcase f = {"dd_stats", 1, 8, 2, 1, 1000, 64, 64, F_STATS};
    for (int k = 0; k < 4; k++) {
        if (k == 1) f.f = F_RMS;
        if (k == 2) f.f = F_LAYER | F_GAINS;
        if (k == 3) f.f = 0;
        tcase c = fcase_make(&f, 4321u);
        tproblem tp;
        tproblem_make(&tp, &c);
        sdpa_plan_options o;
        sdpa_plan_options_init(&o);
        sdpa_tile_config tc;
        sdpa_tile_config_init(&tc);
        if (k == 3) { /* forced work-group size: the packed split-KV kernel */
            sdpa_tile_config_set(&tc, SDPA_TILE_WG_SIZE, 16);
            o.tile = &tc;
        }
        char cfg[320];
        direct_config(&tp, &o, cfg, sizeof cfg);
        ck_assert_msg(!strstr(cfg, "direct_kv"), "case %d took the direct path: %s", k, cfg);
        if (k == 0) {
            o.flags = SDPA_PLAN_BACKWARD;
            f.f = 0;
            tcase c2 = fcase_make(&f, 4321u);
            tproblem tb;
            tproblem_make(&tb, &c2);
            direct_config(&tb, &o, cfg, sizeof cfg);
            ck_assert_msg(!strstr(cfg, "direct_kv"), "backward plan: %s", cfg);
            tproblem_free(&tb);
        }
        tproblem_free(&tp);
        if (k == 1) tparity_forward(g_cl, g_ref, &c, NULL);
    }
}
END_TEST

/* ---- tuning slots -------------------------------------------------------------- */

/* The backend's view of a test case (only what tile choice reads). */
static sdpa__problem problem_of(const fcase *f)
{
    sdpa__problem p;
    memset(&p, 0, sizeof p);
    p.B = f->B, p.Hq = f->Hq, p.Hkv = f->Hkv, p.Sq = f->Sq, p.Skv = f->Skv;
    p.D = f->D, p.Dv = f->Dv;
    p.dtype = SDPA_DTYPE_F32;
    p.scale = 1.0 / sqrt((double)f->D);
    p.window_left = p.window_right = -1;
    p.has_stats = (f->f & F_STATS) != 0;
    p.has_kv_len = (f->f & F_KVLEN) != 0;
    return p;
}

static void plan_config(const tproblem *tp, const sdpa_plan_options *o, char *out, size_t n)
{
    sdpa_plan *plan = NULL;
    ck_assert_int_eq(sdpa_plan_create(g_cl, &tp->desc, o, &plan), SDPA_OK);
    sdpa_plan_info info;
    memset(&info, 0, sizeof info);
    info.struct_size = sizeof info;
    ck_assert_int_eq(sdpa_plan_get_info(plan, &info), SDPA_OK);
    snprintf(out, n, "%s %s", info.kernel, info.config);
    sdpa_plan_destroy(plan);
}

/* default_tile is what plan_create uses without a tile; tile_candidates are
 * complete, few, start with the default, and a sample of them (first,
 * middle, last fused one; plus the unfused one where offered) passes parity;
 * source_hash is 16 stable hex digits. Cases: a GQA prefill and a decode
 * shape (split-KV candidates). */
START_TEST(tuning_slots)
{
    const sdpa__backend *be = sdpa__backend_get(SDPA_BACKEND_OPENCL);
    ck_assert_ptr_nonnull(be);
    void *be_state = sdpa__context_primary_state(g_cl, be);
    ck_assert_ptr_nonnull(be_state);
    ck_assert_ptr_nonnull(be->default_tile);
    ck_assert_ptr_nonnull(be->tile_candidates);
    ck_assert_ptr_nonnull(be->source_hash);
    const char *h = be->source_hash();
    ck_assert_uint_eq(strlen(h), 16);
    ck_assert_uint_eq(strspn(h, "0123456789abcdef"), 16);
    char h2[32];
    snprintf(h2, sizeof h2, "%s", h);
    ck_assert_str_eq(h2, be->source_hash());

    static const char *const names[] = {"gqa_dv", "decode_long"};
    for (int k = 0; k < 2; k++) {
        const fcase *f = tparity_fcase(names[k]);
        sdpa__problem p = problem_of(f);
        sdpa_tile_config def;
        sdpa_tile_config_init(&def);
        be->default_tile(g_cl, be_state, &p, 0, NULL, &def);
        ck_assert_int_ge(TGET(&def, Q_TILE), 1);
        ck_assert_int_ge(TGET(&def, K_TILE), 1);
        ck_assert_int_ge(TGET(&def, WG_SIZE), 1);
        ck_assert_int_ge(TGET(&def, VEC_WIDTH), 1);
        ck_assert_int_ge(TGET(&def, SPLIT_KV), 1);
        ck_assert_int_eq(TGET(&def, UNFUSED), 0);
        if (k == 1) ck_assert_int_gt(TGET(&def, SPLIT_KV), 1); /* decode splits */

        /* default_tile == what plan_create picks with tile = NULL */
        tcase c = fcase_make(f, 4321u);
        tproblem tp;
        tproblem_make(&tp, &c);
        sdpa_plan_options o;
        sdpa_plan_options_init(&o);
        char auto_cfg[320], forced_cfg[320];
        plan_config(&tp, &o, auto_cfg, sizeof auto_cfg);
        o.tile = &def;
        plan_config(&tp, &o, forced_cfg, sizeof forced_cfg);
        ck_assert_str_eq(auto_cfg, forced_cfg);
        tproblem_free(&tp);

        sdpa_tile_config cand[64];
        for (int i = 0; i < 64; i++) sdpa_tile_config_init(&cand[i]);
        int n = be->tile_candidates(g_cl, be_state, &p, 0, cand, 64);
        ck_assert_int_ge(n, 4);
        ck_assert_int_le(n, 26);
        ck_assert_int_eq(TGET(&cand[0], Q_TILE), TGET(&def, Q_TILE));
        ck_assert_int_eq(TGET(&cand[0], K_TILE), TGET(&def, K_TILE));
        ck_assert_int_eq(TGET(&cand[0], SPLIT_KV), TGET(&def, SPLIT_KV));
        int unf = -1, last_fused = 0;
        for (int i = 0; i < n; i++) {
            const sdpa_tile_config *t = &cand[i];
            ck_assert_msg(TGET(t, Q_TILE) >= 1 && TGET(t, K_TILE) >= 2 &&
                              TGET(t, WG_SIZE) >= 1 && TGET(t, VEC_WIDTH) >= 1 &&
                              (TGET(t, STAGE_KV) == 0 || TGET(t, STAGE_KV) == 1) &&
                              TGET(t, SPLIT_KV) >= 1 &&
                              (TGET(t, UNFUSED) == 0 || TGET(t, UNFUSED) == 1),
                          "%s candidate %d incomplete", names[k], i);
            if (TGET(t, UNFUSED) == 1) {
                if (unf < 0) unf = i; /* the first: CLBlast's own parameters */
            } else {
                last_fused = i;
            }
            if (k == 1 && TGET(t, SPLIT_KV) == 1 && !TGET(t, UNFUSED)) ck_assert_int_gt(i, 0);
        }
        /* fewer candidates than max: max bounds what is written */
        ck_assert_int_eq(be->tile_candidates(g_cl, be_state, &p, 0, cand, 2), n);
        /* with statistics no candidate splits */
        sdpa__problem ps = p;
        ps.has_stats = true;
        sdpa_tile_config cs[64];
        int ns = be->tile_candidates(g_cl, be_state, &ps, 0, cs, 64);
        for (int i = 0; i < ns && i < 64; i++) ck_assert_int_eq(TGET(&cs[i], SPLIT_KV), 1);
        /* backward plans are never offered the unfused path */
        int nb = be->tile_candidates(g_cl, be_state, &p, SDPA_PLAN_BACKWARD, cs, 64);
        for (int i = 0; i < nb && i < 64; i++) ck_assert_int_eq(TGET(&cs[i], UNFUSED), 0);

        be->tile_candidates(g_cl, be_state, &p, 0, cand, 64);
        /* fused ones only: the unfused candidates (one per CLBlast
         * parameter set, listed last) would change the set in force */
        int nf = last_fused + 1;
        int pick[3] = {nf / 3, (2 * nf) / 3, last_fused};
        for (int i = 0; i < 3; i++) {
            o.tile = &cand[pick[i]];
            tparity_forward(g_cl, g_ref, &c, &o);
        }
        if (unf >= 0 && k == 0) { /* one CLBlast compile only */
            o.tile = &cand[unf];
            tparity_forward(g_cl, g_ref, &c, &o);
        }
    }
}
END_TEST

/* ---- unfused path (CLBlast) --------------------------------------------------- */

/* Whether the build has the unfused path: a tiny unfused plan is created or
 * refused as unsupported with a message naming CLBlast. */
static bool unfused_built(const tproblem *tp)
{
    sdpa_tile_config tc;
    sdpa_tile_config_init(&tc);
    sdpa_tile_config_set(&tc, SDPA_TILE_UNFUSED, 1);
    sdpa_plan_options o;
    sdpa_plan_options_init(&o);
    o.tile = &tc;
    sdpa_plan *plan = NULL;
    sdpa_status st = sdpa_plan_create(g_cl, &tp->desc, &o, &plan);
    sdpa_plan_destroy(plan);
    if (st == SDPA_OK) return true;
    ck_assert_int_eq(st, SDPA_ERR_UNSUPPORTED);
    sdpa_error_info e;
    sdpa_context_last_error(g_cl, &e);
    ck_assert_msg(strstr(e.message, "CLBlast") != NULL, "%s", e.message);
    fprintf(stderr, "test_opencl: no CLBlast in this build; unfused parity skipped\n");
    return false;
}

/* The case every unfused test uses (one GEMM shape class, so CLBlast
 * compiles its kernels once per process: 9-17 s cold on PoCL). GQA, Sq 65
 * and Skv 257 cross tile edges; softcap, bias, mask, kv_len, a
 * bottom-right causal window, LSE and statistics. */
static tcase unfused_case(unsigned extra)
{
    fcase f = {"unfused", 2, 4, 2, 65, 257, 64, 64,
               F_CAP | F_BIAS | F_MASK | F_KVLEN | F_CAUSAL | F_BR | F_STATS | extra};
    tcase c = fcase_make(&f, 4321u);
    c.window_left = 100;
    return c;
}

/* Unfused vs the reference (f32 everything; f16 storage with RMS QK-norm and
 * gains), and vs the fused path on the same inputs. */
START_TEST(unfused_parity)
{
    tcase c = unfused_case(0);
    tproblem tp;
    tproblem_make(&tp, &c);
    if (!unfused_built(&tp)) {
        tproblem_free(&tp);
        return;
    }
    sdpa_tile_config tc;
    sdpa_tile_config_init(&tc);
    sdpa_tile_config_set(&tc, SDPA_TILE_UNFUSED, 1);
    sdpa_plan_options o;
    sdpa_plan_options_init(&o);
    o.tile = &tc;
    tparity_forward(g_cl, g_ref, &c, &o);
    tcase c16 = unfused_case(F_F16 | F_RMS | F_GAINS);
    tparity_forward(g_cl, g_ref, &c16, &o);

    /* vs fused: same inputs, both plans on the OpenCL context */
    sdpa_plan *pu = NULL, *pf = NULL;
    ck_assert_int_eq(sdpa_plan_create(g_cl, &tp.desc, &o, &pu), SDPA_OK);
    ck_assert_int_eq(sdpa_plan_create(g_cl, &tp.desc, NULL, &pf), SDPA_OK);
    sdpa_plan_info info;
    memset(&info, 0, sizeof info);
    info.struct_size = sizeof info;
    ck_assert_int_eq(sdpa_plan_get_info(pu, &info), SDPA_OK);
    ck_assert_str_eq(info.kernel, "unfused");
    ck_assert_str_eq(info.source, "forced");
    ck_assert_uint_ge(sdpa_plan_workspace_size(pu),
                      (size_t)(c.B * c.Hq * c.Sq * c.Skv) * sizeof(float));
    size_t nl = (size_t)(c.B * c.Hq * c.Sq), ns = (size_t)(c.B * c.Hq) * SDPA_STAT_COUNT;
    ck_assert_int_eq(sdpa_plan_forward(pf, &tp.desc.tensors), SDPA_OK);
    float *fo = malloc(tp.n_out * 4), *fl = malloc(nl * 4), *fs = malloc(ns * 4);
    memcpy(fo, tp.out, tp.n_out * 4);
    memcpy(fl, tp.lse, nl * 4);
    memcpy(fs, tp.stats, ns * 4);
    for (int rep = 0; rep < 2; rep++) { /* reruns reuse the plan's workspace */
        tproblem_poison(&tp);
        ck_assert_int_eq(sdpa_plan_forward(pu, &tp.desc.tensors), SDPA_OK);
        tcompare r = tcompare_arrays(tp.out, SDPA_DTYPE_F32, fo, SDPA_DTYPE_F32, tp.n_out);
        ck_assert_msg(r.bad_nonfinite == 0 && r.max_abs < 1e-5, "out vs fused: %g", r.max_abs);
        r = tcompare_arrays(tp.lse, SDPA_DTYPE_F32, fl, SDPA_DTYPE_F32, nl);
        ck_assert_msg(r.bad_nonfinite == 0 && r.max_abs < 1e-5, "lse vs fused: %g", r.max_abs);
        for (size_t e = 0; e < ns; e++)
            ck_assert_msg(isfinite(tp.stats[e]) == isfinite(fs[e]) &&
                          (!isfinite(fs[e]) ||
                           fabs(tp.stats[e] - fs[e]) <= 1e-4 * (1.0 + fabs(fs[e]))),
                          "stats[%zu] %g vs fused %g", e, tp.stats[e], fs[e]);
    }
    /* A NaN input (row 0 of q) leaves NaN in the plan's scores; the next
     * call must not see it (the GEMMs run with beta = 0). */
    float *q = tp.q, q0 = q[0];
    q[0] = NAN;
    ck_assert_int_eq(sdpa_plan_forward(pu, &tp.desc.tensors), SDPA_OK);
    ck_assert_msg(isnan(((float *)tp.out)[0]), "NaN q row must give a NaN row");
    q[0] = q0;
    tproblem_poison(&tp);
    ck_assert_int_eq(sdpa_plan_forward(pu, &tp.desc.tensors), SDPA_OK);
    tcompare r = tcompare_arrays(tp.out, SDPA_DTYPE_F32, fo, SDPA_DTYPE_F32, tp.n_out);
    ck_assert_msg(r.bad_nonfinite == 0 && r.max_abs < 1e-5, "out after NaN call: %zu bad",
                  r.bad_nonfinite);
    free(fo);
    free(fl);
    free(fs);
    sdpa_plan_destroy(pu);
    sdpa_plan_destroy(pf);
    tproblem_free(&tp);
}
END_TEST

/* workspace_limit below what the scores need, or 0 (never materialise):
 * SDPA_ERR_WORKSPACE naming the bytes; backward plans: SDPA_ERR_UNSUPPORTED;
 * the default never picks the unfused path. */
START_TEST(unfused_refused)
{
    tcase c = unfused_case(0);
    tproblem tp;
    tproblem_make(&tp, &c);
    sdpa_tile_config tc;
    sdpa_tile_config_init(&tc);
    sdpa_tile_config_set(&tc, SDPA_TILE_UNFUSED, 1);
    sdpa_plan_options o;
    sdpa_plan_options_init(&o);
    o.tile = &tc;
    sdpa_plan *plan = NULL;
    bool built = unfused_built(&tp);
    const int64_t limits[] = {0, 1 << 20, (int64_t)(c.B * c.Hq * c.Sq * c.Skv) * 4};
    for (int i = 0; i < 3; i++) {
        o.workspace_limit = limits[i];
        sdpa_status st = sdpa_plan_create(g_cl, &tp.desc, &o, &plan);
        ck_assert_ptr_null(plan);
        ck_assert_int_eq(st, built ? SDPA_ERR_WORKSPACE : SDPA_ERR_UNSUPPORTED);
        if (built) {
            sdpa_error_info e;
            sdpa_context_last_error(g_cl, &e);
            ck_assert_msg(strstr(e.message, "bytes") != NULL, "%s", e.message);
        }
    }
    o.workspace_limit = SDPA_AUTO;
    o.flags = SDPA_PLAN_BACKWARD;
    ck_assert_int_eq(sdpa_plan_create(g_cl, &tp.desc, &o, &plan), SDPA_ERR_UNSUPPORTED);
    ck_assert_ptr_null(plan);
    /* no tile: the fused kernel, whatever the limit */
    sdpa_plan_options_init(&o);
    ck_assert_int_eq(sdpa_plan_create(g_cl, &tp.desc, &o, &plan), SDPA_OK);
    sdpa_plan_info info;
    memset(&info, 0, sizeof info);
    info.struct_size = sizeof info;
    ck_assert_int_eq(sdpa_plan_get_info(plan, &info), SDPA_OK);
    ck_assert_str_ne(info.kernel, "unfused");
    sdpa_plan_destroy(plan);
    tproblem_free(&tp);
}
END_TEST

/* ---- backward ------------------------------------------------------------------ */

/* Forced configurations in the backward: one row per work-item with small
 * tiles, and two rows per work-item with a large key tile. */
START_TEST(backward_forced_tiles)
{
    static const struct { int wg, q, kt, vec; } cfg[] = {
        {8, 8, 4, 2},
        {4, 8, 64, 8},
    };
    sdpa_tile_config tc;
    sdpa_tile_config_init(&tc);
    sdpa_tile_config_set(&tc, SDPA_TILE_WG_SIZE, cfg[_i].wg);
    sdpa_tile_config_set(&tc, SDPA_TILE_Q_TILE, cfg[_i].q);
    sdpa_tile_config_set(&tc, SDPA_TILE_K_TILE, cfg[_i].kt);
    sdpa_tile_config_set(&tc, SDPA_TILE_VEC_WIDTH, cfg[_i].vec);
    sdpa_plan_options o;
    sdpa_plan_options_init(&o);
    o.tile = &tc;
    tcase c = fcase_make(tparity_bcase("b_everything"), 4321u);
    tparity_backward(g_cl, g_ref, &c, &o);
    c = fcase_make(tparity_bcase("b_causal_gqa"), 4321u);
    tparity_backward(g_cl, g_ref, &c, &o);
}
END_TEST

/* Same inputs twice: every gradient bit-identical (no atomics). */
START_TEST(backward_deterministic)
{
    tcase c = fcase_make(tparity_bcase("b_everything"), 4321u);
    c.lse = true;
    tproblem a, b;
    tproblem_make(&a, &c);
    tproblem_make(&b, &c);
    sdpa_plan_options o;
    sdpa_plan_options_init(&o);
    o.flags = SDPA_PLAN_BACKWARD;
    sdpa_plan *plan = NULL;
    ck_assert_int_eq(sdpa_plan_create(g_cl, &a.desc, &o, &plan), SDPA_OK);
    tproblem *runs[2] = {&a, &b};
    for (int r = 0; r < 2; r++) {
        ck_assert_int_eq(sdpa_plan_forward(plan, &runs[r]->desc.tensors), SDPA_OK);
        ck_assert_int_eq(sdpa_plan_backward(plan, &runs[r]->desc.tensors, &runs[r]->bwd), SDPA_OK);
    }
    ck_assert_int_eq(sdpa_context_finish(g_cl), SDPA_OK);
    size_t es = sdpa_dtype_size(c.dtype);
    ck_assert(memcmp(a.dq, b.dq, a.n_q * es) == 0);
    ck_assert(memcmp(a.dk, b.dk, a.n_k * es) == 0);
    ck_assert(memcmp(a.dv, b.dv, a.n_v * es) == 0);
    ck_assert(memcmp(a.dq_gain, b.dq_gain, (size_t)c.D * 4) == 0);
    ck_assert(memcmp(a.dk_gain, b.dk_gain, (size_t)c.D * 4) == 0);
    sdpa_plan_destroy(plan);
    tproblem_free(&a);
    tproblem_free(&b);
}
END_TEST

/* ---- error paths ------------------------------------------------------------------ */

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs(text, f);
    fclose(f);
}

/* An AUTO context steered to the OpenCL device by name: OpenCL is its
 * primary backend, the CPU its fallback. */
static sdpa_context *auto_cl_context(void)
{
    sdpa_device_info di;
    memset(&di, 0, sizeof di);
    di.struct_size = sizeof di;
    ck_assert_int_eq(sdpa_device_get_info(SDPA_BACKEND_OPENCL, 0, &di), SDPA_OK);
    sdpa_context_options o;
    sdpa_context_options_init(&o);
    o.backend = SDPA_BACKEND_AUTO;
    o.device = di.name;
    o.log_level = SDPA_LOG_ERROR;
    sdpa_context *ctx = NULL;
    ck_assert_int_eq(sdpa_context_create(&o, &ctx), SDPA_OK);
    ck_assert_int_eq(sdpa_context_backend(ctx), SDPA_BACKEND_OPENCL);
    return ctx;
}

START_TEST(build_failure_reports_log_and_auto_falls_back)
{
    char dir[] = "/tmp/sdpa-cl-broken-XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(dir));
    char path[512];
    snprintf(path, sizeof path, "%s/fwd.cl", dir);
    write_file(path, "/* deliberately broken */\n__kernel void sdpa_fwd(global float *x) "
                     "{ this_is_not_opencl(x) }\n");
    setenv("SDPA_KERNEL_DIR", dir, 1);

    tcase c = fcase_make(tparity_fcase("len7_d64"), 4321u);
    tproblem p;
    tproblem_make(&p, &c);
    sdpa_context *ctx = cl_context_or_fail();
    sdpa_plan *plan = NULL;
    ck_assert_int_eq(sdpa_plan_create(ctx, &p.desc, NULL, &plan), SDPA_ERR_BUILD);
    ck_assert_ptr_null(plan);
    sdpa_error_info info;
    ck_assert_int_eq(sdpa_context_last_error(ctx, &info), SDPA_OK);
    ck_assert_int_eq(info.status, SDPA_ERR_BUILD);
    ck_assert_int_ne(info.native_code, 0);
    ck_assert_msg(info.build_log && strlen(info.build_log) > 0, "empty build log");
    sdpa_context_destroy(ctx);

    /* AUTO, steered to the OpenCL device by name, falls back to the CPU. */
    ctx = auto_cl_context();
    ck_assert_int_eq(sdpa_plan_create(ctx, &p.desc, NULL, &plan), SDPA_OK);
    sdpa_plan_info pi;
    memset(&pi, 0, sizeof pi);
    pi.struct_size = sizeof pi;
    ck_assert_int_eq(sdpa_plan_get_info(plan, &pi), SDPA_OK);
    ck_assert_int_ne(pi.backend, SDPA_BACKEND_OPENCL);
    ck_assert_int_eq(sdpa_plan_forward(plan, &p.desc.tensors), SDPA_OK);
    ck_assert(isfinite(tload(p.out, c.dtype, 0)));
    sdpa_plan_destroy(plan);
    sdpa_context_destroy(ctx);
    tproblem_free(&p);
    unsetenv("SDPA_KERNEL_DIR");
    remove(path);
    rmdir(dir);
}
END_TEST

/* With no OpenCL platform: the device count is 0, an explicit OPENCL
 * context fails with SDPA_ERR_NO_DEVICE and AUTO still works. Runs in a
 * forked child: the ICD loader reads OCL_ICD_VENDORS once per process. */
/* Runs in a fresh process (see no_platform): with OCL_ICD_VENDORS pointing
 * at an empty folder the loader finds no platform. Returns the failing step. */
static int no_platform_probe(void)
{
    int count = -1;
    if (sdpa_device_count(SDPA_BACKEND_OPENCL, &count) != SDPA_OK || count != 0) return 1;
    sdpa_status st;
    sdpa_context *ctx = tcontext(SDPA_BACKEND_OPENCL, &st);
    if (ctx || st != SDPA_ERR_NO_DEVICE) return 2;
    ctx = tcontext(SDPA_BACKEND_AUTO, &st);
    if (!ctx || st != SDPA_OK) return 3;
    if (sdpa_context_backend(ctx) == SDPA_BACKEND_OPENCL) return 4;
    sdpa_context_destroy(ctx);
    return 0;
}

START_TEST(no_platform)
{
    /* The ICD loader reads OCL_ICD_VENDORS once per process, and this process
     * may have loaded it already (CK_FORK=no): re-execute the test binary. */
    char dir[] = "/tmp/sdpa-cl-novendors-XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(dir));
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        setenv("OCL_ICD_VENDORS", dir, 1);
        setenv("SDPA_TEST_NO_PLATFORM_PROBE", "1", 1);
        execl("/proc/self/exe", "test_opencl", (char *)NULL);
        _exit(100);
    }
    int status = 0;
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    rmdir(dir);
    ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
                  "child failed at step %d", WIFEXITED(status) ? WEXITSTATUS(status) : -1);
}
END_TEST

START_TEST(buffer_from_other_context_rejected)
{
    sdpa_context *other = cl_context_or_fail();
    tcase c = fcase_make(tparity_fcase("len7_d64"), 4321u);
    tproblem p;
    tproblem_make(&p, &c);
    size_t bytes = p.n_q * sdpa_dtype_size(c.dtype);
    sdpa_buffer *buf = NULL;
    ck_assert_int_eq(sdpa_buffer_create(other, bytes, &buf), SDPA_OK);
    ck_assert_int_eq(sdpa_buffer_write(buf, 0, p.q, bytes), SDPA_OK);
    sdpa_tensor q = p.desc.tensors.q;
    q.host = NULL;
    q.buf = buf;
    q.offset = 0;
    p.desc.tensors.q = q;
    sdpa_plan *plan = NULL;
    sdpa_status st = sdpa_plan_create(g_cl, &p.desc, NULL, &plan);
    if (st == SDPA_OK) {
        st = sdpa_plan_forward(plan, &p.desc.tensors);
        sdpa_plan_destroy(plan);
    }
    ck_assert_int_eq(st, SDPA_ERR_MISMATCHED_CONTEXT);
    sdpa_buffer_destroy(buf);
    sdpa_context_destroy(other);
    tproblem_free(&p);
}
END_TEST

START_TEST(unsupported_requests_refused)
{
    tcase c = fcase_make(tparity_fcase("len7_d64"), 4321u);
    tproblem p;
    tproblem_make(&p, &c);
    sdpa_tile_config tc;
    sdpa_plan_options o;
    sdpa_plan *plan = NULL;
    static const struct { int field, value; } bad[] = {
        {0, 2}, {1, 3}, {2, 32}, {3, 2}, {4, 100000},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        sdpa_tile_config_init(&tc);
        switch (bad[i].field) {
        case 0: sdpa_tile_config_set(&tc, SDPA_TILE_UNFUSED, bad[i].value); break;
        case 1: sdpa_tile_config_set(&tc, SDPA_TILE_K_TILE, bad[i].value); break;
        case 2: sdpa_tile_config_set(&tc, SDPA_TILE_VEC_WIDTH, bad[i].value); break;
        case 3: sdpa_tile_config_set(&tc, SDPA_TILE_STAGE_KV, bad[i].value); break;
        default: sdpa_tile_config_set(&tc, SDPA_TILE_WG_SIZE, bad[i].value); break;
        }
        sdpa_plan_options_init(&o);
        o.tile = &tc;
        ck_assert_int_eq(sdpa_plan_create(g_cl, &p.desc, &o, &plan), SDPA_ERR_UNSUPPORTED);
        ck_assert_ptr_null(plan);
    }
    tproblem_free(&p);
    /* Head size above 256. */
    tcase_init(&c, "d512", 1, 1, 1, 4, 4, 512, 512);
    tproblem_make(&p, &c);
    ck_assert_int_eq(sdpa_plan_create(g_cl, &p.desc, NULL, &plan), SDPA_ERR_UNSUPPORTED);
    tproblem_free(&p);
}
END_TEST

/* ---- issue 19: ALiBi, sinks, K/V dtypes, q8_0 / q4_0, paged K/V ------------------ */

/* Each feature and their combinations against the reference backend
 * (tests/common/tfeatures.c) at lengths 1, 7, 63, 65, 257 and 1000, decode
 * (Sq 1: decode.cl, split-KV above 128 keys; decode_gpu.cl under
 * SDPA_TEST_PERSONA=cl-discrete) and prefill (Sq = Skv: fwd.cl here,
 * fwd_block.cl under the persona, the features_gpu_class case). One program per case and path (the lengths
 * are run-time arguments): 9 forward cases x 2 + 2 backward = 20 builds,
 * and as many again in the persona child. */
static const tfcase k_fcases[] = {
    /* name, q, kv, B, Hq, Hkv, D, Dv, diagonal, offset, wl, wr, softcap, alibi, sinks,
     * kv_len, stats, page */
    {"alibi_sinks_gqa", SDPA_DTYPE_F32, SDPA_DTYPE_F32, 2, 4, 2, 64, 64, SDPA_DIAGONAL_BOTTOM_RIGHT,
     0, -1, 0, 0, true, true, true, false, 0},
    {"f32q_f16kv_sinks", SDPA_DTYPE_F32, SDPA_DTYPE_F16, 2, 4, 1, 32, 64, SDPA_DIAGONAL_TOP_LEFT, 0,
     -1, -1, 0, false, true, true, false, 0},
    {"bf16q_f32kv_alibi", SDPA_DTYPE_BF16, SDPA_DTYPE_F32, 1, 2, 2, 64, 32,
     SDPA_DIAGONAL_BOTTOM_RIGHT, 0, -1, 0, 0, true, false, false, false, 0},
    {"q8_0_alibi_sinks", SDPA_DTYPE_F32, SDPA_DTYPE_Q8_0, 1, 4, 2, 64, 64,
     SDPA_DIAGONAL_BOTTOM_RIGHT, 0, -1, 0, 0, true, true, true, false, 0},
    {"q4_0_f16q", SDPA_DTYPE_F16, SDPA_DTYPE_Q4_0, 1, 2, 2, 32, 64, SDPA_DIAGONAL_BOTTOM_RIGHT, 0,
     -1, 0, 0, false, false, false, false, 0},
    {"paged16_q8_0_f16q_alibi_sinks", SDPA_DTYPE_F16, SDPA_DTYPE_Q8_0, 2, 4, 2, 64, 32,
     SDPA_DIAGONAL_BOTTOM_RIGHT, 0, -1, 0, 0, true, true, true, false, 16},
    {"paged5_f32_sinks", SDPA_DTYPE_F32, SDPA_DTYPE_F32, 2, 2, 2, 32, 32, SDPA_DIAGONAL_TOP_LEFT, 0,
     -1, -1, 0, false, true, true, false, 5},
    {"paged7_q4_0_bf16q_alibi", SDPA_DTYPE_BF16, SDPA_DTYPE_Q4_0, 2, 2, 1, 32, 32,
     SDPA_DIAGONAL_TOP_LEFT, 0, -1, -1, 0, true, false, true, false, 7},
    {"stats_alibi_sinks_f16kv", SDPA_DTYPE_F32, SDPA_DTYPE_F16, 1, 4, 2, 32, 32,
     SDPA_DIAGONAL_BOTTOM_RIGHT, 0, -1, 0, 0, true, true, true, true, 0},
};
#define N_FCASES_X (int)(sizeof k_fcases / sizeof k_fcases[0])
static const int64_t k_flens[] = {1, 7, 63, 65, 257, 1000};
#define N_FLENS 6

/* Case _i / N_FLENS at length _i % N_FLENS, decode and prefill; the plans
 * are the ones the device class gets (`gpu`: decode_gpu.cl for decode,
 * fwd_block.cl for prefill). */
static void features_case(int i, bool gpu)
{
    const tfcase *c = &k_fcases[i / N_FLENS];
    const int64_t L = k_flens[i % N_FLENS];
    sdpa_plan_info info;
    tfeatures_parity_info(g_cl, g_ref, c, 1, L, false, NULL, 1000u + (uint64_t)i, &info);
    if (!c->stats) ck_assert_str_eq(info.kernel, "decode");
    if (gpu && !c->stats) /* every feature in the GPU-class decode */
        ck_assert_msg(strstr(info.config, "decode_gpu.cl") != NULL, "%s: %s", c->name,
                      info.config);
    tfeatures_parity_info(g_cl, g_ref, c, L, L, false, NULL, 2000u + (uint64_t)i, &info);
    if (gpu && L > 16)
        ck_assert_msg(strstr(info.config, "fwd_kernel=1") != NULL, "%s: %s", c->name,
                      info.config);
}

START_TEST(features_forward)
{
    features_case(_i, false);
}
END_TEST

/* The fused forwards with a forced split (only split 0 carries the sink). */
START_TEST(features_split_fused)
{
    const tfcase *c = &k_fcases[_i == 0 ? 3 : 5]; /* q8_0, paged q8_0 */
    sdpa_tile_config t;
    sdpa_tile_config_init(&t);
    sdpa_tile_config_set(&t, SDPA_TILE_SPLIT_KV, 4);
    sdpa_plan_options o;
    sdpa_plan_options_init(&o);
    o.tile = &t;
    sdpa_plan_info info;
    tfeatures_parity_info(g_cl, g_ref, c, 20, 1000, false, &o, 77u + (uint64_t)_i, &info);
    ck_assert_msg(strstr(info.config, "split_kv=4") && !strstr(info.config, "direct_kv"),
                  "%s: %s", c->name, info.config);
}
END_TEST

static const tfcase k_fbcases[] = {
    {"bwd_alibi_sinks", SDPA_DTYPE_F32, SDPA_DTYPE_F32, 2, 4, 2, 32, 32, SDPA_DIAGONAL_BOTTOM_RIGHT,
     0, -1, 0, 0, true, true, true, false, 0},
    {"bwd_sinks_f16", SDPA_DTYPE_F16, SDPA_DTYPE_F16, 1, 2, 1, 64, 32, SDPA_DIAGONAL_TOP_LEFT, 0,
     -1, -1, 0, false, true, true, false, 0},
};

/* Backward with ALiBi and sinks (dsinks), up to length 257. */
START_TEST(features_backward)
{
    const tfcase *c = &k_fbcases[_i / (N_FLENS - 1)];
    const int64_t L = k_flens[_i % (N_FLENS - 1)];
    tfeatures_parity_info(g_cl, g_ref, c, L, L, true, NULL, 3000u + (uint64_t)_i, NULL);
    tfeatures_parity_info(g_cl, g_ref, c, L > 2 ? L / 2 : 1, L, true, NULL, 4000u + (uint64_t)_i,
                          NULL);
}
END_TEST

/* A minimal paged f32 problem: B 1, H 1, D 32, 3 pages of 4 keys. */
typedef struct pgprob {
    float q[32], k[3 * 4 * 32], v[3 * 4 * 32], out[32], lse[1];
    int32_t table[3], kv_len[1];
    sdpa_attention_desc d;
} pgprob;

static void pgprob_make(pgprob *p)
{
    memset(p, 0, sizeof *p);
    trng r;
    trng_seed(&r, 99);
    for (int e = 0; e < 32; e++) p->q[e] = (float)trng_uniform(&r) - 0.5f;
    for (int e = 0; e < 3 * 4 * 32; e++) {
        p->k[e] = (float)trng_uniform(&r) - 0.5f;
        p->v[e] = (float)trng_uniform(&r) - 0.5f;
    }
    p->table[0] = 2, p->table[1] = 0, p->table[2] = 1;
    p->kv_len[0] = 12;
    sdpa_attention_desc_init(&p->d);
    sdpa_forward_tensors *t = &p->d.tensors;
    t->q = sdpa_tensor_host(p->q, SDPA_DTYPE_F32, 1, 1, 1, 32);
    t->k_pages = sdpa_tensor_host(p->k, SDPA_DTYPE_F32, 3, 1, 4, 32);
    t->v_pages = sdpa_tensor_host(p->v, SDPA_DTYPE_F32, 3, 1, 4, 32);
    t->block_table = sdpa_tensor_host(p->table, SDPA_DTYPE_I32, 1, 1, 1, 3);
    t->kv_len = sdpa_tensor_host(p->kv_len, SDPA_DTYPE_I32, 1, 1, 1, 1);
    t->out = sdpa_tensor_host(p->out, SDPA_DTYPE_F32, 1, 1, 1, 32);
    t->lse = sdpa_tensor_host(p->lse, SDPA_DTYPE_F32, 1, 1, 1, 1);
}

/* A block table in a device buffer cannot be validated without a sync:
 * the kernels clamp its entries into [0, P), as they clamp kv_len, so an
 * entry past the pool reads the last page and a negative one page 0
 * (never memory outside the pool). */
START_TEST(features_device_table_clamped)
{
    pgprob want, got;
    pgprob_make(&want);
    tfeatures_run(g_cl, &want.d, NULL, false, NULL, NULL, "paged");
    pgprob_make(&got);
    const int32_t wild[3] = {1000000, -3, 1}; /* clamped: 2, 0, 1 as in `want` */
    sdpa_buffer *buf = NULL;
    ck_assert_int_eq(sdpa_buffer_create(g_cl, sizeof wild, &buf), SDPA_OK);
    ck_assert_int_eq(sdpa_buffer_write(buf, 0, wild, sizeof wild), SDPA_OK);
    got.d.tensors.block_table = sdpa_tensor_buffer(buf, 0, SDPA_DTYPE_I32, 1, 1, 1, 3);
    tfeatures_run(g_cl, &got.d, NULL, false, NULL, NULL, "paged, device table");
    sdpa_buffer_destroy(buf);
    for (int e = 0; e < 32; e++) ck_assert_float_eq(got.out[e], want.out[e]);
    ck_assert_float_eq(got.lse[0], want.lse[0]);
}
END_TEST

/* What the OpenCL backend refuses beyond the front end's checks, by name:
 * QK-norm on K/V read in place, the backward with a K/V dtype other than
 * q's, the unfused path with the features, unstaged in-place K/V. */
START_TEST(features_refused)
{
    tcase c = fcase_make(tparity_fcase("len7_d64"), 4321u);
    tproblem p;
    tproblem_make(&p, &c);
    /* k as f16 (same elements reinterpreted: only the dtype matters here) */
    sdpa_tensor k16 = p.desc.tensors.k, v16 = p.desc.tensors.v;
    k16.dtype = v16.dtype = SDPA_DTYPE_F16;
    sdpa_plan *plan = NULL;
    sdpa_plan_options o;
    sdpa_error_info ei;
    memset(&ei, 0, sizeof ei);
    struct { int what; const char *needle; } cases[] = {
        {0, "QK-norm with K/V read in place"},
        {1, "backward with a K/V dtype"},
        {2, "unfused path takes no ALiBi"},
        {3, "stage_kv 0: K/V read in place"},
    };
    float slopes[2] = {0.5f, 0.25f};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        sdpa_attention_desc d = p.desc;
        sdpa_plan_options_init(&o);
        sdpa_tile_config t;
        sdpa_tile_config_init(&t);
        d.tensors.k = k16;
        d.tensors.v = v16;
        if (cases[i].what == 0) d.qk_norm = SDPA_QK_NORM_RMS;
        if (cases[i].what == 1) o.flags = SDPA_PLAN_BACKWARD;
        if (cases[i].what == 2) {
            d.tensors.k = p.desc.tensors.k;
            d.tensors.v = p.desc.tensors.v;
            d.tensors.alibi_slopes = sdpa_tensor_host(slopes, SDPA_DTYPE_F32, 1, 2, 1, 1);
            sdpa_tile_config_set(&t, SDPA_TILE_UNFUSED, 1);
            o.tile = &t;
        }
        if (cases[i].what == 3) {
            sdpa_tile_config_set(&t, SDPA_TILE_STAGE_KV, 0);
            sdpa_tile_config_set(&t, SDPA_TILE_WG_SIZE, 8);
            o.tile = &t;
        }
        sdpa_status st = sdpa_plan_create(g_cl, &d, &o, &plan);
        sdpa_context_last_error(g_cl, &ei);
        ck_assert_ptr_null(plan);
        if (cases[i].what == 2 && st == SDPA_ERR_UNSUPPORTED && !strstr(ei.message, "ALiBi"))
            continue; /* a build without CLBlast refuses unfused = 1 anyway */
        ck_assert_msg(st == SDPA_ERR_UNSUPPORTED && strstr(ei.message, cases[i].needle),
                      "case %d: %s: %s", cases[i].what, sdpa_status_name(st), ei.message);
    }
    tproblem_free(&p);
}
END_TEST

/* ---- devices, caches, interop ------------------------------------------------------ */

START_TEST(device_info)
{
    int n = 0;
    ck_assert_int_eq(sdpa_device_count(SDPA_BACKEND_OPENCL, &n), SDPA_OK);
    ck_assert_int_ge(n, 1);
    for (int i = 0; i < n; i++) {
        sdpa_device_info info;
        memset(&info, 0, sizeof info);
        info.struct_size = sizeof info;
        ck_assert_int_eq(sdpa_device_get_info(SDPA_BACKEND_OPENCL, i, &info), SDPA_OK);
        ck_assert_int_eq(info.backend, SDPA_BACKEND_OPENCL);
        ck_assert_int_eq(info.index, i);
        ck_assert(strlen(info.name) > 0);
        ck_assert_int_gt(info.compute_units, 0);
        ck_assert_int_gt(info.max_workgroup_size, 0);
        ck_assert(strstr(info.details, "program binary cache") != NULL);
        if (strstr(info.driver, "Portable Computing Language"))
            ck_assert(strstr(info.details, "PoCL") != NULL);
    }
    sdpa_device_info info;
    memset(&info, 0, sizeof info);
    info.struct_size = sizeof info;
    ck_assert_int_ne(sdpa_device_get_info(SDPA_BACKEND_OPENCL, n, &info), SDPA_OK);
}
END_TEST

static int count_cache_files(const char *dir, char *first, size_t size)
{
    char cmd[600];
    snprintf(cmd, sizeof cmd, "ls %s/cl-*.bin 2>/dev/null", dir);
    FILE *f = popen(cmd, "r");
    ck_assert_ptr_nonnull(f);
    int n = 0;
    char line[512];
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = '\0';
        if (n == 0 && first) snprintf(first, size, "%s", line);
        n++;
    }
    pclose(f);
    return n;
}

START_TEST(disk_cache_written_and_corrupt_entries_rebuilt)
{
    char dir[] = "/tmp/sdpa-cl-cache-XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(dir));
    setenv("SDPA_CL_DISK_CACHE", "1", 1);
    sdpa_context_options o;
    sdpa_context_options_init(&o);
    o.backend = SDPA_BACKEND_OPENCL;
    o.cache_dir = dir;
    o.log_level = SDPA_LOG_ERROR;
    tcase c = fcase_make(tparity_fcase("len63x65_d64"), 4321u);
    char file[512] = "";
    for (int round = 0; round < 3; round++) {
        sdpa_context *ctx = NULL;
        ck_assert_int_eq(sdpa_context_create(&o, &ctx), SDPA_OK);
        tparity_forward(ctx, g_ref, &c, NULL);
        sdpa_context_destroy(ctx);
        ck_assert_int_eq(count_cache_files(dir, file, sizeof file), 1);
        if (round == 0) {
            /* Corrupt a byte in the middle of the binary. */
            FILE *f = fopen(file, "r+b");
            ck_assert_ptr_nonnull(f);
            fseek(f, 0, SEEK_END);
            long size = ftell(f);
            ck_assert_int_gt(size, 64);
            fseek(f, size / 2, SEEK_SET);
            int ch = fgetc(f);
            fseek(f, size / 2, SEEK_SET);
            fputc(ch ^ 0x5a, f);
            fclose(f);
        } else if (round == 1) {
            ck_assert_int_eq(truncate(file, 20), 0); /* truncated header */
        }
    }
    unsetenv("SDPA_CL_DISK_CACHE");
    remove(file);
    rmdir(dir);
}
END_TEST

/* The cache folder and its entries are input others may have written
 * (issue 14): an entry writable by group/others, one owned by another user
 * (chown to nobody: the tests run as root), a symlinked entry and a folder
 * writable by others are each refused with a WARN and the program is built
 * from source; the results stay correct. Then a real PoCL binary cut in half
 * with its lengths and checksum recomputed (it crashed PoCL) is refused
 * before the driver sees it. */
static void cache_round(const char *dir, const tcase *c, tlogcap *cap)
{
    memset(cap, 0, sizeof *cap);
    sdpa_context *ctx = tcontext_cache(SDPA_BACKEND_OPENCL, dir, cap);
    tparity_forward(ctx, g_ref, c, NULL);
    sdpa_context_destroy(ctx);
}

START_TEST(disk_cache_untrusted_entries_refused)
{
    char *dir = tmkdtemp("sdpa-cl-trust");
    setenv("SDPA_CL_DISK_CACHE", "1", 1);
    tcase c = fcase_make(tparity_fcase("len63x65_d64"), 4321u);
    tlogcap cap;
    char file[512] = "";
    cache_round(dir, &c, &cap);
    ck_assert_int_eq(cap.warns, 0);
    ck_assert_int_eq(count_cache_files(dir, file, sizeof file), 1);
    struct stat sb;
    ck_assert_int_eq(stat(file, &sb), 0);
    ck_assert_int_eq(sb.st_mode & 077, 0); /* written private */

    ck_assert_int_eq(chmod(file, 0666), 0);
    cache_round(dir, &c, &cap);
    ck_assert_msg(cap.warns >= 1 && strstr(cap.last, "writable by group or others"), "%s",
                  cap.last);
    ck_assert_int_eq(chmod(file, 0600), 0);
    if (geteuid() == 0) {
        ck_assert_int_eq(chown(file, 65534, 65534), 0);
        cache_round(dir, &c, &cap);
        ck_assert_msg(cap.warns >= 1 && strstr(cap.last, "owned by uid 65534"), "%s", cap.last);
        ck_assert_int_eq(chown(file, 0, 0), 0);
    }
    char real[600];
    snprintf(real, sizeof real, "%s.real", file);
    ck_assert_int_eq(rename(file, real), 0);
    ck_assert_int_eq(symlink(real, file), 0);
    cache_round(dir, &c, &cap);
    ck_assert_msg(cap.warns >= 1 && strstr(cap.last, "symlink"), "%s", cap.last);
    unlink(file);
    ck_assert_int_eq(rename(real, file), 0);
    ck_assert_int_eq(chmod(dir, 0777), 0);
    cache_round(dir, &c, &cap);
    ck_assert_msg(cap.warns == 1 && strstr(cap.last, "not used"), "%s", cap.last);
    ck_assert_int_eq(chmod(dir, 0700), 0);

    /* A trusted entry is loaded again without a word. */
    cache_round(dir, &c, &cap);
    ck_assert_int_eq(cap.warns, 0);

    /* Cut the binary in half, fix its length and checksum: refused by the
     * structure check (sdpa__cl_binary_check), never handed to PoCL. */
    FILE *f = fopen(file, "rb");
    ck_assert_ptr_nonnull(f);
    static unsigned char buf[64 << 20];
    size_t n = fread(buf, 1, sizeof buf, f);
    fclose(f);
    uint32_t klen = sdpa__get_u32le(buf + 12);
    const unsigned char *bin = buf + SDPA__CL_ENTRY_HEADER + klen;
    size_t blen = n - SDPA__CL_ENTRY_HEADER - klen;
    if (blen > 7 && memcmp(bin, "poclbin", 7) == 0) {
        ck_assert_int_eq(sdpa__cl_binary_check(bin, blen), SDPA__CL_ENTRY_OK);
        size_t cut = blen / 2, m = sdpa__cl_entry_encode(NULL, 0, buf + 32, klen, bin, cut);
        unsigned char *e = malloc(m);
        ck_assert_ptr_nonnull(e);
        sdpa__cl_entry_encode(e, m, buf + 32, klen, bin, cut);
        f = fopen(file, "wb");
        ck_assert_ptr_nonnull(f);
        ck_assert_uint_eq(fwrite(e, 1, m, f), m);
        fclose(f);
        free(e);
        cache_round(dir, &c, &cap); /* crashed here before */
    } else {
        fprintf(stderr, "disk_cache_untrusted_entries_refused: not a PoCL binary; "
                        "truncation check skipped\n");
    }
    unsetenv("SDPA_CL_DISK_CACHE");
    remove(file);
    rmdir(dir);
    free(dir);
}
END_TEST

START_TEST(interop_app_context_and_wrapped_buffers)
{
    cl_platform_id plat;
    cl_device_id dev;
    ck_assert_int_eq(clGetPlatformIDs(1, &plat, NULL), CL_SUCCESS);
    ck_assert_int_eq(clGetDeviceIDs(plat, CL_DEVICE_TYPE_ALL, 1, &dev, NULL), CL_SUCCESS);
    cl_int err;
    cl_context clctx = clCreateContext(NULL, 1, &dev, NULL, NULL, &err);
    ck_assert_int_eq(err, CL_SUCCESS);
    cl_command_queue queue = clCreateCommandQueue(clctx, dev, 0, &err);
    ck_assert_int_eq(err, CL_SUCCESS);
    sdpa_context_options opts;
    sdpa_context_options_init(&opts);
    opts.log_level = SDPA_LOG_ERROR;
    sdpa_context *ctx = NULL;
    ck_assert_int_eq(sdpa_opencl_context_create(&opts, clctx, dev, queue, &ctx), SDPA_OK);
    ck_assert_int_eq(sdpa_context_backend(ctx), SDPA_BACKEND_OPENCL);
    ck_assert_ptr_eq(sdpa_opencl_queue(ctx), queue);

    tcase c = fcase_make(tparity_fcase("len7_d64"), 4321u);
    tproblem got, want;
    tproblem_make(&got, &c);
    tproblem_make(&want, &c);
    size_t es = sdpa_dtype_size(c.dtype);
    void *hosts[4] = {got.q, got.k, got.v, got.out};
    size_t counts[4] = {got.n_q, got.n_k, got.n_v, got.n_out};
    sdpa_tensor *ts[4] = {&got.desc.tensors.q, &got.desc.tensors.k, &got.desc.tensors.v,
                          &got.desc.tensors.out};
    cl_mem mems[4];
    sdpa_buffer *bufs[4];
    for (int i = 0; i < 4; i++) {
        mems[i] = clCreateBuffer(clctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR,
                                 counts[i] * es, hosts[i], &err);
        ck_assert_int_eq(err, CL_SUCCESS);
        ck_assert_int_eq(sdpa_opencl_buffer_wrap(ctx, mems[i], &bufs[i]), SDPA_OK);
        ck_assert_ptr_eq(sdpa_opencl_buffer_mem(bufs[i]), mems[i]);
        ck_assert_uint_eq(sdpa_buffer_size(bufs[i]), counts[i] * es);
        ts[i]->host = NULL;
        ts[i]->buf = bufs[i];
        ts[i]->offset = 0;
    }
    got.desc.tensors.lse.dtype = SDPA_DTYPE_NONE;
    want.desc.tensors.lse.dtype = SDPA_DTYPE_NONE;
    sdpa_plan *plan = NULL;
    ck_assert_int_eq(sdpa_plan_create(ctx, &got.desc, NULL, &plan), SDPA_OK);
    ck_assert_int_eq(sdpa_plan_forward(plan, &got.desc.tensors), SDPA_OK);
    /* The work is on the application's queue, in order. */
    ck_assert_int_eq(clEnqueueReadBuffer(queue, mems[3], CL_TRUE, 0, got.n_out * es, got.out,
                                         0, NULL, NULL), CL_SUCCESS);
    ck_assert_int_eq(sdpa_attention_forward(g_ref, &want.desc), SDPA_OK);
    tcompare r = tcompare_arrays(got.out, c.dtype, want.out, c.dtype, got.n_out);
    ck_assert_msg(r.bad_nonfinite == 0 && r.max_abs < 1e-4, "interop max_abs %g", r.max_abs);
    sdpa_plan_destroy(plan);

    /* A cl_mem of another cl_context is refused. */
    cl_context other = clCreateContext(NULL, 1, &dev, NULL, NULL, &err);
    ck_assert_int_eq(err, CL_SUCCESS);
    cl_mem foreign = clCreateBuffer(other, CL_MEM_READ_WRITE, 256, NULL, &err);
    ck_assert_int_eq(err, CL_SUCCESS);
    sdpa_buffer *fb = NULL;
    ck_assert_int_eq(sdpa_opencl_buffer_wrap(ctx, foreign, &fb), SDPA_ERR_MISMATCHED_CONTEXT);
    ck_assert_ptr_null(fb);
    /* And a non-OpenCL context cannot wrap. */
    ck_assert_int_eq(sdpa_opencl_buffer_wrap(g_ref, mems[0], &fb), SDPA_ERR_MISMATCHED_CONTEXT);
    /* NULL arguments are refused with a message naming them */
    sdpa_error_info ei;
    ck_assert_int_eq(sdpa_opencl_buffer_wrap(ctx, NULL, &fb), SDPA_ERR_NULL);
    sdpa_context_last_error(ctx, &ei);
    ck_assert_msg(strstr(ei.message, "sdpa_opencl_buffer_wrap: mem is NULL"), "%s", ei.message);
    ck_assert_int_eq(sdpa_opencl_buffer_wrap(ctx, mems[0], NULL), SDPA_ERR_NULL);
    sdpa_context_last_error(ctx, &ei);
    ck_assert_msg(strstr(ei.message, "sdpa_opencl_buffer_wrap: out is NULL"), "%s", ei.message);
    clReleaseMemObject(foreign);
    clReleaseContext(other);

    for (int i = 0; i < 4; i++) {
        sdpa_buffer_destroy(bufs[i]);
        clReleaseMemObject(mems[i]);
    }
    sdpa_context_destroy(ctx);
    /* The application's objects are still alive and usable. */
    ck_assert_int_eq(clFinish(queue), CL_SUCCESS);
    clReleaseCommandQueue(queue);
    clReleaseContext(clctx);
    tproblem_free(&got);
    tproblem_free(&want);
}
END_TEST

/* The interop accessors answer for the context's OpenCL state whichever slot
 * the last backend call went to: after an AUTO context ran a plan on its CPU
 * fallback (stage_kv = 2 forced, which OpenCL refuses), sdpa_opencl_queue and
 * sdpa_opencl_cl_context still give the OpenCL objects and a cl_mem of that
 * cl_context can still be wrapped. They used to read the state of the slot
 * called last (the CPU one here) as OpenCL state. */
START_TEST(interop_after_auto_fallback)
{
    sdpa_context *ctx = auto_cl_context();
    cl_command_queue queue = sdpa_opencl_queue(ctx);
    cl_context clctx = sdpa_opencl_cl_context(ctx);
    ck_assert_ptr_nonnull(queue);
    ck_assert_ptr_nonnull(clctx);

    tcase c = fcase_make(tparity_fcase("len7_d64"), 4321u);
    tproblem p;
    tproblem_make(&p, &c);
    sdpa_plan_options po;
    sdpa_plan_options_init(&po);
    sdpa_tile_config tile;
    sdpa_tile_config_init(&tile);
    sdpa_tile_config_set(&tile, SDPA_TILE_STAGE_KV, 2);
    po.tile = &tile;
    sdpa_plan *plan = NULL;
    ck_assert_int_eq(sdpa_plan_create(ctx, &p.desc, &po, &plan), SDPA_OK);
    sdpa_plan_info pi;
    memset(&pi, 0, sizeof pi);
    pi.struct_size = sizeof pi;
    ck_assert_int_eq(sdpa_plan_get_info(plan, &pi), SDPA_OK);
    ck_assert_int_eq(pi.backend, SDPA_BACKEND_CPU);
    ck_assert_int_eq(sdpa_plan_forward(plan, &p.desc.tensors), SDPA_OK);

    ck_assert_ptr_eq(sdpa_opencl_queue(ctx), queue);
    ck_assert_ptr_eq(sdpa_opencl_cl_context(ctx), clctx);
    cl_int err;
    cl_mem mem = clCreateBuffer(clctx, CL_MEM_READ_WRITE, 256, NULL, &err);
    ck_assert_int_eq(err, CL_SUCCESS);
    sdpa_buffer *buf = NULL;
    ck_assert_int_eq(sdpa_opencl_buffer_wrap(ctx, mem, &buf), SDPA_OK);
    ck_assert_ptr_eq(sdpa_opencl_buffer_mem(buf), mem);
    sdpa_buffer_destroy(buf);
    clReleaseMemObject(mem);
    sdpa_plan_destroy(plan);
    sdpa_context_destroy(ctx);
    tproblem_free(&p);
}
END_TEST

/* ---- cache entry parser (src/backend/opencl/cl_cache_entry.c) -------------
 * Pure byte-level tests, no device: a valid entry is accepted with spans
 * inside the file, and every corruption is refused with its own reason. The
 * same parser is fuzzed by tests/fuzz/fuzz_clcache.c. */

#define ENTRY_IDENT "Portable Computing Language\ncpu-test\n6.0\nfeedfacecafebeef -cl-fast"

/* A cache file for ENTRY_IDENT and a random binary of `blen` bytes. */
static unsigned char *entry_make(size_t blen, uint64_t seed, size_t *len)
{
    unsigned char *bin = malloc(blen);
    ck_assert_ptr_nonnull(bin);
    trng r;
    trng_seed(&r, seed);
    for (size_t i = 0; i < blen; i++) bin[i] = (unsigned char)trng_next(&r);
    size_t klen = strlen(ENTRY_IDENT);
    size_t n = sdpa__cl_entry_encode(NULL, 0, ENTRY_IDENT, klen, bin, blen);
    ck_assert_uint_eq(n, SDPA__CL_ENTRY_HEADER + klen + blen);
    unsigned char *e = malloc(n);
    ck_assert_ptr_nonnull(e);
    ck_assert_uint_eq(sdpa__cl_entry_encode(e, n, ENTRY_IDENT, klen, bin, blen), n);
    ck_assert(memcmp(e + SDPA__CL_ENTRY_HEADER + klen, bin, blen) == 0);
    free(bin);
    *len = n;
    return e;
}

static sdpa__cl_entry_status entry_parse(const unsigned char *d, size_t n)
{
    sdpa__cl_entry e;
    memset(&e, 0x5a, sizeof e);
    sdpa__cl_entry_status s = sdpa__cl_entry_parse(d, n, ENTRY_IDENT, strlen(ENTRY_IDENT), &e);
    if (s != SDPA__CL_ENTRY_OK)
        ck_assert(e.ident == NULL && e.ident_len == 0 && e.binary == NULL && e.binary_len == 0);
    return s;
}

static void put_le(unsigned char *p, uint64_t v, int bytes)
{
    for (int i = 0; i < bytes; i++) p[i] = (unsigned char)(v >> (8 * i));
}

START_TEST(cache_entry_valid_accepted)
{
    static const size_t sizes[] = {1, 7, 63, 65, 257, 1000};
    size_t klen = strlen(ENTRY_IDENT);
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        size_t n;
        unsigned char *d = entry_make(sizes[i], 100 + i, &n);
        sdpa__cl_entry e;
        ck_assert_int_eq(sdpa__cl_entry_parse(d, n, ENTRY_IDENT, klen, &e), SDPA__CL_ENTRY_OK);
        ck_assert_ptr_eq(e.ident, d + SDPA__CL_ENTRY_HEADER);
        ck_assert_uint_eq(e.ident_len, klen);
        ck_assert_ptr_eq(e.binary, d + SDPA__CL_ENTRY_HEADER + klen);
        ck_assert_uint_eq(e.binary_len, sizes[i]);
        ck_assert(e.binary + e.binary_len == d + n); /* the span ends at the file's end */
        /* The layout the previous writer produced (native u32/u64 on a
         * little-endian host): magic, version 1, lengths, checksum. */
        ck_assert(memcmp(d, "SDPACLB1", 8) == 0);
        ck_assert_int_eq(d[8], 1);
        ck_assert_int_eq(d[12], (int)klen);
        /* Identity check off: accepted too. */
        ck_assert_int_eq(sdpa__cl_entry_parse(d, n, NULL, 0, &e), SDPA__CL_ENTRY_OK);
        free(d);
    }
    ck_assert_str_eq(sdpa__cl_entry_reason(SDPA__CL_ENTRY_OK), "ok");
}
END_TEST

/* A minimal PoCL binary (format 9): header, one root entry holding
 * /program.bc, one kernel "k" with one file. Returns its length. */
static size_t pocl_make(unsigned char *b, const char *kfile)
{
    size_t p = 0;
    memcpy(b, "poclbin", 8);
    p = 8;
    put_le(b + p, 0x1234, 8), p += 8;
    put_le(b + p, 9, 4), p += 4;        /* version */
    put_le(b + p, 1, 4), p += 4;        /* kernels */
    put_le(b + p, 0, 8), p += 8;        /* flags */
    put_le(b + p, 1, 4), p += 4;        /* root entries */
    memset(b + p, 'H', 41), p += 41;    /* build hash */
    const char *bc = "/program.bc";
    size_t root = 4 + strlen(bc) + 4 + 100;
    put_le(b + p, root, 8), p += 8;
    put_le(b + p, strlen(bc), 4), p += 4;
    memcpy(b + p, bc, strlen(bc)), p += strlen(bc);
    put_le(b + p, 100, 4), p += 4;
    memset(b + p, 'B', 100), p += 100;
    size_t files = 4 + strlen(kfile) + 4 + 50, meta = 4 + 1 + 4 + 4 + 24;
    put_le(b + p, 20 + meta + files, 8), p += 8;
    put_le(b + p, files, 8), p += 8;
    put_le(b + p, 0, 4), p += 4;
    put_le(b + p, 1, 4), p += 4;
    b[p++] = 'k';
    put_le(b + p, 0, 4), p += 4;        /* args */
    put_le(b + p, 0, 4), p += 4;        /* locals */
    memset(b + p, 0, 24), p += 24;      /* reqd_wg_size */
    put_le(b + p, strlen(kfile), 4), p += 4;
    memcpy(b + p, kfile, strlen(kfile)), p += strlen(kfile);
    put_le(b + p, 50, 4), p += 4;
    memset(b + p, 'S', 50), p += 50;
    return p;
}

static sdpa__cl_entry_status pocl_entry(const unsigned char *bin, size_t blen)
{
    size_t klen = strlen(ENTRY_IDENT), n = sdpa__cl_entry_encode(NULL, 0, ENTRY_IDENT, klen, bin, blen);
    unsigned char *e = malloc(n);
    ck_assert_ptr_nonnull(e);
    sdpa__cl_entry_encode(e, n, ENTRY_IDENT, klen, bin, blen); /* checksum recomputed */
    sdpa__cl_entry_status s = entry_parse(e, n);
    free(e);
    return s;
}

/* The checksum only catches accidents; a PoCL binary cut short or with a
 * length inside it changed, re-wrapped with a valid checksum, must still be
 * refused before a driver sees it (it crashed PoCL in the driver). */
START_TEST(cache_entry_pocl_structure_checked)
{
    unsigned char b[512], t[512];
    size_t n = pocl_make(b, "/k/x.so");
    ck_assert_int_eq(pocl_entry(b, n), SDPA__CL_ENTRY_OK);
    for (size_t len = 7; len < n; len++) /* from "poclbin" on: it claims to be one */
        ck_assert_msg(pocl_entry(b, len) == SDPA__CL_ENTRY_BAD_BINARY, "cut at %zu accepted", len);
    /* Each length field off by one (the bytes stay as they are). */
    static const size_t fields[][2] = {
        {77, 8},  /* root entry size */
        {85, 4},  /* /program.bc path length */
        {100, 4}, /* program.bc content length */
        {204, 8}, /* kernel record size */
        {212, 8}, /* kernel files size */
        {229, 4}, /* argument count */
    };
    for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++) {
        memcpy(t, b, n);
        uint64_t v = fields[i][1] == 8 ? sdpa__get_u64le(t + fields[i][0])
                                       : sdpa__get_u32le(t + fields[i][0]);
        put_le(t + fields[i][0], v + (i == 5 ? 1000 : 1), (int)fields[i][1]);
        ck_assert_msg(pocl_entry(t, n) == SDPA__CL_ENTRY_BAD_BINARY, "field at %zu", fields[i][0]);
    }
    memcpy(t, b, n);
    put_le(t + 20, 1000000, 4); /* kernel count */
    ck_assert_int_eq(pocl_entry(t, n), SDPA__CL_ENTRY_BAD_BINARY);
    memcpy(t, b, n);
    put_le(t + 16, 99, 4); /* unknown version */
    ck_assert_int_eq(pocl_entry(t, n), SDPA__CL_ENTRY_BAD_BINARY);
    /* A file path climbing out of PoCL's cache folder. */
    n = pocl_make(b, "/../../../tmp/evil");
    ck_assert_int_eq(pocl_entry(b, n), SDPA__CL_ENTRY_BAD_BINARY);
    /* Other drivers' binaries are opaque: passed through. */
    ck_assert_int_eq(sdpa__cl_binary_check((const unsigned char *)"\x7f" "ELF....", 8),
                     SDPA__CL_ENTRY_OK);
    ck_assert_str_eq(sdpa__cl_entry_reason(SDPA__CL_ENTRY_BAD_BINARY),
                     "malformed PoCL binary (a length inside it is wrong)");
}
END_TEST

START_TEST(cache_entry_corruptions_rejected)
{
    size_t n, klen = strlen(ENTRY_IDENT);
    unsigned char *good = entry_make(257, 7, &n);
    unsigned char *d = malloc(n + 8);
    ck_assert_ptr_nonnull(d);
#define RESET() memcpy(d, good, n)

    /* Truncated header: every length below 32, and no data at all. */
    RESET();
    for (size_t len = 0; len < SDPA__CL_ENTRY_HEADER; len++)
        ck_assert_int_eq(entry_parse(d, len), SDPA__CL_ENTRY_TRUNCATED_HEADER);
    ck_assert_int_eq(entry_parse(NULL, 0), SDPA__CL_ENTRY_TRUNCATED_HEADER);
    /* Truncated identity or binary: every shorter length. */
    for (size_t len = SDPA__CL_ENTRY_HEADER; len < n; len++)
        ck_assert_int_eq(entry_parse(d, len), SDPA__CL_ENTRY_TRUNCATED);
    /* Bytes after the binary. */
    d[n] = 0;
    ck_assert_int_eq(entry_parse(d, n + 1), SDPA__CL_ENTRY_TRAILING);
    /* Bad magic. */
    RESET();
    d[7] = '0';
    ck_assert_int_eq(entry_parse(d, n), SDPA__CL_ENTRY_BAD_MAGIC);
    /* Wrong version. */
    RESET();
    put_le(d + 8, 2, 4);
    ck_assert_int_eq(entry_parse(d, n), SDPA__CL_ENTRY_BAD_VERSION);
    /* Wrong key: one byte of the stored identity, and another expected one. */
    RESET();
    d[SDPA__CL_ENTRY_HEADER + klen - 1] ^= 1;
    ck_assert_int_eq(entry_parse(d, n), SDPA__CL_ENTRY_KEY_MISMATCH);
    RESET();
    sdpa__cl_entry e;
    ck_assert_int_eq(sdpa__cl_entry_parse(d, n, ENTRY_IDENT, klen - 1, &e),
                     SDPA__CL_ENTRY_KEY_MISMATCH);
    ck_assert_int_eq(sdpa__cl_entry_parse(d, n, "another identity", 16, &e),
                     SDPA__CL_ENTRY_KEY_MISMATCH);
    /* Length fields larger than the file: a little, hugely, and the identity. */
    RESET();
    put_le(d + 16, 257 + 1, 8);
    ck_assert_int_eq(entry_parse(d, n), SDPA__CL_ENTRY_TRUNCATED);
    put_le(d + 16, SDPA__CL_ENTRY_MAX_BINARY, 8);
    ck_assert_int_eq(entry_parse(d, n), SDPA__CL_ENTRY_TRUNCATED);
    put_le(d + 16, SDPA__CL_ENTRY_MAX_BINARY + 1, 8);
    ck_assert_int_eq(entry_parse(d, n), SDPA__CL_ENTRY_BAD_SIZE);
    put_le(d + 16, UINT64_MAX, 8);
    ck_assert_int_eq(entry_parse(d, n), SDPA__CL_ENTRY_BAD_SIZE);
    put_le(d + 16, 0, 8);
    ck_assert_int_eq(entry_parse(d, n), SDPA__CL_ENTRY_BAD_SIZE);
    RESET();
    put_le(d + 12, n, 4);
    ck_assert_int_eq(entry_parse(d, n), SDPA__CL_ENTRY_TRUNCATED);
    put_le(d + 12, UINT32_MAX, 4);
    ck_assert_int_eq(entry_parse(d, n), SDPA__CL_ENTRY_BAD_SIZE);
    /* Identity/binary split moved (lengths still add up): not this identity. */
    RESET();
    put_le(d + 12, klen + 1, 4);
    put_le(d + 16, 257 - 1, 8);
    ck_assert_int_eq(entry_parse(d, n), SDPA__CL_ENTRY_KEY_MISMATCH);
    /* Checksum mismatch: every byte of the binary, and the field itself. */
    for (size_t i = SDPA__CL_ENTRY_HEADER + klen; i < n; i++) {
        RESET();
        d[i] ^= 0x5a;
        ck_assert_int_eq(entry_parse(d, n), SDPA__CL_ENTRY_CHECKSUM);
    }
    RESET();
    d[24] ^= 1;
    ck_assert_int_eq(entry_parse(d, n), SDPA__CL_ENTRY_CHECKSUM);
    /* With the identity check off, a flipped identity byte is a bad checksum. */
    RESET();
    d[SDPA__CL_ENTRY_HEADER] ^= 1;
    ck_assert_int_eq(sdpa__cl_entry_parse(d, n, NULL, 0, &e), SDPA__CL_ENTRY_CHECKSUM);
#undef RESET
    /* Every reason is distinct and non-empty. */
    for (int a = SDPA__CL_ENTRY_OK; a <= SDPA__CL_ENTRY_CHECKSUM; a++) {
        const char *ra = sdpa__cl_entry_reason((sdpa__cl_entry_status)a);
        ck_assert(ra && ra[0]);
        for (int b = a + 1; b <= SDPA__CL_ENTRY_CHECKSUM; b++)
            ck_assert_str_ne(ra, sdpa__cl_entry_reason((sdpa__cl_entry_status)b));
    }
    free(d);
    free(good);
}
END_TEST


/* ---- GPU personas and limits (issue 16) ------------------------------------------ */

/* Each persona (src/backend/opencl/cl_persona.c) runs in a fresh process of
 * this binary (SDPA_TEST_PERSONA is read when libOpenCL is loaded, once per
 * process): the child checks that the device reports the persona's limits,
 * that every problem below plans the default configuration a GPU with those
 * limits gets (the `want` strings: work-group clamped to the limit, staged
 * tiles fitted to local memory; Mali, mobile-gpu in the vendor table, gets
 * GPU-style rows with nothing staged in its system-memory "local" memory),
 * and that it matches the reference. Before the
 * limits were adapted, cl-wg32 refused prefill, decode and backward (work-group
 * 64 above 32), and no test executed the GPU defaults at all. */
typedef struct persona_case {
    const char *persona;
    size_t max_wg;
    int64_t local_kib;
    const char *want[5]; /* kernel + config of pcases[i]'s default plan */
} persona_case;

static const fcase pcases[] = {
    {"p_prefill_gqa", 2, 8, 2, 65, 130, 64, 32, F_CAUSAL | F_BR},
    {"p_prefill_d256", 1, 1, 1, 65, 65, 256, 256, F_CAUSAL},
    {"p_stats_mask", 2, 4, 2, 33, 77, 64, 64, F_MASK | F_BIAS | F_BCAST | F_STATS},
    {"p_decode_gqa", 2, 8, 2, 1, 1000, 128, 128, F_KVLEN},
    {"p_backward_gqa", 2, 4, 2, 65, 130, 64, 48, F_CAUSAL | F_BR | F_CAP},
};
#define N_PCASES (int)(sizeof pcases / sizeof pcases[0])
#define P_BACKWARD 4

#define PERSONA_WANT_DISCRETE \
    "fused fwd_kernel=1 wg_size=128 q_tile=64 k_tile=32 split_kv=1 (fwd_block.cl: scores 4x4, outputs 4x4 per work-item)", \
    "fused fwd_kernel=1 wg_size=128 q_tile=16 k_tile=16 split_kv=1 (fwd_block.cl: scores 1x2, outputs 4x8 per work-item)", \
    "fused fwd_kernel=1 wg_size=128 q_tile=64 k_tile=32 split_kv=1 (fwd_block.cl: scores 4x4, outputs 4x8 per work-item)", \
    "decode direct_kv=1 rows=4 wg_size=64 k_tile=32 split_kv=16 chunk=64 (decode_gpu.cl on K/V in place)", \
    "fused wg_size=64 q_tile=64 k_tile=8 vec_width=4 stage_kv=1 split_kv=1 (backward: bwd_fa2.cl, dQ 32 rows x 32 keys, dK/dV 16 keys x 32 rows)"
/* Mali: mobile-gpu in the vendor table (src/core/device_table.c), GPU-style
 * rows; its local memory is system memory, so nothing is staged */
#define PERSONA_WANT_MALI \
    "fused fwd_kernel=1 wg_size=128 q_tile=64 k_tile=16 split_kv=1 (fwd_block.cl: scores 2x4, outputs 4x4 per work-item)", \
    "fused fwd_kernel=1 wg_size=128 q_tile=16 k_tile=8 split_kv=1 (fwd_block.cl: scores 1x1, outputs 4x8 per work-item)", \
    "fused fwd_kernel=1 wg_size=128 q_tile=64 k_tile=16 split_kv=1 (fwd_block.cl: scores 2x4, outputs 4x8 per work-item)", \
    "decode direct_kv=1 rows=4 wg_size=64 k_tile=32 split_kv=16 chunk=64 (decode_gpu.cl on K/V in place)", \
    "fused wg_size=64 q_tile=64 k_tile=8 vec_width=4 stage_kv=0 split_kv=1 (backward: bwd_fa2.cl, dQ 32 rows x 16 keys, dK/dV 16 keys x 32 rows)"
#define PERSONA_WANT_WG32 \
    "fused fwd_kernel=1 wg_size=32 q_tile=16 k_tile=32 split_kv=1 (fwd_block.cl: scores 4x4, outputs 4x4 per work-item)", \
    "fused fwd_kernel=1 wg_size=32 q_tile=4 k_tile=16 split_kv=1 (fwd_block.cl: scores 1x2, outputs 4x8 per work-item)", \
    "fused fwd_kernel=1 wg_size=32 q_tile=16 k_tile=32 split_kv=1 (fwd_block.cl: scores 4x4, outputs 4x8 per work-item)", \
    "decode direct_kv=1 rows=4 wg_size=32 k_tile=32 split_kv=* chunk=* (decode_gpu.cl on K/V in place)", \
    "fused wg_size=32 q_tile=32 k_tile=8 vec_width=4 stage_kv=1 split_kv=1 (backward: bwd_fa2.cl, dQ 16 rows x 32 keys, dK/dV 8 keys x 32 rows)"
/* 32 KiB: the block forward halves its keys; work-group 64 within 256 or
 * 1024 for decode and backward (fwd.cl: D = 256 stages 8 keys in 16 KiB) */
#define PERSONA_WANT_GENERIC \
    "fused fwd_kernel=1 wg_size=128 q_tile=64 k_tile=16 split_kv=1 (fwd_block.cl: scores 2x4, outputs 4x4 per work-item)", \
    "fused fwd_kernel=1 wg_size=128 q_tile=16 k_tile=8 split_kv=1 (fwd_block.cl: scores 1x1, outputs 4x8 per work-item)", \
    "fused fwd_kernel=1 wg_size=128 q_tile=64 k_tile=16 split_kv=1 (fwd_block.cl: scores 2x4, outputs 4x8 per work-item)", \
    "decode direct_kv=1 rows=4 wg_size=64 k_tile=32 split_kv=* chunk=* (decode_gpu.cl on K/V in place)", \
    "fused wg_size=64 q_tile=64 k_tile=8 vec_width=4 stage_kv=1 split_kv=1 (backward: bwd_fa2.cl, dQ 32 rows x 16 keys, dK/dV 16 keys x 32 rows)"
/* 8 KiB: the block forward takes 16 rows x 8 keys; at D = 256 nothing of
 * it fits, so that prefill keeps fwd.cl, whose tile halves to 4 keys */
#define PERSONA_WANT_LMEM8 \
    "fused fwd_kernel=1 wg_size=32 q_tile=16 k_tile=8 split_kv=1 (fwd_block.cl: scores 1x4, outputs 4x4 per work-item)", \
    "fused wg_size=64 q_tile=64 k_tile=4 vec_width=4 stage_kv=1 split_kv=1", \
    "fused fwd_kernel=1 wg_size=32 q_tile=16 k_tile=8 split_kv=1 (fwd_block.cl: scores 1x4, outputs 4x8 per work-item)", \
    "decode direct_kv=1 rows=4 wg_size=64 k_tile=8 split_kv=* chunk=* (decode_gpu.cl on K/V in place)", \
    "fused wg_size=64 q_tile=64 k_tile=8 vec_width=4 stage_kv=1 split_kv=1"
/* 16 KiB: the block forward halves keys to 8, then rows and work-items */
#define PERSONA_WANT_LMEM16 \
    "fused fwd_kernel=1 wg_size=64 q_tile=32 k_tile=8 split_kv=1 (fwd_block.cl: scores 1x4, outputs 4x4 per work-item)", \
    "fused fwd_kernel=1 wg_size=32 q_tile=4 k_tile=8 split_kv=1 (fwd_block.cl: scores 1x1, outputs 4x8 per work-item)", \
    "fused fwd_kernel=1 wg_size=64 q_tile=32 k_tile=8 split_kv=1 (fwd_block.cl: scores 1x4, outputs 4x8 per work-item)", \
    "decode direct_kv=1 rows=4 wg_size=64 k_tile=16 split_kv=* chunk=* (decode_gpu.cl on K/V in place)", \
    "fused wg_size=64 q_tile=64 k_tile=8 vec_width=4 stage_kv=1 split_kv=1 (backward: bwd_fa2.cl, dQ 16 rows x 8 keys, dK/dV 16 keys x 8 rows)"
/* 64 KiB: the block forward's defaults, as on the discrete GPU */
#define PERSONA_WANT_LMEM64 \
    "fused fwd_kernel=1 wg_size=128 q_tile=64 k_tile=32 split_kv=1 (fwd_block.cl: scores 4x4, outputs 4x4 per work-item)", \
    "fused fwd_kernel=1 wg_size=128 q_tile=16 k_tile=16 split_kv=1 (fwd_block.cl: scores 1x2, outputs 4x8 per work-item)", \
    "fused fwd_kernel=1 wg_size=128 q_tile=64 k_tile=32 split_kv=1 (fwd_block.cl: scores 4x4, outputs 4x8 per work-item)", \
    "decode direct_kv=1 rows=4 wg_size=64 k_tile=32 split_kv=* chunk=* (decode_gpu.cl on K/V in place)", \
    "fused wg_size=64 q_tile=64 k_tile=8 vec_width=4 stage_kv=1 split_kv=1 (backward: bwd_fa2.cl, dQ 32 rows x 32 keys, dK/dV 16 keys x 32 rows)"
/* 2 KiB of private memory per kernel: the decode plan rebuilt with 1 row
 * (decode_gpu.cl: 4 -> 2 -> 1 rows per work-group). Where the compute
 * units are the driver's, the decode's key split is '*' (want_match). The
 * backward (bwd_fa2.cl) splits: docs/opencl.md "GPU-class backward"; at
 * 8 KiB no dK/dV split fits, so that persona keeps bwd.cl. */
#define PERSONA_WANT_SPILL \
    "fused fwd_kernel=1 wg_size=128 q_tile=64 k_tile=16 split_kv=1 (fwd_block.cl: scores 2x4, outputs 4x4 per work-item)", \
    "fused fwd_kernel=1 wg_size=128 q_tile=16 k_tile=8 split_kv=1 (fwd_block.cl: scores 1x1, outputs 4x8 per work-item)", \
    "fused fwd_kernel=1 wg_size=128 q_tile=64 k_tile=16 split_kv=1 (fwd_block.cl: scores 2x4, outputs 4x8 per work-item)", \
    "decode direct_kv=1 rows=1 wg_size=64 k_tile=32 split_kv=* chunk=* (decode_gpu.cl on K/V in place)", \
    "fused wg_size=64 q_tile=64 k_tile=8 vec_width=4 stage_kv=1 split_kv=1 (backward: bwd_fa2.cl, dQ 32 rows x 16 keys, dK/dV 16 keys x 32 rows)"
static const persona_case personas[] = {
    {"cl-discrete", 1024, 48, {PERSONA_WANT_DISCRETE}},
    {"cl-mali", 256, 32, {PERSONA_WANT_MALI}},
    {"cl-wg32", 32, 32, {PERSONA_WANT_WG32}},
    {"cl-wg1024", 1024, 32, {PERSONA_WANT_GENERIC}},
    {"cl-lmem8", 256, 8, {PERSONA_WANT_LMEM8}},
    {"cl-lmem16", 256, 16, {PERSONA_WANT_LMEM16}},
    {"cl-lmem64", 256, 64, {PERSONA_WANT_LMEM64}},
    {"cl-spill", 256, 32, {PERSONA_WANT_SPILL}},
};
#define N_PERSONAS (int)(sizeof personas / sizeof personas[0])

static const persona_case *persona_current(void)
{
    const char *name = getenv("SDPA_TEST_PERSONA");
    for (int i = 0; name && i < N_PERSONAS; i++)
        if (strcmp(personas[i].persona, name) == 0) return &personas[i];
    ck_abort_msg("SDPA_TEST_PERSONA=%s is not a persona of this test", name ? name : "");
    return NULL;
}

/* In the child: the device answers as the persona. */
START_TEST(persona_device_reports_limits)
{
    const persona_case *pc = persona_current();
    sdpa_device_info info;
    memset(&info, 0, sizeof info);
    info.struct_size = sizeof info;
    ck_assert_int_eq(sdpa_device_get_info(SDPA_BACKEND_OPENCL, 0, &info), SDPA_OK);
    ck_assert_int_eq(info.is_gpu, 1);
    ck_assert_int_eq(info.max_workgroup_size, (int)pc->max_wg);
    ck_assert_int_eq(info.local_mem_bytes, pc->local_kib * 1024);
    ck_assert_msg(strstr(info.name, pc->persona), "device name %s", info.name);
}
END_TEST

/* Whether plan text `got` is `want`, where a '*' in want stands for a run
 * of digits: the GPU-class decode's key split follows the compute units,
 * which the generic personas leave to the driver (docs/opencl.md). */
static bool want_match(const char *got, const char *want)
{
    while (*want) {
        if (*want == '*') {
            if (*got < '0' || *got > '9') return false;
            while (*got >= '0' && *got <= '9') got++;
            want++;
        } else if (*got++ != *want++) {
            return false;
        }
    }
    return *got == '\0';
}

/* In the child: pcases[_i] plans the persona's default and matches the
 * reference. */
START_TEST(persona_default_parity)
{
    const persona_case *pc = persona_current();
    tcase c = fcase_make(&pcases[_i], 4321u);
    tproblem tp;
    tproblem_make(&tp, &c);
    sdpa_plan_options o;
    sdpa_plan_options_init(&o);
    if (_i == P_BACKWARD) o.flags = SDPA_PLAN_BACKWARD;
    sdpa_plan *plan = NULL;
    sdpa_status st = sdpa_plan_create(g_cl, &tp.desc, &o, &plan);
    sdpa_error_info ei;
    memset(&ei, 0, sizeof ei);
    sdpa_context_last_error(g_cl, &ei);
    ck_assert_msg(st == SDPA_OK, "%s %s: plan: %s", pc->persona, c.name, ei.message);
    sdpa_plan_info info;
    memset(&info, 0, sizeof info);
    info.struct_size = sizeof info;
    ck_assert_int_eq(sdpa_plan_get_info(plan, &info), SDPA_OK);
    char got[512];
    snprintf(got, sizeof got, "%s %s", info.kernel, info.config);
    sdpa_plan_destroy(plan);
    tproblem_free(&tp);
    if (getenv("TEST_OPENCL_VERBOSE")) fprintf(stderr, "%s %s: %s\n", pc->persona, c.name, got);
    ck_assert_str_eq(info.source, "default");
    if (_i == P_BACKWARD) tparity_backward(g_cl, g_ref, &c, NULL);
    else tparity_forward(g_cl, g_ref, &c, NULL);
    ck_assert_msg(want_match(got, pc->want[_i]), "%s %s: plan '%s', want '%s'", pc->persona,
                  c.name, got, pc->want[_i]);
}
END_TEST

/* In the child under cl-discrete: the features on the GPU-class kernels. */
START_TEST(features_gpu_class)
{
    features_case(_i, true);
}
END_TEST

static int persona_child(void)
{
    Suite *s = suite_create("opencl-persona");
    if (getenv("SDPA_TEST_FEATURES_CHILD")) {
        TCase *tf = tcase_create("features_gpu_class");
        tcase_add_checked_fixture(tf, setup, teardown);
        tcase_set_timeout(tf, 900);
        tcase_add_loop_test(tf, features_gpu_class, 0, N_FCASES_X * N_FLENS);
        tcase_add_loop_test(tf, features_split_fused, 0, 2);
        suite_add_tcase(s, tf);
        return trun_suite(s);
    }
    TCase *tc = tcase_create("persona");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, persona_device_reports_limits);
    tcase_add_loop_test(tc, persona_default_parity, 0, N_PCASES);
    suite_add_tcase(s, tc);
    return trun_suite(s);
}

/* Runs this binary again in a fresh process under SDPA_TEST_PERSONA=persona
 * (the child's suite: persona_child; `features`: its features case) and
 * asserts that it passed. */
static void run_persona_child(const char *persona, bool features)
{
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        setenv("SDPA_TEST_PERSONA", persona, 1);
        setenv("SDPA_TEST_PERSONA_CHILD", "1", 1);
        if (features) setenv("SDPA_TEST_FEATURES_CHILD", "1", 1);
        unsetenv("CK_RUN_CASE");
        unsetenv("CK_RUN_SUITE");
        execl("/proc/self/exe", "test_opencl", (char *)NULL);
        _exit(100);
    }
    int status = 0;
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
                  "persona %s%s: child failed (status %d; its log is above)", persona,
                  features ? " (features)" : "", WIFEXITED(status) ? WEXITSTATUS(status) : -1);
}

/* In the parent: one fresh process per persona. */
START_TEST(persona_defaults)
{
    run_persona_child(personas[_i].persona, false);
}
END_TEST

/* The features under SDPA_TEST_PERSONA=cl-discrete (GPU-class kernels:
 * fwd_block.cl, GPU-style decode), in a fresh process. */
START_TEST(features_discrete)
{
    run_persona_child("cl-discrete", true);
}
END_TEST

/* Whether this library was built with -Dfault_injection=true. */
static bool fault_build(void)
{
    sdpa__fault_arm(1);
    void *m = sdpa__malloc(8);
    sdpa__fault_arm(0);
    free(m);
    return m == NULL;
}

static void retry_check(const char *name, const char *what, const void *got, const void *want,
                        size_t n)
{
    tcompare r = tcompare_arrays(got, SDPA_DTYPE_F32, want, SDPA_DTYPE_F32, n);
    ck_assert_msg(r.bad_nonfinite == 0 && r.max_abs < tbound(SDPA_DTYPE_F32),
                  "%s: %s after the retry: %zu non-finite mismatches, max_abs %g", name, what,
                  r.bad_nonfinite, r.max_abs);
}

/* An enqueue refused for resources (CL_OUT_OF_RESOURCES, injected at the
 * launch fault site of cl_launch.c) is retried once on a smaller default
 * configuration: the call succeeds, matches the reference, and the plan
 * says it runs a smaller work-group. Walks the fault sites of one forward
 * (prefill, decode) and one backward up to the first launch. Before the
 * retry the injected failure came back as SDPA_ERR_OUT_OF_MEMORY (the status
 * of CL_OUT_OF_RESOURCES). */
static void retry_walk(const fcase *f, bool backward)
{
    tcase c = fcase_make(f, 99u);
    c.lse = backward;
    tproblem tp, want;
    tproblem_make(&tp, &c);
    tproblem_make(&want, &c);
    sdpa_plan_options o;
    sdpa_plan_options_init(&o);
    if (backward) o.flags = SDPA_PLAN_BACKWARD;
    sdpa_plan *ref = NULL;
    ck_assert_int_eq(sdpa_plan_create(g_ref, &want.desc, &o, &ref), SDPA_OK);
    ck_assert_int_eq(sdpa_plan_forward(ref, &want.desc.tensors), SDPA_OK);
    if (backward) ck_assert_int_eq(sdpa_plan_backward(ref, &want.desc.tensors, &want.bwd), SDPA_OK);
    sdpa_plan_destroy(ref);
    bool retried = false;
    for (int64_t n = 1; n < 64 && !retried; n++) {
        sdpa_plan *plan = NULL;
        ck_assert_int_eq(sdpa_plan_create(g_cl, &tp.desc, &o, &plan), SDPA_OK);
        sdpa_plan_info before, after;
        memset(&before, 0, sizeof before);
        before.struct_size = sizeof before;
        after = before;
        ck_assert_int_eq(sdpa_plan_get_info(plan, &before), SDPA_OK);
        if (backward) ck_assert_int_eq(sdpa_plan_forward(plan, &tp.desc.tensors), SDPA_OK);
        sdpa__fault_arm(n);
        sdpa_status st = backward ? sdpa_plan_backward(plan, &tp.desc.tensors, &tp.bwd)
                                  : sdpa_plan_forward(plan, &tp.desc.tensors);
        const char *site = sdpa__fault_last_site();
        sdpa__fault_arm(0);
        if (strcmp(site, "clEnqueueNDRangeKernel") == 0) {
            ck_assert_msg(st == SDPA_OK, "%s: injected CL_OUT_OF_RESOURCES not retried (%s)",
                          c.name, sdpa_status_name(st));
            ck_assert_int_eq(sdpa_context_finish(g_cl), SDPA_OK);
            ck_assert_int_eq(sdpa_plan_get_info(plan, &after), SDPA_OK);
            ck_assert_msg(strcmp(before.config, after.config) != 0,
                          "%s: retried on the same configuration %s", c.name, after.config);
            if (getenv("TEST_OPENCL_VERBOSE"))
                fprintf(stderr, "%s: retry at fault %lld: %s -> %s\n", c.name, (long long)n,
                        before.config, after.config);
            if (backward) {
                retry_check(c.name, "dq", tp.dq, want.dq, tp.n_q);
                retry_check(c.name, "dk", tp.dk, want.dk, tp.n_k);
                retry_check(c.name, "dv", tp.dv, want.dv, tp.n_v);
            } else {
                retry_check(c.name, "out", tp.out, want.out, tp.n_out);
            }
            retried = true;
        }
        sdpa_plan_destroy(plan);
    }
    ck_assert_msg(retried, "%s: no launch fault site reached", c.name);
    tproblem_free(&tp);
    tproblem_free(&want);
}

START_TEST(enqueue_retry)
{
    retry_walk(fcase_find(pcases, N_PCASES, "p_prefill_gqa"), false);
    retry_walk(fcase_find(pcases, N_PCASES, "p_decode_gqa"), false);
    retry_walk(fcase_find(pcases, N_PCASES, "p_backward_gqa"), true);
}
END_TEST

int main(void)
{
    if (getenv("SDPA_TEST_NO_PLATFORM_PROBE")) return no_platform_probe();
    if (getenv("SDPA_TEST_PERSONA_CHILD")) return persona_child();
    Suite *s = suite_create("opencl");
    /* Whether a device exists is asked in a throwaway child: the parent must
     * not load the ICD loader (the no_platform test needs a fresh one, and
     * PoCL's threads do not survive Check's fork). */
    if (!tdevice_present(SDPA_BACKEND_OPENCL)) {
        fprintf(stderr, "test_opencl: no OpenCL device; skipping\n");
        return 77;
    }
    TCase *tc = tcase_create("forward");
    tcase_set_tags(tc, TTAG_DEVICE_PARITY);
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 600);
    tcase_add_loop_test(tc, forward_forced_tiles, 0, 5);
    tcase_add_test(tc, decode_uses_split);
    suite_add_tcase(s, tc);

    tc = tcase_create("block");
    tcase_set_tags(tc, TTAG_DEVICE_PARITY);
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 900);
    tcase_add_test(tc, block_forward_selection);
    tcase_add_loop_test(tc, block_forward_shapes, 0, 4);
    tcase_add_test(tc, block_forward_parity);
    suite_add_tcase(s, tc);

    tc = tcase_create("direct");
    tcase_set_tags(tc, TTAG_DEVICE_PARITY);
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 600);
    tcase_add_loop_test(tc, direct_decode_parity, 0, N_DCASES);
    tcase_add_test(tc, direct_decode_empty_and_nan);
    tcase_add_test(tc, direct_decode_strided_kv);
    tcase_add_test(tc, direct_decode_not_taken);
    suite_add_tcase(s, tc);

    tc = tcase_create("tuning");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, tuning_slots);
    tcase_add_test(tc, garbage_in_dropped_keys);
    tcase_add_test(tc, unfused_parity);
    tcase_add_test(tc, unfused_refused);
    suite_add_tcase(s, tc);

    tc = tcase_create("backward");
    tcase_set_tags(tc, TTAG_DEVICE_PARITY);
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 600);
    tcase_add_loop_test(tc, backward_forced_tiles, 0, 2);
    tcase_add_test(tc, backward_deterministic);
    suite_add_tcase(s, tc);

    tc = tcase_create("errors");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, build_failure_reports_log_and_auto_falls_back);
    tcase_add_test(tc, buffer_from_other_context_rejected);
    tcase_add_test(tc, unsupported_requests_refused);
    suite_add_tcase(s, tc);

    tc = tcase_create("features"); /* issue 19 */
    tcase_set_tags(tc, TTAG_DEVICE_PARITY);
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 1200);
    tcase_add_loop_test(tc, features_forward, 0, N_FCASES_X * N_FLENS);
    tcase_add_loop_test(tc, features_split_fused, 0, 2);
    tcase_add_loop_test(tc, features_backward, 0, 2 * (N_FLENS - 1));
    tcase_add_test(tc, features_device_table_clamped);
    tcase_add_test(tc, features_refused);
    suite_add_tcase(s, tc);
    tc = tcase_create("features_discrete");
    tcase_set_tags(tc, TTAG_DEVICE_PARITY);
    tcase_set_timeout(tc, 1200);
    tcase_add_test(tc, features_discrete);
    suite_add_tcase(s, tc);

    /* No fixture: the ICD loader must not have been loaded in this process. */
    tc = tcase_create("no_platform");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, no_platform);
    suite_add_tcase(s, tc);

    tc = tcase_create("device");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, device_info);
    tcase_add_test(tc, disk_cache_written_and_corrupt_entries_rebuilt);
    tcase_add_test(tc, disk_cache_untrusted_entries_refused);
    tcase_add_test(tc, interop_app_context_and_wrapped_buffers);
    tcase_add_test(tc, interop_after_auto_fallback);
    suite_add_tcase(s, tc);

    /* No fixture: pure parser tests, no device. */
    tc = tcase_create("cache_entry");
    tcase_add_test(tc, cache_entry_valid_accepted);
    tcase_add_test(tc, cache_entry_corruptions_rejected);
    tcase_add_test(tc, cache_entry_pocl_structure_checked);
    suite_add_tcase(s, tc);

    /* GPU personas (fresh processes) and the enqueue retry (fault builds). */
    tc = tcase_create("personas");
    tcase_set_timeout(tc, 900);
    tcase_add_loop_test(tc, persona_defaults, 0, N_PERSONAS);
    suite_add_tcase(s, tc);
    tc = tcase_create("retry");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 300);
    if (fault_build())
        tcase_add_test(tc, enqueue_retry);
    else
        fprintf(stderr, "test_opencl: enqueue_retry not run: it needs a build with "
                        "-Dfault_injection=true (.ci/run runs it)\n");
    suite_add_tcase(s, tc);
    return trun_suite(s);
}
