/*
 * test_validate.c — the validation front end, through the public API on the
 * reference backend: every bad input gets its specific status, and the
 * context's last error names the offending field; valid non-contiguous
 * layouts (BSHD strides, packed QKV by offsets, broadcast masks by stride 0 or
 * extent 1, odd strides on extent-1 axes) run and match a contiguous run.
 *
 * Run time: well under a second (tiny shapes).
 */
#include "testutil.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { B = 2, HQ = 4, HKV = 2, SQ = 5, SKV = 7, D = 8, DV = 6 };

static sdpa_context *g_ctx;
static float g_q[B * HQ * SQ * D], g_k[B * HKV * SKV * D], g_v[B * HKV * SKV * DV];
static float g_out[B * HQ * SQ * DV], g_lse[B * HQ * SQ], g_stats[B * HQ * SDPA_STAT_COUNT];
static uint8_t g_mask[B * HQ * SQ * SKV];
static float g_bias[B * HQ * SQ * SKV], g_qg[D], g_kg[D], g_temp[HQ];
static int32_t g_kvl[B];
static float g_dout[B * HQ * SQ * DV], g_dq[B * HQ * SQ * D], g_dk[B * HKV * SKV * D],
    g_dv[B * HKV * SKV * DV], g_dqg[D], g_dkg[D], g_dtemp[HQ];

static void fill(float *x, size_t n, trng *r)
{
    for (size_t i = 0; i < n; i++) x[i] = (float)trng_normal(r);
}

static void setup(void)
{
    sdpa_context_options o;
    trng r;
    trng_seed(&r, 7);
    fill(g_q, sizeof g_q / 4, &r);
    fill(g_k, sizeof g_k / 4, &r);
    fill(g_v, sizeof g_v / 4, &r);
    fill(g_bias, sizeof g_bias / 4, &r);
    fill(g_dout, sizeof g_dout / 4, &r);
    for (int d = 0; d < D; d++) { g_qg[d] = 1.0f + 0.1f * (float)d; g_kg[d] = 1.2f - 0.05f * (float)d; }
    for (int h = 0; h < HQ; h++) g_temp[h] = 3.0f + (float)h;
    for (size_t i = 0; i < sizeof g_mask; i++) g_mask[i] = trng_uniform(&r) < 0.7;
    g_kvl[0] = SKV;
    g_kvl[1] = 3;
    sdpa_context_options_init(&o);
    o.backend = SDPA_BACKEND_REFERENCE;
    o.log_level = SDPA_LOG_ERROR;
    ck_assert_int_eq(sdpa_context_create(&o, &g_ctx), SDPA_OK);
}
static void teardown(void)
{
    sdpa_context_destroy(g_ctx);
    g_ctx = NULL;
}

/* A valid description with only the required tensors. */
static void base(sdpa_attention_desc *d)
{
    sdpa_attention_desc_init(d);
    d->tensors.q = sdpa_tensor_host(g_q, SDPA_DTYPE_F32, B, HQ, SQ, D);
    d->tensors.k = sdpa_tensor_host(g_k, SDPA_DTYPE_F32, B, HKV, SKV, D);
    d->tensors.v = sdpa_tensor_host(g_v, SDPA_DTYPE_F32, B, HKV, SKV, DV);
    d->tensors.out = sdpa_tensor_host(g_out, SDPA_DTYPE_F32, B, HQ, SQ, DV);
}
/* ...with every optional tensor present. */
static void full(sdpa_attention_desc *d)
{
    base(d);
    d->qk_norm = SDPA_QK_NORM_L2;
    d->tensors.mask = sdpa_tensor_host(g_mask, SDPA_DTYPE_U8, B, HQ, SQ, SKV);
    d->tensors.bias = sdpa_tensor_host(g_bias, SDPA_DTYPE_F32, B, HQ, SQ, SKV);
    d->tensors.kv_len = sdpa_tensor_host(g_kvl, SDPA_DTYPE_I32, B, 1, 1, 1);
    d->tensors.q_gain = sdpa_tensor_host(g_qg, SDPA_DTYPE_F32, 1, 1, 1, D);
    d->tensors.k_gain = sdpa_tensor_host(g_kg, SDPA_DTYPE_F32, 1, 1, 1, D);
    d->tensors.temperature = sdpa_tensor_host(g_temp, SDPA_DTYPE_F32, 1, HQ, 1, 1);
    d->tensors.lse = sdpa_tensor_host(g_lse, SDPA_DTYPE_F32, B, HQ, SQ, 1);
    d->tensors.stats = sdpa_tensor_host(g_stats, SDPA_DTYPE_F32, B, HQ, 1, SDPA_STAT_COUNT);
}
static void bwd_tensors(sdpa_backward_tensors *g, int gains)
{
    memset(g, 0, sizeof *g);
    g->dout = sdpa_tensor_host(g_dout, SDPA_DTYPE_F32, B, HQ, SQ, DV);
    g->dq = sdpa_tensor_host(g_dq, SDPA_DTYPE_F32, B, HQ, SQ, D);
    g->dk = sdpa_tensor_host(g_dk, SDPA_DTYPE_F32, B, HKV, SKV, D);
    g->dv = sdpa_tensor_host(g_dv, SDPA_DTYPE_F32, B, HKV, SKV, DV);
    if (gains) {
        g->dq_gain = sdpa_tensor_host(g_dqg, SDPA_DTYPE_F32, 1, 1, 1, D);
        g->dk_gain = sdpa_tensor_host(g_dkg, SDPA_DTYPE_F32, 1, 1, 1, D);
        g->dtemperature = sdpa_tensor_host(g_dtemp, SDPA_DTYPE_F32, 1, HQ, 1, 1);
    }
}

/* The last error has `want` and its message contains `field`. */
static void check_error(sdpa_context *ctx, sdpa_status got, sdpa_status want,
                        const char *field, const char *where, int line)
{
    sdpa_error_info info;
    ck_assert_msg(got == want, "line %d (%s): got %s, want %s", line, where,
                  sdpa_status_name(got), sdpa_status_name(want));
    if (want == SDPA_OK || !field) return;
    ck_assert_int_eq(sdpa_context_last_error(ctx, &info), SDPA_OK);
    ck_assert_msg(info.status == want, "line %d: last_error status %s", line,
                  sdpa_status_name(info.status));
    ck_assert_msg(info.message && strstr(info.message, field),
                  "line %d (%s): message '%s' does not name '%s'", line, where,
                  info.message ? info.message : "(null)", field);
}
#define EXPECT(call, want, field) check_error(g_ctx, (call), (want), (field), #call, __LINE__)

/* Both the one-call path and plan creation refuse a bad description. */
static void expect_desc(const sdpa_attention_desc *d, sdpa_status want, const char *field,
                        int line)
{
    sdpa_plan *plan = (sdpa_plan *)g_q; /* must be reset to NULL */
    check_error(g_ctx, sdpa_attention_forward(g_ctx, d), want, field, "attention_forward", line);
    check_error(g_ctx, sdpa_plan_create(g_ctx, d, NULL, &plan), want, field, "plan_create", line);
    ck_assert_ptr_null(plan);
}
#define EXPECT_DESC(d, want, field) expect_desc((d), (want), (field), __LINE__)

/* ---- sanity: the base descriptions are valid ------------------------------------ */

START_TEST(valid_descriptions_run)
{
    sdpa_attention_desc d;
    base(&d);
    EXPECT(sdpa_attention_forward(g_ctx, &d), SDPA_OK, NULL);
    full(&d);
    EXPECT(sdpa_attention_forward(g_ctx, &d), SDPA_OK, NULL);
    for (size_t i = 0; i < sizeof g_out / 4; i++) ck_assert(isfinite(g_out[i]));
    /* the scale sentinels and edge values */
    base(&d);
    d.scale = SDPA_SCALE_MUP;
    EXPECT(sdpa_attention_forward(g_ctx, &d), SDPA_OK, NULL);
    d.scale = 1e-30;
    EXPECT(sdpa_attention_forward(g_ctx, &d), SDPA_OK, NULL);
    d.window_left = 0;
    d.window_right = 0;
    d.softcap = 1e-3;
    EXPECT(sdpa_attention_forward(g_ctx, &d), SDPA_OK, NULL);
}
END_TEST

/* ---- NULL pointers --------------------------------------------------------- */

START_TEST(null_pointers)
{
    sdpa_attention_desc d;
    sdpa_plan *plan = NULL;
    sdpa_backward_tensors g;
    base(&d);
    ck_assert_int_eq(sdpa_attention_forward(NULL, &d), SDPA_ERR_NULL);
    ck_assert_int_eq(sdpa_attention_forward(g_ctx, NULL), SDPA_ERR_NULL);
    ck_assert_int_eq(sdpa_plan_create(NULL, &d, NULL, &plan), SDPA_ERR_NULL);
    ck_assert_int_eq(sdpa_plan_create(g_ctx, &d, NULL, NULL), SDPA_ERR_NULL);
    ck_assert_int_eq(sdpa_plan_create(g_ctx, NULL, NULL, &plan), SDPA_ERR_NULL);
    ck_assert_ptr_null(plan);
    ck_assert_int_eq(sdpa_plan_forward(NULL, &d.tensors), SDPA_ERR_NULL);
    ck_assert_int_eq(sdpa_plan_backward(NULL, &d.tensors, NULL), SDPA_ERR_NULL);

    /* data pointers: required at call time, not at plan time */
    d.tensors.q.host = NULL;
    EXPECT(sdpa_attention_forward(g_ctx, &d), SDPA_ERR_NULL, "tensors.q");
    EXPECT(sdpa_plan_create(g_ctx, &d, NULL, &plan), SDPA_OK, NULL);
    EXPECT(sdpa_plan_forward(plan, &d.tensors), SDPA_ERR_NULL, "tensors.q");
    EXPECT(sdpa_plan_forward(plan, NULL), SDPA_ERR_NULL, NULL);
    sdpa_plan_destroy(plan);
    base(&d);
    d.tensors.k.host = NULL;
    EXPECT(sdpa_attention_forward(g_ctx, &d), SDPA_ERR_NULL, "tensors.k");
    base(&d);
    d.tensors.v.host = NULL;
    EXPECT(sdpa_attention_forward(g_ctx, &d), SDPA_ERR_NULL, "tensors.v");
    base(&d);
    d.tensors.out.host = NULL;
    EXPECT(sdpa_attention_forward(g_ctx, &d), SDPA_ERR_NULL, "tensors.out");
    full(&d);
    d.tensors.lse.host = NULL;
    EXPECT(sdpa_attention_forward(g_ctx, &d), SDPA_ERR_NULL, "tensors.lse");
    full(&d);
    d.tensors.mask.host = NULL;
    EXPECT(sdpa_attention_forward(g_ctx, &d), SDPA_ERR_NULL, "tensors.mask");
    full(&d);
    d.tensors.kv_len.host = NULL;
    EXPECT(sdpa_attention_forward(g_ctx, &d), SDPA_ERR_NULL, "tensors.kv_len");

    /* backward */
    full(&d);
    {
        sdpa_plan_options po;
        sdpa_plan_options_init(&po);
        po.flags = SDPA_PLAN_BACKWARD;
        EXPECT(sdpa_plan_create(g_ctx, &d, &po, &plan), SDPA_OK, NULL);
        EXPECT(sdpa_plan_forward(plan, &d.tensors), SDPA_OK, NULL);
        bwd_tensors(&g, 1);
        EXPECT(sdpa_plan_backward(plan, NULL, &g), SDPA_ERR_NULL, NULL);
        EXPECT(sdpa_plan_backward(plan, &d.tensors, NULL), SDPA_ERR_NULL, NULL);
        g.dout.host = NULL;
        EXPECT(sdpa_plan_backward(plan, &d.tensors, &g), SDPA_ERR_NULL, "bwd.dout");
        bwd_tensors(&g, 1);
        g.dk.host = NULL;
        EXPECT(sdpa_plan_backward(plan, &d.tensors, &g), SDPA_ERR_NULL, "bwd.dk");
        bwd_tensors(&g, 1);
        EXPECT(sdpa_plan_backward(plan, &d.tensors, &g), SDPA_OK, NULL);
        sdpa_plan_destroy(plan);
    }
}
END_TEST

/* ---- shapes ------------------------------------------------------------------ */

START_TEST(shape_mismatches)
{
    sdpa_attention_desc d;
    base(&d); d.tensors.k.shape[0] = B + 1;
    EXPECT_DESC(&d, SDPA_ERR_SHAPE, "tensors.k");
    base(&d); d.tensors.v.shape[0] = 1;
    EXPECT_DESC(&d, SDPA_ERR_SHAPE, "tensors.v");
    base(&d); d.tensors.k.shape[3] = D + 1;                  /* D mismatch */
    EXPECT_DESC(&d, SDPA_ERR_SHAPE, "tensors.k");
    base(&d); d.tensors.out.shape[3] = DV + 1;               /* Dv mismatch */
    EXPECT_DESC(&d, SDPA_ERR_SHAPE, "tensors.out");
    base(&d); d.tensors.v.shape[2] = SKV + 1;                /* Skv mismatch */
    EXPECT_DESC(&d, SDPA_ERR_SHAPE, "tensors.v");
    base(&d); d.tensors.v.shape[1] = 1;                      /* Hkv mismatch */
    EXPECT_DESC(&d, SDPA_ERR_SHAPE, "tensors.v");
    base(&d); d.tensors.out.shape[2] = SQ - 1;
    EXPECT_DESC(&d, SDPA_ERR_SHAPE, "tensors.out");
    base(&d); d.tensors.out.shape[1] = HKV;
    EXPECT_DESC(&d, SDPA_ERR_SHAPE, "tensors.out");
    base(&d); d.tensors.k.shape[1] = 3; d.tensors.v.shape[1] = 3; /* 4 % 3 != 0 */
    EXPECT_DESC(&d, SDPA_ERR_SHAPE, "heads");
    base(&d); d.tensors.k.shape[1] = 8; d.tensors.v.shape[1] = 8; /* Hkv > Hq */
    EXPECT_DESC(&d, SDPA_ERR_SHAPE, "heads");
}
END_TEST

START_TEST(empty_and_negative_extents)
{
    sdpa_attention_desc d;
    static const char *names[4] = {"tensors.q", "tensors.k", "tensors.v", "tensors.out"};
    for (int t = 0; t < 4; t++)
        for (int a = 0; a < 4; a++) {
            sdpa_tensor *x;
            base(&d);
            x = t == 0 ? &d.tensors.q : t == 1 ? &d.tensors.k : t == 2 ? &d.tensors.v : &d.tensors.out;
            x->shape[a] = 0;
            EXPECT_DESC(&d, SDPA_ERR_EMPTY, names[t]);
            x->shape[a] = -3;
            EXPECT_DESC(&d, SDPA_ERR_SHAPE, names[t]);
        }
    full(&d); d.tensors.mask.shape[2] = 0;
    EXPECT_DESC(&d, SDPA_ERR_EMPTY, "tensors.mask");
    full(&d); d.tensors.q_gain.shape[3] = 0;
    EXPECT_DESC(&d, SDPA_ERR_EMPTY, "tensors.q_gain");
    full(&d); d.tensors.lse.shape[0] = -1;
    EXPECT_DESC(&d, SDPA_ERR_SHAPE, "tensors.lse");
}
END_TEST

/* ---- strides, offsets, overflow ---------------------------------------------- */

START_TEST(negative_strides)
{
    sdpa_attention_desc d;
    base(&d); d.tensors.q.stride[2] = -D;
    EXPECT(sdpa_attention_forward(g_ctx, &d), SDPA_ERR_STRIDE, "tensors.q");
    base(&d); d.tensors.k.stride[3] = -1;
    EXPECT(sdpa_attention_forward(g_ctx, &d), SDPA_ERR_STRIDE, "tensors.k");
    base(&d); d.tensors.out.stride[0] = -1;
    EXPECT(sdpa_attention_forward(g_ctx, &d), SDPA_ERR_STRIDE, "tensors.out");
    full(&d); d.tensors.mask.stride[1] = -SQ * SKV;
    EXPECT(sdpa_attention_forward(g_ctx, &d), SDPA_ERR_STRIDE, "tensors.mask");
    full(&d); d.tensors.lse.stride[2] = -1;
    EXPECT(sdpa_attention_forward(g_ctx, &d), SDPA_ERR_STRIDE, "tensors.lse");
}
END_TEST

START_TEST(broadcast_outputs)
{
    /* an output with stride 0 on a longer axis would write several results
     * to one place: refused, inputs may broadcast freely */
    sdpa_attention_desc d;
    base(&d); d.tensors.out.stride[2] = 0;
    EXPECT(sdpa_attention_forward(g_ctx, &d), SDPA_ERR_STRIDE, "tensors.out");
    full(&d); d.tensors.lse.stride[1] = 0;
    EXPECT(sdpa_attention_forward(g_ctx, &d), SDPA_ERR_STRIDE, "tensors.lse");
    full(&d); d.tensors.stats.stride[0] = 0;
    EXPECT(sdpa_attention_forward(g_ctx, &d), SDPA_ERR_STRIDE, "tensors.stats");
    base(&d); d.tensors.q.stride[1] = 0; /* every query head reads head 0 */
    ck_assert_int_eq(sdpa_attention_forward(g_ctx, &d), SDPA_OK);

    sdpa_plan_options o;
    sdpa_plan_options_init(&o);
    o.flags = SDPA_PLAN_BACKWARD;
    full(&d);
    sdpa_plan *plan = NULL;
    ck_assert_int_eq(sdpa_plan_create(g_ctx, &d, &o, &plan), SDPA_OK);
    ck_assert_int_eq(sdpa_plan_forward(plan, &d.tensors), SDPA_OK);
    sdpa_backward_tensors g;
    memset(&g, 0, sizeof g);
    g.dout = sdpa_tensor_host(g_dout, SDPA_DTYPE_F32, B, HQ, SQ, DV);
    g.dq = sdpa_tensor_host(g_dq, SDPA_DTYPE_F32, B, HQ, SQ, D);
    g.dk = sdpa_tensor_host(g_dk, SDPA_DTYPE_F32, B, HKV, SKV, D);
    g.dv = sdpa_tensor_host(g_dv, SDPA_DTYPE_F32, B, HKV, SKV, DV);
    g.dk.stride[2] = 0;
    ck_assert_int_eq(sdpa_plan_backward(plan, &d.tensors, &g), SDPA_ERR_STRIDE);
    sdpa_error_info info;
    sdpa_context_last_error(g_ctx, &info);
    ck_assert_msg(strstr(info.message, "bwd.dk") != NULL, "message: %s", info.message);
    g.dk.stride[2] = D;
    g.dout.stride[0] = 0; /* dout is an input: broadcasting it is fine */
    ck_assert_int_eq(sdpa_plan_backward(plan, &d.tensors, &g), SDPA_OK);
    sdpa_plan_destroy(plan);
}
END_TEST

START_TEST(overflowing_extents)
{
    sdpa_attention_desc d;
    const int64_t big = (int64_t)1 << 40;
    /* shape 2^40 x stride 2^40 reaches 2^80: refused, not wrapped */
    base(&d);
    d.tensors.q.shape[2] = big; d.tensors.q.stride[2] = big;
    d.tensors.out.shape[2] = big;
    EXPECT_DESC(&d, SDPA_ERR_SHAPE, "tensors.q");
    EXPECT(sdpa_attention_forward(g_ctx, &d), SDPA_ERR_SHAPE, "tensors.q");
    /* element count overflow */
    base(&d);
    d.tensors.k.shape[2] = big; d.tensors.k.shape[3] = big;
    EXPECT_DESC(&d, SDPA_ERR_SHAPE, "tensors.k");
    /* span fits int64 but the byte extent overflows size_t */
    base(&d);
    d.tensors.v.stride[0] = (int64_t)1 << 62;
    EXPECT_DESC(&d, SDPA_ERR_SHAPE, "tensors.v");
    /* offset + span overflow */
    base(&d);
    d.tensors.q.offset = (size_t)INT64_MAX - 10;
    EXPECT(sdpa_attention_forward(g_ctx, &d), SDPA_ERR_SHAPE, "tensors.q");
    base(&d);
    d.tensors.q.offset = SIZE_MAX;
    EXPECT(sdpa_attention_forward(g_ctx, &d), SDPA_ERR_STRIDE, "tensors.q");
    /* exactly INT64_MAX: the span (offset + 1) would overflow int64 (found
     * by fuzz_desc under UBSan; regression) */
    base(&d);
    d.tensors.out.offset = (size_t)INT64_MAX;
    EXPECT_DESC(&d, SDPA_ERR_STRIDE, "tensors.out.offset");
    base(&d);
    d.tensors.q.offset = (size_t)INT64_MAX - 1; /* the largest accepted offset */
    EXPECT(sdpa_attention_forward(g_ctx, &d), SDPA_ERR_SHAPE, "tensors.q");
}
END_TEST

START_TEST(buffer_bounds_and_ownership)
{
    sdpa_attention_desc d;
    sdpa_buffer *bq = NULL, *bother = NULL;
    sdpa_context *other = NULL;
    sdpa_context_options o;
    ck_assert_int_eq(sdpa_buffer_create(g_ctx, sizeof g_q, &bq), SDPA_OK);
    ck_assert_int_eq(sdpa_buffer_write(bq, 0, g_q, sizeof g_q), SDPA_OK);
    base(&d);
    d.tensors.q = sdpa_tensor_buffer(bq, 0, SDPA_DTYPE_F32, B, HQ, SQ, D);
    EXPECT(sdpa_attention_forward(g_ctx, &d), SDPA_OK, NULL);
    d.tensors.q.offset = 1; /* one element past the end */
    EXPECT(sdpa_attention_forward(g_ctx, &d), SDPA_ERR_STRIDE, "tensors.q");
    d.tensors.q.offset = 0;
    d.tensors.q.stride[0] += 1; /* strides reach past the end */
    EXPECT(sdpa_attention_forward(g_ctx, &d), SDPA_ERR_STRIDE, "tensors.q");
    d.tensors.q = sdpa_tensor_buffer(bq, 0, SDPA_DTYPE_F32, B, HQ, SQ, D);
    d.tensors.q.host = g_q; /* both set */
    EXPECT(sdpa_attention_forward(g_ctx, &d), SDPA_ERR_INVALID_ARG, "tensors.q");
    d.tensors.q.buf = NULL;
    d.tensors.q.host = NULL; /* neither */
    EXPECT(sdpa_attention_forward(g_ctx, &d), SDPA_ERR_NULL, "tensors.q");

    /* a buffer from another context */
    sdpa_context_options_init(&o);
    o.backend = SDPA_BACKEND_REFERENCE;
    o.log_level = SDPA_LOG_ERROR;
    ck_assert_int_eq(sdpa_context_create(&o, &other), SDPA_OK);
    ck_assert_int_eq(sdpa_buffer_create(other, sizeof g_out, &bother), SDPA_OK);
    base(&d);
    d.tensors.out = sdpa_tensor_buffer(bother, 0, SDPA_DTYPE_F32, B, HQ, SQ, DV);
    EXPECT(sdpa_attention_forward(g_ctx, &d), SDPA_ERR_MISMATCHED_CONTEXT, "tensors.out");
    {
        sdpa_tensor outs[1], lses[1], lo;
        float l1[B * HQ * SQ];
        outs[0] = sdpa_tensor_host(g_out, SDPA_DTYPE_F32, B, HQ, SQ, DV);
        lses[0] = sdpa_tensor_host(l1, SDPA_DTYPE_F32, B, HQ, SQ, 1);
        lo = lses[0];
        EXPECT(sdpa_merge(g_ctx, 1, outs, lses, &d.tensors.out, &lo),
               SDPA_ERR_MISMATCHED_CONTEXT, "buf");
    }
    sdpa_buffer_destroy(bother);
    sdpa_context_destroy(other);
    sdpa_buffer_destroy(bq);
}
END_TEST

/* ---- dtypes ------------------------------------------------------------------ */

START_TEST(wrong_dtypes)
{
    sdpa_attention_desc d;
    full(&d); d.tensors.mask.dtype = SDPA_DTYPE_F32;
    EXPECT_DESC(&d, SDPA_ERR_DTYPE, "tensors.mask");
    full(&d); d.tensors.bias.dtype = SDPA_DTYPE_F16;
    EXPECT_DESC(&d, SDPA_ERR_DTYPE, "tensors.bias");
    full(&d); d.tensors.kv_len.dtype = SDPA_DTYPE_F32;
    EXPECT_DESC(&d, SDPA_ERR_DTYPE, "tensors.kv_len");
    full(&d); d.tensors.out.dtype = SDPA_DTYPE_F16;
    EXPECT_DESC(&d, SDPA_ERR_DTYPE, "tensors.out");
    full(&d); d.tensors.lse.dtype = SDPA_DTYPE_BF16;
    EXPECT_DESC(&d, SDPA_ERR_DTYPE, "tensors.lse");
    full(&d); d.tensors.stats.dtype = SDPA_DTYPE_F16;
    EXPECT_DESC(&d, SDPA_ERR_DTYPE, "tensors.stats");
    full(&d); d.tensors.q_gain.dtype = SDPA_DTYPE_F16;
    EXPECT_DESC(&d, SDPA_ERR_DTYPE, "tensors.q_gain");
    full(&d); d.tensors.temperature.dtype = SDPA_DTYPE_I32;
    EXPECT_DESC(&d, SDPA_ERR_DTYPE, "tensors.temperature");
    base(&d); d.tensors.k.dtype = SDPA_DTYPE_F16; /* k and v share one dtype (k's) */
    EXPECT_DESC(&d, SDPA_ERR_DTYPE, "tensors.v");
    base(&d); d.tensors.k.dtype = d.tensors.v.dtype = SDPA_DTYPE_U8; /* K/V dtype set */
    EXPECT_DESC(&d, SDPA_ERR_DTYPE, "tensors.k");
    base(&d); d.tensors.v.dtype = SDPA_DTYPE_BF16;
    EXPECT_DESC(&d, SDPA_ERR_DTYPE, "tensors.v");
    base(&d); d.tensors.q.dtype = SDPA_DTYPE_U8;
    d.tensors.k.dtype = d.tensors.v.dtype = d.tensors.out.dtype = SDPA_DTYPE_U8;
    EXPECT_DESC(&d, SDPA_ERR_DTYPE, "tensors.q");
    base(&d); d.tensors.q.dtype = (sdpa_dtype)99;
    EXPECT_DESC(&d, SDPA_ERR_DTYPE, "tensors.q");
    /* a required tensor marked absent */
    base(&d); d.tensors.v.dtype = SDPA_DTYPE_NONE;
    EXPECT_DESC(&d, SDPA_ERR_INVALID_ARG, "tensors.v");
}
END_TEST

START_TEST(wrong_optional_shapes)
{
    sdpa_attention_desc d;
    full(&d); d.tensors.mask.shape[3] = SKV + 1;
    EXPECT_DESC(&d, SDPA_ERR_SHAPE, "tensors.mask");
    full(&d); d.tensors.mask.shape[1] = 2;                   /* neither Hq nor 1 */
    EXPECT_DESC(&d, SDPA_ERR_SHAPE, "tensors.mask");
    full(&d); d.tensors.mask.shape[2] = 1;                   /* only B, H broadcast */
    EXPECT_DESC(&d, SDPA_ERR_SHAPE, "tensors.mask");
    full(&d); d.tensors.bias.shape[0] = B + 1;
    EXPECT_DESC(&d, SDPA_ERR_SHAPE, "tensors.bias");
    full(&d); d.tensors.q_gain.shape[3] = D - 1;
    EXPECT_DESC(&d, SDPA_ERR_SHAPE, "tensors.q_gain");
    full(&d); d.tensors.k_gain.shape[3] = D + 1;
    EXPECT_DESC(&d, SDPA_ERR_SHAPE, "tensors.k_gain");
    full(&d); d.tensors.temperature.shape[1] = HQ + 1;
    EXPECT_DESC(&d, SDPA_ERR_SHAPE, "tensors.temperature");
    full(&d); d.tensors.temperature.shape[1] = HKV;
    EXPECT_DESC(&d, SDPA_ERR_SHAPE, "tensors.temperature");
    full(&d); d.tensors.stats.shape[3] = SDPA_STAT_COUNT - 1;
    EXPECT_DESC(&d, SDPA_ERR_SHAPE, "tensors.stats");
    full(&d); d.tensors.lse.shape[3] = 2;
    EXPECT_DESC(&d, SDPA_ERR_SHAPE, "tensors.lse");
    full(&d); d.tensors.kv_len.shape[0] = B + 1;
    EXPECT_DESC(&d, SDPA_ERR_SHAPE, "tensors.kv_len");
}
END_TEST


/* Shape messages name each axis by what it means for that tensor (mask and
 * bias: keys; lse: a unit axis) and never say "expected 1 or 1". */
static void expect_message(sdpa_status got, const char *want, const char *never, int line)
{
    sdpa_error_info info;
    ck_assert_msg(got == SDPA_ERR_SHAPE, "line %d: %s", line, sdpa_status_name(got));
    sdpa_context_last_error(g_ctx, &info);
    ck_assert_msg(strstr(info.message, want) != NULL, "line %d: '%s' lacks '%s'", line,
                  info.message, want);
    ck_assert_msg(!never || strstr(info.message, never) == NULL, "line %d: '%s' has '%s'",
                  line, info.message, never);
    ck_assert_msg(strstr(info.message, "expected 1 or 1") == NULL, "line %d: '%s'", line,
                  info.message);
}
#define EXPECT_MESSAGE(call, want, never) expect_message((call), (want), (never), __LINE__)

START_TEST(shape_messages_name_axes)
{
    sdpa_attention_desc d;
    full(&d); d.tensors.mask.shape[3] = SKV + 1;
    EXPECT_MESSAGE(sdpa_attention_forward(g_ctx, &d), "tensors.mask.shape[3] (keys) is 8, expected 7",
                   "head_dim");
    full(&d); d.tensors.bias.shape[3] = SKV - 1;
    EXPECT_MESSAGE(sdpa_attention_forward(g_ctx, &d), "tensors.bias.shape[3] (keys) is 6", NULL);
    full(&d); d.tensors.lse.shape[3] = 2;
    EXPECT_MESSAGE(sdpa_attention_forward(g_ctx, &d),
                   "tensors.lse.shape[3] (unit axis) is 2, expected 1", "head_dim");
    full(&d); d.tensors.stats.shape[2] = 2;
    EXPECT_MESSAGE(sdpa_attention_forward(g_ctx, &d), "tensors.stats.shape[2] (unit axis)", "seq");
    base(&d); d.tensors.out.shape[3] = DV + 1;
    EXPECT_MESSAGE(sdpa_attention_forward(g_ctx, &d),
                   "tensors.out.shape[3] (value dim Dv) is 7, expected 6", NULL);
    base(&d); d.tensors.v.shape[2] = SKV + 1;
    EXPECT_MESSAGE(sdpa_attention_forward(g_ctx, &d), "tensors.v.shape[2] (keys) is 8", NULL);
    full(&d); d.tensors.mask.shape[1] = 2;
    EXPECT_MESSAGE(sdpa_attention_forward(g_ctx, &d),
                   "tensors.mask.shape[1] (query heads) is 2, expected 4 or 1 (broadcast)", NULL);
    /* batch 1: a mask of batch 2 is wrong, and "1 or 1" would be nonsense */
    full(&d);
    d.tensors.q.shape[0] = d.tensors.k.shape[0] = d.tensors.v.shape[0] = 1;
    d.tensors.out.shape[0] = d.tensors.lse.shape[0] = d.tensors.stats.shape[0] = 1;
    d.tensors.bias.shape[0] = d.tensors.kv_len.shape[0] = 1;
    EXPECT_MESSAGE(sdpa_attention_forward(g_ctx, &d),
                   "tensors.mask.shape[0] (batch) is 2, expected 1", "(broadcast)");
    /* backward tensors are named like the forward tensors they mirror */
    sdpa_plan_options o;
    sdpa_plan_options_init(&o);
    o.flags = SDPA_PLAN_BACKWARD;
    full(&d);
    sdpa_plan *plan = NULL;
    ck_assert_int_eq(sdpa_plan_create(g_ctx, &d, &o, &plan), SDPA_OK);
    sdpa_backward_tensors g;
    bwd_tensors(&g, 0);
    g.dv.shape[3] = DV - 1;
    EXPECT_MESSAGE(sdpa_plan_backward(plan, &d.tensors, &g),
                   "bwd.dv.shape[3] (value dim Dv) is 5, expected 6", NULL);
    bwd_tensors(&g, 0);
    g.dk.shape[2] = 1;
    EXPECT_MESSAGE(sdpa_plan_backward(plan, &d.tensors, &g), "bwd.dk.shape[2] (keys) is 1", NULL);
    sdpa_plan_destroy(plan);
}
END_TEST

/* ---- scalar fields -------------------------------------------------------------- */

START_TEST(bad_scalars)
{
    sdpa_attention_desc d;
    const double bad_scales[] = {0.0, -0.5, -3.0, NAN, INFINITY, -INFINITY};
    base(&d); d.window_left = -2;
    EXPECT_DESC(&d, SDPA_ERR_INVALID_ARG, "window_left");
    base(&d); d.window_right = INT64_MIN;
    EXPECT_DESC(&d, SDPA_ERR_INVALID_ARG, "window_right");
    base(&d); d.softcap = -1.0;
    EXPECT_DESC(&d, SDPA_ERR_INVALID_ARG, "softcap");
    base(&d); d.softcap = NAN;
    EXPECT_DESC(&d, SDPA_ERR_INVALID_ARG, "softcap");
    base(&d); d.softcap = INFINITY;
    EXPECT_DESC(&d, SDPA_ERR_INVALID_ARG, "softcap");
    for (size_t i = 0; i < sizeof bad_scales / sizeof bad_scales[0]; i++) {
        base(&d); d.scale = bad_scales[i];
        EXPECT_DESC(&d, SDPA_ERR_INVALID_ARG, "scale");
    }
    base(&d); d.qk_norm = (sdpa_qk_norm)4;
    EXPECT_DESC(&d, SDPA_ERR_INVALID_ARG, "qk_norm");
    base(&d); d.qk_norm = (sdpa_qk_norm)-1;
    EXPECT_DESC(&d, SDPA_ERR_INVALID_ARG, "qk_norm");
    base(&d); d.qk_norm = SDPA_QK_NORM_RMS; d.qk_norm_eps = 0.0;
    EXPECT_DESC(&d, SDPA_ERR_INVALID_ARG, "qk_norm_eps");
    base(&d); d.qk_norm_eps = -1e-6;
    EXPECT_DESC(&d, SDPA_ERR_INVALID_ARG, "qk_norm_eps");
    base(&d); d.qk_norm_eps = NAN;
    EXPECT_DESC(&d, SDPA_ERR_INVALID_ARG, "qk_norm_eps");
    /* past the f32 range the kernels compute in (huge: inf in f32, then NaN
     * outputs; subnormal: may be flushed to 0 and divided by) */
    const double off_f32[] = {1e39, DBL_MAX, 1e-39, 1e-300, 4.9e-324};
    for (size_t i = 0; i < sizeof off_f32 / sizeof off_f32[0]; i++) {
        base(&d); d.scale = off_f32[i];
        EXPECT_DESC(&d, SDPA_ERR_INVALID_ARG, "scale");
        base(&d); d.softcap = off_f32[i];
        EXPECT_DESC(&d, SDPA_ERR_INVALID_ARG, "softcap");
        base(&d); d.qk_norm = SDPA_QK_NORM_RMS; d.qk_norm_eps = off_f32[i];
        EXPECT_DESC(&d, SDPA_ERR_INVALID_ARG, "qk_norm_eps");
    }
    base(&d); d.diagonal = (sdpa_diagonal)3;
    EXPECT_DESC(&d, SDPA_ERR_INVALID_ARG, "diagonal");
    base(&d); d.stats_saturation = 0.0;
    EXPECT_DESC(&d, SDPA_ERR_INVALID_ARG, "stats_saturation");
    base(&d); d.stats_saturation = 1.5;
    EXPECT_DESC(&d, SDPA_ERR_INVALID_ARG, "stats_saturation");
    base(&d); d.struct_size = 0;
    EXPECT_DESC(&d, SDPA_ERR_INVALID_ARG, "struct_size");
    /* gains without a QK-norm mean nothing */
    full(&d); d.qk_norm = SDPA_QK_NORM_NONE;
    EXPECT_DESC(&d, SDPA_ERR_INVALID_ARG, "q_gain");
}
END_TEST

START_TEST(bad_plan_options)
{
    sdpa_attention_desc d;
    sdpa_plan_options po;
    sdpa_plan *plan = NULL;
    base(&d);
    sdpa_plan_options_init(&po); po.struct_size = 0;
    EXPECT(sdpa_plan_create(g_ctx, &d, &po, &plan), SDPA_ERR_INVALID_ARG, "struct_size");
    sdpa_plan_options_init(&po); po.flags = 0x80;
    EXPECT(sdpa_plan_create(g_ctx, &d, &po, &plan), SDPA_ERR_INVALID_ARG, "flags");
    sdpa_plan_options_init(&po); po.workspace_limit = -5;
    EXPECT(sdpa_plan_create(g_ctx, &d, &po, &plan), SDPA_ERR_INVALID_ARG, "workspace_limit");
    /* the materialised-scores path is the OpenCL backend's only */
    sdpa_tile_config t;
    sdpa_tile_config_init(&t);
    sdpa_tile_config_set(&t, SDPA_TILE_UNFUSED, 1);
    sdpa_plan_options_init(&po); po.tile = &t;
    EXPECT(sdpa_plan_create(g_ctx, &d, &po, &plan), SDPA_ERR_UNSUPPORTED, "OpenCL backend only");
    sdpa_tile_config_set(&t, SDPA_TILE_UNFUSED, 0);
    /* a backend parameter (the OpenCL backend's CLBlast set) elsewhere */
    sdpa_tile_config_set(&t, SDPA_TILE_BACKEND_FIRST, 1);
    EXPECT(sdpa_plan_create(g_ctx, &d, &po, &plan), SDPA_ERR_UNSUPPORTED, "no such parameter");
    sdpa_tile_config_set(&t, SDPA_TILE_BACKEND_FIRST, SDPA_AUTO);
    EXPECT(sdpa_plan_create(g_ctx, &d, &po, &plan), SDPA_OK, NULL);
    sdpa_plan_destroy(plan);
    plan = NULL;
    ck_assert_ptr_null(plan);
}
END_TEST

/* ---- call-time checks against the plan ---------------------------------------- */

START_TEST(plan_call_mismatch)
{
    sdpa_attention_desc d, c;
    sdpa_plan *plan = NULL;
    float q2[B * HQ * (SQ - 1) * D], o2[B * HQ * (SQ - 1) * DV];
    full(&d);
    d.tensors.stats.dtype = SDPA_DTYPE_NONE;
    EXPECT(sdpa_plan_create(g_ctx, &d, NULL, &plan), SDPA_OK, NULL);
    EXPECT(sdpa_plan_forward(plan, &d.tensors), SDPA_OK, NULL);
    /* different Sq */
    c = d;
    c.tensors.q = sdpa_tensor_host(q2, SDPA_DTYPE_F32, B, HQ, SQ - 1, D);
    c.tensors.out = sdpa_tensor_host(o2, SDPA_DTYPE_F32, B, HQ, SQ - 1, DV);
    EXPECT(sdpa_plan_forward(plan, &c.tensors), SDPA_ERR_SHAPE, "tensors.q");
    /* a broadcast mask where the plan has a full one */
    c = d;
    c.tensors.mask.shape[0] = 1;
    EXPECT(sdpa_plan_forward(plan, &c.tensors), SDPA_ERR_SHAPE, "tensors.mask");
    /* presence differs */
    c = d;
    c.tensors.lse.dtype = SDPA_DTYPE_NONE;
    EXPECT(sdpa_plan_forward(plan, &c.tensors), SDPA_ERR_DTYPE, "tensors.lse");
    c = d;
    c.tensors.stats = sdpa_tensor_host(g_stats, SDPA_DTYPE_F32, B, HQ, 1, SDPA_STAT_COUNT);
    EXPECT(sdpa_plan_forward(plan, &c.tensors), SDPA_ERR_DTYPE, "tensors.stats");
    /* dtype differs */
    c = d;
    c.tensors.q.dtype = SDPA_DTYPE_F16;
    EXPECT(sdpa_plan_forward(plan, &c.tensors), SDPA_ERR_DTYPE, "tensors.q");
    /* strides are checked again */
    c = d;
    c.tensors.v.stride[2] = -1;
    EXPECT(sdpa_plan_forward(plan, &c.tensors), SDPA_ERR_STRIDE, "tensors.v");
    /* kv_len values out of range at call time */
    g_kvl[1] = -1;
    EXPECT(sdpa_plan_forward(plan, &d.tensors), SDPA_ERR_INVALID_ARG, "kv_len");
    EXPECT(sdpa_attention_forward(g_ctx, &d), SDPA_ERR_INVALID_ARG, "kv_len");
    g_kvl[1] = SKV + 1;
    EXPECT(sdpa_plan_forward(plan, &d.tensors), SDPA_ERR_INVALID_ARG, "kv_len");
    g_kvl[1] = INT32_MIN;
    EXPECT(sdpa_plan_forward(plan, &d.tensors), SDPA_ERR_INVALID_ARG, "kv_len");
    g_kvl[1] = 0;
    EXPECT(sdpa_plan_forward(plan, &d.tensors), SDPA_OK, NULL);
    g_kvl[1] = SKV;
    EXPECT(sdpa_plan_forward(plan, &d.tensors), SDPA_OK, NULL);
    g_kvl[1] = 3;
    sdpa_plan_destroy(plan);
}
END_TEST

START_TEST(backward_preconditions)
{
    sdpa_attention_desc d;
    sdpa_plan *plan = NULL;
    sdpa_plan_options po;
    sdpa_backward_tensors g;
    full(&d);
    /* no SDPA_PLAN_BACKWARD */
    EXPECT(sdpa_plan_create(g_ctx, &d, NULL, &plan), SDPA_OK, NULL);
    EXPECT(sdpa_plan_forward(plan, &d.tensors), SDPA_OK, NULL);
    bwd_tensors(&g, 1);
    EXPECT(sdpa_plan_backward(plan, &d.tensors, &g), SDPA_ERR_INVALID_ARG, "SDPA_PLAN_BACKWARD");
    sdpa_plan_destroy(plan);
    /* backward without lse */
    sdpa_plan_options_init(&po);
    po.flags = SDPA_PLAN_BACKWARD;
    d.tensors.lse.dtype = SDPA_DTYPE_NONE;
    plan = (sdpa_plan *)g_q;
    EXPECT(sdpa_plan_create(g_ctx, &d, &po, &plan), SDPA_ERR_INVALID_ARG, "lse");
    ck_assert_ptr_null(plan);
    /* wrong gradient shapes and dtypes; gains the plan does not have */
    full(&d);
    EXPECT(sdpa_plan_create(g_ctx, &d, &po, &plan), SDPA_OK, NULL);
    EXPECT(sdpa_plan_forward(plan, &d.tensors), SDPA_OK, NULL);
    bwd_tensors(&g, 1);
    g.dq.shape[3] = D + 1;
    EXPECT(sdpa_plan_backward(plan, &d.tensors, &g), SDPA_ERR_SHAPE, "bwd.dq");
    bwd_tensors(&g, 1);
    g.dv.dtype = SDPA_DTYPE_F16;
    EXPECT(sdpa_plan_backward(plan, &d.tensors, &g), SDPA_ERR_DTYPE, "bwd.dv");
    bwd_tensors(&g, 1);
    g.dk.shape[1] = HQ; /* dk is per KV head */
    EXPECT(sdpa_plan_backward(plan, &d.tensors, &g), SDPA_ERR_SHAPE, "bwd.dk");
    bwd_tensors(&g, 1);
    g.dtemperature.shape[1] = 1;
    EXPECT(sdpa_plan_backward(plan, &d.tensors, &g), SDPA_ERR_SHAPE, "bwd.dtemperature");
    bwd_tensors(&g, 1);
    d.tensors.lse.host = NULL;
    EXPECT(sdpa_plan_backward(plan, &d.tensors, &g), SDPA_ERR_NULL, "tensors.lse");
    sdpa_plan_destroy(plan);
    base(&d);
    d.tensors.lse = sdpa_tensor_host(g_lse, SDPA_DTYPE_F32, B, HQ, SQ, 1);
    EXPECT(sdpa_plan_create(g_ctx, &d, &po, &plan), SDPA_OK, NULL);
    EXPECT(sdpa_plan_forward(plan, &d.tensors), SDPA_OK, NULL);
    bwd_tensors(&g, 1);
    EXPECT(sdpa_plan_backward(plan, &d.tensors, &g), SDPA_ERR_INVALID_ARG, "bwd.dq_gain");
    bwd_tensors(&g, 0);
    EXPECT(sdpa_plan_backward(plan, &d.tensors, &g), SDPA_OK, NULL);
    sdpa_plan_destroy(plan);
}
END_TEST

/* ---- ALiBi, sinks, mixed, quantized and paged K/V: inconsistent inputs ---------- */

enum { PP = 4, PG = 4, PT = 2, DQ = 64 }; /* pool pages, slots per page, table width, D */
static float g_kp[PP * HKV * PG * D], g_vp[PP * HKV * PG * DV], g_slopes[HQ], g_sinks[HQ],
    g_dsinks[HQ];
static int32_t g_table[B * PT];
static float g_q64[B * HQ * SQ * DQ], g_o64[B * HQ * SQ * DQ];
static uint8_t g_kq8[B * HKV * SKV * (DQ / 32) * 34], g_vq8[B * HKV * SKV * (DQ / 32) * 34];

/* A valid paged description: pool pages in any order, kv_len given. */
static void paged(sdpa_attention_desc *d)
{
    base(d);
    d->tensors.k.dtype = d->tensors.v.dtype = SDPA_DTYPE_NONE;
    d->tensors.k_pages = sdpa_tensor_host(g_kp, SDPA_DTYPE_F32, PP, HKV, PG, D);
    d->tensors.v_pages = sdpa_tensor_host(g_vp, SDPA_DTYPE_F32, PP, HKV, PG, DV);
    const int32_t table[B * PT] = {3, 1, 0, 2};
    memcpy(g_table, table, sizeof table);
    d->tensors.block_table = sdpa_tensor_host(g_table, SDPA_DTYPE_I32, B, 1, 1, PT);
    g_kvl[0] = 7;
    g_kvl[1] = 3;
    d->tensors.kv_len = sdpa_tensor_host(g_kvl, SDPA_DTYPE_I32, B, 1, 1, 1);
}

/* A valid description with q8_0 K/V (D = Dv = 64: two blocks per row). */
static void quantized(sdpa_attention_desc *d)
{
    sdpa_attention_desc_init(d);
    d->tensors.q = sdpa_tensor_host(g_q64, SDPA_DTYPE_F32, B, HQ, SQ, DQ);
    d->tensors.k = sdpa_tensor_host(g_kq8, SDPA_DTYPE_Q8_0, B, HKV, SKV, DQ);
    d->tensors.v = sdpa_tensor_host(g_vq8, SDPA_DTYPE_Q8_0, B, HKV, SKV, DQ);
    d->tensors.out = sdpa_tensor_host(g_o64, SDPA_DTYPE_F32, B, HQ, SQ, DQ);
}

START_TEST(wave2_inconsistent_inputs)
{
    sdpa_attention_desc d;
    sdpa_plan *plan = NULL;
    sdpa_plan_options po;
    sdpa_plan_options_init(&po);
    po.flags = SDPA_PLAN_BACKWARD;
    /* the valid forms run */
    paged(&d);
    EXPECT(sdpa_attention_forward(g_ctx, &d), SDPA_OK, NULL);
    quantized(&d);
    EXPECT(sdpa_attention_forward(g_ctx, &d), SDPA_OK, NULL);
    full(&d);
    d.tensors.alibi_slopes = sdpa_tensor_host(g_slopes, SDPA_DTYPE_F32, 1, HQ, 1, 1);
    d.tensors.sinks = sdpa_tensor_host(g_sinks, SDPA_DTYPE_F32, 1, HQ, 1, 1);
    EXPECT(sdpa_attention_forward(g_ctx, &d), SDPA_OK, NULL);

    /* paged: k with a block table, pages without one, no kv_len, an entry
     * outside the pool (negative too), K and V pages in two dtypes, a
     * non-i32 table */
    paged(&d);
    d.tensors.k = sdpa_tensor_host(g_k, SDPA_DTYPE_F32, B, HKV, SKV, D);
    EXPECT_DESC(&d, SDPA_ERR_INVALID_ARG, "tensors.k is given in a paged call");
    paged(&d);
    d.tensors.block_table.dtype = SDPA_DTYPE_NONE;
    EXPECT_DESC(&d, SDPA_ERR_INVALID_ARG, "tensors.k_pages is given without tensors.block_table");
    paged(&d);
    d.tensors.kv_len.dtype = SDPA_DTYPE_NONE;
    EXPECT_DESC(&d, SDPA_ERR_INVALID_ARG, "need tensors.kv_len");
    paged(&d);
    g_table[3] = PP;
    EXPECT(sdpa_attention_forward(g_ctx, &d), SDPA_ERR_INVALID_ARG,
           "tensors.block_table[3] is 4: must lie in [0, pages-1=3]");
    g_table[3] = -1;
    EXPECT(sdpa_attention_forward(g_ctx, &d), SDPA_ERR_INVALID_ARG, "tensors.block_table[3]");
    paged(&d);
    d.tensors.v_pages.dtype = SDPA_DTYPE_F16;
    EXPECT_DESC(&d, SDPA_ERR_DTYPE, "tensors.v_pages");
    paged(&d);
    d.tensors.block_table.dtype = SDPA_DTYPE_F32;
    EXPECT_DESC(&d, SDPA_ERR_DTYPE, "tensors.block_table");
    paged(&d);
    d.tensors.v_pages.shape[2] = PG + 1; /* pages of one size */
    EXPECT_DESC(&d, SDPA_ERR_SHAPE, "tensors.v_pages");
    /* forward only: paged and block-quantized K/V refuse SDPA_PLAN_BACKWARD */
    paged(&d);
    d.tensors.lse = sdpa_tensor_host(g_lse, SDPA_DTYPE_F32, B, HQ, SQ, 1);
    EXPECT(sdpa_plan_create(g_ctx, &d, &po, &plan), SDPA_ERR_INVALID_ARG, "forward only");
    ck_assert_ptr_null(plan);
    quantized(&d);
    d.tensors.lse = sdpa_tensor_host(g_lse, SDPA_DTYPE_F32, B, HQ, SQ, 1);
    EXPECT(sdpa_plan_create(g_ctx, &d, &po, &plan), SDPA_ERR_INVALID_ARG, "q8_0 is forward only");
    ck_assert_ptr_null(plan);

    /* block types: D a multiple of 32, consecutive blocks, K/V only, k and
     * v in one dtype */
    base(&d);
    d.tensors.k.dtype = d.tensors.v.dtype = SDPA_DTYPE_Q8_0; /* D = 8 */
    EXPECT_DESC(&d, SDPA_ERR_SHAPE, "a q8_0 tensor's last axis must be a multiple of 32");
    quantized(&d);
    d.tensors.k.stride[3] = 2;
    EXPECT_DESC(&d, SDPA_ERR_STRIDE, "tensors.k.stride[3] is 2");
    quantized(&d);
    d.tensors.v.dtype = SDPA_DTYPE_Q4_0;
    EXPECT_DESC(&d, SDPA_ERR_DTYPE, "tensors.v.dtype is q4_0, expected q8_0");
    quantized(&d);
    d.tensors.q = sdpa_tensor_host(g_kq8, SDPA_DTYPE_Q8_0, B, HKV, SKV, DQ);
    EXPECT_DESC(&d, SDPA_ERR_DTYPE, "tensors.q.dtype is q8_0");
    quantized(&d);
    d.tensors.out.dtype = SDPA_DTYPE_Q8_0;
    EXPECT_DESC(&d, SDPA_ERR_DTYPE, "tensors.out");
    base(&d); /* mixed precision: k and v in one dtype, q's may differ */
    d.tensors.k.dtype = SDPA_DTYPE_F16;
    EXPECT_DESC(&d, SDPA_ERR_DTYPE, "tensors.v.dtype is f32, expected f16");

    /* ALiBi slopes and sinks: one f32 per query head */
    base(&d);
    d.tensors.alibi_slopes = sdpa_tensor_host(g_slopes, SDPA_DTYPE_F32, 1, HKV, 1, 1);
    EXPECT_DESC(&d, SDPA_ERR_SHAPE, "tensors.alibi_slopes");
    base(&d);
    d.tensors.sinks = sdpa_tensor_host(g_sinks, SDPA_DTYPE_F16, 1, HQ, 1, 1);
    EXPECT_DESC(&d, SDPA_ERR_DTYPE, "tensors.sinks");

    /* dsinks: only with sinks, one per query head */
    sdpa_backward_tensors g;
    base(&d);
    d.tensors.lse = sdpa_tensor_host(g_lse, SDPA_DTYPE_F32, B, HQ, SQ, 1);
    EXPECT(sdpa_plan_create(g_ctx, &d, &po, &plan), SDPA_OK, NULL);
    EXPECT(sdpa_plan_forward(plan, &d.tensors), SDPA_OK, NULL);
    bwd_tensors(&g, 0);
    g.dsinks = sdpa_tensor_host(g_dsinks, SDPA_DTYPE_F32, 1, HQ, 1, 1);
    EXPECT(sdpa_plan_backward(plan, &d.tensors, &g), SDPA_ERR_INVALID_ARG, "bwd.dsinks");
    sdpa_plan_destroy(plan);
    d.tensors.sinks = sdpa_tensor_host(g_sinks, SDPA_DTYPE_F32, 1, HQ, 1, 1);
    EXPECT(sdpa_plan_create(g_ctx, &d, &po, &plan), SDPA_OK, NULL);
    EXPECT(sdpa_plan_forward(plan, &d.tensors), SDPA_OK, NULL);
    EXPECT(sdpa_plan_backward(plan, &d.tensors, &g), SDPA_OK, NULL);
    g.dsinks.shape[1] = 1;
    EXPECT(sdpa_plan_backward(plan, &d.tensors, &g), SDPA_ERR_SHAPE, "bwd.dsinks");
    sdpa_plan_destroy(plan);
    g_kvl[0] = SKV;
    g_kvl[1] = 3;
}
END_TEST

/* ---- valid non-contiguous layouts ------------------------------------------------ */

static void expect_same(const float *a, const float *b, size_t n, const char *what)
{
    for (size_t i = 0; i < n; i++)
        ck_assert_msg(fabsf(a[i] - b[i]) <= 1e-6f * (1.0f + fabsf(b[i])),
                      "%s[%zu]: %g vs %g", what, i, a[i], b[i]);
}

/* Contiguous run of the base problem with lse, into out/lse. */
static void contiguous_run(float *out, float *lse)
{
    sdpa_attention_desc d;
    base(&d);
    d.tensors.out.host = out;
    d.tensors.lse = sdpa_tensor_host(lse, SDPA_DTYPE_F32, B, HQ, SQ, 1);
    EXPECT(sdpa_attention_forward(g_ctx, &d), SDPA_OK, NULL);
}

START_TEST(bshd_strides)
{
    float want_o[B * HQ * SQ * DV], want_l[B * HQ * SQ];
    float *q = malloc(sizeof g_q), *k = malloc(sizeof g_k), *v = malloc(sizeof g_v);
    float *o = malloc(sizeof g_out), lse[B * HQ * SQ];
    sdpa_attention_desc d;
    contiguous_run(want_o, want_l);
    /* (B, S, H, X) memory */
    for (int b = 0; b < B; b++)
        for (int h = 0; h < HQ; h++)
            for (int i = 0; i < SQ; i++)
                memcpy(q + ((b * SQ + i) * HQ + h) * D, g_q + ((b * HQ + h) * SQ + i) * D, D * 4);
    for (int b = 0; b < B; b++)
        for (int h = 0; h < HKV; h++)
            for (int j = 0; j < SKV; j++) {
                memcpy(k + ((b * SKV + j) * HKV + h) * D, g_k + ((b * HKV + h) * SKV + j) * D, D * 4);
                memcpy(v + ((b * SKV + j) * HKV + h) * DV, g_v + ((b * HKV + h) * SKV + j) * DV, DV * 4);
            }
    for (size_t i = 0; i < sizeof g_out / 4; i++) o[i] = NAN;
    base(&d);
#define BSHD(t, ptr, H, S, X)                                            \
    d.tensors.t.host = ptr;                                              \
    d.tensors.t.stride[0] = (int64_t)(S) * (H) * (X);                    \
    d.tensors.t.stride[1] = (X);                                         \
    d.tensors.t.stride[2] = (int64_t)(H) * (X);                          \
    d.tensors.t.stride[3] = 1;
    BSHD(q, q, HQ, SQ, D)
    BSHD(k, k, HKV, SKV, D)
    BSHD(v, v, HKV, SKV, DV)
    BSHD(out, o, HQ, SQ, DV)
#undef BSHD
    /* lse as (B, S, H) too */
    d.tensors.lse = sdpa_tensor_host(lse, SDPA_DTYPE_F32, B, HQ, SQ, 1);
    d.tensors.lse.stride[1] = 1;
    d.tensors.lse.stride[2] = HQ;
    EXPECT(sdpa_attention_forward(g_ctx, &d), SDPA_OK, NULL);
    for (int b = 0; b < B; b++)
        for (int h = 0; h < HQ; h++)
            for (int i = 0; i < SQ; i++) {
                expect_same(o + ((b * SQ + i) * HQ + h) * DV,
                            want_o + ((b * HQ + h) * SQ + i) * DV, DV, "bshd out");
                expect_same(&lse[(b * SQ + i) * HQ + h], &want_l[(b * HQ + h) * SQ + i], 1,
                            "bshd lse");
            }
    free(q); free(k); free(v); free(o);
}
END_TEST

/* Packed QKV (B, S, 3, H, D) with Hq = Hkv, Sq = Skv, D = Dv: three views of
 * one allocation by offsets, in host memory and in a device buffer. */
START_TEST(packed_qkv_offsets)
{
    enum { H = 2, S = 9, DD = 16 };
    const size_t n = (size_t)B * S * 3 * H * DD;
    float *pk = malloc(n * 4), *q = malloc(n / 3 * 4), *k = malloc(n / 3 * 4), *v = malloc(n / 3 * 4);
    float want[B * H * S * DD], got[B * H * S * DD];
    sdpa_attention_desc d;
    sdpa_buffer *buf = NULL, *obuf = NULL;
    trng r;
    trng_seed(&r, 77);
    for (size_t i = 0; i < n; i++) pk[i] = (float)trng_normal(&r);
    for (int b = 0; b < B; b++)
        for (int s = 0; s < S; s++)
            for (int h = 0; h < H; h++)
                for (int x = 0; x < DD; x++) {
                    size_t src = ((((size_t)b * S + s) * 3 + 0) * H + h) * DD + x;
                    size_t dst = (((size_t)b * H + h) * S + s) * DD + x;
                    q[dst] = pk[src];
                    k[dst] = pk[src + H * DD];
                    v[dst] = pk[src + 2 * H * DD];
                }
    sdpa_attention_desc_init(&d);
    d.window_right = 0;
    d.tensors.q = sdpa_tensor_host(q, SDPA_DTYPE_F32, B, H, S, DD);
    d.tensors.k = sdpa_tensor_host(k, SDPA_DTYPE_F32, B, H, S, DD);
    d.tensors.v = sdpa_tensor_host(v, SDPA_DTYPE_F32, B, H, S, DD);
    d.tensors.out = sdpa_tensor_host(want, SDPA_DTYPE_F32, B, H, S, DD);
    EXPECT(sdpa_attention_forward(g_ctx, &d), SDPA_OK, NULL);
    for (int t = 0; t < 3; t++) {
        sdpa_tensor *x = t == 0 ? &d.tensors.q : t == 1 ? &d.tensors.k : &d.tensors.v;
        x->host = pk;
        x->offset = (size_t)t * H * DD;
        x->stride[0] = (int64_t)S * 3 * H * DD;
        x->stride[1] = DD;
        x->stride[2] = 3 * H * DD;
        x->stride[3] = 1;
    }
    for (size_t i = 0; i < sizeof got / 4; i++) got[i] = NAN;
    d.tensors.out.host = got;
    EXPECT(sdpa_attention_forward(g_ctx, &d), SDPA_OK, NULL);
    expect_same(got, want, sizeof got / 4, "packed host");
    /* the same views over one device buffer; out in a buffer at an offset */
    ck_assert_int_eq(sdpa_buffer_create(g_ctx, n * 4, &buf), SDPA_OK);
    ck_assert_int_eq(sdpa_buffer_write(buf, 0, pk, n * 4), SDPA_OK);
    ck_assert_int_eq(sdpa_buffer_create(g_ctx, sizeof got + 12, &obuf), SDPA_OK);
    for (int t = 0; t < 3; t++) {
        sdpa_tensor *x = t == 0 ? &d.tensors.q : t == 1 ? &d.tensors.k : &d.tensors.v;
        x->host = NULL;
        x->buf = buf;
    }
    d.tensors.out = sdpa_tensor_buffer(obuf, 3, SDPA_DTYPE_F32, B, H, S, DD);
    EXPECT(sdpa_attention_forward(g_ctx, &d), SDPA_OK, NULL);
    for (size_t i = 0; i < sizeof got / 4; i++) got[i] = NAN;
    ck_assert_int_eq(sdpa_buffer_read(obuf, 12, got, sizeof got), SDPA_OK);
    expect_same(got, want, sizeof got / 4, "packed buffer");
    /* the last view ends exactly at the end of the buffer; one more is too far */
    d.tensors.v.offset += 1;
    EXPECT(sdpa_attention_forward(g_ctx, &d), SDPA_ERR_STRIDE, "tensors.v");
    sdpa_buffer_destroy(buf);
    sdpa_buffer_destroy(obuf);
    free(pk); free(q); free(k); free(v);
}
END_TEST

/* A mask shared by all batches and heads: as a full tensor, as shape
 * (1,1,Sq,Skv), and as (B,Hq,Sq,Skv) with strides 0 on batch and heads. */
START_TEST(broadcast_mask)
{
    uint8_t full_mask[B * HQ * SQ * SKV], m2[SQ * SKV];
    float want[B * HQ * SQ * DV], got[B * HQ * SQ * DV];
    float bias2[HQ * SQ * SKV], fullbias[B * HQ * SQ * SKV];
    sdpa_attention_desc d;
    trng r;
    trng_seed(&r, 5);
    for (int e = 0; e < SQ * SKV; e++) m2[e] = trng_uniform(&r) < 0.6;
    for (int e = 0; e < HQ * SQ * SKV; e++) bias2[e] = (float)trng_normal(&r);
    for (int bh = 0; bh < B * HQ; bh++) {
        memcpy(full_mask + bh * SQ * SKV, m2, SQ * SKV);
        memcpy(fullbias + bh * SQ * SKV, bias2 + (bh % HQ) * SQ * SKV, SQ * SKV * 4);
    }
    base(&d);
    d.tensors.out.host = want;
    d.tensors.mask = sdpa_tensor_host(full_mask, SDPA_DTYPE_U8, B, HQ, SQ, SKV);
    d.tensors.bias = sdpa_tensor_host(fullbias, SDPA_DTYPE_F32, B, HQ, SQ, SKV);
    EXPECT(sdpa_attention_forward(g_ctx, &d), SDPA_OK, NULL);

    for (size_t i = 0; i < sizeof got / 4; i++) got[i] = NAN;
    d.tensors.out.host = got;
    d.tensors.mask = sdpa_tensor_host(m2, SDPA_DTYPE_U8, 1, 1, SQ, SKV);
    d.tensors.bias = sdpa_tensor_host(bias2, SDPA_DTYPE_F32, 1, HQ, SQ, SKV);
    EXPECT(sdpa_attention_forward(g_ctx, &d), SDPA_OK, NULL);
    expect_same(got, want, sizeof got / 4, "mask shape 1");

    for (size_t i = 0; i < sizeof got / 4; i++) got[i] = NAN;
    d.tensors.mask = sdpa_tensor_host(m2, SDPA_DTYPE_U8, B, HQ, SQ, SKV);
    d.tensors.mask.stride[0] = d.tensors.mask.stride[1] = 0;
    d.tensors.bias = sdpa_tensor_host(bias2, SDPA_DTYPE_F32, B, HQ, SQ, SKV);
    d.tensors.bias.stride[0] = 0;
    d.tensors.bias.stride[1] = SQ * SKV;
    EXPECT(sdpa_attention_forward(g_ctx, &d), SDPA_OK, NULL);
    expect_same(got, want, sizeof got / 4, "mask stride 0");

    /* stride 0 on an input (every batch reads the same K/V) is a valid view */
    for (size_t i = 0; i < sizeof got / 4; i++) got[i] = NAN;
    base(&d);
    d.tensors.out.host = got;
    d.tensors.k.stride[0] = 0;
    d.tensors.v.stride[0] = 0;
    EXPECT(sdpa_attention_forward(g_ctx, &d), SDPA_OK, NULL);
    for (size_t i = 0; i < sizeof got / 4; i++) ck_assert(isfinite(got[i]));
}
END_TEST

/* An extent-1 axis may carry any stride, even a negative one. */
START_TEST(extent_one_any_stride)
{
    float want[HQ * SQ * DV], got[HQ * SQ * DV];
    sdpa_attention_desc d;
    base(&d);
    d.tensors.q.shape[0] = d.tensors.k.shape[0] = d.tensors.v.shape[0] = d.tensors.out.shape[0] = 1;
    d.tensors.out.host = want;
    EXPECT(sdpa_attention_forward(g_ctx, &d), SDPA_OK, NULL);
    d.tensors.out.host = got;
    d.tensors.q.stride[0] = 123456789;
    d.tensors.k.stride[0] = -5;
    d.tensors.out.stride[0] = 0;
    for (size_t i = 0; i < sizeof got / 4; i++) got[i] = NAN;
    EXPECT(sdpa_attention_forward(g_ctx, &d), SDPA_OK, NULL);
    expect_same(got, want, sizeof got / 4, "extent-1 strides");
}
END_TEST


/* ---- aliasing ------------------------------------------------------------------ */

/* Names both tensors in the message. */
static void expect_alias(sdpa_status got, sdpa_status want, const char *a, const char *b,
                         int line)
{
    check_error(g_ctx, got, want, a, "aliasing", line);
    if (b) check_error(g_ctx, got, want, b, "aliasing", line);
}
#define EXPECT_ALIAS(call, want, a, b) expect_alias((call), (want), (a), (b), __LINE__)

static float g_arena[4 * B * HQ * SQ * (D + DV + 2)];

/* A (B, HQ, SQ, n) view of g_arena whose rows are `pitch` apart, at `off`. */
static sdpa_tensor rows_view(size_t off, int64_t n, int64_t pitch)
{
    sdpa_tensor t = sdpa_tensor_host(g_arena, SDPA_DTYPE_F32, B, HQ, SQ, n);
    t.offset = off;
    t.stride[0] = HQ * SQ * pitch;
    t.stride[1] = SQ * pitch;
    t.stride[2] = pitch;
    t.stride[3] = 1;
    return t;
}

START_TEST(aliasing_refused)
{
    sdpa_attention_desc d;
    /* out over v (both in one arena): the forward would read overwritten v */
    base(&d);
    d.tensors.v = sdpa_tensor_host(g_arena, SDPA_DTYPE_F32, B, HKV, SKV, DV);
    d.tensors.out = sdpa_tensor_host(g_arena, SDPA_DTYPE_F32, B, HQ, SQ, DV);
    d.tensors.out.offset = 6;
    EXPECT_ALIAS(sdpa_attention_forward(g_ctx, &d), SDPA_ERR_INVALID_ARG, "tensors.out",
                 "tensors.v");
    /* lse over out */
    full(&d);
    d.tensors.lse.host = g_out;
    EXPECT_ALIAS(sdpa_attention_forward(g_ctx, &d), SDPA_ERR_INVALID_ARG, "tensors.out",
                 "tensors.lse");
    /* rows [out, lse] with lse on out's last column */
    full(&d);
    d.tensors.out = rows_view(0, DV, DV + 1);
    d.tensors.lse = rows_view(DV - 1, 1, DV + 1);
    EXPECT_ALIAS(sdpa_attention_forward(g_ctx, &d), SDPA_ERR_INVALID_ARG, "tensors.out",
                 "tensors.lse");
    /* an output over an optional input (bias) and over stats */
    full(&d);
    d.tensors.stats.host = g_bias;
    EXPECT_ALIAS(sdpa_attention_forward(g_ctx, &d), SDPA_ERR_INVALID_ARG, "tensors.stats",
                 "tensors.bias");
    /* an output over itself: row stride 1 with head_dim stride 1 */
    base(&d);
    d.tensors.out.stride[2] = 1;
    EXPECT_ALIAS(sdpa_attention_forward(g_ctx, &d), SDPA_ERR_STRIDE, "tensors.out", NULL);
    /* ...and without a stride of 1: heads 3 rows apart, rows 2 apart */
    base(&d);
    d.tensors.out.stride[1] = 3 * DV;
    d.tensors.out.stride[2] = 2 * DV;
    EXPECT_ALIAS(sdpa_attention_forward(g_ctx, &d), SDPA_ERR_STRIDE, "tensors.out", NULL);
    /* within one sdpa_buffer */
    sdpa_buffer *buf = NULL;
    ck_assert_int_eq(sdpa_buffer_create(g_ctx, sizeof g_arena, &buf), SDPA_OK);
    base(&d);
    d.tensors.v = sdpa_tensor_buffer(buf, 0, SDPA_DTYPE_F32, B, HKV, SKV, DV);
    d.tensors.out = sdpa_tensor_buffer(buf, 100, SDPA_DTYPE_F32, B, HQ, SQ, DV);
    EXPECT_ALIAS(sdpa_attention_forward(g_ctx, &d), SDPA_ERR_INVALID_ARG, "tensors.out",
                 "tensors.v");
    d.tensors.out.offset = (size_t)(B * HKV * SKV * DV); /* just past v */
    EXPECT_ALIAS(sdpa_attention_forward(g_ctx, &d), SDPA_OK, NULL, NULL);
    sdpa_buffer_destroy(buf);

    /* backward: a gradient over an input, over another gradient, over itself */
    sdpa_plan_options o;
    sdpa_plan_options_init(&o);
    o.flags = SDPA_PLAN_BACKWARD;
    full(&d);
    sdpa_plan *plan = NULL;
    ck_assert_int_eq(sdpa_plan_create(g_ctx, &d, &o, &plan), SDPA_OK);
    ck_assert_int_eq(sdpa_plan_forward(plan, &d.tensors), SDPA_OK);
    sdpa_backward_tensors g;
    bwd_tensors(&g, 1);
    g.dq.host = g_q;
    EXPECT_ALIAS(sdpa_plan_backward(plan, &d.tensors, &g), SDPA_ERR_INVALID_ARG, "bwd.dq",
                 "tensors.q");
    bwd_tensors(&g, 1);
    g.dv.host = g_dk;
    EXPECT_ALIAS(sdpa_plan_backward(plan, &d.tensors, &g), SDPA_ERR_INVALID_ARG, "bwd.dk",
                 "bwd.dv");
    bwd_tensors(&g, 1);
    g.dtemperature.host = g_dout;
    EXPECT_ALIAS(sdpa_plan_backward(plan, &d.tensors, &g), SDPA_ERR_INVALID_ARG, "bwd.dout",
                 "bwd.dtemperature");
    bwd_tensors(&g, 1);
    g.dq.stride[3] = 0;
    g.dq.stride[2] = 1;
    EXPECT_ALIAS(sdpa_plan_backward(plan, &d.tensors, &g), SDPA_ERR_STRIDE, "bwd.dq", NULL);
    bwd_tensors(&g, 1);
    EXPECT_ALIAS(sdpa_plan_backward(plan, &d.tensors, &g), SDPA_OK, NULL, NULL);
    sdpa_plan_destroy(plan);
}
END_TEST

/* Overlapping spans with disjoint elements are legal and run. */
START_TEST(legal_interleavings_run)
{
    sdpa_attention_desc d;
    /* rows [out(i,:), lse(i)] */
    full(&d);
    d.tensors.out = rows_view(0, DV, DV + 1);
    d.tensors.lse = rows_view(DV, 1, DV + 1);
    EXPECT_ALIAS(sdpa_attention_forward(g_ctx, &d), SDPA_OK, NULL, NULL);
    /* out on even elements, lse on odd ones (disjoint by parity, not by rows) */
    full(&d);
    d.tensors.out = rows_view(0, DV, 2 * DV);
    d.tensors.out.stride[3] = 2;
    d.tensors.lse = rows_view(1, 1, 2 * DV);
    EXPECT_ALIAS(sdpa_attention_forward(g_ctx, &d), SDPA_OK, NULL, NULL);
    /* ...and lse on an even one is refused */
    d.tensors.lse.offset = 2 * DV - 2;
    EXPECT_ALIAS(sdpa_attention_forward(g_ctx, &d), SDPA_ERR_INVALID_ARG, "tensors.out",
                 "tensors.lse");
    /* mixed dtypes in one row: [out(i,:) as f16 (12 bytes), lse(i) as f32],
     * 16 bytes a row; overlap is decided on bytes */
    {
        static uint16_t hq[B * HQ * SQ * D], hk[B * HKV * SKV * D], hv[B * HKV * SKV * DV];
        static uint32_t rows[B * HQ * SQ * 4];
        for (size_t i = 0; i < sizeof hq / 2; i++) hq[i] = (uint16_t)(0x3400 + i % 97);
        for (size_t i = 0; i < sizeof hk / 2; i++) hk[i] = (uint16_t)(0x3000 + i % 89);
        for (size_t i = 0; i < sizeof hv / 2; i++) hv[i] = (uint16_t)(0xb800 + i % 83);
        for (size_t i = 0; i < sizeof rows / 4; i++) rows[i] = 0xffffffffu; /* NaN */
        sdpa_attention_desc_init(&d);
        d.tensors.q = sdpa_tensor_host(hq, SDPA_DTYPE_F16, B, HQ, SQ, D);
        d.tensors.k = sdpa_tensor_host(hk, SDPA_DTYPE_F16, B, HKV, SKV, D);
        d.tensors.v = sdpa_tensor_host(hv, SDPA_DTYPE_F16, B, HKV, SKV, DV);
        d.tensors.out = sdpa_tensor_host(rows, SDPA_DTYPE_F16, B, HQ, SQ, DV);
        d.tensors.out.stride[0] = HQ * SQ * 8;
        d.tensors.out.stride[1] = SQ * 8;
        d.tensors.out.stride[2] = 8;
        d.tensors.lse = sdpa_tensor_host(rows, SDPA_DTYPE_F32, B, HQ, SQ, 1);
        d.tensors.lse.offset = 3;
        d.tensors.lse.stride[0] = HQ * SQ * 4;
        d.tensors.lse.stride[1] = SQ * 4;
        d.tensors.lse.stride[2] = 4;
        EXPECT_ALIAS(sdpa_attention_forward(g_ctx, &d), SDPA_OK, NULL, NULL);
        for (int r = 0; r < B * HQ * SQ; r++) {
            const uint16_t *o = (const uint16_t *)&rows[4 * r];
            for (int e = 0; e < DV; e++) ck_assert_msg((o[e] & 0x7c00) != 0x7c00, "row %d", r);
            float l;
            memcpy(&l, &rows[4 * r + 3], 4);
            ck_assert_msg(isfinite(l), "lse row %d", r);
        }
        d.tensors.lse.offset = 2; /* bytes 8..11: out's elements 4 and 5 */
        EXPECT_ALIAS(sdpa_attention_forward(g_ctx, &d), SDPA_ERR_INVALID_ARG, "tensors.out",
                     "tensors.lse");
    }
    /* packed dQKV (B, S, 3, H, D) gradients, Hq = Hkv and Sq = Skv */
    static float qkv[B * SQ * 3 * HQ * D], dqkv[B * SQ * 3 * HQ * D], o1[B * HQ * SQ * D],
        l1[B * HQ * SQ], dout[B * HQ * SQ * D];
    for (size_t i = 0; i < sizeof qkv / 4; i++) qkv[i] = (float)((i * 7919) % 101) / 50.0f - 1;
    for (size_t i = 0; i < sizeof dout / 4; i++) dout[i] = (float)((i * 31) % 17) / 8.0f - 1;
    sdpa_attention_desc_init(&d);
    sdpa_tensor *t3[3] = {&d.tensors.q, &d.tensors.k, &d.tensors.v};
    for (int w = 0; w < 3; w++) {
        *t3[w] = sdpa_tensor_host(qkv, SDPA_DTYPE_F32, B, HQ, SQ, D);
        t3[w]->offset = (size_t)(w * HQ * D);
        t3[w]->stride[0] = SQ * 3 * HQ * D;
        t3[w]->stride[1] = D;
        t3[w]->stride[2] = 3 * HQ * D;
    }
    d.tensors.out = sdpa_tensor_host(o1, SDPA_DTYPE_F32, B, HQ, SQ, D);
    d.tensors.lse = sdpa_tensor_host(l1, SDPA_DTYPE_F32, B, HQ, SQ, 1);
    sdpa_plan_options o;
    sdpa_plan_options_init(&o);
    o.flags = SDPA_PLAN_BACKWARD;
    sdpa_plan *plan = NULL;
    ck_assert_int_eq(sdpa_plan_create(g_ctx, &d, &o, &plan), SDPA_OK);
    ck_assert_int_eq(sdpa_plan_forward(plan, &d.tensors), SDPA_OK);
    sdpa_backward_tensors g;
    memset(&g, 0, sizeof g);
    g.dout = sdpa_tensor_host(dout, SDPA_DTYPE_F32, B, HQ, SQ, D);
    sdpa_tensor *g3[3] = {&g.dq, &g.dk, &g.dv};
    for (int w = 0; w < 3; w++) {
        *g3[w] = *t3[w];
        g3[w]->host = dqkv;
    }
    EXPECT_ALIAS(sdpa_plan_backward(plan, &d.tensors, &g), SDPA_OK, NULL, NULL);
    g.dk.offset = HQ * D - 1; /* dk's first element on dq's last */
    EXPECT_ALIAS(sdpa_plan_backward(plan, &d.tensors, &g), SDPA_ERR_INVALID_ARG, "bwd.dq",
                 "bwd.dk");
    sdpa_plan_destroy(plan);
}
END_TEST

/* sdpa_merge refuses results that broadcast, overlap themselves, each other
 * or a partial they are not exactly. */
START_TEST(merge_aliasing)
{
    enum { N = 2 };
    static float po[N][B * HQ * SQ * DV], pl[N][B * HQ * SQ], mo[B * HQ * SQ * DV], ml[B * HQ * SQ];
    sdpa_tensor outs[N], lses[N];
    for (int i = 0; i < N; i++) {
        for (size_t e = 0; e < sizeof po[i] / 4; e++) po[i][e] = (float)(e % 7) - 3;
        for (size_t e = 0; e < sizeof pl[i] / 4; e++) pl[i][e] = (float)(e % 5) * 0.5f;
        outs[i] = sdpa_tensor_host(po[i], SDPA_DTYPE_F32, B, HQ, SQ, DV);
        lses[i] = sdpa_tensor_host(pl[i], SDPA_DTYPE_F32, B, HQ, SQ, 1);
    }
    sdpa_tensor out = sdpa_tensor_host(mo, SDPA_DTYPE_F32, B, HQ, SQ, DV);
    sdpa_tensor lse = sdpa_tensor_host(ml, SDPA_DTYPE_F32, B, HQ, SQ, 1);
    EXPECT_ALIAS(sdpa_merge(g_ctx, N, outs, lses, &out, &lse), SDPA_OK, NULL, NULL);
    sdpa_tensor bad = out;
    bad.stride[2] = 0;
    EXPECT_ALIAS(sdpa_merge(g_ctx, N, outs, lses, &bad, &lse), SDPA_ERR_STRIDE, "out", NULL);
    bad = lse;
    bad.stride[0] = 0;
    EXPECT_ALIAS(sdpa_merge(g_ctx, N, outs, lses, &out, &bad), SDPA_ERR_STRIDE, "lse", NULL);
    bad = out;
    bad.stride[2] = 1;
    EXPECT_ALIAS(sdpa_merge(g_ctx, N, outs, lses, &bad, &lse), SDPA_ERR_STRIDE, "out", NULL);
    bad = lse;
    bad.host = mo;
    EXPECT_ALIAS(sdpa_merge(g_ctx, N, outs, lses, &out, &bad), SDPA_ERR_INVALID_ARG, "out",
                 "lse");
    /* the memory of partial 1 with heads and rows swapped: refused */
    bad = outs[1];
    bad.stride[1] = DV;
    bad.stride[2] = HQ * DV;
    EXPECT_ALIAS(sdpa_merge(g_ctx, N, outs, lses, &bad, &lse), SDPA_ERR_INVALID_ARG,
                 "sdpa_merge: out", "partial[1] output");
    bad = lses[0];
    bad.host = po[0]; /* result lse over partial 0's output */
    EXPECT_ALIAS(sdpa_merge(g_ctx, N, outs, lses, &out, &bad), SDPA_ERR_INVALID_ARG, "lse",
                 "partial[0] output");
    /* exactly a partial: allowed */
    EXPECT_ALIAS(sdpa_merge(g_ctx, N, outs, lses, &outs[0], &lses[0]), SDPA_OK, NULL, NULL);
}
END_TEST

static Suite *validate_suite(void)
{
    Suite *s = suite_create("validate");
    TCase *t = tcase_create("errors");
    tcase_add_checked_fixture(t, setup, teardown);
    tcase_add_test(t, valid_descriptions_run);
    tcase_add_test(t, null_pointers);
    tcase_add_test(t, shape_mismatches);
    tcase_add_test(t, empty_and_negative_extents);
    tcase_add_test(t, negative_strides);
    tcase_add_test(t, broadcast_outputs);
    tcase_add_test(t, overflowing_extents);
    tcase_add_test(t, buffer_bounds_and_ownership);
    tcase_add_test(t, wrong_dtypes);
    tcase_add_test(t, wrong_optional_shapes);
    tcase_add_test(t, shape_messages_name_axes);
    tcase_add_test(t, bad_scalars);
    tcase_add_test(t, bad_plan_options);
    tcase_add_test(t, plan_call_mismatch);
    tcase_add_test(t, backward_preconditions);
    tcase_add_test(t, aliasing_refused);
    tcase_add_test(t, merge_aliasing);
    suite_add_tcase(s, t);
    t = tcase_create("layouts");
    tcase_add_checked_fixture(t, setup, teardown);
    tcase_add_test(t, bshd_strides);
    tcase_add_test(t, packed_qkv_offsets);
    tcase_add_test(t, broadcast_mask);
    tcase_add_test(t, extent_one_any_stride);
    tcase_add_test(t, legal_interleavings_run);
    tcase_add_test(t, wave2_inconsistent_inputs);
    suite_add_tcase(s, t);
    return s;
}

int main(void) { return trun_suite(validate_suite()); }
