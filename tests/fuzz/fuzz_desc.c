/*
 * fuzz_desc.c — libFuzzer target for descriptor validation through the public
 * API on the reference backend: random shapes, strides, offsets, dtypes,
 * presence of every optional tensor, attributes (scale, diagonal, window,
 * softcap, qk-norm) and plan flags / options. The library must only ever
 * return statuses: no crash, no sanitizer report, no hang.
 *
 * Invariant kept by the harness (the caller's side of the contract): a plan
 * is executed only when every tensor's span, as the harness computes it with
 * checked arithmetic, fits the arena it points into, and outputs never alias
 * inputs. Work is bounded (B*Hq*Sq*Skv*(D+Dv) <= 2^20) so runs stay fast.
 * Built by tests/fuzz/meson.build with clang -fsanitize=fuzzer; run by
 * scripts/hardening.sh from the seed corpus in tests/fuzz/corpus/desc.
 */
#ifndef SDPA_EXPERIMENTAL
#define SDPA_EXPERIMENTAL
#endif
#include "sdpa.h"

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define ARENA_BYTES (1u << 20)

typedef struct src { const uint8_t *d; size_t n, i; } src;

static uint64_t take(src *s, int bytes)
{
    uint64_t v = 0;
    for (int b = 0; b < bytes; b++) v |= (uint64_t)(s->i < s->n ? s->d[s->i++] : 0) << (8 * b);
    return v;
}

/* Mostly small extents, sometimes huge or negative ones. */
static int64_t extent(src *s)
{
    uint8_t mode = (uint8_t)take(s, 1);
    switch (mode >> 5) {
    case 0: return 0;
    case 1: return (int64_t)(take(s, 8));                 /* anything, incl. negative */
    case 2: return (int64_t)1 << (take(s, 1) % 63);       /* powers of two up to 2^62 */
    default: return 1 + (int64_t)(mode & 31);              /* 1..32 */
    }
}

static int64_t stride_val(src *s, int64_t contiguous)
{
    uint8_t mode = (uint8_t)take(s, 1);
    switch (mode >> 6) {
    case 0: return contiguous;
    case 1: return 0;
    case 2: return (int64_t)take(s, 8);
    default: return (int64_t)(mode & 63);
    }
}

static sdpa_dtype dtype_val(src *s, sdpa_dtype usual)
{
    uint8_t m = (uint8_t)take(s, 1);
    if (m < 200) return usual;
    return (sdpa_dtype)(m % 8 - 1); /* -1..6: invalid values too */
}

/* Byte span of t (offset + reach + 1 element), or SIZE_MAX when it overflows
 * or is not a valid layout: the harness then never runs the plan. */
static size_t span_bytes(const sdpa_tensor *t)
{
    size_t es = sdpa_dtype_size(t->dtype);
    if (!es) return SIZE_MAX;
    unsigned __int128 reach = t->offset;
    for (int a = 0; a < 4; a++) {
        if (t->shape[a] <= 0 || t->stride[a] < 0) return SIZE_MAX;
        reach += (unsigned __int128)(t->shape[a] - 1) * (uint64_t)t->stride[a];
    }
    reach = (reach + 1) * es;
    return reach > ARENA_BYTES ? SIZE_MAX : (size_t)reach;
}

static uint8_t *g_in, *g_out; /* input and output arenas */
static sdpa_context *g_ctx;

static void fill_tensor(src *s, sdpa_tensor *t, bool output, sdpa_dtype dt, const int64_t sh[4],
                        bool optional)
{
    if (optional && (take(s, 1) & 3) == 0) return; /* absent (dtype NONE) */
    int64_t shape[4];
    for (int a = 0; a < 4; a++) shape[a] = (take(s, 1) & 7) == 0 ? extent(s) : sh[a];
    *t = sdpa_tensor_host(output ? g_out : g_in, dtype_val(s, dt), shape[0], shape[1], shape[2],
                          shape[3]);
    for (int a = 0; a < 4; a++) t->stride[a] = stride_val(s, t->stride[a]);
    uint8_t o = (uint8_t)take(s, 1);
    t->offset = o < 240 ? o % 16 : (size_t)take(s, 8);
    if ((take(s, 1) & 15) == 0) t->host = NULL;
}

static int64_t work_of(const int64_t *x)
{
    double w = 1;
    for (int i = 0; i < 5; i++) w *= (double)(x[i] > 0 ? x[i] : 1);
    return w > 1e15 ? INT64_MAX : (int64_t)w;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!g_ctx) {
        g_in = malloc(ARENA_BYTES);
        g_out = malloc(ARENA_BYTES);
        /* Inputs: small normal-ish floats (0x3f00 pattern), never NaN. */
        for (size_t i = 0; i < ARENA_BYTES; i++) g_in[i] = (uint8_t)(i % 7 == 3 ? 0x3e : i * 13);
        sdpa_context_options o;
        sdpa_context_options_init(&o);
        o.backend = SDPA_BACKEND_REFERENCE;
        o.log_level = SDPA_LOG_ERROR;
        o.log_fn = NULL;
        if (sdpa_context_create(&o, &g_ctx) != SDPA_OK) abort();
    }
    src s = {data, size, 0};
    int64_t B = extent(&s), Hq = extent(&s), Hkv = extent(&s), Sq = extent(&s),
            Skv = extent(&s), D = extent(&s), Dv = extent(&s);
    sdpa_dtype dt = (sdpa_dtype)(1 + take(&s, 1) % 3);
    sdpa_attention_desc desc;
    sdpa_attention_desc_init(&desc);
    if (take(&s, 1) & 1) desc.struct_size = (size_t)take(&s, 2);
    uint8_t sc = (uint8_t)take(&s, 1);
    if (sc > 128) {
        static const double scales[] = {-1.0, -2.0, 0.0, -3.0, 1e-30, 1e30, 0.125, 1.0};
        desc.scale = scales[sc % 8];
        if (sc > 250) desc.scale = NAN;
    }
    desc.diagonal = (sdpa_diagonal)(take(&s, 1) % 4);
    desc.diagonal_offset = (int64_t)take(&s, 1) - 128;
    if (take(&s, 1) > 250) desc.diagonal_offset = (int64_t)take(&s, 8);
    desc.window_left = (int64_t)take(&s, 1) - 2;
    desc.window_right = (int64_t)take(&s, 1) - 2;
    uint8_t cap = (uint8_t)take(&s, 1);
    desc.softcap = cap > 200 ? (cap > 250 ? -1.0 : (cap - 200) * 0.5) : 0.0;
    desc.qk_norm = (sdpa_qk_norm)(take(&s, 1) % 5);
    if (take(&s, 1) > 250) desc.qk_norm_eps = 0;
    if (take(&s, 1) > 250) desc.stats_saturation = 2;

    sdpa_forward_tensors *t = &desc.tensors;
    const int64_t shq[4] = {B, Hq, Sq, D}, shk[4] = {B, Hkv, Skv, D}, shv[4] = {B, Hkv, Skv, Dv},
                  sho[4] = {B, Hq, Sq, Dv}, shm[4] = {B, Hq, Sq, Skv}, shl[4] = {B, 1, 1, 1},
                  shg[4] = {1, 1, 1, D}, sht[4] = {1, Hq, 1, 1}, shs[4] = {B, Hq, Sq, 1},
                  shst[4] = {B, Hq, 1, SDPA_STAT_COUNT};
    fill_tensor(&s, &t->q, false, dt, shq, false);
    fill_tensor(&s, &t->k, false, dt, shk, false);
    fill_tensor(&s, &t->v, false, dt, shv, false);
    fill_tensor(&s, &t->out, true, dt, sho, false);
    fill_tensor(&s, &t->mask, false, SDPA_DTYPE_U8, shm, true);
    fill_tensor(&s, &t->bias, false, SDPA_DTYPE_F32, shm, true);
    fill_tensor(&s, &t->kv_len, false, SDPA_DTYPE_I32, shl, true);
    fill_tensor(&s, &t->q_gain, false, SDPA_DTYPE_F32, shg, true);
    fill_tensor(&s, &t->k_gain, false, SDPA_DTYPE_F32, shg, true);
    fill_tensor(&s, &t->temperature, false, SDPA_DTYPE_F32, sht, true);
    fill_tensor(&s, &t->lse, true, SDPA_DTYPE_F32, shs, true);
    fill_tensor(&s, &t->stats, true, SDPA_DTYPE_F32, shst, true);
    /* kv_len reads whatever ints the input arena holds: the library must
     * check them against 0..Skv before using them. */

    sdpa_plan_options po;
    sdpa_plan_options_init(&po);
    po.flags = (unsigned)take(&s, 1) & 7;
    if (take(&s, 1) > 250) po.workspace_limit = (int64_t)take(&s, 8);

    /* Only run what the harness knows fits its arenas. Writes to out / lse /
     * stats may overlap each other in g_out; fine (the reference writes
     * sequentially). */
    const sdpa_tensor *all[] = {&t->q, &t->k, &t->v, &t->out, &t->mask, &t->bias,
                                &t->kv_len, &t->q_gain, &t->k_gain, &t->temperature,
                                &t->lse, &t->stats};
    bool fits = true;
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        if (all[i]->dtype != SDPA_DTYPE_NONE && (!all[i]->host || span_bytes(all[i]) == SIZE_MAX))
            fits = false;
    int64_t w[5] = {B, Hq, Sq, Skv, D > 0 && Dv > 0 && D < (1 << 20) && Dv < (1 << 20) ? D + Dv : INT64_MAX};
    bool runnable = fits && work_of(w) <= ((int64_t)1 << 20);

    sdpa_plan *plan = NULL;
    sdpa_status st = sdpa_plan_create(g_ctx, &desc, &po, &plan);
    if (st == SDPA_OK) {
        if (runnable) {
            sdpa_plan_forward(plan, t);
            if (po.flags & 1) {
                sdpa_backward_tensors bw;
                memset(&bw, 0, sizeof bw);
                bw.dout = t->out;
                bw.dout.host = g_in;
                bw.dq = t->q;
                bw.dq.host = g_out;
                bw.dk = t->k;
                bw.dk.host = g_out;
                bw.dv = t->v;
                bw.dv.host = g_out;
                sdpa_forward_tensors fw = *t;
                if (fw.out.host) fw.out.host = g_in;
                if (fw.lse.host) fw.lse.host = g_in;
                sdpa_plan_backward(plan, &fw, &bw);
            }
        }
        sdpa_plan_destroy(plan);
    }
    /* The one-call path validates the same descriptor through its plan cache. */
    if ((take(&s, 1) & 3) == 0 && runnable) sdpa_attention_forward(g_ctx, &desc);
    sdpa_error_info info;
    sdpa_context_last_error(g_ctx, &info);
    if (st != SDPA_OK && (!info.message || !info.message[0])) abort(); /* every error explains itself */
    return 0;
}
