/*
 * staging.c — see staging.h. The only place where host tensors meet device
 * buffers; plan.c and merge.c call it for every tensor of a call.
 */
#include "staging.h"
#include "dispatch.h"

#include <stdlib.h>

/* Number of storage units (elements, or blocks of a block type) of t. */
static int64_t element_count(const sdpa_tensor *t)
{
    sdpa_tensor u = sdpa__tensor_units(t);
    return u.shape[0] * u.shape[1] * u.shape[2] * u.shape[3];
}

/* Copies t's own elements, and nothing between them, from src to dst; both
 * point at element t->offset of a copy of t's span. */
static void copy_elements(void *dst, const void *src, const sdpa_tensor *t)
{
    size_t es = sdpa_dtype_size(t->dtype);
    int64_t st[4];
    for (int a = 0; a < 4; a++) st[a] = t->shape[a] == 1 ? 0 : t->stride[a];
    bool rows = t->shape[3] == 1 || st[3] == 1; /* innermost axis contiguous */
    size_t row_bytes = (size_t)t->shape[3] * es;
    for (int64_t i0 = 0; i0 < t->shape[0]; i0++)
        for (int64_t i1 = 0; i1 < t->shape[1]; i1++)
            for (int64_t i2 = 0; i2 < t->shape[2]; i2++) {
                size_t e = (size_t)(i0 * st[0] + i1 * st[1] + i2 * st[2]);
                if (rows) {
                    memcpy((char *)dst + e * es, (const char *)src + e * es, row_bytes);
                    continue;
                }
                for (int64_t i3 = 0; i3 < t->shape[3]; i3++, e += (size_t)st[3])
                    memcpy((char *)dst + e * es, (const char *)src + e * es, es);
            }
}

void sdpa__staging_init(sdpa__staging *s, sdpa_context *ctx, sdpa__slot *slot,
                        bool host_target)
{
    s->ctx = ctx;
    s->slot = slot;
    s->host_target = host_target;
    s->n = 0;
}

sdpa_status sdpa__stage(sdpa__staging *s, const sdpa_tensor *t, bool output,
                        sdpa__ref *ref)
{
    memset(ref, 0, sizeof *ref);
    if (!t || t->dtype == SDPA_DTYPE_NONE) return SDPA_OK;
    for (int a = 0; a < 4; a++) ref->stride[a] = t->shape[a] == 1 ? 0 : t->stride[a];
    sdpa_context *ctx = s->ctx;
    bool primary_host = ctx->primary.backend->host_memory;
    size_t esize = sdpa_dtype_size(t->dtype);
    size_t bytes = (size_t)sdpa__tensor_span(t) * esize; /* checked by validation */
    size_t start = t->offset * esize;

    if (s->host_target && t->host) {
        ref->mem = t->host;
        ref->offset = t->offset;
        return SDPA_OK;
    }
    if (t->buf && (s->host_target ? primary_host : s->slot == &ctx->primary)) {
        ref->mem = sdpa__buffer_handle(t->buf);
        ref->offset = t->offset;
        return SDPA_OK;
    }
    sdpa__staged *it = &s->items[s->n];
    it->t = t;
    it->output = output;
    it->bytes = bytes;
    it->tmp = NULL;
    if (s->host_target) { /* device buffer → host copy */
        it->tmp = sdpa__malloc(bytes);
        SDPA__CHECK(ctx, it->tmp, SDPA_ERR_OUT_OF_MEMORY,
                    "staging: out of host memory (%zu bytes)", bytes);
        s->n++;
        SDPA__TRY(sdpa__call_buffer_read(ctx, &ctx->primary, sdpa__buffer_handle(t->buf), start,
                                         it->tmp, bytes));
    } else { /* host memory → device copy */
        SDPA__TRY(sdpa__call_buffer_alloc(ctx, s->slot, bytes, &it->tmp));
        s->n++;
        SDPA__TRY(sdpa__call_buffer_write(ctx, s->slot, it->tmp, 0, (const char *)t->host + start,
                                          bytes));
    }
    ref->mem = it->tmp;
    ref->offset = 0;
    return SDPA_OK;
}

/* Copies staged output `it` back: its span at once when its elements fill
 * the span, else only its elements (through a host copy of the destination's
 * span, so that bytes between them — other outputs of the same memory,
 * written back before or after, or the caller's data — keep their values). */
static sdpa_status write_back(sdpa__staging *s, const sdpa__staged *it)
{
    sdpa_context *ctx = s->ctx;
    const sdpa_tensor *t = it->t;
    size_t start = t->offset * sdpa_dtype_size(t->dtype);
    bool dense = element_count(t) == sdpa__tensor_span(t);
    if (dense && s->host_target)
        return sdpa__call_buffer_write(ctx, &ctx->primary, sdpa__buffer_handle(t->buf), start,
                                       it->tmp, it->bytes);
    if (dense)
        return sdpa__call_buffer_read(ctx, s->slot, it->tmp, 0, (char *)t->host + start,
                                      it->bytes);
    char *span = sdpa__malloc(it->bytes);
    SDPA__CHECK(ctx, span, SDPA_ERR_OUT_OF_MEMORY,
                "staging: out of host memory (%zu bytes)", it->bytes);
    sdpa_status st;
    if (s->host_target) { /* results in it->tmp; the device buffer gets its elements */
        void *h = sdpa__buffer_handle(t->buf);
        st = sdpa__call_buffer_read(ctx, &ctx->primary, h, start, span, it->bytes);
        if (st == SDPA_OK) {
            copy_elements(span, it->tmp, t);
            st = sdpa__call_buffer_write(ctx, &ctx->primary, h, start, span, it->bytes);
        }
    } else { /* results on the device; the host tensor gets its elements */
        st = sdpa__call_buffer_read(ctx, s->slot, it->tmp, 0, span, it->bytes);
        if (st == SDPA_OK) copy_elements((char *)t->host + start, span, t);
    }
    free(span);
    return st;
}

sdpa_status sdpa__staging_finish(sdpa__staging *s)
{
    SDPA__TRY(sdpa__call_finish(s->ctx, s->slot));
    for (int i = 0; i < s->n; i++)
        if (s->items[i].output) SDPA__TRY(write_back(s, &s->items[i]));
    return SDPA_OK;
}

void sdpa__staging_free(sdpa__staging *s)
{
    for (int i = 0; i < s->n; i++) {
        if (s->host_target) {
            free(s->items[i].tmp);
        } else if (s->items[i].tmp) {
            sdpa__call_buffer_free(s->ctx, s->slot, s->items[i].tmp);
        }
    }
    s->n = 0;
}
