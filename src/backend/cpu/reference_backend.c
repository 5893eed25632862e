/*
 * reference_backend.c — the function table of the float64 reference backend.
 * It supports every problem, needs no plan state or workspace, and shares
 * host buffers with the cpu backend.
 */
#include "capabilities.h"
#include "host_buffers.h"
#include "reference.h"

static sdpa_status ref_context_init(sdpa_context *ctx, int device_index, void **state)
{
    (void)ctx;
    (void)device_index;
    *state = NULL;
    return SDPA_OK;
}

static void ref_context_free(sdpa_context *ctx, void *state)
{
    (void)ctx;
    (void)state;
}

static sdpa_status ref_supports(sdpa_context *ctx, void *state, const sdpa__problem *p,
                                unsigned flags)
{
    (void)ctx;
    (void)state;
    (void)p;
    (void)flags;
    return SDPA_OK;
}

static int ref_plan_token; /* plans need a non-NULL state; they hold nothing */

static sdpa_status ref_plan_create(sdpa_context *ctx, void *state, const sdpa__problem *p,
                                   const sdpa_plan_options *options, void **plan_state)
{
    (void)ctx;
    (void)state;
    (void)p;
    (void)options;
    *plan_state = &ref_plan_token;
    return SDPA_OK;
}

static void ref_plan_free(sdpa_context *ctx, void *state, void *plan_state)
{
    (void)ctx;
    (void)state;
    (void)plan_state;
}

static size_t ref_plan_workspace(const void *plan_state)
{
    (void)plan_state;
    return 0;
}

static void ref_plan_describe(const void *plan_state, sdpa_plan_info *info)
{
    (void)plan_state;
    sdpa__strlcpy(info->kernel, "reference", sizeof info->kernel);
    sdpa__strlcpy(info->config, "float64, materialised score rows", sizeof info->config);
}

/* One fixed algorithm: no tile parameter; unfused 0 (what it computes
 * anyway) is accepted. */
static const sdpa__tile_param_info ref_tile_params[] = {
    {SDPA_TILE_UNFUSED, NULL, "only 0: float64 score rows, one fixed algorithm", 0, 0, 0, false,
     SDPA_AUTO, false},
};

const sdpa__backend sdpa__backend_reference = {
    .api_version = SDPA__BACKEND_API_VERSION,
    .kind = SDPA_BACKEND_REFERENCE,
    .name = "reference",
    .host_memory = true,
    .features = SDPA__FEAT_ALL, /* every optional capability (capabilities.h) */
    .device_count = sdpa__host_device_count,
    .device_info = sdpa__host_device_info,
    .context_init = ref_context_init,
    .context_free = ref_context_free,
    .buffer_alloc = sdpa__host_buffer_alloc,
    .buffer_free = sdpa__host_buffer_free,
    .buffer_write = sdpa__host_buffer_write,
    .buffer_read = sdpa__host_buffer_read,
    .supports = ref_supports,
    .plan_create = ref_plan_create,
    .plan_free = ref_plan_free,
    .plan_workspace = ref_plan_workspace,
    .plan_describe = ref_plan_describe,
    .forward = sdpa__ref_forward,
    .backward = sdpa__ref_backward,
    .finish = sdpa__host_finish,
    .tile_params = ref_tile_params,
    .n_tile_params = 1,
    .measure_peak = sdpa__cpu_measure_peak,
    .peak_kernels = sdpa__cpu_peak_widest,
    .measure_bandwidth = sdpa__cpu_measure_bandwidth,
    .measure_read_time = sdpa__cpu_measure_read_time,
};
