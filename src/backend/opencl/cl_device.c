/*
 * cl_device.c — OpenCL device discovery and capability probe.
 *
 * Devices are every device of every platform the ICD loader reports, in
 * platform order then device order; that index is the one users pass as
 * SDPA_DEVICE and the core passes to context_init (the core orders AUTO by
 * is_gpu). Nothing is cached: listing reflects the loader's answer now, and
 * a machine without platforms simply has zero devices; discovery is
 * serialised across threads (drivers initialise lazily) and allocates
 * nothing but context_init's copy (at most 64 devices of 32 platforms are
 * listed). Called by cl_backend.c (device_count/device_info), cl_context.c and
 * cl_program.c.
 */
#include "cl_internal.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Discovery runs under one process-wide lock: PoCL 3.1 initialises its
 * devices lazily inside the first clGetPlatformIDs / clGetDeviceIDs, and two
 * contexts created at once on two threads made one of them see no device or
 * query a device still being set up (a crash in clGetDeviceInfo;
 * test_threads threads_first_plans_at_once). */
static pthread_mutex_t discovery_lock = PTHREAD_MUTEX_INITIALIZER;

/* Platforms and devices listed at most (a machine with more lists these). */
#define MAX_PLATFORMS 32
#define MAX_DEVICES 64

/* Lists up to MAX_DEVICES devices into buf (platform order, then device
 * order) without allocating, so listing and describing devices cannot fail
 * for memory (only context_init copies the list). Under discovery_lock. */
static int list_locked(sdpa__cl_device *buf)
{
    cl_platform_id plats[MAX_PLATFORMS];
    cl_uint np = 0;
    if (clGetPlatformIDs(MAX_PLATFORMS, plats, &np) != CL_SUCCESS || np == 0)
        return 0; /* no platform (CL_PLATFORM_NOT_FOUND_KHR): no devices */
    if (np > MAX_PLATFORMS) np = MAX_PLATFORMS;
    int count = 0;
    for (cl_uint p = 0; p < np && count < MAX_DEVICES; p++) {
        cl_device_id devs[MAX_DEVICES];
        cl_uint nd = 0;
        if (clGetDeviceIDs(plats[p], CL_DEVICE_TYPE_ALL, (cl_uint)(MAX_DEVICES - count), devs,
                           &nd) != CL_SUCCESS)
            continue;
        for (cl_uint d = 0; d < nd && count < MAX_DEVICES; d++) {
            buf[count].platform = plats[p];
            buf[count].device = devs[d];
            count++;
        }
    }
    return count;
}

/* list_locked under the lock; -1 without libOpenCL.so.1. */
static int list_devices(sdpa__cl_device *buf)
{
    if (sdpa__cl_api_load()) return -1;
    pthread_mutex_lock(&discovery_lock);
    int n = list_locked(buf);
    pthread_mutex_unlock(&discovery_lock);
    return n;
}

sdpa_status sdpa__cl_enumerate(sdpa__cl_device **out, int *n)
{
    sdpa__cl_device buf[MAX_DEVICES];
    *out = NULL;
    *n = 0;
    int count = list_devices(buf);
    if (count < 0) return SDPA_ERR_UNSUPPORTED;
    if (count == 0) return SDPA_OK;
    *out = sdpa__calloc((size_t)count, sizeof **out);
    if (!*out) return SDPA_ERR_OUT_OF_MEMORY;
    memcpy(*out, buf, (size_t)count * sizeof buf[0]);
    *n = count;
    return SDPA_OK;
}

static void get_str(cl_device_id d, cl_device_info what, char *buf, size_t size)
{
    buf[0] = '\0';
    if (clGetDeviceInfo(d, what, size - 1, buf, NULL) != CL_SUCCESS) buf[0] = '\0';
    buf[size - 1] = '\0';
}

/* Whether the device lists extension ext. The list is read into a buffer on
 * the stack (no allocation that could fail silently and change what the
 * device is taken to support); a longer list is read up to its size. */
static int has_ext(cl_device_id d, const char *ext)
{
    char s[16384];
    size_t n = 0;
    if (clGetDeviceInfo(d, CL_DEVICE_EXTENSIONS, 0, NULL, &n) != CL_SUCCESS || n == 0)
        return 0;
    if (n > sizeof s) n = sizeof s;
    if (clGetDeviceInfo(d, CL_DEVICE_EXTENSIONS, n, s, NULL) != CL_SUCCESS) return 0;
    s[n - 1] = '\0';
    return strstr(s, ext) != NULL;
}

void sdpa__cl_probe(cl_platform_id platform, cl_device_id d, sdpa__cl_props *p)
{
    memset(p, 0, sizeof *p);
    if (clGetPlatformInfo(platform, CL_PLATFORM_NAME, sizeof p->platform_name - 1,
                          p->platform_name, NULL) != CL_SUCCESS)
        p->platform_name[0] = '\0';
    get_str(d, CL_DEVICE_NAME, p->device_name, sizeof p->device_name);
    get_str(d, CL_DEVICE_VENDOR, p->vendor, sizeof p->vendor);
    get_str(d, CL_DRIVER_VERSION, p->driver, sizeof p->driver);
    get_str(d, CL_DEVICE_VERSION, p->device_version, sizeof p->device_version);
    cl_device_type type = 0;
    clGetDeviceInfo(d, CL_DEVICE_TYPE, sizeof type, &type, NULL);
    p->is_gpu = (type & CL_DEVICE_TYPE_GPU) != 0;
    p->is_cpu = (type & CL_DEVICE_TYPE_CPU) != 0;
    p->is_pocl = strstr(p->platform_name, "Portable Computing Language") != NULL ||
                 strstr(p->device_version, "PoCL") != NULL;
    cl_uint cu = 0;
    clGetDeviceInfo(d, CL_DEVICE_MAX_COMPUTE_UNITS, sizeof cu, &cu, NULL);
    p->compute_units = (int)cu;
    clGetDeviceInfo(d, CL_DEVICE_MAX_WORK_GROUP_SIZE, sizeof p->max_wg, &p->max_wg, NULL);
    clGetDeviceInfo(d, CL_DEVICE_LOCAL_MEM_SIZE, sizeof p->local_mem, &p->local_mem, NULL);
    cl_device_local_mem_type lt = CL_GLOBAL;
    clGetDeviceInfo(d, CL_DEVICE_LOCAL_MEM_TYPE, sizeof lt, &lt, NULL);
    p->local_mem_is_local = lt == CL_LOCAL;
    clGetDeviceInfo(d, CL_DEVICE_GLOBAL_MEM_SIZE, sizeof p->global_mem, &p->global_mem, NULL);
    clGetDeviceInfo(d, CL_DEVICE_MAX_MEM_ALLOC_SIZE, sizeof p->max_alloc, &p->max_alloc, NULL);
    cl_uint vw = 0;
    clGetDeviceInfo(d, CL_DEVICE_PREFERRED_VECTOR_WIDTH_FLOAT, sizeof vw, &vw, NULL);
    p->pref_vec_float = (int)vw;
    p->fp16 = has_ext(d, "cl_khr_fp16");
    p->subgroups = has_ext(d, "cl_khr_subgroups") || has_ext(d, "cl_intel_subgroups");
    if (p->max_wg == 0) p->max_wg = 1;
}

void sdpa__cl_fill_info(const sdpa__cl_props *p, int index, sdpa_device_info *info)
{
    size_t ss = info->struct_size;
    memset(info, 0, sizeof *info);
    info->struct_size = ss ? ss : sizeof *info;
    info->backend = SDPA_BACKEND_OPENCL;
    info->index = index;
    sdpa__strlcpy(info->name, p->device_name, sizeof info->name);
    sdpa__strlcpy(info->vendor, p->vendor, sizeof info->vendor);
    char drv[512];
    snprintf(drv, sizeof drv, "%s (%s)", p->driver, p->platform_name);
    sdpa__strlcpy(info->driver, drv, sizeof info->driver);
    info->is_gpu = p->is_gpu;
    info->compute_units = p->compute_units;
    info->global_mem_bytes = (int64_t)p->global_mem;
    info->local_mem_bytes = (int64_t)p->local_mem;
    info->max_workgroup_size = (int)p->max_wg;
    info->subgroup_size = p->subgroup_size;
    info->fp16 = p->fp16;
    info->storage16 = 1; /* vload_half/vstore_half and bit operations */
    snprintf(info->details, sizeof info->details,
             "%s; local memory %llu KiB (%s); max work-group %zu; "
             "preferred float vector %d; subgroups %s; fp16 arithmetic %s; "
             "program binary cache: %s",
             p->device_version, (unsigned long long)(p->local_mem / 1024),
             p->local_mem_is_local ? "dedicated" : "emulated in global memory",
             p->max_wg, p->pref_vec_float, p->subgroups ? "yes" : "no",
             p->fp16 ? "yes" : "no",
             sdpa__cl_disk_describe(p));
}

sdpa_status sdpa__cl_device_count(int *count)
{
    sdpa__cl_device buf[MAX_DEVICES];
    int n = list_devices(buf);
    *count = n > 0 ? n : 0;
    return n < 0 ? SDPA_ERR_UNSUPPORTED : SDPA_OK;
}

sdpa_status sdpa__cl_device_info(int index, sdpa_device_info *info)
{
    sdpa__cl_device buf[MAX_DEVICES];
    int n = list_devices(buf);
    if (n < 0) return SDPA_ERR_UNSUPPORTED;
    if (index < 0 || index >= n) return n == 0 ? SDPA_ERR_NO_DEVICE : SDPA_ERR_INVALID_ARG;
    sdpa__cl_props p;
    sdpa__cl_probe(buf[index].platform, buf[index].device, &p);
    sdpa__cl_fill_info(&p, index, info);
    return SDPA_OK;
}
