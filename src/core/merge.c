/*
 * merge.c — sdpa_merge and sdpa_merge_sinks: exact combination of partial
 * attention results over disjoint key sets by their log-sum-exp. Runs on the
 * host (tensors in device buffers are staged), one row at a time into a
 * scratch row so that `out` may alias one of the partial outputs. With
 * sinks, the partials are computed without them and each head's sink enters
 * here once, as one more partial whose output is 0 and whose lse is the sink
 * logit (docs/semantics.md, "Merging partial results").
 */
#include "overlap.h"
#include "staging.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#define SDPA__MERGE_MAX 1024

static sdpa_status check_pair(sdpa_context *ctx, const sdpa_tensor *o, const sdpa_tensor *l,
                              const sdpa_tensor *o0, const char *what, int i)
{
    char name[64];
    snprintf(name, sizeof name, "%s[%d]", what, i);
    SDPA__TRY(sdpa__check_layout(ctx, name, o, true));
    SDPA__TRY(sdpa__check_layout(ctx, name, l, true));
    SDPA__CHECK(ctx, o->dtype == SDPA_DTYPE_F32 || o->dtype == SDPA_DTYPE_F16 ||
                         o->dtype == SDPA_DTYPE_BF16,
                SDPA_ERR_DTYPE, "%s output dtype %s is not f32/f16/bf16", name,
                sdpa_dtype_name(o->dtype));
    SDPA__CHECK(ctx, l->dtype == SDPA_DTYPE_F32, SDPA_ERR_DTYPE, "%s lse dtype is %s, not f32",
                name, sdpa_dtype_name(l->dtype));
    for (int a = 0; a < 4; a++) {
        SDPA__CHECK(ctx, o->shape[a] == o0->shape[a], SDPA_ERR_SHAPE,
                    "%s output shape[%d] is %lld, expected %lld", name, a,
                    (long long)o->shape[a], (long long)o0->shape[a]);
        int64_t want = a < 3 ? o0->shape[a] : 1;
        SDPA__CHECK(ctx, l->shape[a] == want, SDPA_ERR_SHAPE,
                    "%s lse shape[%d] is %lld, expected %lld", name, a,
                    (long long)l->shape[a], (long long)want);
    }
    return SDPA_OK;
}

/* The results must not overlap themselves, each other or a partial, except
 * that `out` (`lse`) may be exactly one of the partial outputs (LSEs): rows
 * are read in full before the row is written. */
static sdpa_status check_results(sdpa_context *ctx, int n, const sdpa_tensor *outs,
                                 const sdpa_tensor *lses, const sdpa_tensor *out,
                                 const sdpa_tensor *lse)
{
    SDPA__TRY(sdpa__check_no_self_overlap(ctx, "sdpa_merge: out", out));
    SDPA__TRY(sdpa__check_no_self_overlap(ctx, "sdpa_merge: lse", lse));
    SDPA__TRY(sdpa__check_disjoint(ctx, "sdpa_merge: out", out, "lse", lse));
    for (int i = 0; i < n; i++) {
        char o[32], l[32];
        snprintf(o, sizeof o, "partial[%d] output", i);
        snprintf(l, sizeof l, "partial[%d] lse", i);
        if (!sdpa__tensors_same_view(out, &outs[i]))
            SDPA__TRY(sdpa__check_disjoint(ctx, "sdpa_merge: out", out, o, &outs[i]));
        if (!sdpa__tensors_same_view(lse, &lses[i]))
            SDPA__TRY(sdpa__check_disjoint(ctx, "sdpa_merge: lse", lse, l, &lses[i]));
        SDPA__TRY(sdpa__check_disjoint(ctx, "sdpa_merge: out", out, l, &lses[i]));
        SDPA__TRY(sdpa__check_disjoint(ctx, "sdpa_merge: lse", lse, o, &outs[i]));
    }
    return SDPA_OK;
}

/* The sinks: a (1, H, 1, 1) f32 input, disjoint from the results. */
static sdpa_status check_sinks(sdpa_context *ctx, const sdpa_tensor *sinks,
                               const sdpa_tensor *out, const sdpa_tensor *lse)
{
    SDPA__TRY(sdpa__check_layout(ctx, "sinks", sinks, true));
    SDPA__CHECK(ctx, sinks->dtype == SDPA_DTYPE_F32, SDPA_ERR_DTYPE,
                "sdpa_merge_sinks: sinks dtype is %s, not f32", sdpa_dtype_name(sinks->dtype));
    for (int a = 0; a < 4; a++) {
        int64_t want = a == 1 ? out->shape[1] : 1;
        SDPA__CHECK(ctx, sinks->shape[a] == want, SDPA_ERR_SHAPE,
                    "sdpa_merge_sinks: sinks shape[%d] is %lld, expected %lld (1, H, 1, 1)", a,
                    (long long)sinks->shape[a], (long long)want);
    }
    SDPA__TRY(sdpa__check_disjoint(ctx, "sdpa_merge: out", out, "sinks", sinks));
    SDPA__TRY(sdpa__check_disjoint(ctx, "sdpa_merge: lse", lse, "sinks", sinks));
    return SDPA_OK;
}

sdpa_status sdpa_merge(sdpa_context *ctx, int n, const sdpa_tensor *outs,
                       const sdpa_tensor *lses, const sdpa_tensor *out,
                       const sdpa_tensor *lse)
{
    return sdpa_merge_sinks(ctx, n, outs, lses, NULL, out, lse);
}

sdpa_status sdpa_merge_sinks(sdpa_context *ctx, int n, const sdpa_tensor *outs,
                             const sdpa_tensor *lses, const sdpa_tensor *sinks,
                             const sdpa_tensor *out, const sdpa_tensor *lse)
{
    if (!ctx) return SDPA_ERR_NULL;
    SDPA__CHECK_ARG(ctx, outs, "sdpa_merge", "outs");
    SDPA__CHECK_ARG(ctx, lses, "sdpa_merge", "lses");
    SDPA__CHECK_ARG(ctx, out, "sdpa_merge", "out");
    SDPA__CHECK_ARG(ctx, lse, "sdpa_merge", "lse");
    SDPA__CHECK(ctx, n >= 1 && n <= SDPA__MERGE_MAX, SDPA_ERR_INVALID_ARG,
                "sdpa_merge: n is %d, must lie in [1, %d]", n, SDPA__MERGE_MAX);
    for (int i = 0; i < n; i++) SDPA__TRY(check_pair(ctx, &outs[i], &lses[i], out, "partial", i));
    SDPA__TRY(check_pair(ctx, out, lse, out, "result", 0));
    SDPA__TRY(check_results(ctx, n, outs, lses, out, lse));
    if (sinks) SDPA__TRY(check_sinks(ctx, sinks, out, lse));
    SDPA__TRY(sdpa_context_finish(ctx));

    const int64_t B = out->shape[0], H = out->shape[1], S = out->shape[2], Dv = out->shape[3];
    const int nref = 2 * n + 2 + (sinks != NULL);
    sdpa__ref *ro = sdpa__calloc((size_t)nref, sizeof *ro);
    double *row = sdpa__malloc((size_t)Dv * sizeof *row);
    const int group = SDPA__T_COUNT + SDPA__G_COUNT; /* refs one staging holds */
    int nst = (nref + group - 1) / group;
    sdpa__staging *st = sdpa__malloc((size_t)nst * sizeof *st);
    sdpa_status s = SDPA_OK;
    if (!ro || !row || !st) s = SDPA__FAIL(ctx, SDPA_ERR_OUT_OF_MEMORY, "sdpa_merge: out of host memory");
    for (int k = 0; s == SDPA_OK && k < nst; k++) sdpa__staging_init(&st[k], ctx, &ctx->primary, true);
    /* refs: partial outputs, partial lses, out, lse, sinks; staged in groups */
    for (int i = 0; s == SDPA_OK && i < nref; i++) {
        const sdpa_tensor *t = i < n ? &outs[i] : i < 2 * n ? &lses[i - n] : i == 2 * n ? out
                             : i == 2 * n + 1 ? lse : sinks;
        s = sdpa__stage(&st[i / group], t, i == 2 * n || i == 2 * n + 1, &ro[i]);
    }
    for (int64_t b = 0; s == SDPA_OK && b < B; b++)
        for (int64_t h = 0; h < H; h++)
            for (int64_t r = 0; r < S; r++) {
                /* the sink: a partial with output 0 and lse sink_h */
                const double sink = sinks ? ((const float *)ro[2 * n + 2].mem)[sdpa__at(
                                                &ro[2 * n + 2], 0, h, 0, 0)]
                                          : -INFINITY;
                double m = sink;
                for (int i = 0; i < n; i++) {
                    double l = ((const float *)ro[n + i].mem)[sdpa__at(&ro[n + i], b, h, r, 0)];
                    if (l > m || isnan(l)) m = l;
                }
                double sum = sink == -INFINITY || isnan(m) ? 0.0 : exp(sink - m);
                for (int64_t d = 0; d < Dv; d++) row[d] = 0.0;
                if (m != -INFINITY) {
                    for (int i = 0; i < n; i++) {
                        double l = ((const float *)ro[n + i].mem)[sdpa__at(&ro[n + i], b, h, r, 0)];
                        double w = isnan(m) ? NAN : exp(l - m);
                        if (w == 0.0) continue;
                        sum += w;
                        for (int64_t d = 0; d < Dv; d++)
                            row[d] += w * sdpa__load_float(ro[i].mem, outs[i].dtype,
                                                           sdpa__at(&ro[i], b, h, r, d));
                    }
                    for (int64_t d = 0; d < Dv; d++) row[d] /= sum;
                }
                for (int64_t d = 0; d < Dv; d++)
                    sdpa__store_float(ro[2 * n].mem, out->dtype, sdpa__at(&ro[2 * n], b, h, r, d), (float)row[d]);
                ((float *)ro[2 * n + 1].mem)[sdpa__at(&ro[2 * n + 1], b, h, r, 0)] =
                    m == -INFINITY ? -INFINITY : (float)(m + log(sum));
            }
    for (int k = 0; st && k < nst; k++) {
        if (s == SDPA_OK) s = sdpa__staging_finish(&st[k]);
        sdpa__staging_free(&st[k]);
    }
    free(st);
    free(row);
    free(ro);
    return s;
}
