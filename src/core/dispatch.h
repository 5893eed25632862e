/*
 * dispatch.h — the thin wrappers through which the front end calls a
 * backend. Each selects the slot (so backends find their state), passes the
 * fault-injection site for tests, and forwards the backend's status. Front-end
 * code never calls a backend table slot directly.
 */
#ifndef SDPA_CORE_DISPATCH_H
#define SDPA_CORE_DISPATCH_H

#include "context_impl.h"

sdpa_status sdpa__call_context_init(sdpa_context *ctx, sdpa__slot *slot, int device_index);
sdpa_status sdpa__call_buffer_alloc(sdpa_context *ctx, sdpa__slot *slot, size_t bytes,
                                    void **handle);
void sdpa__call_buffer_free(sdpa_context *ctx, sdpa__slot *slot, void *handle);
sdpa_status sdpa__call_buffer_write(sdpa_context *ctx, sdpa__slot *slot, void *handle,
                                    size_t offset, const void *src, size_t bytes);
sdpa_status sdpa__call_buffer_read(sdpa_context *ctx, sdpa__slot *slot, void *handle,
                                   size_t offset, void *dst, size_t bytes);
sdpa_status sdpa__call_plan_create(sdpa_context *ctx, sdpa__slot *slot,
                                   const sdpa__problem *p, unsigned flags,
                                   const sdpa_plan_options *options, void **state);
/* Refuses a forced tile field outside be->tile_ranges (tile_check.c); called by
 * sdpa__call_plan_create. t may be NULL. */
sdpa_status sdpa__check_tile(sdpa_context *ctx, const sdpa__backend *be,
                             const sdpa_tile_config *t);
sdpa_status sdpa__call_forward(sdpa_context *ctx, sdpa__slot *slot, void *state,
                               const sdpa__problem *p, const sdpa__fwd_args *a);
sdpa_status sdpa__call_backward(sdpa_context *ctx, sdpa__slot *slot, void *state,
                                const sdpa__problem *p, const sdpa__fwd_args *a,
                                const sdpa__bwd_args *g);
sdpa_status sdpa__call_finish(sdpa_context *ctx, sdpa__slot *slot);

#endif
