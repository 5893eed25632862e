/*
 * cl_forward.c — enqueues the forward pass of a plan.
 *
 * Sequence: pack q (norm, gain, scale), k (norm, gain; tile-major) and v
 * into the plan's workspace (k and v not with kv_direct: K/V of their own
 * dtype, q8_0 / q4_0 or paged, which sdpa_fwd reads in place through
 * kv_access.cl); run sdpa_fwd; then either sdpa_combine (split-KV
 * decode) or, with statistics, sdpa_stats. Plans with direct_kv (decode
 * shapes, cl_plan.c) pack q only, run sdpa_decode (decode.cl) on the user's
 * K/V in place and always sdpa_combine. Everything is enqueued in order
 * on the context's queue and nothing is allocated. An enqueue refused for
 * resources reruns the whole sequence once on a smaller configuration
 * (sdpa__cl_retry). Also exports the pack
 * helper used by cl_backward.c. Called through the backend table.
 */
#include "cl_internal.h"

#include "cl_forward.h"
#include "capabilities.h"

#include <stdio.h>

/* Work-group size for the simple per-row kernels (pack, combine, stats,
 * prep, reduce): 64 on GPUs; 128 on CPU devices, where each work-group costs
 * a scheduling round trip (PoCL) and the work-items of a group run as a loop;
 * at most what the device and each of these kernels take (cl_plan.c). */
size_t sdpa__cl_small_wg(const sdpa__cl_plan *pl) { return (size_t)pl->swg; }

sdpa_status sdpa__cl_pack(sdpa_context *ctx, sdpa__cl_state *st, sdpa__cl_plan *pl,
                          const sdpa__problem *p, const sdpa__ref *x, int64_t H,
                          int64_t S, int SP, int64_t dim, int transpose, bool normed,
                          const sdpa__ref *gain, const sdpa__ref *temp, float scale,
                          cl_mem dst)
{
    sdpa__cl_args a = {pl->k_pack, 0, CL_SUCCESS, st->dummy};
    int64_t rows = p->B * H * SP;
    sdpa__cl_arg_ref(&a, x);
    sdpa__cl_arg_i32(&a, (int)H);
    sdpa__cl_arg_i32(&a, (int)S);
    sdpa__cl_arg_i32(&a, SP);
    sdpa__cl_arg_i32(&a, (int)dim);
    sdpa__cl_arg_i64(&a, rows);
    sdpa__cl_arg_i32(&a, transpose);
    sdpa__cl_arg_i32(&a, pl->kt);
    sdpa__cl_arg_i32(&a, normed ? (int)p->qk_norm : 0);
    sdpa__cl_arg_f32(&a, (float)p->qk_norm_eps);
    bool has_gain = normed && gain && gain->mem;
    bool has_temp = temp && temp->mem;
    sdpa__cl_arg_mem(&a, has_gain ? (cl_mem)gain->mem : NULL);
    sdpa__cl_arg_i64(&a, has_gain ? (int64_t)gain->offset : 0);
    sdpa__cl_arg_i64(&a, has_gain ? gain->stride[3] : 0);
    sdpa__cl_arg_i32(&a, has_gain);
    sdpa__cl_arg_mem(&a, has_temp ? (cl_mem)temp->mem : NULL);
    sdpa__cl_arg_i64(&a, has_temp ? (int64_t)temp->offset : 0);
    sdpa__cl_arg_i64(&a, has_temp ? temp->stride[1] : 0);
    sdpa__cl_arg_i32(&a, has_temp);
    sdpa__cl_arg_f32(&a, scale);
    sdpa__cl_arg_mem(&a, dst);
    SDPA__CL_CHECK(ctx, a.err, "clSetKernelArg(sdpa_pack)");
    size_t g = (size_t)rows, l = sdpa__cl_small_wg(pl);
    return sdpa__cl_launch(ctx, st, pl->k_pack, "sdpa_pack", 1, &g, &l);
}

/* The score inputs on the host, in one place: their build options here, and
 * their arguments in sdpa__cl_common_args (the kernels' SDPA_COMMON_ARGS
 * block and score pipeline live in prelude.cl). */
void sdpa__cl_score_options(const sdpa__problem *p, char *buf, size_t size)
{
    snprintf(buf, size, "-DHAS_MASK=%d -DHAS_BIAS=%d -DHAS_SOFTCAP=%d -DHAS_ALIBI=%d "
             "-DHAS_SINKS=%d", p->has_mask, p->has_bias, p->softcap > 0, p->has_alibi_slopes,
             p->has_sinks);
}

sdpa_dtype sdpa__cl_kv_dtype(const sdpa__problem *p)
{
    return p->kv_dtype != SDPA_DTYPE_NONE ? p->kv_dtype : p->dtype;
}

bool sdpa__cl_kv_in_place(const sdpa__problem *p)
{
    const sdpa_dtype kv = sdpa__cl_kv_dtype(p);
    return kv != p->dtype || sdpa__dtype_is_block(kv) || p->has_block_table;
}

void sdpa__cl_kv_options(const sdpa__problem *p, const sdpa__cl_plan *pl, char *buf,
                         size_t size)
{
    snprintf(buf, size, "-DKV_DT=%d -DKV_PAGED=%d -DKV_DIRECT=%d", (int)sdpa__cl_kv_dtype(p),
             p->has_block_table, pl->kv_direct);
}

void sdpa__cl_kv_args(sdpa__cl_args *a, const sdpa__problem *p, const sdpa__fwd_args *f)
{
    const bool paged = p->has_block_table;
    sdpa__cl_arg_ref(a, paged ? &f->k_pages : &f->k);
    sdpa__cl_arg_ref(a, paged ? &f->v_pages : &f->v);
    if (!paged) return; /* KV_PAGED: the table's arguments */
    sdpa__cl_arg_mem(a, (cl_mem)f->block_table.mem);
    sdpa__cl_arg_i64(a, (int64_t)f->block_table.offset);
    sdpa__cl_arg_i64(a, f->block_table.stride[0]);
    sdpa__cl_arg_i64(a, f->block_table.stride[3]);
    sdpa__cl_arg_i32(a, (int)p->page);
    sdpa__cl_arg_i32(a, (int)p->pages);
}

/* The argument block common to the attention kernels (SDPA_COMMON_ARGS in
 * prelude.cl: sdpa_fwd, sdpa_decode, sdpa_bwd_dq, sdpa_bwd_dkdv,
 * sdpa_unf_softmax) after their leading buffers: dims, band, score inputs. */
void sdpa__cl_common_args(sdpa__cl_args *a, const sdpa__cl_plan *pl,
                          const sdpa__problem *p, const sdpa__fwd_args *f)
{
    sdpa__cl_arg_i32(a, (int)p->Hq);
    sdpa__cl_arg_i32(a, (int)p->Hkv);
    sdpa__cl_arg_i32(a, (int)p->Sq);
    sdpa__cl_arg_i32(a, (int)p->Skv);
    sdpa__cl_arg_i32(a, pl->SqP);
    sdpa__cl_arg_i32(a, pl->SkvP);
    sdpa__cl_arg_i32(a, (int)p->diagonal);
    sdpa__cl_arg_i64(a, p->diagonal_offset);
    sdpa__cl_arg_i64(a, p->window_left);
    sdpa__cl_arg_i64(a, p->window_right);
    sdpa__cl_arg_f32(a, (float)p->softcap);
    sdpa__cl_arg_mem(a, p->has_kv_len ? (cl_mem)f->kv_len.mem : NULL);
    sdpa__cl_arg_i64(a, p->has_kv_len ? (int64_t)f->kv_len.offset : 0);
    sdpa__cl_arg_i64(a, p->has_kv_len ? f->kv_len.stride[0] : 0);
    sdpa__cl_arg_i32(a, p->has_kv_len);
    sdpa__cl_arg_ref(a, &f->mask);
    sdpa__cl_arg_ref(a, &f->bias);
    if (p->has_alibi_slopes) { /* HAS_ALIBI: SDPA_ALIBI_ARGS */
        sdpa__cl_arg_i64(a, p->alibi_offset);
        sdpa__cl_arg_mem(a, (cl_mem)f->alibi_slopes.mem);
        sdpa__cl_arg_i64(a, (int64_t)f->alibi_slopes.offset);
        sdpa__cl_arg_i64(a, f->alibi_slopes.stride[1]);
    }
    if (p->has_sinks) { /* HAS_SINKS: SDPA_SINKS_ARGS */
        sdpa__cl_arg_mem(a, (cl_mem)f->sinks.mem);
        sdpa__cl_arg_i64(a, (int64_t)f->sinks.offset);
        sdpa__cl_arg_i64(a, f->sinks.stride[1]);
    }
}

float sdpa__cl_scale(const sdpa__problem *p) { return (float)p->scale; }

sdpa_status sdpa__cl_combine(sdpa_context *ctx, sdpa__cl_state *st, sdpa__cl_plan *pl,
                             const sdpa__problem *p, const sdpa__fwd_args *f)
{
    size_t ls = sdpa__cl_small_wg(pl);
    int64_t R = p->B * p->Hq * p->Sq;
    sdpa__cl_args c = {pl->k_combine, 0, CL_SUCCESS, st->dummy};
    sdpa__cl_arg_mem(&c, pl->ws_part_o);
    sdpa__cl_arg_mem(&c, pl->ws_part_l);
    sdpa__cl_arg_i32(&c, pl->nsplit);
    sdpa__cl_arg_i64(&c, R);
    sdpa__cl_arg_i32(&c, (int)p->Hq);
    sdpa__cl_arg_i32(&c, (int)p->Sq);
    sdpa__cl_arg_ref(&c, &f->out);
    sdpa__cl_arg_ref(&c, &f->lse);
    sdpa__cl_arg_i32(&c, p->has_lse);
    SDPA__CL_CHECK(ctx, c.err, "clSetKernelArg(sdpa_combine)");
    size_t g = (size_t)R;
    return sdpa__cl_launch(ctx, st, pl->k_combine, "sdpa_combine", 1, &g, &ls);
}

/* direct_kv plans: sdpa_decode (decode.cl, or decode_gpu.cl on GPU-class
 * devices: a work-group per item of decode.cl's range) on the user's K and
 * V, through their strides, writing the split partials (q is packed first). */
static sdpa_status direct_decode(sdpa_context *ctx, sdpa__cl_state *st, sdpa__cl_plan *pl,
                                 const sdpa__problem *p, const sdpa__fwd_args *f)
{
    int64_t nbhk = p->B * p->Hkv;
    sdpa__cl_args a = {pl->k_decode, 0, CL_SUCCESS, st->dummy};
    sdpa__cl_arg_mem(&a, pl->ws_q);
    sdpa__cl_common_args(&a, pl, p, f);
    sdpa__cl_kv_args(&a, p, f);
    sdpa__cl_arg_i64(&a, nbhk);
    sdpa__cl_arg_i32(&a, pl->nrb);
    sdpa__cl_arg_i32(&a, pl->nsplit);
    sdpa__cl_arg_i32(&a, pl->chunk);
    sdpa__cl_arg_mem(&a, pl->ws_part_o);
    sdpa__cl_arg_mem(&a, pl->ws_part_l);
    SDPA__CL_CHECK(ctx, a.err, "clSetKernelArg(sdpa_decode)");
    size_t g = (size_t)(nbhk * pl->nsplit * pl->nrb), l = (size_t)pl->dwg;
    if (pl->dgpu) g *= l; /* decode_gpu.cl: a work-group per (bhk, split, row block) */
    return sdpa__cl_launch(ctx, st, pl->k_decode, "sdpa_decode", 1, &g, &l);
}

static sdpa_status forward_once(sdpa_context *ctx, sdpa__cl_state *st, sdpa__cl_plan *pl,
                                const sdpa__problem *p, const sdpa__fwd_args *f)
{
    if (pl->unfused) return sdpa__cl_unfused_forward(ctx, st, pl, p, f);
    const sdpa__ref *temp = p->has_temperature ? &f->temperature : NULL;
    SDPA__TRY(sdpa__cl_pack(ctx, st, pl, p, &f->q, p->Hq, p->Sq, pl->SqP, p->D, false, true,
                            p->has_q_gain ? &f->q_gain : NULL, temp, sdpa__cl_scale(p),
                            pl->ws_q));
    if (pl->direct_kv) {
        SDPA__TRY(direct_decode(ctx, st, pl, p, f));
        return sdpa__cl_combine(ctx, st, pl, p, f);
    }
    if (!pl->kv_direct) { /* kv_direct: sdpa_fwd stages the caller's K/V itself */
        SDPA__TRY(sdpa__cl_pack(ctx, st, pl, p, &f->k, p->Hkv, p->Skv, pl->SkvT, p->D, 2,
                                true, p->has_k_gain ? &f->k_gain : NULL, NULL, 1.0f,
                                pl->ws_kt));
        SDPA__TRY(sdpa__cl_pack(ctx, st, pl, p, &f->v, p->Hkv, p->Skv, pl->SkvP, p->Dv, false,
                                false, NULL, NULL, 1.0f, pl->ws_v));
    }

    sdpa__cl_args a = {pl->k_fwd, 0, CL_SUCCESS, st->dummy};
    sdpa__cl_arg_mem(&a, pl->ws_q);
    sdpa__cl_arg_mem(&a, pl->ws_kt);
    sdpa__cl_arg_mem(&a, pl->ws_v);
    sdpa__cl_common_args(&a, pl, p, f);
    sdpa__cl_kv_args(&a, p, f);
    sdpa__cl_arg_ref(&a, &f->out);
    sdpa__cl_arg_ref(&a, &f->lse);
    sdpa__cl_arg_i32(&a, p->has_lse);
    sdpa__cl_arg_mem(&a, pl->ws_rowstats);
    sdpa__cl_arg_i32(&a, pl->nsplit);
    sdpa__cl_arg_i32(&a, pl->chunk);
    sdpa__cl_arg_mem(&a, pl->ws_part_o);
    sdpa__cl_arg_mem(&a, pl->ws_part_l);
    SDPA__CL_CHECK(ctx, a.err, "clSetKernelArg(sdpa_fwd)");
    size_t wg = (size_t)pl->wg, rows = (size_t)(pl->block ? pl->br : pl->wg * pl->rpw);
    size_t nr = (size_t)(p->Hq / p->Hkv * p->Sq); /* GQA heads folded into rows */
    size_t g3[3] = {(nr + rows - 1) / rows * wg, (size_t)(p->B * p->Hkv), (size_t)pl->nsplit};
    size_t l3[3] = {wg, 1, 1};
    SDPA__TRY(sdpa__cl_launch(ctx, st, pl->k_fwd, "sdpa_fwd", 3, g3, l3));

    if (pl->nsplit > 1) SDPA__TRY(sdpa__cl_combine(ctx, st, pl, p, f));
    if (p->has_stats) SDPA__TRY(sdpa__cl_reduce_stats(ctx, st, pl, p, f));
    return SDPA_OK;
}

sdpa_status sdpa__cl_forward(sdpa_context *ctx, void *state, void *plan_state,
                             const sdpa__problem *p, const sdpa__fwd_args *f)
{
    sdpa__cl_state *st = state;
    sdpa__cl_plan *pl = plan_state;
    st->launch_err = CL_SUCCESS;
    sdpa_status s = forward_once(ctx, st, pl, p, f);
    if (s != SDPA_OK && sdpa__cl_retry(ctx, st, p, pl)) s = forward_once(ctx, st, pl, p, f);
    return s;
}

sdpa_status sdpa__cl_reduce_stats(sdpa_context *ctx, sdpa__cl_state *st, sdpa__cl_plan *pl,
                                  const sdpa__problem *p, const sdpa__fwd_args *f)
{
    size_t ls = sdpa__cl_small_wg(pl);
    sdpa__cl_args s = {pl->k_stats, 0, CL_SUCCESS, st->dummy};
    sdpa__cl_arg_mem(&s, pl->ws_rowstats);
    sdpa__cl_arg_i64(&s, p->B * p->Hq);
    sdpa__cl_arg_i32(&s, (int)p->Hq);
    sdpa__cl_arg_i32(&s, (int)p->Sq);
    sdpa__cl_arg_f32(&s, (float)p->stats_saturation);
    sdpa__cl_arg_ref(&s, &f->stats);
    SDPA__CL_CHECK(ctx, s.err, "clSetKernelArg(sdpa_stats)");
    size_t g = (size_t)(p->B * p->Hq);
    return sdpa__cl_launch(ctx, st, pl->k_stats, "sdpa_stats", 1, &g, &ls);
}
