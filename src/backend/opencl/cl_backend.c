/*
 * cl_backend.c — the OpenCL backend's function table (sdpa__backend_opencl).
 *
 * Device memory backend: buffer handles are cl_mem, host tensors are staged
 * by the core. Every slot is filled; see cl_internal.h for the files behind
 * each. Referenced by src/core/registry.c when SDPA_HAVE_OPENCL is defined.
 */
#include "cl_internal.h"

#include "capabilities.h"

const sdpa__backend sdpa__backend_opencl = {
    .api_version = SDPA__BACKEND_API_VERSION,
    .kind = SDPA_BACKEND_OPENCL,
    .name = "opencl",
    /* every issue-19 feature: ALiBi and sinks forward and backward, K/V of
     * their own dtype, q8_0 / q4_0 and paged K/V forward (kv_access.cl) */
    .features = SDPA__FEAT_ALL,
    .host_memory = false,
    .load = sdpa__cl_api_load,
    .device_count = sdpa__cl_device_count,
    .device_info = sdpa__cl_device_info,
    .context_init = sdpa__cl_context_init,
    .context_free = sdpa__cl_context_free,
    .buffer_alloc = sdpa__cl_buffer_alloc,
    .buffer_free = sdpa__cl_buffer_free,
    .buffer_write = sdpa__cl_buffer_write,
    .buffer_read = sdpa__cl_buffer_read,
    .supports = sdpa__cl_supports,
    .plan_create = sdpa__cl_plan_create,
    .plan_free = sdpa__cl_plan_free,
    .plan_workspace = sdpa__cl_plan_workspace,
    .plan_describe = sdpa__cl_plan_describe,
    .forward = sdpa__cl_forward,
    .backward = sdpa__cl_backward,
    .finish = sdpa__cl_finish,
    .default_tile = sdpa__cl_default_tile,
    .tile_params = sdpa__cl_tile_params,
    .n_tile_params = SDPA__CL_TILE_PARAMS,
    .tile_candidates = sdpa__cl_tile_candidates,
    .source_hash = sdpa__cl_source_hash,
    .measure_peak = sdpa__cl_measure_peak,
};
