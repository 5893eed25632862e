/*
 * cl_gemm.h — CLBlast GEMM parameter sets for the unfused OpenCL path
 * (cl_gemm.c): the table the tuner searches and their application through
 * CLBlast's override call. Used by cl_plan.c, cl_unfused.c, cl_program.c.
 */
#ifndef SDPA_CL_GEMM_H
#define SDPA_CL_GEMM_H

#include "cl_internal.h"

/* Sets 1..sdpa__cl_gemm_count() are libsdpa's; 0 = CLBlast's own. */
int sdpa__cl_gemm_count(void);
/* Whether set k (>= 1) suits the device (work-group and local-memory limits;
 * register-blocked sets for CPU-style devices, local-memory tiled sets for
 * GPU-style ones, `gpu`). */
bool sdpa__cl_gemm_fits(int k, const sdpa__cl_props *d, bool gpu);
/* A short description of set k ("Xgemm MWG=64 NWG=64 ..."). */
const char *sdpa__cl_gemm_label(int k);
/* Folds the table into a source hash, so profiles that name sets of an older
 * table are recognised as stale. */
uint64_t sdpa__cl_gemm_hash(uint64_t h);

/* The set currently in force for the device in this process (0 = none of
 * libsdpa's was applied, CLBlast's own parameters). */
int sdpa__cl_gemm_current(cl_device_id device);
/* Puts set k in force for the device (no-op when it already is). k = 0 is
 * refused with SDPA_ERR_UNSUPPORTED once another set was applied: CLBlast
 * offers no way back to its own parameters. */
sdpa_status sdpa__cl_gemm_apply(sdpa_context *ctx, cl_device_id device, int k);

#endif /* SDPA_CL_GEMM_H */
