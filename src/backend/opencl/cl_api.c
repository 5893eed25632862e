/*
 * cl_api.c — fills the OpenCL table (cl_api.h) from libOpenCL.so.1 and, in
 * builds with CLBlast, the CLBlast table (clblast_api.h) from
 * libclblast.so.1: each once per process (pthread_once), on first use by a
 * device listing, a context or the unfused path. The loading itself is
 * src/core/dynlib.c; the messages name the library and what to install.
 */
#define SDPA__CL_API_NO_REDIRECT
#include "cl_internal.h"

#ifdef SDPA_HAVE_CLBLAST
#include "clblast_api.h"
#endif

#include "dynlib.h"

#include <pthread.h>

sdpa__cl_api_table sdpa__cl_api;

static pthread_once_t cl_once = PTHREAD_ONCE_INIT;
static char cl_why[512];
static bool cl_ready;

static void cl_load(void)
{
    static const char *const names[] = {
#define NAME(name) #name,
        SDPA__CL_API(NAME)
#undef NAME
    };
    sdpa__lib_fn fns[sizeof names / sizeof names[0]];
    if (!sdpa__lib_load("opencl", "libOpenCL.so.1",
                        "install an OpenCL ICD loader (e.g. ocl-icd-libopencl1) and a driver",
                        names, fns, sizeof names / sizeof names[0], cl_why, sizeof cl_why))
        return;
    size_t i = 0;
#define FILL(name) sdpa__cl_api.name = (__typeof__(sdpa__cl_api.name))fns[i++];
    SDPA__CL_API(FILL)
#undef FILL
    cl_ready = true;
}

const char *sdpa__cl_api_load(void)
{
    pthread_once(&cl_once, cl_load);
    return cl_ready ? NULL : cl_why;
}

#ifdef SDPA_HAVE_CLBLAST
sdpa__clblast_api_table sdpa__clblast_api;

static pthread_once_t clblast_once = PTHREAD_ONCE_INIT;
static char clblast_why[512];
static bool clblast_ready;

static void clblast_load(void)
{
    static const char *const names[] = {
#define NAME(name) #name,
        SDPA__CLBLAST_API(NAME)
#undef NAME
    };
    sdpa__lib_fn fns[sizeof names / sizeof names[0]];
    if (!sdpa__lib_load("opencl", "libclblast.so.1",
                        "install CLBlast (e.g. libclblast1) for the unfused path (tile.unfused)",
                        names, fns, sizeof names / sizeof names[0], clblast_why,
                        sizeof clblast_why))
        return;
    size_t i = 0;
#define FILL(name) sdpa__clblast_api.name = (__typeof__(sdpa__clblast_api.name))fns[i++];
    SDPA__CLBLAST_API(FILL)
#undef FILL
    clblast_ready = true;
}

const char *sdpa__clblast_api_load(void)
{
    const char *why = sdpa__cl_api_load();
    if (why) return why;
    pthread_once(&clblast_once, clblast_load);
    return clblast_ready ? NULL : clblast_why;
}
#endif
