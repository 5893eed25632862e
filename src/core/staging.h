/*
 * staging.h — moving tensors to where the running backend can read them.
 *
 * A call's tensors may live in host memory or in the context's buffers, and a
 * plan runs either on a device backend or on a host-memory backend (the CPU
 * paths, including AUTO's fallback). Staging resolves each tensor to an
 * sdpa__ref: directly when the memory already suits the backend (the hot path:
 * nothing allocated), otherwise through a temporary copy of the tensor's span.
 * Outputs are copied in too, and only their own elements are copied back:
 * the bytes between a strided output's elements may belong to another output
 * of the same call (rows of [out, lse], packed dQKV) or to the caller, and
 * are left as they are.
 */
#ifndef SDPA_CORE_STAGING_H
#define SDPA_CORE_STAGING_H

#include "validate.h"

typedef struct sdpa__staged {
    const sdpa_tensor *t;
    bool output;
    void *tmp;       /* host malloc (host target) or device handle */
    size_t bytes;    /* bytes of the span */
} sdpa__staged;

typedef struct sdpa__staging {
    sdpa_context *ctx;
    sdpa__slot *slot;  /* backend the refs are for */
    bool host_target;  /* refs must be host pointers */
    int n;
    sdpa__staged items[SDPA__T_COUNT + SDPA__G_COUNT];
} sdpa__staging;

void sdpa__staging_init(sdpa__staging *s, sdpa_context *ctx, sdpa__slot *slot,
                        bool host_target);
/* Resolves t (absent → zero ref). */
sdpa_status sdpa__stage(sdpa__staging *s, const sdpa_tensor *t, bool output,
                        sdpa__ref *ref);
/* True when some tensor needed a temporary copy. */
static inline bool sdpa__staging_used(const sdpa__staging *s) { return s->n > 0; }
/* Waits for the backend and copies each staged output's elements back. */
sdpa_status sdpa__staging_finish(sdpa__staging *s);
/* Frees the temporaries (always call, also after errors). */
void sdpa__staging_free(sdpa__staging *s);

#endif /* SDPA_CORE_STAGING_H */
