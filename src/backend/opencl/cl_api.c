/*
 * cl_api.c — fills the OpenCL table (cl_api.h) from libOpenCL.so.1 and, in
 * builds with CLBlast, the CLBlast table (clblast_api.h) from
 * libclblast.so.1: each once per process, on first use by a device listing,
 * a context or the unfused path (SDPA__LIB_DEFINE_LOADER, src/core/dynlib.h).
 * The messages name the library and what to install. A test-only GPU
 * persona (SDPA_TEST_PERSONA=cl-..., cl_persona.c) is installed into the
 * OpenCL table right after it is filled.
 */
#define SDPA__CL_API_NO_REDIRECT
#include "cl_internal.h"

#ifdef SDPA_HAVE_CLBLAST
#include "clblast_api.h"
#endif

#include "dynlib.h"

#include <pthread.h>

/* The file names per platform: dynlib.h. */
#define CL_SONAME SDPA__LIB_OPENCL
#define CLBLAST_SONAME SDPA__LIB_CLBLAST

sdpa__cl_api_table sdpa__cl_api;

SDPA__LIB_DEFINE_LOADER(cl_load, sdpa__cl_api, SDPA__CL_API, "opencl", CL_SONAME,
                        "install an OpenCL ICD loader (e.g. ocl-icd-libopencl1) and a driver")

/* The test-only persona (cl_persona.c) rewires the table once, after it is
 * filled and before any device is listed. */
static pthread_once_t persona_once = PTHREAD_ONCE_INIT;
static void persona_run(void) { (void)sdpa__cl_persona_install(&sdpa__cl_api); }

const char *sdpa__cl_api_load(void)
{
    const char *why = cl_load();
    if (!why) pthread_once(&persona_once, persona_run);
    return why;
}

#ifdef SDPA_HAVE_CLBLAST
sdpa__clblast_api_table sdpa__clblast_api;

SDPA__LIB_DEFINE_LOADER(clblast_load, sdpa__clblast_api, SDPA__CLBLAST_API, "opencl",
                        CLBLAST_SONAME,
                        "install CLBlast (e.g. libclblast1) for the unfused path (tile.unfused)")

/* CLBlast calls into OpenCL: its table is only of use after OpenCL's. */
const char *sdpa__clblast_api_load(void)
{
    const char *why = cl_load();
    return why ? why : clblast_load();
}
#endif
