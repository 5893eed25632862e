/*
 * cl_persona.c — test-only GPU personas for CPU OpenCL drivers (PoCL here).
 *
 * With SDPA_TEST_PERSONA=cl-<name> in the environment, the OpenCL table
 * (cl_api.h) is rewired, once per process when it is loaded, so that the
 * driver answers some queries as the named GPU would: clGetDeviceInfo
 * (type, work-group and local-memory limits, vendor, names; extensions for
 * cl-subgroups), clGetPlatformInfo
 * (platform name and vendor) and clGetKernelWorkGroupInfo (per-kernel
 * work-group size and, for cl-spill, private memory). The library then chooses exactly what it would on such
 * a GPU and runs it on the CPU device for real. The limits are enforced
 * where the CPU driver would accept more: clEnqueueNDRangeKernel refuses a
 * local size above the persona's (CL_INVALID_WORK_GROUP_SIZE) and a kernel
 * whose local memory exceeds the persona's (CL_OUT_OF_RESOURCES), as the
 * GPU's driver would. Nothing else changes: programs, buffers and results
 * are the driver's own. Names not starting with "cl-" are left to other
 * backends (vk-...); an unknown cl- name is ignored with every query
 * unchanged. Personas and their figures: docs/opencl.md, "GPU personas".
 */
#define SDPA__CL_API_NO_REDIRECT
#include "cl_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct persona {
    const char *name;
    const char *vendor, *platform, *version;
    cl_device_type type;
    size_t max_wg;
    cl_ulong local_mem;
    cl_device_local_mem_type local_type;
    cl_uint compute_units; /* 0: the driver's */
    cl_uint pref_vec_float;
    cl_ulong private_mem; /* CL_KERNEL_PRIVATE_MEM_SIZE at least this (0: driver's) */
    const char *extra_ext; /* appended to CL_DEVICE_EXTENSIONS (NULL: none) */
} persona;

#define KIB ((cl_ulong)1024)
#define GENERIC "libsdpa test persona", "libsdpa test persona", "OpenCL 1.2 persona"

static const persona personas[] = {
    /* a discrete NVIDIA-like GPU: dedicated 48 KiB local memory, 1024 */
    {"cl-discrete", "NVIDIA Corporation", "NVIDIA CUDA", "OpenCL 3.0 CUDA",
     CL_DEVICE_TYPE_GPU, 1024, 48 * KIB, CL_LOCAL, 46, 1, 0, NULL},
    /* Mali (Midgard/Bifrost): "local" memory in system memory, 256 */
    {"cl-mali", "ARM", "ARM Platform", "OpenCL 3.0 v1.r40p0", CL_DEVICE_TYPE_GPU, 256,
     32 * KIB, CL_GLOBAL, 16, 4, 0, NULL},
    /* one limit each, around a generic GPU (dedicated 32 KiB, 256) */
    {"cl-wg32", GENERIC, CL_DEVICE_TYPE_GPU, 32, 32 * KIB, CL_LOCAL, 0, 4, 0, NULL},
    {"cl-wg1024", GENERIC, CL_DEVICE_TYPE_GPU, 1024, 32 * KIB, CL_LOCAL, 0, 4, 0, NULL},
    {"cl-lmem8", GENERIC, CL_DEVICE_TYPE_GPU, 256, 8 * KIB, CL_LOCAL, 0, 4, 0, NULL},
    {"cl-lmem16", GENERIC, CL_DEVICE_TYPE_GPU, 256, 16 * KIB, CL_LOCAL, 0, 4, 0, NULL},
    {"cl-lmem64", GENERIC, CL_DEVICE_TYPE_GPU, 256, 64 * KIB, CL_LOCAL, 0, 4, 0, NULL},
    /* every kernel reports 2 KiB of private memory per work-item, above the
     * plan's 1 KiB budget (ptxas finds 1.4 KB of stack in the decode
     * kernel's two rows at D = 128): plans keep one row per work-item */
    {"cl-spill", GENERIC, CL_DEVICE_TYPE_GPU, 256, 32 * KIB, CL_LOCAL, 0, 4, 2 * KIB, NULL},
    /* cl-discrete listing cl_khr_subgroups: the GPU-class kernels take their
     * subgroup form (SDPA_SUBGROUPS), which PoCL's compiler builds with
     * one-work-item subgroups (prelude.cl) */
    {"cl-subgroups", "NVIDIA Corporation", "NVIDIA CUDA", "OpenCL 3.0 CUDA",
     CL_DEVICE_TYPE_GPU, 1024, 48 * KIB, CL_LOCAL, 46, 1, 0, "cl_khr_subgroups"},
};

static const persona *active;
static __typeof__(clGetDeviceInfo) *real_device_info;
static __typeof__(clGetPlatformInfo) *real_platform_info;
static __typeof__(clGetKernelWorkGroupInfo) *real_kernel_wg_info;
static __typeof__(clEnqueueNDRangeKernel) *real_enqueue;

/* Answers a query with `n` bytes at v, as the driver would. */
static cl_int answer(const void *v, size_t n, size_t size, void *value, size_t *ret)
{
    if (value && size < n) return CL_INVALID_VALUE;
    if (value) memcpy(value, v, n);
    if (ret) *ret = n;
    return CL_SUCCESS;
}

static cl_int answer_str(const char *s, size_t size, void *value, size_t *ret)
{
    return answer(s, strlen(s) + 1, size, value, ret);
}

static cl_int CL_API_CALL device_info(cl_device_id d, cl_device_info what, size_t size,
                                      void *value, size_t *ret)
{
    const persona *p = active;
    switch (what) {
    case CL_DEVICE_TYPE: return answer(&p->type, sizeof p->type, size, value, ret);
    case CL_DEVICE_MAX_WORK_GROUP_SIZE:
        return answer(&p->max_wg, sizeof p->max_wg, size, value, ret);
    case CL_DEVICE_MAX_WORK_ITEM_SIZES: {
        size_t s[3] = {p->max_wg, p->max_wg, p->max_wg};
        return answer(s, sizeof s, size, value, ret);
    }
    case CL_DEVICE_LOCAL_MEM_SIZE:
        return answer(&p->local_mem, sizeof p->local_mem, size, value, ret);
    case CL_DEVICE_LOCAL_MEM_TYPE:
        return answer(&p->local_type, sizeof p->local_type, size, value, ret);
    case CL_DEVICE_MAX_COMPUTE_UNITS:
        if (!p->compute_units) break;
        return answer(&p->compute_units, sizeof p->compute_units, size, value, ret);
    case CL_DEVICE_PREFERRED_VECTOR_WIDTH_FLOAT:
        return answer(&p->pref_vec_float, sizeof p->pref_vec_float, size, value, ret);
    case CL_DEVICE_VENDOR: return answer_str(p->vendor, size, value, ret);
    case CL_DEVICE_VERSION: return answer_str(p->version, size, value, ret);
    case CL_DEVICE_NAME: return answer_str(p->name, size, value, ret);
    case CL_DEVICE_EXTENSIONS: {
        char ext[8192];
        size_t n = 0;
        if (!p->extra_ext ||
            real_device_info(d, what, sizeof ext, ext, &n) != CL_SUCCESS || n == 0 ||
            n + strlen(p->extra_ext) + 1 > sizeof ext)
            break;
        snprintf(ext + n - 1, sizeof ext - (n - 1), " %s", p->extra_ext);
        return answer_str(ext, size, value, ret);
    }
    default: break;
    }
    return real_device_info(d, what, size, value, ret);
}

static cl_int CL_API_CALL platform_info(cl_platform_id pl, cl_platform_info what, size_t size,
                                        void *value, size_t *ret)
{
    if (what == CL_PLATFORM_NAME) return answer_str(active->platform, size, value, ret);
    if (what == CL_PLATFORM_VENDOR) return answer_str(active->vendor, size, value, ret);
    return real_platform_info(pl, what, size, value, ret);
}

static cl_int CL_API_CALL kernel_wg_info(cl_kernel k, cl_device_id d,
                                         cl_kernel_work_group_info what, size_t size,
                                         void *value, size_t *ret)
{
    if (what == CL_KERNEL_WORK_GROUP_SIZE) {
        size_t n = 0;
        cl_int e = real_kernel_wg_info(k, d, what, sizeof n, &n, NULL);
        if (e != CL_SUCCESS) return e;
        if (n == 0 || n > active->max_wg) n = active->max_wg;
        return answer(&n, sizeof n, size, value, ret);
    }
    if (what == CL_KERNEL_PRIVATE_MEM_SIZE && active->private_mem) {
        cl_ulong n = 0;
        cl_int e = real_kernel_wg_info(k, d, what, sizeof n, &n, NULL);
        if (e != CL_SUCCESS) return e;
        if (n < active->private_mem) n = active->private_mem;
        return answer(&n, sizeof n, size, value, ret);
    }
    return real_kernel_wg_info(k, d, what, size, value, ret);
}

/* The persona's limits, enforced as its driver would. */
static cl_int CL_API_CALL enqueue(cl_command_queue q, cl_kernel k, cl_uint dims,
                                  const size_t *offset, const size_t *global,
                                  const size_t *local, cl_uint nwait, const cl_event *wait,
                                  cl_event *ev)
{
    if (local) {
        size_t n = 1;
        for (cl_uint i = 0; i < dims; i++) n *= local[i];
        if (n > active->max_wg) return CL_INVALID_WORK_GROUP_SIZE;
    }
    cl_device_id d = NULL;
    cl_ulong lm = 0;
    if (sdpa__cl_api.clGetCommandQueueInfo(q, CL_QUEUE_DEVICE, sizeof d, &d, NULL) ==
            CL_SUCCESS &&
        real_kernel_wg_info(k, d, CL_KERNEL_LOCAL_MEM_SIZE, sizeof lm, &lm, NULL) ==
            CL_SUCCESS &&
        lm > active->local_mem)
        return CL_OUT_OF_RESOURCES;
    return real_enqueue(q, k, dims, offset, global, local, nwait, wait, ev);
}

const char *sdpa__cl_persona_install(sdpa__cl_api_table *t)
{
    const char *want = getenv("SDPA_TEST_PERSONA");
    if (!want || strncmp(want, "cl-", 3) != 0) return NULL;
    for (size_t i = 0; i < sizeof personas / sizeof personas[0]; i++) {
        if (strcmp(personas[i].name, want) != 0) continue;
        active = &personas[i];
        real_device_info = t->clGetDeviceInfo;
        real_platform_info = t->clGetPlatformInfo;
        real_kernel_wg_info = t->clGetKernelWorkGroupInfo;
        real_enqueue = t->clEnqueueNDRangeKernel;
        t->clGetDeviceInfo = device_info;
        t->clGetPlatformInfo = platform_info;
        t->clGetKernelWorkGroupInfo = kernel_wg_info;
        t->clEnqueueNDRangeKernel = enqueue;
        return active->name;
    }
    return NULL;
}
