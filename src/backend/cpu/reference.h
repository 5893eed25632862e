/*
 * reference.h — the float64 oracle shared by the reference forward and
 * backward: per-row score computation that follows docs/semantics.md ("Forward") step by
 * step, slowly and obviously. Every other backend is tested against it.
 */
#ifndef SDPA_CPU_REFERENCE_H
#define SDPA_CPU_REFERENCE_H

#include "internal.h"

/* Normalises x (length n) in place by the qk_norm mode; returns the
 * reciprocal scale r used (1 for NONE). mean is set for LAYER (else 0). */
double sdpa__ref_norm(sdpa_qk_norm mode, double eps, double *x, int64_t n, double *mean);
/* dx from dn for the same normalisation: n = normalised x (before gain). */
void sdpa__ref_norm_backward(sdpa_qk_norm mode, double r, const double *n,
                             const double *dn, double *dx, int64_t len);

/* Loads row (i0,i1,i2,:) of a float tensor into dst (len elements). */
void sdpa__ref_load_row(const sdpa__ref *t, sdpa_dtype dtype, int64_t i0, int64_t i1,
                        int64_t i2, int64_t len, double *dst);

/* Row (b, kvh, j) of K (value = false, len D) or V (value = true, len Dv)
 * as float64, whatever the K/V storage: paged through the block table,
 * f32/f16/bf16 or dequantized q8_0/q4_0 (reference_kv.c). */
void sdpa__ref_load_kv(const sdpa__problem *p, const sdpa__fwd_args *a, bool value, int64_t b,
                       int64_t kvh, int64_t j, int64_t len, double *dst);

/* The reference's score function (reference_forward.c), used by the forward
 * and the backward. For row (b, h, i) of a batch whose first `keys` keys are
 * valid: kept[j] says whether key j survives the drop decision (mask, band,
 * valid keys, -inf bias); t[j] is scale * (q.k) before the cap; s[j] the
 * final score (after softcap, bias and ALiBi); p[j] the probability, sink
 * included in the denominator. Index Skv holds the row's extras: s[Skv] the
 * LSE, p[Skv] the sink's probability and kept[Skv] whether the row has a
 * sink (sinks given and not -inf). qn is the normalised (and gained) query.
 * Returns the number of kept keys (the sink not counted). */
typedef struct sdpa__ref_row {
    double *qn, *qraw; /* D */
    double *dot, *t, *s, *p; /* Skv */
    unsigned char *kept;     /* Skv */
    double q_r, q_mean;      /* norm factors of the query */
    double scale;
} sdpa__ref_row;

/* Normalised (and gained) keys for one (b, kv head): kn[j*D + d]; k_r[j]. */
void sdpa__ref_keys(const sdpa__problem *p, const sdpa__fwd_args *a, int64_t b,
                    int64_t kvh, double *kn, double *k_r);
int64_t sdpa__ref_scores(const sdpa__problem *p, const sdpa__fwd_args *a, int64_t b,
                         int64_t h, int64_t i, int64_t keys, const double *kn,
                         sdpa__ref_row *row);
/* Valid key count of batch b (Skv, or the call's per-batch count clamped to
 * [0, Skv]). */
int64_t sdpa__ref_batch_keys(const sdpa__problem *p, const sdpa__fwd_args *a, int64_t b);

sdpa_status sdpa__ref_forward(sdpa_context *ctx, void *state, void *plan, const sdpa__problem *p,
                              const sdpa__fwd_args *a);
sdpa_status sdpa__ref_backward(sdpa_context *ctx, void *state, void *plan, const sdpa__problem *p,
                               const sdpa__fwd_args *a, const sdpa__bwd_args *g);

#endif
