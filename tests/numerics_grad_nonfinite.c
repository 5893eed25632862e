/*
 * numerics_grad_nonfinite.c — NaN and Inf in the backward on every backend:
 * a table of placements (q row, k row, v row, dout row, bias at a key the row
 * drops) times configurations that drop keys differently (causal, bool mask,
 * sliding window, kv_len), each with NaN and with +Inf. The gradients dq, dk,
 * dv must have the float64 reference's class at every element (NaN, +Inf,
 * -Inf, finite) and its value within 1e-3 where finite: a bad value reaches
 * exactly the gradients of the rows and keys that read it, and a dropped key
 * (masked, outside the band, beyond kv_len, -inf bias) contributes exactly 0,
 * as in the forward (docs/semantics.md, Backward). Part of the numerics
 * suite (test_numerics.c runs the fixture).
 */
#include "numerics.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

enum { GN_B = 1, GN_HQ = 2, GN_HKV = 1, GN_S = 9, GN_D = 32, GN_DV = 24 };
enum { GN_H = 1, GN_I = 5, GN_E = 4 }; /* poked head, query row, element */

typedef enum gn_config { GN_CAUSAL, GN_MASK, GN_WINDOW, GN_KVLEN, GN_CONFIGS } gn_config;
static const char *const k_gn_config_names[] = {"causal", "mask", "window", "kv_len"};
/* key poked in k / v: kept by some rows, dropped by others (kv_len: by all) */
static const int k_gn_key[] = {3, 3, 3, 7};
/* key row GN_I drops, where the bias is poked */
static const int k_gn_dropped[] = {7, 2, 8, 7};

typedef enum gn_place { GN_Q, GN_K, GN_V, GN_DOUT, GN_BIAS, GN_PLACES } gn_place;
static const char *const k_gn_place_names[] = {"q", "k", "v", "dout", "bias@dropped"};

static void gn_case(tcase *c, gn_config cfg)
{
    tcase_init(c, k_gn_config_names[cfg], GN_B, GN_HQ, GN_HKV, GN_S, GN_S, GN_D, GN_DV);
    c->bias = true;
    c->lse = true;
    c->seed = 11;
    switch (cfg) {
    case GN_CAUSAL: c->window_left = -1; c->window_right = 0; break;
    case GN_MASK: c->mask = true; c->mask_keep = 0.6; break;
    case GN_WINDOW: c->window_left = 2; c->window_right = 1; break;
    default: c->kv_len = true; break;
    }
}

/* Makes the configuration's drops deterministic where the test relies on them. */
static void gn_fix(tproblem *p, gn_config cfg)
{
    size_t row = ((size_t)GN_H * GN_S + GN_I) * GN_S;
    for (int j = 0; j < GN_S; j++) /* no random -inf bias in the poked row */
        if (isinf(p->bias[row + (size_t)j])) p->bias[row + (size_t)j] = 0.25f;
    if (cfg == GN_MASK) {
        p->mask[row + (size_t)k_gn_dropped[cfg]] = 0;
        for (int i = 0; i < GN_S; i++) /* key 3: dropped by even rows, kept by odd */
            for (int h = 0; h < GN_HQ; h++)
                p->mask[((size_t)h * GN_S + (size_t)i) * GN_S + 3] = (uint8_t)(i % 2);
    }
    if (cfg == GN_KVLEN) p->kv_len[0] = 6;
}

static void gn_poke(tproblem *p, gn_config cfg, gn_place where, double bad)
{
    sdpa_dtype dt = p->c.dtype;
    size_t e;
    switch (where) {
    case GN_Q: e = ((size_t)GN_H * GN_S + GN_I) * GN_D + GN_E; tstore(p->q, dt, e, bad); break;
    case GN_K: e = (size_t)k_gn_key[cfg] * GN_D + GN_E; tstore(p->k, dt, e, bad); break;
    case GN_V: e = (size_t)k_gn_key[cfg] * GN_DV + GN_E; tstore(p->v, dt, e, bad); break;
    case GN_DOUT:
        e = ((size_t)GN_H * GN_S + GN_I) * GN_DV + GN_E;
        tstore(p->dout, dt, e, bad);
        break;
    default:
        p->bias[((size_t)GN_H * GN_S + GN_I) * GN_S + (size_t)k_gn_dropped[cfg]] = (float)bad;
        break;
    }
}

static int gn_class(double x) { return isnan(x) ? 0 : isinf(x) ? (x > 0 ? 1 : -1) : 2; }

/* Mismatches of one gradient array; prints the first. */
static int gn_compare(const char *what, const char *label, const void *got, const void *want,
                      sdpa_dtype dt, size_t n)
{
    int bad = 0;
    for (size_t e = 0; e < n; e++) {
        double g = tload(got, dt, e), w = tload(want, dt, e);
        bool ok = gn_class(g) == gn_class(w) &&
                  (!isfinite(w) || fabs(g - w) <= 2e-3 * (1 + fabs(w)));
        if (!ok && !bad++)
            printf("%s: %s[%zu] = %g, reference %g\n", label, what, e, g, w), fflush(stdout);
    }
    return bad;
}

START_TEST(grad_nonfinite_confined)
{
    sdpa_context *ctx = backend_ctx(_i, "grad_nonfinite_confined");
    if (!ctx) return;
    const char *bn = sdpa_backend_name(k_kinds[_i]);
    int n_cases = 0, n_bad = 0;
    for (int cfg = 0; cfg < GN_CONFIGS; cfg++)
        for (int where = 0; where < GN_PLACES; where++)
            for (int v = 0; v < 2; v++) {
                const double bad = v ? INFINITY : NAN;
                tcase c;
                gn_case(&c, (gn_config)cfg);
                tproblem got, want;
                tproblem_make(&got, &c);
                tproblem_make(&want, &c);
                gn_fix(&got, (gn_config)cfg);
                gn_fix(&want, (gn_config)cfg);
                gn_poke(&got, (gn_config)cfg, (gn_place)where, bad);
                gn_poke(&want, (gn_config)cfg, (gn_place)where, bad);
                run(ctx, &got, true);
                run(g_ref, &want, true);
                char label[160];
                snprintf(label, sizeof label, "%s on %s, %s in %s", k_gn_config_names[cfg], bn,
                         v ? "inf" : "nan", k_gn_place_names[where]);
                int nb = gn_compare("dq", label, got.dq, want.dq, c.dtype, got.n_q) +
                         gn_compare("dk", label, got.dk, want.dk, c.dtype, got.n_k) +
                         gn_compare("dv", label, got.dv, want.dv, c.dtype, got.n_v);
                n_cases++;
                n_bad += nb != 0;
                tproblem_free(&got);
                tproblem_free(&want);
            }
    ck_assert_msg(n_bad == 0, "%s: %d of %d NaN/Inf placements give gradients unlike the "
                  "reference (listed above)", bn, n_bad, n_cases);
    sdpa_context_destroy(ctx);
}
END_TEST

void numerics_add_grad_nonfinite(TCase *t)
{
    tcase_add_loop_test(t, grad_nonfinite_confined, 0, N_KINDS);
}
