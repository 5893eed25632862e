/*
 * test_merge.c — sdpa_merge: partial attention over disjoint key sets,
 * combined by LSE, equals attention over all keys. Keys are split by slicing
 * K/V (views with offsets; a causal band follows through explicit diagonal
 * offsets), by complementary masks and by kv_len; partials with -inf LSE
 * (and NaN garbage in their outputs) contribute nothing; rows empty in every
 * partial give 0 and -inf; the result may overwrite one of the partials;
 * partials may live in device buffers; bad arguments get their statuses.
 * With attention sinks, partials computed without the sinks and merged by
 * sdpa_merge_sinks equal one call over all keys with them (the sink counted
 * once; rows empty everywhere get lse = sink), while a sink given to every
 * partial would be counted once per partial.
 *
 * Run time: well under a second (reference backend, small shapes).
 */
#include "naive_attention.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { B = 2, HQ = 4, HKV = 2, SQ = 7, SKV = 65, D = 32, DV = 16 };
#define NO ((size_t)B * HQ * SQ * DV)
#define NL ((size_t)B * HQ * SQ)

static sdpa_context *g_ctx;
static void setup(void) { g_ctx = nv_context(); }
static void teardown(void) { sdpa_context_destroy(g_ctx); g_ctx = NULL; }

typedef struct part { float out[NO], lse[NL]; sdpa_tensor to, tl; } part;

static void part_tensors(part *pt)
{
    pt->to = sdpa_tensor_host(pt->out, SDPA_DTYPE_F32, B, HQ, SQ, DV);
    pt->tl = sdpa_tensor_host(pt->lse, SDPA_DTYPE_F32, B, HQ, SQ, 1);
}

/* Merges n parts into `res` and checks it against want (out, lse). */
static void merge_and_check(part *parts, int n, const float *want_o, const float *want_l,
                            const char *what)
{
    sdpa_tensor outs[4], lses[4];
    part *res = malloc(sizeof *res);
    ck_assert_ptr_nonnull(res);
    nv_fill_nan(res->out, NO);
    nv_fill_nan(res->lse, NL);
    part_tensors(res);
    for (int i = 0; i < n; i++) {
        part_tensors(&parts[i]);
        outs[i] = parts[i].to;
        lses[i] = parts[i].tl;
    }
    ck_assert_int_eq(sdpa_merge(g_ctx, n, outs, lses, &res->to, &res->tl), SDPA_OK);
    for (size_t e = 0; e < NL; e++) {
        if (want_l[e] == -INFINITY)
            ck_assert_msg(res->lse[e] == -INFINITY, "%s lse[%zu] %g", what, e, res->lse[e]);
        else
            ck_assert_msg(fabsf(res->lse[e] - want_l[e]) <= 2e-6f * fmaxf(1, fabsf(want_l[e])),
                          "%s lse[%zu] %g vs %g", what, e, res->lse[e], want_l[e]);
    }
    for (size_t e = 0; e < NO; e++)
        ck_assert_msg(fabsf(res->out[e] - want_o[e]) <= 2e-6f,
                      "%s out[%zu] %g vs %g", what, e, res->out[e], want_o[e]);
    free(res);
}

/* Runs p (lse on) and copies out/lse into a part. */
static void run_into(nv_problem *p, part *pt)
{
    nv_poison(p);
    ck_assert_int_eq(nv_run(g_ctx, p), SDPA_OK);
    memcpy(pt->out, p->out, sizeof pt->out);
    memcpy(pt->lse, p->lse, sizeof pt->lse);
}

/* Keys [lo, hi) of the full problem as views into its K/V arrays. */
static sdpa_status run_slice(const nv_problem *full, int64_t lo, int64_t hi, part *pt,
                             bool causal)
{
    sdpa_attention_desc d;
    nv_desc(full, &d);
    d.tensors.k.shape[2] = hi - lo;
    d.tensors.k.offset = (size_t)(lo * D);
    d.tensors.v.shape[2] = hi - lo;
    d.tensors.v.offset = (size_t)(lo * DV);
    nv_fill_nan(pt->out, NO);
    nv_fill_nan(pt->lse, NL);
    d.tensors.out = sdpa_tensor_host(pt->out, SDPA_DTYPE_F32, B, HQ, SQ, DV);
    d.tensors.lse = sdpa_tensor_host(pt->lse, SDPA_DTYPE_F32, B, HQ, SQ, 1);
    if (causal) {
        /* key j of the slice is key lo + j of the full problem, whose band is
         * j_full <= i + off_full: so off_slice = off_full - lo */
        d.diagonal = SDPA_DIAGONAL_EXPLICIT;
        d.diagonal_offset = full->diagonal_offset - lo;
        d.window_right = 0;
    }
    return sdpa_attention_forward(g_ctx, &d);
}

START_TEST(split_by_slicing)
{
    trng r;
    nv_problem p;
    part *parts = malloc(3 * sizeof *parts), *full = malloc(sizeof *full);
    const int64_t cuts[4] = {0, 20, 41, SKV};
    trng_seed(&r, 1);
    nv_make(&p, &r, B, HQ, HKV, SQ, SKV, D, DV);
    run_into(&p, full);
    for (int i = 0; i < 3; i++)
        ck_assert_int_eq(run_slice(&p, cuts[i], cuts[i + 1], &parts[i], false), SDPA_OK);
    merge_and_check(parts, 3, full->out, full->lse, "slices");
    merge_and_check(parts + 1, 1, parts[1].out, parts[1].lse, "n=1 identity");

    /* causal with an explicit offset: off = 30 puts the band inside the
     * keys, so the later slices have empty rows (lse -inf) */
    p.diagonal = SDPA_DIAGONAL_EXPLICIT;
    p.diagonal_offset = 30;
    p.window_right = 0;
    run_into(&p, full);
    for (int i = 0; i < 3; i++)
        ck_assert_int_eq(run_slice(&p, cuts[i], cuts[i + 1], &parts[i], true), SDPA_OK);
    ck_assert(parts[2].lse[0] == -INFINITY); /* row 0 sees keys <= 30 only */
    merge_and_check(parts, 3, full->out, full->lse, "causal slices");
    free(parts);
    free(full);
    nv_free(&p);
}
END_TEST

/* One call over all keys of p with the sinks (1, HQ, 1, 1) into pt, or
 * keys [lo, hi) when lo >= 0 (a slice, with the sinks too). */
static void run_with_sinks(const nv_problem *p, const float *sinks, part *pt)
{
    sdpa_attention_desc d;
    nv_desc(p, &d);
    nv_fill_nan(pt->out, NO);
    nv_fill_nan(pt->lse, NL);
    d.tensors.out = sdpa_tensor_host(pt->out, SDPA_DTYPE_F32, B, HQ, SQ, DV);
    d.tensors.lse = sdpa_tensor_host(pt->lse, SDPA_DTYPE_F32, B, HQ, SQ, 1);
    d.tensors.sinks = sdpa_tensor_host((void *)sinks, SDPA_DTYPE_F32, 1, HQ, 1, 1);
    ck_assert_int_eq(sdpa_attention_forward(g_ctx, &d), SDPA_OK);
}

/* Keys [lo, hi) of p (causal from its explicit offset, its kv_len cut to
 * the slice into kvl) into pt, with the sinks when sk is given. */
static void run_slice_sinks(const nv_problem *p, int64_t lo, int64_t hi, int32_t kvl[B],
                            const sdpa_tensor *sk, part *pt)
{
    sdpa_attention_desc d;
    nv_desc(p, &d);
    d.tensors.k.shape[2] = d.tensors.v.shape[2] = hi - lo;
    d.tensors.k.offset = (size_t)(lo * D);
    d.tensors.v.offset = (size_t)(lo * DV);
    d.diagonal_offset = p->diagonal_offset - lo;
    for (int b = 0; b < B; b++) {
        int64_t n = p->kv_len[b] - lo;
        kvl[b] = (int32_t)(n < 0 ? 0 : n > hi - lo ? hi - lo : n);
    }
    d.tensors.kv_len = sdpa_tensor_host(kvl, SDPA_DTYPE_I32, B, 1, 1, 1);
    nv_fill_nan(pt->out, NO);
    nv_fill_nan(pt->lse, NL);
    part_tensors(pt);
    d.tensors.out = pt->to;
    d.tensors.lse = pt->tl;
    if (sk) d.tensors.sinks = *sk;
    ck_assert_int_eq(sdpa_attention_forward(g_ctx, &d), SDPA_OK);
}

START_TEST(sinks_counted_once)
{
    int32_t kvl[B];
    trng r;
    nv_problem p;
    part *parts = malloc(3 * sizeof *parts), *full = malloc(sizeof *full);
    const int64_t cuts[4] = {0, 20, 41, SKV};
    const float sinks[HQ] = {0.5f, -1.0f, 3.0f, -INFINITY}; /* the last head: none */
    trng_seed(&r, 11);
    nv_make(&p, &r, B, HQ, HKV, SQ, SKV, D, DV);
    /* causal from offset 30 (the last slice has empty rows), batch 1 with
     * no key at all: its rows are empty in every partial */
    p.diagonal = SDPA_DIAGONAL_EXPLICIT;
    p.diagonal_offset = 30;
    p.window_right = 0;
    const int32_t lens[B] = {SKV, 0};
    nv_add_kv_len(&p, lens);
    run_with_sinks(&p, sinks, full);
    ck_assert(full->lse[NL / 2] == 0.5f); /* batch 1, head 0: lse = the sink */
    sdpa_tensor outs[3], lses[3], sk = sdpa_tensor_host((void *)sinks, SDPA_DTYPE_F32, 1, HQ, 1, 1);
    for (int i = 0; i < 3; i++) {
        run_slice_sinks(&p, cuts[i], cuts[i + 1], kvl, NULL, &parts[i]);
        outs[i] = parts[i].to;
        lses[i] = parts[i].tl;
    }
    part *res = malloc(sizeof *res);
    nv_fill_nan(res->out, NO);
    nv_fill_nan(res->lse, NL);
    part_tensors(res);
    ck_assert_int_eq(sdpa_merge_sinks(g_ctx, 3, outs, lses, &sk, &res->to, &res->tl), SDPA_OK);
    for (size_t e = 0; e < NL; e++) {
        if (full->lse[e] == -INFINITY)
            ck_assert_msg(res->lse[e] == -INFINITY, "lse[%zu] %g", e, res->lse[e]);
        else
            ck_assert_msg(fabsf(res->lse[e] - full->lse[e]) <= 2e-6f * fmaxf(1, fabsf(full->lse[e])),
                          "lse[%zu] %g vs %g", e, res->lse[e], full->lse[e]);
    }
    for (size_t e = 0; e < NO; e++)
        ck_assert_msg(fabsf(res->out[e] - full->out[e]) <= 2e-6f, "out[%zu] %g vs %g", e,
                      res->out[e], full->out[e]);
    /* NULL sinks is sdpa_merge; the sinks given to each partial instead
     * count n times, which is what the merge with sinks avoids */
    ck_assert_int_eq(sdpa_merge_sinks(g_ctx, 3, outs, lses, NULL, &res->to, &res->tl), SDPA_OK);
    ck_assert(res->lse[NL / 2] == -INFINITY);
    double worst = 0;
    for (int i = 0; i < 3; i++) /* each slice with the sinks */
        run_slice_sinks(&p, cuts[i], cuts[i + 1], kvl, &sk, &parts[i]);
    ck_assert_int_eq(sdpa_merge(g_ctx, 3, outs, lses, &res->to, &res->tl), SDPA_OK);
    for (size_t e = 0; e < NO / 2; e++) worst = fmax(worst, fabs(res->out[e] - full->out[e]));
    ck_assert_msg(worst > 1e-3, "sinks in every partial should differ (%g)", worst);
    /* a sinks tensor of the wrong shape or dtype, or overlapping a result */
    sdpa_tensor bad = sk;
    bad.shape[1] = HQ - 1;
    ck_assert_int_eq(sdpa_merge_sinks(g_ctx, 3, outs, lses, &bad, &res->to, &res->tl),
                     SDPA_ERR_SHAPE);
    bad = sk;
    bad.dtype = SDPA_DTYPE_F16;
    ck_assert_int_eq(sdpa_merge_sinks(g_ctx, 3, outs, lses, &bad, &res->to, &res->tl),
                     SDPA_ERR_DTYPE);
    bad = sdpa_tensor_host(res->lse, SDPA_DTYPE_F32, 1, HQ, 1, 1);
    ck_assert_int_eq(sdpa_merge_sinks(g_ctx, 3, outs, lses, &bad, &res->to, &res->tl),
                     SDPA_ERR_INVALID_ARG);
    free(res);
    free(parts);
    free(full);
    nv_free(&p);
}
END_TEST

/* A random partition of the keys of every row into three masks. */
START_TEST(split_by_masks)
{
    trng r;
    nv_problem p;
    part *parts = malloc(3 * sizeof *parts), *full = malloc(sizeof *full);
    uint8_t *owner;
    size_t nm = (size_t)B * HQ * SQ * SKV;
    trng_seed(&r, 2);
    nv_make(&p, &r, B, HQ, HKV, SQ, SKV, D, DV);
    nv_add_bias(&p, &r, 1, HQ, 0.05);
    p.softcap = 4.0;
    run_into(&p, full);
    owner = malloc(nm);
    for (size_t e = 0; e < nm; e++) owner[e] = (uint8_t)(trng_next(&r) % 3);
    nv_add_mask(&p, &r, B, HQ, 1.0);
    for (int i = 0; i < 3; i++) {
        for (size_t e = 0; e < nm; e++) p.mask[e] = owner[e] == i;
        run_into(&p, &parts[i]);
    }
    merge_and_check(parts, 3, full->out, full->lse, "masks");
    free(owner);
    free(parts);
    free(full);
    nv_free(&p);
}
END_TEST

/* kv_len for the first part, a slice for the rest. */
START_TEST(split_by_kv_len)
{
    trng r;
    nv_problem p;
    part *parts = malloc(2 * sizeof *parts), *full = malloc(sizeof *full);
    const int32_t lens[B] = {40, 40};
    trng_seed(&r, 3);
    nv_make(&p, &r, B, HQ, HKV, SQ, SKV, D, DV);
    run_into(&p, full);
    nv_add_kv_len(&p, lens);
    run_into(&p, &parts[0]);
    free(p.kv_len);
    p.kv_len = NULL;
    ck_assert_int_eq(run_slice(&p, 40, SKV, &parts[1], false), SDPA_OK);
    merge_and_check(parts, 2, full->out, full->lse, "kv_len + slice");
    free(parts);
    free(full);
    nv_free(&p);
}
END_TEST

/* Partials with lse = -inf contribute nothing, even when their out rows hold
 * garbage; rows empty everywhere give 0 and -inf. */
START_TEST(neg_inf_partials)
{
    trng r;
    nv_problem p;
    part *parts = malloc(3 * sizeof *parts), *full = malloc(sizeof *full);
    trng_seed(&r, 4);
    nv_make(&p, &r, B, HQ, HKV, SQ, SKV, D, DV);
    nv_add_mask(&p, &r, B, HQ, 1.0);
    for (int64_t j = 0; j < SKV; j++) p.mask[(0 * HQ + 2) * SQ * SKV + 3 * SKV + j] = 0;
    run_into(&p, full); /* (b0, h2, row 3) empty */
    ck_assert(full->lse[(0 * HQ + 2) * SQ + 3] == -INFINITY);
    memcpy(&parts[0], full, sizeof *full);
    /* part 1: everything masked */
    memset(p.mask, 0, (size_t)B * HQ * SQ * SKV);
    run_into(&p, &parts[1]);
    for (size_t e = 0; e < NL; e++) ck_assert(parts[1].lse[e] == -INFINITY);
    for (size_t e = 0; e < NO; e++) ck_assert(parts[1].out[e] == 0.0f);
    memcpy(&parts[2], &parts[1], sizeof parts[1]);
    merge_and_check(parts, 3, full->out, full->lse, "with empty partials");
    /* garbage in the outputs of -inf rows must not leak */
    nv_fill_nan(parts[1].out, NO);
    for (size_t e = 0; e < NO; e++) parts[2].out[e] = INFINITY;
    for (size_t e = 0; e < DV; e++)
        parts[0].out[((0 * HQ + 2) * SQ + 3) * DV + e] = NAN;
    merge_and_check(parts, 3, full->out, full->lse, "garbage in -inf rows");
    {
        float *zeros = calloc(NO, sizeof *zeros);
        ck_assert_ptr_nonnull(zeros);
        merge_and_check(parts + 1, 2, zeros, parts[1].lse, "all empty");
        free(zeros);
    }
    free(parts);
    free(full);
    nv_free(&p);
}
END_TEST

/* out may be one of the partial outputs. */
START_TEST(in_place)
{
    trng r;
    nv_problem p;
    part *parts = malloc(2 * sizeof *parts), *full = malloc(sizeof *full);
    sdpa_tensor outs[2], lses[2];
    trng_seed(&r, 5);
    nv_make(&p, &r, B, HQ, HKV, SQ, SKV, D, DV);
    run_into(&p, full);
    ck_assert_int_eq(run_slice(&p, 0, 33, &parts[0], false), SDPA_OK);
    ck_assert_int_eq(run_slice(&p, 33, SKV, &parts[1], false), SDPA_OK);
    for (int i = 0; i < 2; i++) {
        part_tensors(&parts[i]);
        outs[i] = parts[i].to;
        lses[i] = parts[i].tl;
    }
    /* into the second partial */
    ck_assert_int_eq(sdpa_merge(g_ctx, 2, outs, lses, &outs[1], &lses[1]), SDPA_OK);
    for (size_t e = 0; e < NO; e++) ck_assert_float_eq_tol(parts[1].out[e], full->out[e], 2e-6);
    for (size_t e = 0; e < NL; e++)
        ck_assert_float_eq_tol(parts[1].lse[e], full->lse[e], 2e-6 * fmaxf(1, fabsf(full->lse[e])));
    free(parts);
    free(full);
    nv_free(&p);
}
END_TEST

/* Partials in device buffers, result in host memory, with BSHD strides. */
START_TEST(buffers_and_strides)
{
    trng r;
    nv_problem p;
    part *parts = malloc(2 * sizeof *parts), *full = malloc(sizeof *full);
    sdpa_tensor outs[2], lses[2], ro, rl;
    sdpa_buffer *bo[2] = {NULL, NULL}, *bl[2] = {NULL, NULL};
    float *o = nv_floats(NO), *l = nv_floats(NL);
    trng_seed(&r, 6);
    nv_make(&p, &r, B, HQ, HKV, SQ, SKV, D, DV);
    run_into(&p, full);
    ck_assert_int_eq(run_slice(&p, 0, 7, &parts[0], false), SDPA_OK);
    ck_assert_int_eq(run_slice(&p, 7, SKV, &parts[1], false), SDPA_OK);
    for (int i = 0; i < 2; i++) {
        ck_assert_int_eq(sdpa_buffer_create(g_ctx, NO * 4, &bo[i]), SDPA_OK);
        ck_assert_int_eq(sdpa_buffer_create(g_ctx, NL * 4, &bl[i]), SDPA_OK);
        ck_assert_int_eq(sdpa_buffer_write(bo[i], 0, parts[i].out, NO * 4), SDPA_OK);
        ck_assert_int_eq(sdpa_buffer_write(bl[i], 0, parts[i].lse, NL * 4), SDPA_OK);
        outs[i] = sdpa_tensor_buffer(bo[i], 0, SDPA_DTYPE_F32, B, HQ, SQ, DV);
        lses[i] = sdpa_tensor_buffer(bl[i], 0, SDPA_DTYPE_F32, B, HQ, SQ, 1);
    }
    ro = sdpa_tensor_host(o, SDPA_DTYPE_F32, B, HQ, SQ, DV);
    ro.stride[1] = DV;
    ro.stride[2] = HQ * DV; /* (B, S, H, Dv) */
    rl = sdpa_tensor_host(l, SDPA_DTYPE_F32, B, HQ, SQ, 1);
    ck_assert_int_eq(sdpa_merge(g_ctx, 2, outs, lses, &ro, &rl), SDPA_OK);
    for (int b = 0; b < B; b++)
        for (int h = 0; h < HQ; h++)
            for (int i = 0; i < SQ; i++)
                for (int c = 0; c < DV; c++)
                    ck_assert_float_eq_tol(o[((b * SQ + i) * HQ + h) * DV + c],
                                           full->out[((b * HQ + h) * SQ + i) * DV + c], 2e-6);
    for (size_t e = 0; e < NL; e++) ck_assert_float_eq_tol(l[e], full->lse[e], 1e-5);
    for (int i = 0; i < 2; i++) {
        sdpa_buffer_destroy(bo[i]);
        sdpa_buffer_destroy(bl[i]);
    }
    free(o);
    free(l);
    free(parts);
    free(full);
    nv_free(&p);
}
END_TEST

static void expect_status(sdpa_status got, sdpa_status want, const char *field, int line)
{
    sdpa_error_info info;
    ck_assert_msg(got == want, "line %d: got %s, want %s", line, sdpa_status_name(got),
                  sdpa_status_name(want));
    if (!field) return;
    ck_assert_int_eq(sdpa_context_last_error(g_ctx, &info), SDPA_OK);
    ck_assert_msg(info.message && strstr(info.message, field), "line %d: '%s' lacks '%s'",
                  line, info.message ? info.message : "", field);
}
#define EXPECT(call, want, field) expect_status((call), (want), (field), __LINE__)

START_TEST(bad_arguments)
{
    float o1[NO], o2[NO], l1[NL], l2[NL], ro[NO], rl[NL];
    sdpa_tensor outs[2], lses[2], to, tl, bad;
    for (size_t e = 0; e < NO; e++) o1[e] = o2[e] = 0.5f;
    for (size_t e = 0; e < NL; e++) l1[e] = l2[e] = 0.0f;
    outs[0] = sdpa_tensor_host(o1, SDPA_DTYPE_F32, B, HQ, SQ, DV);
    outs[1] = sdpa_tensor_host(o2, SDPA_DTYPE_F32, B, HQ, SQ, DV);
    lses[0] = sdpa_tensor_host(l1, SDPA_DTYPE_F32, B, HQ, SQ, 1);
    lses[1] = sdpa_tensor_host(l2, SDPA_DTYPE_F32, B, HQ, SQ, 1);
    to = sdpa_tensor_host(ro, SDPA_DTYPE_F32, B, HQ, SQ, DV);
    tl = sdpa_tensor_host(rl, SDPA_DTYPE_F32, B, HQ, SQ, 1);
    EXPECT(sdpa_merge(g_ctx, 2, outs, lses, &to, &tl), SDPA_OK, NULL);
    ck_assert_float_eq_tol(rl[0], logf(2.0f), 1e-6);
    ck_assert_float_eq(ro[0], 0.5f);

    EXPECT(sdpa_merge(g_ctx, 0, outs, lses, &to, &tl), SDPA_ERR_INVALID_ARG, "n");
    EXPECT(sdpa_merge(g_ctx, -1, outs, lses, &to, &tl), SDPA_ERR_INVALID_ARG, "n");
    EXPECT(sdpa_merge(NULL, 2, outs, lses, &to, &tl), SDPA_ERR_NULL, NULL);
    EXPECT(sdpa_merge(g_ctx, 2, NULL, lses, &to, &tl), SDPA_ERR_NULL, NULL);
    EXPECT(sdpa_merge(g_ctx, 2, outs, NULL, &to, &tl), SDPA_ERR_NULL, NULL);
    EXPECT(sdpa_merge(g_ctx, 2, outs, lses, NULL, &tl), SDPA_ERR_NULL, NULL);
    EXPECT(sdpa_merge(g_ctx, 2, outs, lses, &to, NULL), SDPA_ERR_NULL, NULL);
    /* a partial with a different shape */
    bad = outs[1];
    outs[1].shape[3] = DV - 1;
    EXPECT(sdpa_merge(g_ctx, 2, outs, lses, &to, &tl), SDPA_ERR_SHAPE, "partial[1]");
    outs[1] = bad;
    bad = lses[0];
    lses[0].shape[2] = SQ - 1;
    EXPECT(sdpa_merge(g_ctx, 2, outs, lses, &to, &tl), SDPA_ERR_SHAPE, "partial[0]");
    lses[0] = bad;
    /* the result with a different shape */
    tl.shape[3] = 2;
    EXPECT(sdpa_merge(g_ctx, 2, outs, lses, &to, &tl), SDPA_ERR_SHAPE, "result");
    tl.shape[3] = 1;
    /* wrong dtypes */
    lses[1].dtype = SDPA_DTYPE_F16;
    EXPECT(sdpa_merge(g_ctx, 2, outs, lses, &to, &tl), SDPA_ERR_DTYPE, "partial[1]");
    lses[1].dtype = SDPA_DTYPE_F32;
    outs[0].dtype = SDPA_DTYPE_U8;
    EXPECT(sdpa_merge(g_ctx, 2, outs, lses, &to, &tl), SDPA_ERR_DTYPE, "partial[0]");
    outs[0].dtype = SDPA_DTYPE_F32;
    /* missing data pointer, negative stride */
    outs[1].host = NULL;
    EXPECT(sdpa_merge(g_ctx, 2, outs, lses, &to, &tl), SDPA_ERR_NULL, "partial[1]");
    outs[1].host = o2;
    to.stride[2] = -DV;
    EXPECT(sdpa_merge(g_ctx, 2, outs, lses, &to, &tl), SDPA_ERR_STRIDE, "result");
    to.stride[2] = DV;
    EXPECT(sdpa_merge(g_ctx, 2, outs, lses, &to, &tl), SDPA_OK, NULL);
}
END_TEST

static Suite *merge_suite(void)
{
    Suite *s = suite_create("merge");
    TCase *t = tcase_create("merge");
    tcase_add_checked_fixture(t, setup, teardown);
    tcase_add_test(t, split_by_slicing);
    tcase_add_test(t, split_by_masks);
    tcase_add_test(t, split_by_kv_len);
    tcase_add_test(t, sinks_counted_once);
    tcase_add_test(t, neg_inf_partials);
    tcase_add_test(t, in_place);
    tcase_add_test(t, buffers_and_strides);
    tcase_add_test(t, bad_arguments);
    suite_add_tcase(s, t);
    return s;
}

int main(void) { return trun_suite(merge_suite()); }
