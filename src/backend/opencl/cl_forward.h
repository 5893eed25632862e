/*
 * cl_forward.h — helpers cl_forward.c shares with cl_backward.c and
 * cl_unfused.c: packing a tensor into workspace, the argument block common to
 * the attention kernels, and the statistics reduction. See cl_forward.c.
 */
#ifndef SDPA_CL_FORWARD_H
#define SDPA_CL_FORWARD_H

#include "cl_internal.h"

size_t sdpa__cl_small_wg(const sdpa__cl_plan *pl);
sdpa_status sdpa__cl_pack(sdpa_context *ctx, sdpa__cl_state *st, sdpa__cl_plan *pl,
                          const sdpa__problem *p, const sdpa__ref *x, int64_t H,
                          int64_t S, int SP, int64_t dim, int transpose, bool normed,
                          const sdpa__ref *gain, const sdpa__ref *temp, float scale,
                          cl_mem dst);
/* The score inputs' build options (-DHAS_MASK ... -DHAS_SOFTCAP) into buf. */
void sdpa__cl_score_options(const sdpa__problem *p, char *buf, size_t size);
void sdpa__cl_common_args(sdpa__cl_args *a, const sdpa__cl_plan *pl,
                          const sdpa__problem *p, const sdpa__fwd_args *f);
/* K/V's storage dtype: p->kv_dtype, or q's where a problem built by hand
 * (tools, tests, before issue 19) leaves it SDPA_DTYPE_NONE. */
sdpa_dtype sdpa__cl_kv_dtype(const sdpa__problem *p);
/* Whether p's K/V must be read in place (kv_access.cl): a K/V dtype other
 * than q's, a block type, or pages (pack.cl packs only q's dtype). */
bool sdpa__cl_kv_in_place(const sdpa__problem *p);
/* The K/V build options (-DKV_DT, -DKV_PAGED, -DKV_DIRECT) into buf. */
void sdpa__cl_kv_options(const sdpa__problem *p, const sdpa__cl_plan *pl, char *buf,
                         size_t size);
/* The K/V source arguments (SDPA_KV_ARGS in kv_access.cl: k / v or the page
 * pools, and the block table) of sdpa_fwd and sdpa_decode. */
void sdpa__cl_kv_args(sdpa__cl_args *a, const sdpa__problem *p, const sdpa__fwd_args *f);
float sdpa__cl_scale(const sdpa__problem *p);
/* Merges the pl->nsplit partials (ws_part_o, ws_part_l) into out and lse in
 * their storage dtype and strides (combine.cl); shared by the split fused,
 * direct decode and unfused (one "split") forwards. */
sdpa_status sdpa__cl_combine(sdpa_context *ctx, sdpa__cl_state *st, sdpa__cl_plan *pl,
                             const sdpa__problem *p, const sdpa__fwd_args *f);
/* Reduces the per-row statistics partials (pl->ws_rowstats) into f->stats;
 * shared by the fused and unfused forwards. */
sdpa_status sdpa__cl_reduce_stats(sdpa_context *ctx, sdpa__cl_state *st, sdpa__cl_plan *pl,
                                  const sdpa__problem *p, const sdpa__fwd_args *f);

#endif
