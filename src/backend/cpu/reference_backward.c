/*
 * reference_backward.c — the float64 oracle's backward pass.
 *
 * It recomputes every score row in double precision (it does not trust the
 * forward's out/lse), then applies the chain rule step by step in reverse:
 * softmax (dS = P o (dP - rowsum(dO o O))), softcap (1 - tanh^2), scale or
 * temperature (dtemperature), gains (dq_gain, dk_gain) and the qk-norm
 * Jacobian. dK and dV are summed over the query heads that share a KV head.
 * Rows with no kept key contribute nothing: their gradients are exactly 0.
 * With sinks, P is sink-inclusive (so O and D = rowsum(dO o O) are too) and
 * d sink_h = -sum_{b,i} p_sink D; ALiBi is a constant of the score, so it
 * only enters through the recomputed P.
 * D reads O as the forward stores it: the recomputed row rounded to out's
 * dtype (docs/semantics.md, "Backward"), which is the `out` every fast
 * backend's backward reads. With f16 / bf16 outputs the rounding moves D by
 * about 2^-11 / 2^-8 of |dO||O|, and the sums that cancel (dsinks,
 * dtemperature, dK where q is 16-bit and K/V f32) move with it far past
 * f32's error; an oracle with the exact O disagreed with every backend there
 * (tests/test_random.c found it).
 */
#include "reference.h"

#include <math.h>
#include <stdlib.h>

/* x as the forward stores it in out's dtype (f32, f16 or bf16). */
static double stored(sdpa_dtype dtype, double x)
{
    float buf;
    sdpa__store_float(&buf, dtype, 0, (float)x);
    return sdpa__load_float(&buf, dtype, 0);
}

void sdpa__ref_norm_backward(sdpa_qk_norm mode, double r, const double *n,
                             const double *dn, double *dx, int64_t len)
{
    double sdn = 0, sdnn = 0;
    for (int64_t d = 0; d < len; d++) {
        sdn += dn[d];
        sdnn += dn[d] * n[d];
    }
    for (int64_t d = 0; d < len; d++) {
        switch (mode) {
        case SDPA_QK_NORM_RMS: dx[d] = r * (dn[d] - n[d] * sdnn / (double)len); break;
        case SDPA_QK_NORM_L2: dx[d] = r * (dn[d] - n[d] * sdnn); break;
        case SDPA_QK_NORM_LAYER:
            dx[d] = r * (dn[d] - sdn / (double)len - n[d] * sdnn / (double)len);
            break;
        default: dx[d] = dn[d]; break;
        }
    }
}

static double gain(const sdpa__ref *g, bool has, int64_t d)
{
    return has ? ((const float *)g->mem)[sdpa__at(g, 0, 0, 0, d)] : 1.0;
}

sdpa_status sdpa__ref_backward(sdpa_context *ctx, void *state, void *plan, const sdpa__problem *p,
                               const sdpa__fwd_args *a, const sdpa__bwd_args *g)
{
    (void)state;
    (void)plan;
    const int64_t D = p->D, Dv = p->Dv, Skv = p->Skv, group = p->Hq / p->Hkv;
    size_t nkd = (size_t)(Skv * D), nkv = (size_t)(Skv * Dv);
    double *kn = sdpa__malloc(nkd * sizeof *kn), *k_r = sdpa__malloc((size_t)Skv * sizeof *k_r);
    double *dkn = sdpa__malloc(nkd * sizeof *dkn), *dvacc = sdpa__malloc(nkv * sizeof *dvacc);
    double *vm = sdpa__malloc(nkv * sizeof *vm);
    double *buf = sdpa__malloc((size_t)(6 * D + 2 * Dv + 6 * (Skv + 1)) * sizeof *buf);
    double *dqg = sdpa__calloc((size_t)D, sizeof *dqg), *dkg = sdpa__calloc((size_t)D, sizeof *dkg);
    double *dtemp = sdpa__calloc((size_t)p->Hq, sizeof *dtemp);
    double *dsink = sdpa__calloc((size_t)p->Hq, sizeof *dsink);
    unsigned char *kept = sdpa__malloc((size_t)Skv + 1);
    sdpa_status st = SDPA_OK;
    if (!kn || !k_r || !dkn || !dvacc || !vm || !buf || !dqg || !dkg || !dtemp || !dsink ||
        !kept) {
        st = SDPA__FAIL(ctx, SDPA_ERR_OUT_OF_MEMORY, "reference: out of host memory");
        goto cleanup;
    }
    double *qn = buf, *qraw = buf + D, *dqn = buf + 2 * D, *dx = buf + 3 * D,
           *npre = buf + 4 * D, *dn = buf + 5 * D, *dout = buf + 6 * D, *o = dout + Dv;
    double *rows = o + Dv;
    sdpa__ref_row row = {qn, qraw, rows, rows + (Skv + 1), rows + 2 * (Skv + 1),
                         rows + 3 * (Skv + 1), kept, 0, 0, 0};
    double *dp = rows + 4 * (Skv + 1);

    for (int64_t b = 0; b < p->B; b++) {
        int64_t keys = sdpa__ref_batch_keys(p, a, b);
        for (int64_t kvh = 0; kvh < p->Hkv; kvh++) {
            sdpa__ref_keys(p, a, b, kvh, kn, k_r);
            for (int64_t j = 0; j < Skv; j++)
                sdpa__ref_load_kv(p, a, true, b, kvh, j, Dv, vm + j * Dv);
            memset(dkn, 0, nkd * sizeof *dkn);
            memset(dvacc, 0, nkv * sizeof *dvacc);
            for (int64_t h = kvh * group; h < (kvh + 1) * group; h++) {
                for (int64_t i = 0; i < p->Sq; i++) {
                    int64_t nkept = sdpa__ref_scores(p, a, b, h, i, keys, kn, &row);
                    for (int64_t d = 0; d < D; d++) dqn[d] = 0.0;
                    if (nkept) {
                        sdpa__ref_load_row(&g->dout, p->dtype, b, h, i, Dv, dout);
                        /* Dr = rowsum(dO o O), O recomputed and rounded as stored
                         * (stored(), see the top): sum_j p_j dP_j up to that
                         * rounding, but with an Inf in dO the IEEE classes follow
                         * this form, the one every fast backend uses */
                        for (int64_t d = 0; d < Dv; d++) o[d] = 0.0;
                        for (int64_t j = 0; j < Skv; j++) {
                            dp[j] = 0.0;
                            if (!row.kept[j]) continue;
                            for (int64_t d = 0; d < Dv; d++) {
                                dp[j] += dout[d] * vm[j * Dv + d];
                                dvacc[j * Dv + d] += row.p[j] * dout[d];
                                o[d] += row.p[j] * vm[j * Dv + d];
                            }
                        }
                        double Dr = 0.0;
                        for (int64_t d = 0; d < Dv; d++) Dr += dout[d] * stored(p->dtype, o[d]);
                        if (row.kept[Skv]) dsink[h] -= row.p[Skv] * Dr; /* the sink */
                        for (int64_t j = 0; j < Skv; j++) {
                            if (!row.kept[j]) continue;
                            double ds = row.p[j] * (dp[j] - Dr);
                            double dt = ds;
                            if (p->softcap > 0) {
                                double th = tanh(row.t[j] / p->softcap);
                                dt = ds * (1.0 - th * th);
                            }
                            dtemp[h] += dt * row.dot[j];
                            double ddot = dt * row.scale;
                            for (int64_t d = 0; d < D; d++) {
                                dqn[d] += ddot * kn[j * D + d];
                                dkn[j * D + d] += ddot * qn[d];
                            }
                        }
                    }
                    /* through q gain and norm (npre: normalised q before its gain) */
                    memcpy(npre, qraw, (size_t)D * sizeof *npre);
                    sdpa__ref_norm(p->qk_norm, p->qk_norm_eps, npre, D, NULL);
                    for (int64_t d = 0; d < D; d++) {
                        dqg[d] += dqn[d] * npre[d];
                        dn[d] = dqn[d] * gain(&a->q_gain, p->has_q_gain, d);
                    }
                    sdpa__ref_norm_backward(p->qk_norm, row.q_r, npre, dn, dx, D);
                    for (int64_t d = 0; d < D; d++)
                        sdpa__store_float(g->dq.mem, p->dtype, sdpa__at(&g->dq, b, h, i, d),
                                          (float)dx[d]);
                }
            }
            for (int64_t j = 0; j < Skv; j++) {
                /* normalised key before gain: recompute from k */
                sdpa__ref_load_kv(p, a, false, b, kvh, j, D, npre);
                double r = sdpa__ref_norm(p->qk_norm, p->qk_norm_eps, npre, D, NULL);
                for (int64_t d = 0; d < D; d++) {
                    double gk = gain(&a->k_gain, p->has_k_gain, d);
                    dkg[d] += dkn[j * D + d] * npre[d];
                    dn[d] = dkn[j * D + d] * gk;
                }
                sdpa__ref_norm_backward(p->qk_norm, r, npre, dn, dx, D);
                for (int64_t d = 0; d < D; d++)
                    sdpa__store_float(g->dk.mem, p->kv_dtype, sdpa__at(&g->dk, b, kvh, j, d),
                                      (float)dx[d]);
                for (int64_t d = 0; d < Dv; d++)
                    sdpa__store_float(g->dv.mem, p->kv_dtype, sdpa__at(&g->dv, b, kvh, j, d),
                                      (float)dvacc[j * Dv + d]);
            }
        }
    }
    if (g->dq_gain.mem)
        for (int64_t d = 0; d < D; d++)
            ((float *)g->dq_gain.mem)[sdpa__at(&g->dq_gain, 0, 0, 0, d)] = (float)dqg[d];
    if (g->dk_gain.mem)
        for (int64_t d = 0; d < D; d++)
            ((float *)g->dk_gain.mem)[sdpa__at(&g->dk_gain, 0, 0, 0, d)] = (float)dkg[d];
    if (g->dtemperature.mem)
        for (int64_t h = 0; h < p->Hq; h++)
            ((float *)g->dtemperature.mem)[sdpa__at(&g->dtemperature, 0, h, 0, 0)] =
                (float)dtemp[h];
    if (g->dsinks.mem)
        for (int64_t h = 0; h < p->Hq; h++)
            ((float *)g->dsinks.mem)[sdpa__at(&g->dsinks, 0, h, 0, 0)] = (float)dsink[h];
cleanup:
    free(kn);
    free(k_r);
    free(dkn);
    free(dvacc);
    free(vm);
    free(buf);
    free(dqg);
    free(dkg);
    free(dtemp);
    free(dsink);
    free(kept);
    return st;
}
