/*
 * cl_unfused.c — the unfused (materialised-scores) forward of the OpenCL
 * backend, through CLBlast when the build has it (SDPA_HAVE_CLBLAST, meson
 * option `clblast`).
 *
 * Sequence per call: pack q^ * scale (QK-norm, gain, temperature applied),
 * k^ and v into dense f32 rows (pack.cl); S = Q K^T with one CLBlast GEMM per
 * (batch, KV head) whose M rows are the G = Hq / Hkv query heads of that KV
 * head stacked (they are contiguous in the packed q, so GQA needs no copy);
 * sdpa_unf_softmax (unfused.cl) turns S into P in place and writes the row
 * LSE (and statistics records); O = P V with a second GEMM per (batch, KV
 * head); sdpa_combine (nsplit = 1) writes out/lse in the storage dtype and
 * strides, sdpa_stats the statistics.
 * Invariants: it allocates nothing per call: the workspace (scores
 * B*Hq*Sq*Skv floats, packed q/k/v, O, LSE, row statistics) and CLBlast's
 * temporary buffer are allocated at plan creation, and only when their total
 * fits options->workspace_limit (SDPA_AUTO = 256 MiB; 0 = never), otherwise
 * SDPA_ERR_WORKSPACE names the bytes needed. Forward only (cl_plan.c
 * refuses unfused backward plans). Without CLBlast (not built in, or
 * libclblast.so.1 cannot be loaded at run time: clblast_api.h) the path is
 * refused with SDPA_ERR_UNSUPPORTED. Called by cl_plan.c and cl_forward.c.
 */
#include "cl_internal.h"

#include "cl_forward.h"
#include "cl_gemm.h"

#ifdef SDPA_HAVE_CLBLAST
#include "clblast_api.h"
#endif

const char *sdpa__cl_unfused_missing(void)
{
#ifdef SDPA_HAVE_CLBLAST
    return sdpa__clblast_api_load();
#else
    return "opencl: tile.unfused: the unfused path needs CLBlast, which this build "
           "does not have (meson option clblast)";
#endif
}

bool sdpa__cl_unfused_available(void)
{
    return sdpa__cl_unfused_missing() == NULL;
}

/* Floats of each unfused workspace array. */
typedef struct unf_sizes {
    int64_t s, q, k, v, o, l, rs;
} unf_sizes;

static unf_sizes unf_sizes_of(const sdpa__problem *p)
{
    unf_sizes z;
    int64_t R = p->B * p->Hq * p->Sq;
    z.s = R * p->Skv;
    z.q = R * p->D;
    z.k = p->B * p->Hkv * p->Skv * p->D;
    z.v = p->B * p->Hkv * p->Skv * p->Dv;
    z.o = R * p->Dv;
    z.l = R;
    z.rs = p->has_stats ? R * 10 : 0;
    return z;
}

uint64_t sdpa__cl_unfused_bytes(const sdpa__problem *p)
{
    unf_sizes z = unf_sizes_of(p);
    /* validation bounds every extent, so these products fit 63 bits for any
     * problem whose tensors fit memory; saturate anyway */
    long double f = (long double)z.s + z.q + z.k + z.v + z.o + z.l + z.rs;
    if (f * 4 > (long double)UINT64_MAX / 2) return UINT64_MAX / 2;
    return (uint64_t)(f * 4);
}

#ifdef SDPA_HAVE_CLBLAST
static sdpa_status clblast_fail(sdpa_context *ctx, CLBlastStatusCode c, const char *what)
{
    if (c == CLBlastOpenCLOutOfHostMemory || c == CLBlastOpenCLOutOfResources ||
        c == CLBlastTempBufferAllocFailure)
        return SDPA__FAIL_NATIVE(ctx, SDPA_ERR_OUT_OF_MEMORY, (int)c,
                                 "opencl: CLBlast %s failed (status %d)", what, (int)c);
    if (c == CLBlastOpenCLBuildProgramFailure)
        return SDPA__FAIL_NATIVE(ctx, SDPA_ERR_BUILD, (int)c,
                                 "opencl: CLBlast %s: its kernel did not build (status %d)",
                                 what, (int)c);
    return SDPA__FAIL_NATIVE(ctx, SDPA_ERR_DEVICE, (int)c,
                             "opencl: CLBlast %s failed (status %d)", what, (int)c);
}

/* The two GEMMs of batch entry bhk (b * Hkv + hk), row-major:
 * gemm 0: S[G*Sq x Skv] = Q[G*Sq x D] K[Skv x D]^T;
 * gemm 1: O[G*Sq x Dv] = P[G*Sq x Skv] V[Skv x Dv]. */
typedef struct gemm_shape {
    size_t m, n, k, a_off, a_ld, b_off, b_ld, c_off, c_ld;
    CLBlastTranspose bt;
} gemm_shape;

static gemm_shape gemm_of(const sdpa__problem *p, int which, int64_t bhk)
{
    size_t G = (size_t)(p->Hq / p->Hkv), Sq = (size_t)p->Sq, Skv = (size_t)p->Skv;
    size_t D = (size_t)p->D, Dv = (size_t)p->Dv, e = (size_t)bhk;
    gemm_shape g;
    g.m = G * Sq;
    if (which == 0) {
        g.n = Skv, g.k = D;
        g.a_off = e * G * Sq * D, g.a_ld = D;
        g.b_off = e * Skv * D, g.b_ld = D, g.bt = CLBlastTransposeYes;
        g.c_off = e * G * Sq * Skv, g.c_ld = Skv;
    } else {
        g.n = Dv, g.k = Skv;
        g.a_off = e * G * Sq * Skv, g.a_ld = Skv;
        g.b_off = e * Skv * Dv, g.b_ld = Dv, g.bt = CLBlastTransposeNo;
        g.c_off = e * G * Sq * Dv, g.c_ld = Dv;
    }
    return g;
}

/* CLBlast's temporary buffer under the parameters in force: the largest any
 * of the calls needs (it depends on the offsets, so ask for the last batch
 * entry too). */
static sdpa_status temp_bytes(sdpa_context *ctx, sdpa__cl_state *st, const sdpa__problem *p,
                              size_t *tmp)
{
    *tmp = 0;
    int64_t last = p->B * p->Hkv - 1;
    for (int which = 0; which < 2; which++)
        for (int e = 0; e < 2; e++) {
            gemm_shape g = gemm_of(p, which, e ? last : 0);
            size_t need = 0;
            CLBlastStatusCode c = CLBlastSGemmTempBufferSize(
                CLBlastLayoutRowMajor, CLBlastTransposeNo, g.bt, g.m, g.n, g.k, g.a_off,
                g.a_ld, g.b_off, g.b_ld, g.c_off, g.c_ld, &st->queue, &need);
            if (c != CLBlastSuccess) return clblast_fail(ctx, c, "GemmTempBufferSize");
            if (need > *tmp) *tmp = need;
        }
    return SDPA_OK;
}
#endif

sdpa_status sdpa__cl_unfused_setup(sdpa_context *ctx, sdpa__cl_state *st,
                                   const sdpa__problem *p, sdpa__cl_plan *pl,
                                   int64_t workspace_limit)
{
#ifdef SDPA_HAVE_CLBLAST
    const char *why = sdpa__cl_unfused_missing();
    SDPA__CHECK(ctx, !why, SDPA_ERR_UNSUPPORTED, "%s", why);
    /* The plan's CLBlast parameter set first: the temporary buffer's size
     * depends on it. */
    if (pl->gemm > 0) SDPA__TRY(sdpa__cl_gemm_apply(ctx, st->device, pl->gemm));
    size_t tmp;
    SDPA__TRY(temp_bytes(ctx, st, p, &tmp));
    uint64_t limit = workspace_limit == SDPA_AUTO ? SDPA__CL_DEFAULT_WORKSPACE_LIMIT
                                                  : (uint64_t)workspace_limit;
    uint64_t need = sdpa__cl_unfused_bytes(p) + tmp;
    if (need > limit)
        return SDPA__FAIL(ctx, SDPA_ERR_WORKSPACE,
                          "opencl: the unfused path needs %llu bytes of workspace "
                          "(scores B*Hq*Sq*Skv = %lld floats, packed inputs, CLBlast "
                          "temporary %zu bytes); workspace_limit is %llu",
                          (unsigned long long)need,
                          (long long)(p->B * p->Hq * p->Sq * p->Skv), tmp,
                          (unsigned long long)limit);
    unf_sizes z = unf_sizes_of(p);
    SDPA__TRY(sdpa__cl_ws_alloc(ctx, st, pl, &pl->ws_s, z.s, "unfused scores"));
    SDPA__TRY(sdpa__cl_ws_alloc(ctx, st, pl, &pl->ws_q, z.q, "unfused packed q"));
    SDPA__TRY(sdpa__cl_ws_alloc(ctx, st, pl, &pl->ws_kt, z.k, "unfused packed k"));
    SDPA__TRY(sdpa__cl_ws_alloc(ctx, st, pl, &pl->ws_v, z.v, "unfused packed v"));
    SDPA__TRY(sdpa__cl_ws_alloc(ctx, st, pl, &pl->ws_part_o, z.o, "unfused output"));
    SDPA__TRY(sdpa__cl_ws_alloc(ctx, st, pl, &pl->ws_part_l, z.l, "unfused lse"));
    if (z.rs) SDPA__TRY(sdpa__cl_ws_alloc(ctx, st, pl, &pl->ws_rowstats, z.rs,
                                          "row statistics"));
    /* at least one float so the buffer exists even when CLBlast needs none */
    SDPA__TRY(sdpa__cl_ws_alloc(ctx, st, pl, &pl->ws_tmp, (int64_t)((tmp + 3) / 4) + 1,
                                "CLBlast temporary buffer"));
    pl->tmp_bytes = tmp;
    pl->gemm_at_setup = sdpa__cl_gemm_current(st->device);
    /* GEMMs run with beta = 0; start from zeros so nothing undefined is
     * ever read back from C. */
    float zero = 0.0f;
    cl_mem zs[] = {pl->ws_s, pl->ws_part_o};
    size_t zn[] = {(size_t)z.s * 4, (size_t)z.o * 4};
    for (int i = 0; i < 2; i++)
        SDPA__CL_CHECK(ctx, clEnqueueFillBuffer(st->queue, zs[i], &zero, sizeof zero, 0,
                                                zn[i], 0, NULL, NULL),
                       "clEnqueueFillBuffer(unfused workspace)");
    return SDPA_OK;
#else
    (void)st; (void)p; (void)pl; (void)workspace_limit;
    return SDPA__FAIL(ctx, SDPA_ERR_UNSUPPORTED,
                      "opencl: the unfused path needs CLBlast, which this build does not have");
#endif
}

sdpa_status sdpa__cl_unfused_forward(sdpa_context *ctx, sdpa__cl_state *st,
                                     sdpa__cl_plan *pl, const sdpa__problem *p,
                                     const sdpa__fwd_args *f)
{
#ifdef SDPA_HAVE_CLBLAST
    /* The CLBlast parameter set is process-wide per device: another plan may
     * have put a different one in force since this plan was made. Put ours
     * back (CLBlast then rebuilds its kernel), or, for a plan made under
     * CLBlast's own parameters, run under the set in force after checking
     * that the temporary buffer still suffices. */
    if (pl->gemm > 0) SDPA__TRY(sdpa__cl_gemm_apply(ctx, st->device, pl->gemm));
    int in_force = sdpa__cl_gemm_current(st->device);
    if (in_force != pl->gemm_at_setup) {
        size_t tmp;
        SDPA__TRY(temp_bytes(ctx, st, p, &tmp));
        if (tmp > pl->tmp_bytes)
            return SDPA__FAIL(ctx, SDPA_ERR_WORKSPACE,
                              "opencl: CLBlast parameter set %d, put in force for this device "
                              "by a later plan, needs a %zu-byte temporary buffer; this plan "
                              "has %zu: recreate the plan", in_force, tmp, pl->tmp_bytes);
    }
    const sdpa__ref *temp = p->has_temperature ? &f->temperature : NULL;
    SDPA__TRY(sdpa__cl_pack(ctx, st, pl, p, &f->q, p->Hq, p->Sq, (int)p->Sq, p->D, 0, true,
                            p->has_q_gain ? &f->q_gain : NULL, temp, sdpa__cl_scale(p),
                            pl->ws_q));
    SDPA__TRY(sdpa__cl_pack(ctx, st, pl, p, &f->k, p->Hkv, p->Skv, (int)p->Skv, p->D, 0, true,
                            p->has_k_gain ? &f->k_gain : NULL, NULL, 1.0f, pl->ws_kt));
    SDPA__TRY(sdpa__cl_pack(ctx, st, pl, p, &f->v, p->Hkv, p->Skv, (int)p->Skv, p->Dv, 0,
                            false, NULL, NULL, 1.0f, pl->ws_v));
    int64_t BHkv = p->B * p->Hkv, R = p->B * p->Hq * p->Sq;
    for (int64_t e = 0; e < BHkv; e++) {
        gemm_shape g = gemm_of(p, 0, e);
        CLBlastStatusCode c = CLBlastSgemmWithTempBuffer(
            CLBlastLayoutRowMajor, CLBlastTransposeNo, g.bt, g.m, g.n, g.k, 1.0f, pl->ws_q,
            g.a_off, g.a_ld, pl->ws_kt, g.b_off, g.b_ld, 0.0f, pl->ws_s, g.c_off, g.c_ld,
            &st->queue, NULL, pl->ws_tmp);
        if (c != CLBlastSuccess) return clblast_fail(ctx, c, "Sgemm (scores)");
    }

    size_t ls = sdpa__cl_small_wg(pl);
    sdpa__cl_args a = {pl->k_softmax, 0, CL_SUCCESS, st->dummy};
    sdpa__cl_arg_mem(&a, pl->ws_s);
    sdpa__cl_arg_i64(&a, R);
    sdpa__cl_common_args(&a, pl, p, f);
    sdpa__cl_arg_mem(&a, pl->ws_part_l);
    sdpa__cl_arg_mem(&a, pl->ws_rowstats);
    SDPA__CL_CHECK(ctx, a.err, "clSetKernelArg(sdpa_unf_softmax)");
    size_t gr = (size_t)R;
    SDPA__TRY(sdpa__cl_launch(ctx, st, pl->k_softmax, "sdpa_unf_softmax", 1, &gr, &ls));

    for (int64_t e = 0; e < BHkv; e++) {
        gemm_shape g = gemm_of(p, 1, e);
        CLBlastStatusCode c = CLBlastSgemmWithTempBuffer(
            CLBlastLayoutRowMajor, CLBlastTransposeNo, g.bt, g.m, g.n, g.k, 1.0f, pl->ws_s,
            g.a_off, g.a_ld, pl->ws_v, g.b_off, g.b_ld, 0.0f, pl->ws_part_o, g.c_off,
            g.c_ld, &st->queue, NULL, pl->ws_tmp);
        if (c != CLBlastSuccess) return clblast_fail(ctx, c, "Sgemm (P V)");
    }

    SDPA__TRY(sdpa__cl_combine(ctx, st, pl, p, f)); /* pl->nsplit is 1 here */
    if (p->has_stats) SDPA__TRY(sdpa__cl_reduce_stats(ctx, st, pl, p, f));
    return SDPA_OK;
#else
    (void)st; (void)pl; (void)p; (void)f;
    return SDPA__FAIL(ctx, SDPA_ERR_UNSUPPORTED, "opencl: unfused path not built");
#endif
}
