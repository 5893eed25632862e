/*
 * validate.h — the one validation front end: descriptions become shape keys
 * (a validated sdpa__problem plus every tensor's dtype and shape), and the
 * tensors of each call are checked against the plan's key.
 */
#ifndef SDPA_CORE_VALIDATE_H
#define SDPA_CORE_VALIDATE_H

#include "context_impl.h"

/* The slot enums (SDPA__T_*, SDPA__G_*), names and rules: slots.h. */

/* Validates every field of desc; fills key. */
sdpa_status sdpa__validate_desc(sdpa_context *ctx, const sdpa_attention_desc *desc,
                                sdpa__shape_key *key);

/* Checks a call's forward tensors against the plan's key (presence, dtype,
 * shape, data pointers, strides, buffer ownership and bounds, the values of
 * host key-count tensors; outputs may not broadcast or otherwise overlap themselves). In a backward call out, lse
 * and stats are inputs. */
sdpa_status sdpa__validate_forward_call(sdpa_context *ctx, const sdpa__shape_key *key,
                                        const sdpa_forward_tensors *t, bool backward);
/* Checks the backward tensors (expected dtypes and shapes follow the key). */
sdpa_status sdpa__validate_backward_call(sdpa_context *ctx, const sdpa__shape_key *key,
                                         const sdpa_backward_tensors *g);

/* Refuses a call whose outputs overlap one another or any tensor the call
 * reads (SDPA_ERR_INVALID_ARG, naming both); g = NULL for a forward call, else
 * out, lse and the other forward tensors are inputs. Outputs overlapping
 * themselves were refused (SDPA_ERR_STRIDE) by the call checks above. */
sdpa_status sdpa__validate_aliasing(sdpa_context *ctx, const sdpa_forward_tensors *t,
                                    const sdpa_backward_tensors *g);

/* Checks one tensor's layout: dtype known, extents positive, strides
 * non-negative, span free of overflow; with need_data, exactly one of
 * buf/host, the buffer belongs to ctx and the span lies inside it. */
sdpa_status sdpa__check_layout(sdpa_context *ctx, const char *name,
                               const sdpa_tensor *t, bool need_data);
/* Highest storage unit index the tensor reaches, plus one (its span). */
int64_t sdpa__tensor_span(const sdpa_tensor *t);
/* The tensor with its last axis counted in storage units (blocks of
 * sdpa_dtype_block_elems elements for q8_0 / q4_0; the tensor itself for
 * the other dtypes), so that offset, strides and shape agree: what layout,
 * overlap and staging arithmetic works on. */
sdpa_tensor sdpa__tensor_units(const sdpa_tensor *t);
/* Plan flags against the problem: the forward-only inputs (block-quantized
 * or paged K/V) refuse SDPA_PLAN_BACKWARD (SDPA_ERR_INVALID_ARG). */
sdpa_status sdpa__validate_flags(sdpa_context *ctx, const sdpa__problem *p, unsigned flags);

#endif /* SDPA_CORE_VALIDATE_H */
