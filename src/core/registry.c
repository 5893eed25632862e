/*
 * registry.c — which backends this build has, and device listing through
 * them. The CPU fallback is the fast CPU backend when compiled in, else the
 * reference (a build always has a working CPU path). A compiled-in backend
 * whose run-time library cannot be loaded (backend.h, load) lists no device.
 */
#include "device_table.h"
#include "dispatch.h"

#include <stdio.h>
#include <string.h>

const sdpa__backend *sdpa__backend_get(sdpa_backend_kind kind)
{
    switch (kind) {
    case SDPA_BACKEND_REFERENCE: return &sdpa__backend_reference;
#ifdef SDPA_HAVE_CPU_FAST
    case SDPA_BACKEND_CPU: return &sdpa__backend_cpu;
#endif
#ifdef SDPA_HAVE_OPENCL
    case SDPA_BACKEND_OPENCL: return &sdpa__backend_opencl;
#endif
#ifdef SDPA_HAVE_VULKAN
    case SDPA_BACKEND_VULKAN: return &sdpa__backend_vulkan;
#endif
    default: return NULL;
    }
}

const char *sdpa__backend_unavailable(const sdpa__backend *be)
{
    return sdpa__call_load(be);
}

int sdpa_backend_compiled(sdpa_backend_kind kind)
{
    return sdpa__backend_get(kind) != NULL;
}

sdpa_status sdpa_device_count(sdpa_backend_kind kind, int *count)
{
    if (!count) return SDPA_ERR_NULL;
    *count = 0;
    const sdpa__backend *be = sdpa__backend_get(kind);
    if (!be || sdpa__backend_unavailable(be)) return SDPA_OK; /* none: library absent */
    sdpa_status st = sdpa__call_device_count(be, count);
    if (st != SDPA_OK) *count = 0;
    /* "no platform" is not an error when counting */
    return st == SDPA_ERR_NO_DEVICE ? SDPA_OK : st;
}

sdpa_status sdpa_device_get_info(sdpa_backend_kind kind, int index,
                                 sdpa_device_info *info)
{
    if (!info) return SDPA_ERR_NULL;
    const sdpa__backend *be = sdpa__backend_get(kind);
    if (!be || sdpa__backend_unavailable(be)) return SDPA_ERR_UNSUPPORTED;
    int n = 0;
    sdpa_status st = sdpa__call_device_count(be, &n);
    if (st != SDPA_OK) return st;
    if (index < 0 || index >= n) return SDPA_ERR_INVALID_ARG;
    /* no context to hold a message: only the status travels */
    if (sdpa__struct_size(info) < SDPA_DEVICE_INFO_SIZE_V1) return SDPA_ERR_INVALID_ARG;
    sdpa_device_info full;
    memset(&full, 0, sizeof full);
    full.struct_size = sizeof full;
    full.backend = kind;
    full.index = index;
    st = sdpa__call_device_info(be, index, &full);
    if (st != SDPA_OK) return st;
    /* the profile family (device_table.h): where plans find records made on
     * other devices of the same architecture (docs/tuning.md) */
    char family[64];
    size_t used = strlen(full.details);
    if (sdpa__device_family(be->name, full.vendor, full.name, family, sizeof family))
        snprintf(full.details + used, sizeof full.details - used, "%sprofile family %s",
                 used ? "; " : "", family);
    sdpa__struct_out(info, &full, sizeof full);
    return SDPA_OK;
}
