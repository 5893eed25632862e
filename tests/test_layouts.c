/*
 * test_layouts.c — every tensor layout the docs advertise, on every backend,
 * with host pointers, with device buffers (sdpa_buffer_create) and through
 * AUTO's CPU fallback, against the float64 reference.
 *
 * Layouts (README, docs/semantics.md): (B, S, H, D) "BSHD" with a padded
 * token pitch; packed QKV (B, S, 3, H, D) for the inputs and packed dQKV for
 * the gradients; rows [out(i,:), lse(i)] interleaving the forward's outputs
 * (and, in the backward, its inputs), with dQ, dK, dV interleaved per row.
 * Outputs share one arena: each output's elements start as NaN and every
 * byte no output owns (gaps, padding) holds a sentinel; after the call every
 * owned element must match the reference and every gap must be untouched, and
 * the input arena must be unchanged. This is what catches a write-back of an
 * output's whole span over its neighbours.
 *
 * AUTO's fallback is reached by selecting an OpenCL or Vulkan device by name
 * and forcing tile.stage_kv = 2, which no device backend accepts: the plan
 * runs on the CPU while the buffers stay on the device.
 *
 * Run time: a few seconds, most of it OpenCL kernel builds.
 */
#include "testutil.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { B = 2, H = 3, S = 7, D = 8 };
#define N_QKV (B * H * S * D)
#define N_LSE (B * H * S)
#define SENTINEL 4242.0f

/* Tensor roles of one call. */
enum { R_Q, R_K, R_V, R_OUT, R_LSE, R_DOUT, R_DQ, R_DK, R_DV, R_COUNT };
static const char *const role_name[R_COUNT] = {"q", "k", "v", "out", "lse", "dout",
                                               "dq", "dk", "dv"};
enum { A_IN, A_OUT };

typedef struct view {
    int arena;          /* A_IN or A_OUT */
    int64_t offset;     /* elements */
    int64_t stride[4];  /* (b, h, s, d) */
} view;

typedef struct layout {
    const char *name;
    bool backward;
    view v[R_COUNT];
} layout;

#define STRIDES(sb, sh, ss, sd) {sb, sh, ss, sd}
/* BSHD with a token pitch of H*D + 3 (3 padding elements per token). */
#define PB (H * D + 3)
#define BSHD(arena, region) {arena, (int64_t)(region) * B * S * PB, STRIDES(S * PB, D, PB, 1)}
/* BHSD contiguous, at element `off` */
#define BHSD(arena, off) {arena, off, STRIDES(H * S * D, S * D, D, 1)}
#define LSE_C(arena, off) {arena, off, STRIDES(H * S, S, 1, 1)}
/* packed (B, S, 3, H, D) with a token pitch of 3*H*D + 2 */
#define PP (3 * H * D + 2)
#define PACKED(arena, which) {arena, (int64_t)(which) * H * D, STRIDES(S * PP, D, PP, 1)}
/* rows [out(i,:), lse(i), pad]: pitch D + 2, by (b, h, s) */
#define PR (D + 2)
#define ROW(arena, col) {arena, col, STRIDES(H * S * PR, S * PR, PR, 1)}
/* rows [dq(i,:), dk(i,:), dv(i,:), pad]: pitch 3 D + 1 */
#define PG (3 * D + 1)
#define GROW(arena, which) {arena, (int64_t)(which) * D, STRIDES(H * S * PG, S * PG, PG, 1)}
#define AFTER_BSHD(k) ((int64_t)(k) * B * S * PB)
#define AFTER_PACKED ((int64_t)B * S * PP)
#define AFTER_ROWS ((int64_t)B * H * S * PR)

static const layout k_layouts[] = {
    {"bshd forward", false,
     {[R_Q] = BSHD(A_IN, 0), [R_K] = BSHD(A_IN, 1), [R_V] = BSHD(A_IN, 2),
      [R_OUT] = BSHD(A_OUT, 0), [R_LSE] = LSE_C(A_OUT, AFTER_BSHD(1) + 5)}},
    {"packed qkv forward", false,
     {[R_Q] = PACKED(A_IN, 0), [R_K] = PACKED(A_IN, 1), [R_V] = PACKED(A_IN, 2),
      [R_OUT] = BSHD(A_OUT, 0), [R_LSE] = LSE_C(A_OUT, AFTER_BSHD(1) + 1)}},
    {"interleaved out+lse forward", false,
     {[R_Q] = BHSD(A_IN, 0), [R_K] = BHSD(A_IN, N_QKV), [R_V] = BHSD(A_IN, 2 * N_QKV),
      [R_OUT] = ROW(A_OUT, 0), [R_LSE] = ROW(A_OUT, D)}},
    {"bshd backward", true,
     {[R_Q] = BSHD(A_IN, 0), [R_K] = BSHD(A_IN, 1), [R_V] = BSHD(A_IN, 2),
      [R_OUT] = BSHD(A_IN, 3), [R_LSE] = LSE_C(A_IN, AFTER_BSHD(5)), [R_DOUT] = BSHD(A_IN, 4),
      [R_DQ] = BSHD(A_OUT, 0), [R_DK] = BSHD(A_OUT, 1), [R_DV] = BSHD(A_OUT, 2)}},
    {"packed dqkv backward", true,
     {[R_Q] = PACKED(A_IN, 0), [R_K] = PACKED(A_IN, 1), [R_V] = PACKED(A_IN, 2),
      [R_OUT] = BHSD(A_IN, AFTER_PACKED), [R_LSE] = LSE_C(A_IN, AFTER_PACKED + N_QKV),
      [R_DOUT] = BHSD(A_IN, AFTER_PACKED + N_QKV + N_LSE),
      [R_DQ] = PACKED(A_OUT, 0), [R_DK] = PACKED(A_OUT, 1), [R_DV] = PACKED(A_OUT, 2)}},
    {"interleaved rows backward", true,
     {[R_Q] = BHSD(A_IN, AFTER_ROWS), [R_K] = BHSD(A_IN, AFTER_ROWS + N_QKV),
      [R_V] = BHSD(A_IN, AFTER_ROWS + 2 * N_QKV), [R_OUT] = ROW(A_IN, 0), [R_LSE] = ROW(A_IN, D),
      [R_DOUT] = BHSD(A_IN, AFTER_ROWS + 3 * N_QKV),
      [R_DQ] = GROW(A_OUT, 0), [R_DK] = GROW(A_OUT, 1), [R_DV] = GROW(A_OUT, 2)}},
};
#define N_LAYOUTS ((int)(sizeof k_layouts / sizeof k_layouts[0]))

/* How a configuration reaches its memory. */
enum { M_HOST, M_BUFFER, M_AUTO_HOST, M_AUTO_BUFFER };
static const char *const mode_name[] = {"host pointers", "device buffers",
                                        "AUTO fallback, host pointers",
                                        "AUTO fallback, device buffers"};
typedef struct config {
    sdpa_backend_kind kind;
    int mode;
} config;
static const config k_configs[] = {
    {SDPA_BACKEND_REFERENCE, M_HOST}, {SDPA_BACKEND_REFERENCE, M_BUFFER},
    {SDPA_BACKEND_CPU, M_HOST},       {SDPA_BACKEND_CPU, M_BUFFER},
    {SDPA_BACKEND_OPENCL, M_HOST},    {SDPA_BACKEND_OPENCL, M_BUFFER},
    {SDPA_BACKEND_OPENCL, M_AUTO_HOST}, {SDPA_BACKEND_OPENCL, M_AUTO_BUFFER},
    {SDPA_BACKEND_VULKAN, M_HOST},    {SDPA_BACKEND_VULKAN, M_BUFFER},
    {SDPA_BACKEND_VULKAN, M_AUTO_HOST}, {SDPA_BACKEND_VULKAN, M_AUTO_BUFFER},
};
#define N_CONFIGS ((int)(sizeof k_configs / sizeof k_configs[0]))

/* Inputs and the reference's results, contiguous (b, h, s, d). */
static float g_q[N_QKV], g_k[N_QKV], g_v[N_QKV], g_dout[N_QKV];
static float g_out[N_QKV], g_lse[N_LSE], g_dq[N_QKV], g_dk[N_QKV], g_dv[N_QKV];

static const int64_t *shape_of(int role)
{
    static const int64_t full[4] = {B, H, S, D}, lse[4] = {B, H, S, 1};
    return role == R_LSE ? lse : full;
}

static int64_t at(const view *v, int64_t b, int64_t h, int64_t s, int64_t d)
{
    return v->offset + b * v->stride[0] + h * v->stride[1] + s * v->stride[2] + d * v->stride[3];
}

/* Contiguous data of a role: the inputs, or the reference's outputs. */
static float *data_of(int role)
{
    float *const p[R_COUNT] = {g_q, g_k, g_v, g_out, g_lse, g_dout, g_dq, g_dk, g_dv};
    return p[role];
}

static bool is_output(const layout *l, int role)
{
    return l->backward ? role >= R_DQ : role == R_OUT || role == R_LSE;
}

static bool used(const layout *l, int role) { return l->backward || role <= R_LSE; }

/* Elements an arena needs: the furthest element of its views, plus a tail. */
static int64_t arena_size(const layout *l, int arena)
{
    int64_t n = 0;
    for (int r = 0; r < R_COUNT; r++) {
        if (!used(l, r) || l->v[r].arena != arena) continue;
        const int64_t *sh = shape_of(r);
        int64_t e = at(&l->v[r], sh[0] - 1, sh[1] - 1, sh[2] - 1, sh[3] - 1) + 1;
        if (e > n) n = e;
    }
    return n + 3;
}

static sdpa_tensor make_tensor(const layout *l, int role, float *host[2], sdpa_buffer *buf[2])
{
    const view *v = &l->v[role];
    const int64_t *sh = shape_of(role);
    sdpa_tensor t = sdpa_tensor_host(host[v->arena], SDPA_DTYPE_F32, sh[0], sh[1], sh[2], sh[3]);
    if (buf[v->arena]) {
        t.host = NULL;
        t.buf = buf[v->arena];
    }
    t.offset = (size_t)v->offset;
    memcpy(t.stride, v->stride, sizeof t.stride);
    return t;
}

/* Fills the arenas: inputs at their views; outputs NaN, every other byte of
 * the output arena SENTINEL. owned[e] marks the output arena's elements. */
static void fill_arenas(const layout *l, float *in, int64_t nin, float *out, int64_t nout,
                        bool *owned)
{
    for (int64_t e = 0; e < nin; e++) in[e] = -SENTINEL;
    for (int64_t e = 0; e < nout; e++) {
        out[e] = SENTINEL;
        owned[e] = false;
    }
    for (int r = 0; r < R_COUNT; r++) {
        if (!used(l, r)) continue;
        const int64_t *sh = shape_of(r);
        const float *src = data_of(r);
        int64_t i = 0;
        for (int64_t b = 0; b < sh[0]; b++)
            for (int64_t h = 0; h < sh[1]; h++)
                for (int64_t s = 0; s < sh[2]; s++)
                    for (int64_t d = 0; d < sh[3]; d++, i++) {
                        int64_t e = at(&l->v[r], b, h, s, d);
                        if (is_output(l, r)) {
                            ck_assert_int_eq(l->v[r].arena, A_OUT);
                            ck_assert_msg(!owned[e], "%s: layout bug, %s reuses element %lld",
                                          l->name, role_name[r], (long long)e);
                            out[e] = NAN;
                            owned[e] = true;
                        } else {
                            ck_assert_int_eq(l->v[r].arena, A_IN);
                            in[e] = src[i];
                        }
                    }
    }
}

/* Compares each output with the reference and every gap with SENTINEL. */
static void check_results(const layout *l, const char *what, const float *out, int64_t nout,
                          const bool *owned, const float *in, const float *in0, int64_t nin)
{
    for (int r = 0; r < R_COUNT; r++) {
        if (!used(l, r) || !is_output(l, r)) continue;
        const int64_t *sh = shape_of(r);
        const float *want = data_of(r);
        int64_t i = 0, bad = 0, n = 0, first = -1;
        double worst = 0;
        for (int64_t b = 0; b < sh[0]; b++)
            for (int64_t h = 0; h < sh[1]; h++)
                for (int64_t s = 0; s < sh[2]; s++)
                    for (int64_t d = 0; d < sh[3]; d++, i++, n++) {
                        float g = out[at(&l->v[r], b, h, s, d)];
                        double err = fabs((double)g - (double)want[i]);
                        if (!(err <= tbound(SDPA_DTYPE_F32))) {
                            if (first < 0) first = i;
                            bad++;
                        }
                        if (err > worst || isnan(err)) worst = err;
                    }
        ck_assert_msg(bad == 0,
                      "%s: %lld of %lld %s elements wrong or unwritten (first at %lld: got %g, "
                      "want %g; worst error %g)",
                      what, (long long)bad, (long long)n, role_name[r], (long long)first,
                      first >= 0 ? (double)out[at(&l->v[r], first / (H * S * sh[3]),
                                                    first / (S * sh[3]) % H,
                                                    first / sh[3] % S, first % sh[3])]
                                 : 0.0,
                      first >= 0 ? (double)want[first] : 0.0, worst);
    }
    int64_t gaps = 0, hit = 0, first = -1;
    for (int64_t e = 0; e < nout; e++) {
        if (owned[e]) continue;
        gaps++;
        if (memcmp(&out[e], &(float){SENTINEL}, sizeof(float)) != 0) {
            if (first < 0) first = e;
            hit++;
        }
    }
    ck_assert_msg(hit == 0, "%s: %lld of %lld gap elements of the output arena changed "
                  "(first at %lld: %g)", what, (long long)hit, (long long)gaps,
                  (long long)first, first >= 0 ? (double)out[first] : 0.0);
    ck_assert_msg(memcmp(in, in0, (size_t)nin * sizeof *in) == 0, "%s: the input arena changed",
                  what);
}

/* The reference's out, lse, dq, dk, dv for the global inputs. */
static void compute_reference(void)
{
    trng r;
    trng_seed(&r, 14);
    float *in[] = {g_q, g_k, g_v, g_dout};
    for (int a = 0; a < 4; a++)
        for (int e = 0; e < N_QKV; e++) in[a][e] = (float)trng_normal(&r);
    sdpa_context *ref = tcontext(SDPA_BACKEND_REFERENCE, NULL);
    ck_assert_ptr_nonnull(ref);
    sdpa_attention_desc d;
    sdpa_attention_desc_init(&d);
    d.tensors.q = sdpa_tensor_host(g_q, SDPA_DTYPE_F32, B, H, S, D);
    d.tensors.k = sdpa_tensor_host(g_k, SDPA_DTYPE_F32, B, H, S, D);
    d.tensors.v = sdpa_tensor_host(g_v, SDPA_DTYPE_F32, B, H, S, D);
    d.tensors.out = sdpa_tensor_host(g_out, SDPA_DTYPE_F32, B, H, S, D);
    d.tensors.lse = sdpa_tensor_host(g_lse, SDPA_DTYPE_F32, B, H, S, 1);
    sdpa_plan_options po;
    sdpa_plan_options_init(&po);
    po.flags = SDPA_PLAN_BACKWARD;
    sdpa_plan *plan = NULL;
    ck_assert_int_eq(sdpa_plan_create(ref, &d, &po, &plan), SDPA_OK);
    ck_assert_int_eq(sdpa_plan_forward(plan, &d.tensors), SDPA_OK);
    sdpa_backward_tensors g;
    memset(&g, 0, sizeof g);
    g.dout = sdpa_tensor_host(g_dout, SDPA_DTYPE_F32, B, H, S, D);
    g.dq = sdpa_tensor_host(g_dq, SDPA_DTYPE_F32, B, H, S, D);
    g.dk = sdpa_tensor_host(g_dk, SDPA_DTYPE_F32, B, H, S, D);
    g.dv = sdpa_tensor_host(g_dv, SDPA_DTYPE_F32, B, H, S, D);
    ck_assert_int_eq(sdpa_plan_backward(plan, &d.tensors, &g), SDPA_OK);
    sdpa_plan_destroy(plan);
    sdpa_context_destroy(ref);
}

/* A context for cfg, or NULL (with the reason printed) when this machine
 * cannot provide one. */
static sdpa_context *config_context(const config *cfg)
{
    if (!sdpa_backend_compiled(cfg->kind)) {
        printf("layouts %s: skipped (backend not compiled in)\n", sdpa_backend_name(cfg->kind));
        return NULL;
    }
    sdpa_context_options o;
    sdpa_context_options_init(&o);
    o.log_level = SDPA_LOG_ERROR;
    o.backend = cfg->kind;
    sdpa_device_info info;
    memset(&info, 0, sizeof info);
    info.struct_size = sizeof info;
    if (cfg->mode >= M_AUTO_HOST) {
        int n = 0;
        if (sdpa_device_count(cfg->kind, &n) != SDPA_OK || n == 0 ||
            sdpa_device_get_info(cfg->kind, 0, &info) != SDPA_OK) {
            printf("layouts %s: skipped (no device)\n", sdpa_backend_name(cfg->kind));
            return NULL;
        }
        o.backend = SDPA_BACKEND_AUTO;
        o.device = info.name;
    }
    sdpa_context *ctx = NULL;
    sdpa_status st = sdpa_context_create(&o, &ctx);
    if (st != SDPA_OK) {
        printf("layouts %s: skipped (%s)\n", sdpa_backend_name(cfg->kind), sdpa_status_name(st));
        ck_assert(cfg->kind == SDPA_BACKEND_OPENCL || cfg->kind == SDPA_BACKEND_VULKAN);
        return NULL;
    }
    if (sdpa_context_backend(ctx) != cfg->kind) {
        /* AUTO took another backend for this name (an OpenCL device also
         * called so): the fallback of this backend cannot be reached */
        printf("layouts %s, %s: skipped (AUTO chose %s for '%s')\n",
               sdpa_backend_name(cfg->kind), mode_name[cfg->mode],
               sdpa_backend_name(sdpa_context_backend(ctx)), info.name);
        sdpa_context_destroy(ctx);
        return NULL;
    }
    return ctx;
}

static void run_layout(sdpa_context *ctx, const config *cfg, const layout *l)
{
    char what[160];
    snprintf(what, sizeof what, "%s on %s with %s", l->name, sdpa_backend_name(cfg->kind),
             mode_name[cfg->mode]);
    int64_t nin = arena_size(l, A_IN), nout = arena_size(l, A_OUT);
    float *in = malloc((size_t)nin * sizeof *in), *in0 = malloc((size_t)nin * sizeof *in);
    float *out = malloc((size_t)nout * sizeof *out);
    bool *owned = malloc((size_t)nout);
    ck_assert(in && in0 && out && owned);
    fill_arenas(l, in, nin, out, nout, owned);
    memcpy(in0, in, (size_t)nin * sizeof *in);

    float *host[2] = {in, out};
    sdpa_buffer *buf[2] = {NULL, NULL};
    bool buffers = cfg->mode == M_BUFFER || cfg->mode == M_AUTO_BUFFER;
    if (buffers) {
        ck_assert_int_eq(sdpa_buffer_create(ctx, (size_t)nin * 4, &buf[A_IN]), SDPA_OK);
        ck_assert_int_eq(sdpa_buffer_create(ctx, (size_t)nout * 4, &buf[A_OUT]), SDPA_OK);
        ck_assert_int_eq(sdpa_buffer_write(buf[A_IN], 0, in, (size_t)nin * 4), SDPA_OK);
        ck_assert_int_eq(sdpa_buffer_write(buf[A_OUT], 0, out, (size_t)nout * 4), SDPA_OK);
    }
    sdpa_attention_desc d;
    sdpa_attention_desc_init(&d);
    d.tensors.q = make_tensor(l, R_Q, host, buf);
    d.tensors.k = make_tensor(l, R_K, host, buf);
    d.tensors.v = make_tensor(l, R_V, host, buf);
    d.tensors.out = make_tensor(l, R_OUT, host, buf);
    d.tensors.lse = make_tensor(l, R_LSE, host, buf);
    sdpa_plan_options po;
    sdpa_plan_options_init(&po);
    po.flags = l->backward ? SDPA_PLAN_BACKWARD : 0;
    sdpa_tile_config tile;
    sdpa_tile_config_init(&tile);
    if (cfg->mode >= M_AUTO_HOST) {
        /* no device backend takes it: AUTO falls back */
        sdpa_tile_config_set(&tile, SDPA_TILE_STAGE_KV, 2);
        po.tile = &tile;
    }
    sdpa_plan *plan = NULL;
    sdpa_status st = sdpa_plan_create(ctx, &d, &po, &plan);
    sdpa_error_info e;
    sdpa_context_last_error(ctx, &e);
    ck_assert_msg(st == SDPA_OK, "%s: plan: %s (%s)", what, sdpa_status_name(st), e.message);
    sdpa_plan_info pi;
    memset(&pi, 0, sizeof pi);
    pi.struct_size = sizeof pi;
    ck_assert_int_eq(sdpa_plan_get_info(plan, &pi), SDPA_OK);
    ck_assert_int_eq(pi.backend, cfg->mode >= M_AUTO_HOST ? SDPA_BACKEND_CPU : cfg->kind);
    if (l->backward) {
        sdpa_backward_tensors g;
        memset(&g, 0, sizeof g);
        g.dout = make_tensor(l, R_DOUT, host, buf);
        g.dq = make_tensor(l, R_DQ, host, buf);
        g.dk = make_tensor(l, R_DK, host, buf);
        g.dv = make_tensor(l, R_DV, host, buf);
        st = sdpa_plan_backward(plan, &d.tensors, &g);
    } else {
        st = sdpa_plan_forward(plan, &d.tensors);
    }
    sdpa_context_last_error(ctx, &e);
    ck_assert_msg(st == SDPA_OK, "%s: run: %s (%s)", what, sdpa_status_name(st), e.message);
    ck_assert_int_eq(sdpa_context_finish(ctx), SDPA_OK);
    if (buffers) {
        ck_assert_int_eq(sdpa_buffer_read(buf[A_IN], 0, in, (size_t)nin * 4), SDPA_OK);
        ck_assert_int_eq(sdpa_buffer_read(buf[A_OUT], 0, out, (size_t)nout * 4), SDPA_OK);
    }
    check_results(l, what, out, nout, owned, in, in0, nin);
    sdpa_plan_destroy(plan);
    sdpa_buffer_destroy(buf[A_IN]);
    sdpa_buffer_destroy(buf[A_OUT]);
    free(in);
    free(in0);
    free(out);
    free(owned);
}

START_TEST(layouts)
{
    const config *cfg = &k_configs[_i];
    compute_reference();
    sdpa_context *ctx = config_context(cfg);
    if (!ctx) return;
    for (int i = 0; i < N_LAYOUTS; i++) run_layout(ctx, cfg, &k_layouts[i]);
    printf("layouts %s, %s: %d layouts match the reference, gaps untouched\n",
           sdpa_backend_name(cfg->kind), mode_name[cfg->mode], N_LAYOUTS);
    fflush(stdout);
    sdpa_context_destroy(ctx);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("layouts");
    TCase *t = tcase_create("layouts");
    tcase_set_timeout(t, 600);
    tcase_add_loop_test(t, layouts, 0, N_CONFIGS);
    suite_add_tcase(s, t);
    return trun_suite(s);
}
