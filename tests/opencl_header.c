/*
 * opencl_header.c — include/sdpa_opencl.h leaves CL_TARGET_OPENCL_VERSION to
 * its includer. Built by tests/meson.build twice when the OpenCL backend is
 * compiled in: with -DINCLUDER_TARGET=120 (the includer defines the version
 * first: it must stay 120, so no OpenCL 2.0 API is declared) and without (the
 * header must compile standalone, taking whatever the Khronos headers
 * default to). A violation is a compile error; the program itself only
 * checks that the interop entry points link and refuse a NULL context.
 */
#ifdef INCLUDER_TARGET
#define CL_TARGET_OPENCL_VERSION INCLUDER_TARGET
#endif
#include "sdpa_opencl.h"

#if !defined(CL_TARGET_OPENCL_VERSION)
#error "<CL/cl.h> was not included by sdpa_opencl.h"
#endif
#if defined(INCLUDER_TARGET) && (CL_TARGET_OPENCL_VERSION != INCLUDER_TARGET || \
                                 (INCLUDER_TARGET < 200 && defined(CL_VERSION_2_0)))
#error "sdpa_opencl.h changed the includer's CL_TARGET_OPENCL_VERSION"
#endif

int main(void)
{
    return sdpa_opencl_queue(NULL) == NULL && sdpa_opencl_cl_context(NULL) == NULL ? 0 : 1;
}
