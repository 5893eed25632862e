/*
 * dispatch.c — see dispatch.h. An injected fault comes back as the status a
 * real failure of that call would give (out of memory for allocations, a
 * device error otherwise) with a message naming the site.
 */
#include "dispatch.h"
#include "capabilities.h"
#include "tile.h"

#define INJECT(ctx, site, status)                                                    \
    do {                                                                             \
        if (SDPA__FAULT(site))                                                       \
            return SDPA__FAIL(ctx, status, "injected fault at %s", site);            \
    } while (0)

sdpa_status sdpa__call_context_init(sdpa_context *ctx, sdpa__slot *slot, int device_index)
{
    const sdpa__backend *be = slot->backend;
    INJECT(ctx, "context_init", SDPA_ERR_DEVICE);
    return be->context_init(ctx, device_index, &slot->state);
}

sdpa_status sdpa__call_buffer_alloc(sdpa_context *ctx, sdpa__slot *slot, size_t bytes,
                                    void **handle)
{
    const sdpa__backend *be = slot->backend;
    INJECT(ctx, "buffer_alloc", SDPA_ERR_OUT_OF_MEMORY);
    return be->buffer_alloc(ctx, slot->state, bytes, handle);
}

void sdpa__call_buffer_free(sdpa_context *ctx, sdpa__slot *slot, void *handle)
{
    const sdpa__backend *be = slot->backend;
    be->buffer_free(ctx, slot->state, handle);
}

sdpa_status sdpa__call_buffer_write(sdpa_context *ctx, sdpa__slot *slot, void *handle,
                                    size_t offset, const void *src, size_t bytes)
{
    const sdpa__backend *be = slot->backend;
    INJECT(ctx, "buffer_write", SDPA_ERR_DEVICE);
    return be->buffer_write(ctx, slot->state, handle, offset, src, bytes);
}

sdpa_status sdpa__call_buffer_read(sdpa_context *ctx, sdpa__slot *slot, void *handle,
                                   size_t offset, void *dst, size_t bytes)
{
    const sdpa__backend *be = slot->backend;
    INJECT(ctx, "buffer_read", SDPA_ERR_DEVICE);
    return be->buffer_read(ctx, slot->state, handle, offset, dst, bytes);
}

sdpa_status sdpa__call_plan_create(sdpa_context *ctx, sdpa__slot *slot,
                                   const sdpa__problem *p, unsigned flags,
                                   const sdpa_plan_options *options, void **state)
{
    const sdpa__backend *be = slot->backend;
    SDPA__TRY(sdpa__check_tile(ctx, be, options ? options->tile : NULL));
    unsigned missing = sdpa__features_needed(p, flags) & ~be->features;
    for (int b = 0; missing && b < SDPA__FEAT_COUNT; b++)
        SDPA__CHECK(ctx, !(missing >> b & 1u), SDPA_ERR_UNSUPPORTED,
                    "%s: %s is not implemented by this backend", be->name,
                    sdpa__feature_name(b));
    SDPA__TRY(be->supports(ctx, slot->state, p, flags));
    INJECT(ctx, "plan_create", SDPA_ERR_BUILD);
    return be->plan_create(ctx, slot->state, p, options, state);
}

void sdpa__call_plan_free(sdpa_context *ctx, sdpa__slot *slot, void *state)
{
    const sdpa__backend *be = slot->backend;
    be->plan_free(ctx, slot->state, state);
}

size_t sdpa__call_plan_workspace(const sdpa__slot *slot, const void *state)
{
    return slot->backend->plan_workspace(state);
}

void sdpa__call_plan_describe(const sdpa__slot *slot, const void *state, sdpa_plan_info *info)
{
    if (slot->backend->plan_describe) slot->backend->plan_describe(state, info);
}

sdpa_status sdpa__call_default_tile(sdpa_context *ctx, sdpa__slot *slot, const sdpa__problem *p,
                                    unsigned flags, const sdpa_tile_config *forced,
                                    sdpa_tile_config *out)
{
    const sdpa__backend *be = slot->backend;
    SDPA__TRY(sdpa__check_tile(ctx, be, forced));
    sdpa__tile_normalise(forced, out);
    if (be->default_tile) {
        sdpa_tile_config given = *out;
        SDPA__TRY(be->default_tile(ctx, slot->state, p, flags, forced ? &given : NULL, out));
        out->struct_size = sizeof *out;
    }
    sdpa__tile_fill_defaults(be->tile_params, be->n_tile_params, out);
    return SDPA_OK;
}

int sdpa__call_tile_candidates(sdpa_context *ctx, sdpa__slot *slot, const sdpa__problem *p,
                               unsigned flags, sdpa_tile_config *out, int max)
{
    const sdpa__backend *be = slot->backend;
    int n = be->tile_candidates ? be->tile_candidates(ctx, slot->state, p, flags, out, max) : 0;
    return n > 0 ? n : 0;
}

bool sdpa__call_can_measure(const sdpa__slot *slot, sdpa__measure_what what)
{
    const sdpa__backend *be = slot->backend;
    return what == SDPA__MEASURE_PEAK ? be->measure_peak != NULL : be->measure_bandwidth != NULL;
}

sdpa_status sdpa__call_measure(sdpa_context *ctx, sdpa__slot *slot, sdpa__measure_what what,
                               double seconds, double *value, char *method, size_t method_len)
{
    const sdpa__backend *be = slot->backend;
    const bool peak = what == SDPA__MEASURE_PEAK;
    SDPA__CHECK(ctx, sdpa__call_can_measure(slot, what), SDPA_ERR_UNSUPPORTED,
                "%s: no %s micro-benchmark for this backend", be->name, peak ? "fma" : "read");
    if (peak) {
        INJECT(ctx, "measure_peak", SDPA_ERR_DEVICE);
        SDPA__TRY(be->measure_peak(ctx, slot->state, seconds, value, method, method_len));
    } else {
        INJECT(ctx, "measure_bandwidth", SDPA_ERR_DEVICE);
        SDPA__TRY(be->measure_bandwidth(ctx, slot->state, seconds, value, method, method_len));
    }
    return SDPA_OK;
}

sdpa_status sdpa__call_read_time(sdpa_context *ctx, sdpa__slot *slot, size_t bytes,
                                 double pause_ms, int repeat, double *ms,
                                 sdpa_read_time_info *info)
{
    const sdpa__backend *be = slot->backend;
    SDPA__CHECK(ctx, be->measure_read_time != NULL, SDPA_ERR_UNSUPPORTED,
                "%s: no read-time reference for this backend", be->name);
    INJECT(ctx, "measure_read_time", SDPA_ERR_DEVICE);
    return be->measure_read_time(ctx, slot->state, bytes, pause_ms, repeat, ms, info);
}

const char *sdpa__call_peak_kernels(sdpa_context *ctx, sdpa__slot *slot)
{
    const sdpa__backend *be = slot->backend;
    return be->peak_kernels ? be->peak_kernels(ctx, slot->state) : "";
}

void sdpa__call_context_free(sdpa_context *ctx, sdpa__slot *slot)
{
    const sdpa__backend *be = slot->backend;
    if (be->finish) be->finish(ctx, slot->state);
    be->context_free(ctx, slot->state);
}

sdpa_status sdpa__call_device_count(const sdpa__backend *be, int *count)
{
    return be->device_count(count);
}

sdpa_status sdpa__call_device_info(const sdpa__backend *be, int index, sdpa_device_info *info)
{
    return be->device_info ? be->device_info(index, info) : SDPA_ERR_UNSUPPORTED;
}

const char *sdpa__call_load(const sdpa__backend *be)
{
    return be->load ? be->load() : NULL;
}

const char *sdpa__call_source_hash(const sdpa__backend *be)
{
    return be->source_hash ? be->source_hash() : NULL;
}

sdpa_status sdpa__call_forward(sdpa_context *ctx, sdpa__slot *slot, void *state,
                               const sdpa__problem *p, const sdpa__fwd_args *a)
{
    const sdpa__backend *be = slot->backend;
    INJECT(ctx, "forward", SDPA_ERR_DEVICE);
    return be->forward(ctx, slot->state, state, p, a);
}

sdpa_status sdpa__call_backward(sdpa_context *ctx, sdpa__slot *slot, void *state,
                                const sdpa__problem *p, const sdpa__fwd_args *a,
                                const sdpa__bwd_args *g)
{
    const sdpa__backend *be = slot->backend;
    INJECT(ctx, "backward", SDPA_ERR_DEVICE);
    return be->backward(ctx, slot->state, state, p, a, g);
}

sdpa_status sdpa__call_finish(sdpa_context *ctx, sdpa__slot *slot)
{
    const sdpa__backend *be = slot->backend;
    INJECT(ctx, "finish", SDPA_ERR_DEVICE);
    return be->finish ? be->finish(ctx, slot->state) : SDPA_OK;
}
