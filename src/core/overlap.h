/*
 * overlap.h — whether strided tensors share memory. Validation (validate.c,
 * merge.c) uses it to refuse outputs that alias inputs, each other or
 * themselves, while accepting legal interleavings (rows of [out, lse], packed
 * QKV / dQKV) whose spans overlap but whose elements do not.
 *
 * The rule (docs/semantics.md, "Aliasing"): two tensors conflict when some
 * byte belongs to an element of each; a tensor overlaps itself when two of
 * its index tuples reach a common byte. Tensors in different sdpa_buffers, or
 * in a buffer and host memory of a device backend, never share memory. The
 * decision is exact: a bounded search over the index lattice (per-axis ranges
 * pruned by the reach of the remaining axes and by the gcd of their strides)
 * that settles nested layouts — every layout whose strides each exceed the
 * reach of the smaller ones, which includes every layout the docs advertise —
 * in a few dozen steps. Only when the search exceeds its step budget is the
 * answer SDPA__MAYBE, which callers refuse.
 */
#ifndef SDPA_CORE_OVERLAP_H
#define SDPA_CORE_OVERLAP_H

#include "context_impl.h"

typedef enum sdpa__overlap {
    SDPA__DISJOINT = 0,
    SDPA__OVERLAP = 1,
    SDPA__MAYBE = 2, /* not settled within the search budget */
} sdpa__overlap;

/* Whether present tensors a and b (validated layouts) share a byte. */
sdpa__overlap sdpa__tensors_overlap(const sdpa_tensor *a, const sdpa_tensor *b);
/* Whether two different index tuples of t reach a common byte. */
sdpa__overlap sdpa__tensor_self_overlap(const sdpa_tensor *t);
/* Whether a and b are the same view: same memory, offset, dtype, shape and
 * strides on every axis of extent > 1. */
bool sdpa__tensors_same_view(const sdpa_tensor *a, const sdpa_tensor *b);

/* Validation front ends: SDPA_ERR_STRIDE when output t overlaps itself;
 * SDPA_ERR_INVALID_ARG when a and b overlap. Messages name the tensors and
 * say whether the overlap is certain. Absent tensors pass. */
sdpa_status sdpa__check_no_self_overlap(sdpa_context *ctx, const char *name,
                                        const sdpa_tensor *t);
sdpa_status sdpa__check_disjoint(sdpa_context *ctx, const char *name_a, const sdpa_tensor *a,
                                 const char *name_b, const sdpa_tensor *b);

#endif /* SDPA_CORE_OVERLAP_H */
