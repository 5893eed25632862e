/*
 * cl_backward.c — enqueues the backward pass of a plan (SDPA_PLAN_BACKWARD).
 *
 * Sequence: pack q^ * scale (rows and transposed), k^ (transposed and rows),
 * v (rows and transposed) and dout (rows and transposed) into workspace
 * (rows only for bwd_fa2.cl plans, GPU-class devices);
 * sdpa_bwd_prep (lse copy, D = rowsum(dout * out) and, with sinks, the
 * rows' -p_sink * D); sdpa_bwd_dq (RPW
 * query rows per work-item) and sdpa_bwd_dkdv (min(RPW, 2) keys per
 * work-item); then sdpa_reduce_cols for the q/k gain, temperature and
 * sink gradients (ALiBi needs nothing here: it is in the score pipeline). No atomics
 * anywhere and every sum runs in a fixed order, so reruns are bit-identical
 * (SDPA_PLAN_NONDETERMINISTIC changes nothing here). Nothing is allocated.
 * An enqueue refused for resources reruns the sequence once on a smaller
 * configuration (sdpa__cl_retry).
 * Called through the backend table.
 */
#include "cl_internal.h"

#include "cl_forward.h"

static sdpa_status reduce(sdpa_context *ctx, sdpa__cl_state *st, sdpa__cl_plan *pl,
                          cl_mem part, int64_t nrows, int64_t ncols, const sdpa__ref *dst,
                          int axis)
{
    sdpa__cl_args a = {pl->k_reduce, 0, CL_SUCCESS, st->dummy};
    sdpa__cl_arg_mem(&a, part);
    sdpa__cl_arg_i64(&a, nrows);
    sdpa__cl_arg_i32(&a, (int)ncols);
    sdpa__cl_arg_mem(&a, (cl_mem)dst->mem);
    sdpa__cl_arg_i64(&a, (int64_t)dst->offset);
    sdpa__cl_arg_i64(&a, dst->stride[axis]);
    SDPA__CL_CHECK(ctx, a.err, "clSetKernelArg(sdpa_reduce_cols)");
    size_t g = (size_t)ncols, l = sdpa__cl_small_wg(pl);
    return sdpa__cl_launch(ctx, st, pl->k_reduce, "sdpa_reduce_cols", 1, &g, &l);
}

static sdpa_status backward_once(sdpa_context *ctx, sdpa__cl_state *st, sdpa__cl_plan *pl,
                                 const sdpa__problem *p, const sdpa__fwd_args *f,
                                 const sdpa__bwd_args *g)
{
    const sdpa__ref *temp = p->has_temperature ? &f->temperature : NULL;
    const sdpa__ref *qg = p->has_q_gain ? &f->q_gain : NULL;
    const sdpa__ref *kg = p->has_k_gain ? &f->k_gain : NULL;
    float scale = sdpa__cl_scale(p);
    SDPA__TRY(sdpa__cl_pack(ctx, st, pl, p, &f->q, p->Hq, p->Sq, pl->SqP, p->D, false, true,
                            qg, temp, scale, pl->ws_q));
    /* bwd_fa2.cl (pl->fa2) reads the row-major copies only */
    if (!pl->fa2) {
        SDPA__TRY(sdpa__cl_pack(ctx, st, pl, p, &f->q, p->Hq, p->Sq, pl->SqP, p->D, true, true,
                                qg, temp, scale, pl->ws_qt));
        SDPA__TRY(sdpa__cl_pack(ctx, st, pl, p, &f->k, p->Hkv, p->Skv, pl->SkvT, p->D, 2, true,
                                kg, NULL, 1.0f, pl->ws_kt));
    }
    SDPA__TRY(sdpa__cl_pack(ctx, st, pl, p, &f->k, p->Hkv, p->Skv, pl->SkvP, p->D, false,
                            true, kg, NULL, 1.0f, pl->ws_kp));
    SDPA__TRY(sdpa__cl_pack(ctx, st, pl, p, &f->v, p->Hkv, p->Skv, pl->SkvP, p->Dv, false,
                            false, NULL, NULL, 1.0f, pl->ws_v));
    if (!pl->fa2)
        SDPA__TRY(sdpa__cl_pack(ctx, st, pl, p, &f->v, p->Hkv, p->Skv, pl->SkvP, p->Dv, true,
                                false, NULL, NULL, 1.0f, pl->ws_vt));
    SDPA__TRY(sdpa__cl_pack(ctx, st, pl, p, &g->dout, p->Hq, p->Sq, pl->SqP, p->Dv, false,
                            false, NULL, NULL, 1.0f, pl->ws_dop));
    if (!pl->fa2)
        SDPA__TRY(sdpa__cl_pack(ctx, st, pl, p, &g->dout, p->Hq, p->Sq, pl->SqP, p->Dv, true,
                                false, NULL, NULL, 1.0f, pl->ws_dot));

    size_t ls = sdpa__cl_small_wg(pl);
    int64_t R = p->B * p->Hq * p->Sq;
    {
        sdpa__cl_args a = {pl->k_prep, 0, CL_SUCCESS, st->dummy};
        sdpa__cl_arg_ref(&a, &g->dout);
        sdpa__cl_arg_ref(&a, &f->out);
        sdpa__cl_arg_ref(&a, &f->lse);
        int64_t RP = p->B * p->Hq * pl->SqP;
        sdpa__cl_arg_i64(&a, RP);
        sdpa__cl_arg_i32(&a, (int)p->Hq);
        sdpa__cl_arg_i32(&a, (int)p->Sq);
        sdpa__cl_arg_i32(&a, pl->SqP);
        sdpa__cl_arg_mem(&a, pl->ws_l);
        sdpa__cl_arg_mem(&a, pl->ws_dsum);
        sdpa__cl_arg_mem(&a, p->has_sinks ? (cl_mem)f->sinks.mem : NULL);
        sdpa__cl_arg_i64(&a, p->has_sinks ? (int64_t)f->sinks.offset : 0);
        sdpa__cl_arg_i64(&a, p->has_sinks ? f->sinks.stride[1] : 0);
        sdpa__cl_arg_mem(&a, pl->ws_ds);
        SDPA__CL_CHECK(ctx, a.err, "clSetKernelArg(sdpa_bwd_prep)");
        size_t gs = (size_t)RP;
        SDPA__TRY(sdpa__cl_launch(ctx, st, pl->k_prep, "sdpa_bwd_prep", 1, &gs, &ls));
    }
    size_t wg = (size_t)pl->wg;
    {
        sdpa__cl_args a = {pl->k_dq, 0, CL_SUCCESS, st->dummy};
        sdpa__cl_arg_mem(&a, pl->ws_q);
        sdpa__cl_arg_mem(&a, pl->ws_kt);
        sdpa__cl_arg_mem(&a, pl->ws_kp);
        sdpa__cl_arg_mem(&a, pl->fa2 ? pl->ws_v : pl->ws_vt); /* bwd_fa2.cl: V rows */
        sdpa__cl_arg_mem(&a, pl->ws_dop);
        sdpa__cl_arg_mem(&a, pl->ws_l);
        sdpa__cl_arg_mem(&a, pl->ws_dsum);
        sdpa__cl_common_args(&a, pl, p, f);
        sdpa__cl_arg_ref(&a, &f->q);
        sdpa__cl_arg_f32(&a, (float)p->qk_norm_eps);
        sdpa__cl_arg_mem(&a, qg ? (cl_mem)qg->mem : NULL);
        sdpa__cl_arg_i64(&a, qg ? (int64_t)qg->offset : 0);
        sdpa__cl_arg_i64(&a, qg ? qg->stride[3] : 0);
        sdpa__cl_arg_i32(&a, qg != NULL);
        sdpa__cl_arg_mem(&a, temp ? (cl_mem)temp->mem : NULL);
        sdpa__cl_arg_i64(&a, temp ? (int64_t)temp->offset : 0);
        sdpa__cl_arg_i64(&a, temp ? temp->stride[1] : 0);
        sdpa__cl_arg_i32(&a, temp != NULL);
        sdpa__cl_arg_f32(&a, scale);
        sdpa__cl_arg_ref(&a, &g->dq);
        sdpa__cl_arg_mem(&a, pl->ws_gq);
        sdpa__cl_arg_mem(&a, pl->ws_tp);
        SDPA__CL_CHECK(ctx, a.err, "clSetKernelArg(sdpa_bwd_dq)");
        /* bwd_fa2.cl: a work-group per fbr rows */
        size_t rows = pl->fa2 ? (size_t)pl->fbr : wg * (size_t)pl->rpw;
        size_t g2[2] = {((size_t)p->Sq + rows - 1) / rows * wg, (size_t)(p->B * p->Hq)};
        size_t l2[2] = {wg, 1};
        SDPA__TRY(sdpa__cl_launch(ctx, st, pl->k_dq, "sdpa_bwd_dq", 2, g2, l2));
    }
    {
        sdpa__cl_args a = {pl->k_dkdv, 0, CL_SUCCESS, st->dummy};
        sdpa__cl_arg_mem(&a, pl->ws_q);
        sdpa__cl_arg_mem(&a, pl->ws_qt);
        sdpa__cl_arg_mem(&a, pl->ws_kp);
        sdpa__cl_arg_mem(&a, pl->ws_v);
        sdpa__cl_arg_mem(&a, pl->ws_dop);
        sdpa__cl_arg_mem(&a, pl->ws_dot);
        sdpa__cl_arg_mem(&a, pl->ws_l);
        sdpa__cl_arg_mem(&a, pl->ws_dsum);
        sdpa__cl_common_args(&a, pl, p, f);
        sdpa__cl_arg_ref(&a, &f->k);
        sdpa__cl_arg_f32(&a, (float)p->qk_norm_eps);
        sdpa__cl_arg_mem(&a, kg ? (cl_mem)kg->mem : NULL);
        sdpa__cl_arg_i64(&a, kg ? (int64_t)kg->offset : 0);
        sdpa__cl_arg_i64(&a, kg ? kg->stride[3] : 0);
        sdpa__cl_arg_i32(&a, kg != NULL);
        sdpa__cl_arg_ref(&a, &g->dk);
        sdpa__cl_arg_ref(&a, &g->dv);
        sdpa__cl_arg_mem(&a, pl->ws_gk);
        SDPA__CL_CHECK(ctx, a.err, "clSetKernelArg(sdpa_bwd_dkdv)");
        size_t keys = pl->fa2 ? (size_t)pl->fbc /* bwd_fa2.cl: a work-group per fbc keys */
                              : wg * (size_t)(pl->rpw > 2 ? 2 : pl->rpw); /* KPW in bwd.cl */
        size_t g2[2] = {((size_t)p->Skv + keys - 1) / keys * wg, (size_t)(p->B * p->Hkv)};
        size_t l2[2] = {wg, 1};
        SDPA__TRY(sdpa__cl_launch(ctx, st, pl->k_dkdv, "sdpa_bwd_dkdv", 2, g2, l2));
    }
    if (qg && g->dq_gain.mem)
        SDPA__TRY(reduce(ctx, st, pl, pl->ws_gq, R, p->D, &g->dq_gain, 3));
    if (kg && g->dk_gain.mem)
        SDPA__TRY(reduce(ctx, st, pl, pl->ws_gk, p->B * p->Hkv * p->Skv, p->D, &g->dk_gain, 3));
    if (temp && g->dtemperature.mem)
        SDPA__TRY(reduce(ctx, st, pl, pl->ws_tp, p->B * p->Sq, p->Hq, &g->dtemperature, 1));
    if (p->has_sinks && g->dsinks.mem)
        SDPA__TRY(reduce(ctx, st, pl, pl->ws_ds, p->B * pl->SqP, p->Hq, &g->dsinks, 1));
    return SDPA_OK;
}

sdpa_status sdpa__cl_backward(sdpa_context *ctx, void *state, void *plan_state,
                              const sdpa__problem *p, const sdpa__fwd_args *f,
                              const sdpa__bwd_args *g)
{
    sdpa__cl_state *st = state;
    sdpa__cl_plan *pl = plan_state;
    if (!pl->backward)
        return SDPA__FAIL(ctx, SDPA_ERR_INVALID_ARG,
                          "opencl: plan was created without SDPA_PLAN_BACKWARD");
    st->launch_err = CL_SUCCESS;
    sdpa_status s = backward_once(ctx, st, pl, p, f, g);
    if (s != SDPA_OK && sdpa__cl_retry(ctx, st, p, pl)) s = backward_once(ctx, st, pl, p, f, g);
    return s;
}
