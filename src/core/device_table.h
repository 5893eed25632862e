/*
 * device_table.h — the vendor defaults table (device_table.c): which kind of
 * kernels a device wants and the defaults its vendor, architecture or model
 * prefers, chosen from probed properties, the way CLBlast keeps its device
 * database (vendor -> architecture -> device). Backend-neutral: the OpenCL
 * backend (cl_vendor.c), the Vulkan backend (vk_vendor.c), the static GPU
 * gate (tools/internal/sdpa-gpu-config.c) and the profile store's families
 * (src/tune) all resolve devices through it. docs/gpu.md, "Vendor table".
 */
#ifndef SDPA_CORE_DEVICE_TABLE_H
#define SDPA_CORE_DEVICE_TABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Which kernels a device gets. */
typedef enum sdpa__kclass {
    SDPA__KCLASS_CPU = 0,        /* rows per work-item, wide vectors, no staging:
                                    CPU drivers (PoCL, lavapipe) */
    SDPA__KCLASS_GPU = 1,        /* work-groups sharing K/V tiles staged in
                                    dedicated local memory */
    SDPA__KCLASS_MOBILE_GPU = 2, /* GPU-style kernels on a mobile GPU (Mali,
                                    Adreno); local memory may be system memory */
} sdpa__kclass;

/* Device type as probed. */
enum { SDPA__DEVTYPE_UNKNOWN = 0, SDPA__DEVTYPE_CPU = 1, SDPA__DEVTYPE_GPU = 2,
       SDPA__DEVTYPE_OTHER = 3 };

/* The levels of the table, least specific first. */
enum { SDPA__LEVEL_CLASS = 0, SDPA__LEVEL_VENDOR = 1, SDPA__LEVEL_ARCH = 2,
       SDPA__LEVEL_DEVICE = 3 };

/* What is known of a device. Strings may be NULL (unknown). */
typedef struct sdpa__device_probe {
    uint32_t vendor_id;   /* PCI vendor id (Vulkan's vendorID); 0 = unknown */
    uint32_t driver_id;   /* VkDriverId; 0 = unknown (informational) */
    const char *vendor;   /* vendor string (CL_DEVICE_VENDOR, sdpa_device_info.vendor;
                             "0x1002" style strings are read as a vendor id) */
    const char *name;     /* device name */
    const char *platform; /* OpenCL platform name (PoCL is recognised by it) */
    int type;             /* SDPA__DEVTYPE_* */
    int local_mem;        /* 1: dedicated local memory, 0: emulated in global
                             memory (CL_GLOBAL), -1: unknown (Vulkan: shared) */
} sdpa__device_probe;

/* The resolved defaults. Every field comes from the most specific matching
 * row that sets it (device > architecture > vendor > class). */
typedef struct sdpa__device_defaults {
    const char *vendor;   /* "nvidia", "amd", "intel", "qualcomm", "arm", "apple",
                             "cpu", or "unknown" (static) */
    const char *arch;     /* architecture family key: "sm_89", "rdna", "cdna", "gcn",
                             "xe-lp", "xe-hpg", "adreno", "mali-valhall", "apple",
                             "pocl", "llvmpipe", ... or "" when not known (static) */
    sdpa__kclass kclass;
    int wg_size;          /* preferred work-group size of the class's kernels */
    int subgroup;         /* preferred subgroup width; 0 = the device's own */
    int stage_kv;         /* 1: stage K/V tiles in local memory */
    int row;              /* index of the most specific matching row */
    int level;            /* its SDPA__LEVEL_* */
    const char *why;      /* that row's reason (static) */
} sdpa__device_defaults;

/* Resolves p through the table. Never fails: an unknown device gets its
 * class row (CPU devices and GPUs without dedicated local memory CPU-style,
 * other GPUs GPU-style). Pure and thread-safe. */
void sdpa__device_defaults_of(const sdpa__device_probe *p, sdpa__device_defaults *out);

/* The name of a kernel class: "cpu-style", "gpu-style", "mobile-gpu". */
const char *sdpa__kclass_name(sdpa__kclass c);

/* The architecture family of a device from the strings a profile record
 * keeps (backend name, vendor string, device name): "<backend>/<vendor>/<arch>",
 * e.g. "opencl/pocl/x86-64-avx512" (PoCL: the ISA level of its target CPU),
 * "vulkan/cpu/llvmpipe-256", "opencl/nvidia/sm_89", "vulkan/amd/gfx1030",
 * "opencl/intel/xe-lp". False (and out = "") when the architecture is not
 * known, or the backend name cannot be a family part (upper case, '/'): such
 * a device has no family and uses exact records only. */
bool sdpa__device_family(const char *backend, const char *vendor, const char *name,
                         char *out, size_t size);

/* Whether s is a well-formed family key (what sdpa__device_family writes:
 * three '/'-separated non-empty parts of [a-z0-9._+-], under 64 bytes). */
bool sdpa__device_family_valid(const char *s);

/* Test hooks: the number of rows, and row i's level, vendor key and arch key
 * (NULL past the end). */
int sdpa__device_table_rows(void);
bool sdpa__device_table_row(int i, int *level, const char **vendor, const char **arch);

#endif /* SDPA_CORE_DEVICE_TABLE_H */
