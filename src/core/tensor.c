/*
 * tensor.c — constructors for contiguous tensors and the defaults of the
 * description and plan options structs.
 */
#include "internal.h"

#include <math.h>

static sdpa_tensor contiguous(sdpa_dtype dtype, int64_t n0, int64_t n1, int64_t n2,
                              int64_t n3)
{
    sdpa_tensor t;
    memset(&t, 0, sizeof t);
    t.dtype = dtype;
    t.shape[0] = n0;
    t.shape[1] = n1;
    t.shape[2] = n2;
    t.shape[3] = n3;
    /* Checked: extents from the caller may be huge or negative. A product
     * that overflows saturates to INT64_MAX; validation then rejects the
     * tensor (its element count overflows too) with SDPA_ERR_SHAPE. */
    t.stride[3] = 1;
    /* block types (q8_0, q4_0): strides count blocks of the last axis */
    int64_t blk = sdpa_dtype_block_elems(dtype), u3 = blk > 1 && n3 % blk == 0 ? n3 / blk : n3;
    t.stride[2] = u3;
    if (__builtin_mul_overflow(n2, u3, &t.stride[1])) t.stride[1] = INT64_MAX;
    if (__builtin_mul_overflow(n1, t.stride[1], &t.stride[0])) t.stride[0] = INT64_MAX;
    return t;
}

sdpa_tensor sdpa_tensor_host(void *host, sdpa_dtype dtype, int64_t n0, int64_t n1,
                             int64_t n2, int64_t n3)
{
    sdpa_tensor t = contiguous(dtype, n0, n1, n2, n3);
    t.host = host;
    return t;
}

sdpa_tensor sdpa_tensor_buffer(sdpa_buffer *buf, size_t offset, sdpa_dtype dtype,
                               int64_t n0, int64_t n1, int64_t n2, int64_t n3)
{
    sdpa_tensor t = contiguous(dtype, n0, n1, n2, n3);
    t.buf = buf;
    t.offset = offset;
    return t;
}

void sdpa_attention_desc_init(sdpa_attention_desc *d)
{
    if (!d) return;
    memset(d, 0, sizeof *d);
    d->struct_size = sizeof *d;
#define SDPA__X(f, ctype, def, rule, f32, max) d->f = def; /* slots.h */
    SDPA__ATTRS(SDPA__X)
#undef SDPA__X
}

void sdpa_attention_desc_set_causal(sdpa_attention_desc *d, sdpa_diagonal diagonal)
{
    if (!d) return;
    d->diagonal = diagonal;
    d->window_left = -1;
    d->window_right = 0;
}

void sdpa_plan_options_init(sdpa_plan_options *o)
{
    if (!o) return;
    memset(o, 0, sizeof *o);
    o->struct_size = sizeof *o;
    o->workspace_limit = SDPA_AUTO;
}

