/*
 * cl_vendor.c — an OpenCL device's entry in the vendor defaults table
 * (src/core/device_table.h): the probed properties (sdpa__cl_props, after
 * any test persona answered) as a table probe. cl_plan.c asks it whether a
 * device gets CPU- or GPU-style kernels and whether K/V tiles are staged;
 * the static GPU gate (tools/internal/sdpa-gpu-config.c) resolves its
 * described devices through the same call. Pure; no driver calls.
 */
#include "cl_internal.h"

void sdpa__cl_device_defaults(const sdpa__cl_props *d, sdpa__device_defaults *out)
{
    sdpa__device_probe p = {
        .vendor = d->vendor,
        .name = d->device_name,
        .platform = d->platform_name,
        .type = d->is_cpu ? SDPA__DEVTYPE_CPU
                          : (d->is_gpu ? SDPA__DEVTYPE_GPU : SDPA__DEVTYPE_OTHER),
        .local_mem = d->local_mem_is_local ? 1 : 0,
    };
    sdpa__device_defaults_of(&p, out);
}

bool sdpa__cl_gpu_style(const sdpa__cl_props *d)
{
    sdpa__device_defaults dd;
    sdpa__cl_device_defaults(d, &dd);
    return dd.kclass != SDPA__KCLASS_CPU;
}
