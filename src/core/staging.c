/*
 * staging.c — see staging.h. The only place where host tensors meet device
 * buffers; plan.c and merge.c call it for every tensor of a call.
 */
#include "staging.h"
#include "dispatch.h"

#include <stdlib.h>

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

sdpa_status sdpa__staging_finish(sdpa__staging *s)
{
    sdpa_context *ctx = s->ctx;
    SDPA__TRY(sdpa__call_finish(ctx, s->slot));
    for (int i = 0; i < s->n; i++) {
        sdpa__staged *it = &s->items[i];
        if (!it->output) continue;
        size_t start = it->t->offset * sdpa_dtype_size(it->t->dtype);
        if (s->host_target)
            SDPA__TRY(sdpa__call_buffer_write(ctx, &ctx->primary, sdpa__buffer_handle(it->t->buf),
                                              start, it->tmp, it->bytes));
        else
            SDPA__TRY(sdpa__call_buffer_read(ctx, s->slot, it->tmp, 0,
                                             (char *)it->t->host + start, it->bytes));
    }
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
