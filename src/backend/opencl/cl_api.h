/*
 * cl_api.h — the OpenCL entry points the backend calls, as a table of
 * function pointers (sdpa__cl_api) filled at run time from the OpenCL ICD
 * loader, libOpenCL.so.1, by cl_api.c. libsdpa does not link libOpenCL: a
 * program using libsdpa starts on a machine without it, and the OpenCL
 * backend reports itself unavailable (sdpa__cl_api_load's message).
 *
 * SDPA__CL_API lists every cl* function the backend calls (one X per entry
 * point; add a new call here). After the table, each name is #defined to
 * its slot, so call sites keep the plain OpenCL names. The toolchain keeps
 * the two lists in step: a call missing from the redirects is an undefined
 * reference when libsdpa links (-Wl,--no-undefined), a redirect missing from
 * SDPA__CL_API is an unknown field. Included by cl_internal.h after
 * <CL/cl.h>; cl_api.c defines SDPA__CL_API_NO_REDIRECT to see the fields.
 */
#ifndef SDPA_CL_API_H
#define SDPA_CL_API_H

#include <CL/cl.h>

#define SDPA__CL_API(X) \
    X(clBuildProgram) \
    X(clCreateBuffer) \
    X(clCreateCommandQueue) \
    X(clCreateContext) \
    X(clCreateKernel) \
    X(clCreateProgramWithBinary) \
    X(clCreateProgramWithSource) \
    X(clEnqueueFillBuffer) \
    X(clEnqueueNDRangeKernel) \
    X(clEnqueueReadBuffer) \
    X(clEnqueueWriteBuffer) \
    X(clFinish) \
    X(clGetCommandQueueInfo) \
    X(clGetDeviceIDs) \
    X(clGetDeviceInfo) \
    X(clGetEventProfilingInfo) \
    X(clGetKernelWorkGroupInfo) \
    X(clGetMemObjectInfo) \
    X(clGetPlatformIDs) \
    X(clGetPlatformInfo) \
    X(clGetProgramBuildInfo) \
    X(clGetProgramInfo) \
    X(clReleaseCommandQueue) \
    X(clReleaseContext) \
    X(clReleaseEvent) \
    X(clReleaseKernel) \
    X(clReleaseMemObject) \
    X(clReleaseProgram) \
    X(clRetainCommandQueue) \
    X(clRetainContext) \
    X(clRetainMemObject) \
    X(clSetKernelArg) \
    X(clWaitForEvents)

typedef struct sdpa__cl_api_table {
#define SDPA__CL_API_FIELD(name) __typeof__(name) *name;
    SDPA__CL_API(SDPA__CL_API_FIELD)
#undef SDPA__CL_API_FIELD
} sdpa__cl_api_table;

extern sdpa__cl_api_table sdpa__cl_api;

/* Loads libOpenCL.so.1 and fills sdpa__cl_api, once per process (thread
 * safe); later calls return the first outcome. NULL when the table is
 * ready, else a message naming the library and why it could not be used. */
const char *sdpa__cl_api_load(void);

/* Test only (cl_persona.c): with SDPA_TEST_PERSONA=cl-<name> set, rewires
 * the device, platform and kernel queries and the enqueue of table t so the
 * driver answers as that GPU; returns the persona's name, or NULL (unset,
 * not a cl- name, or unknown: t unchanged). Called once by sdpa__cl_api_load. */
const char *sdpa__cl_persona_install(sdpa__cl_api_table *t);

#ifndef SDPA__CL_API_NO_REDIRECT
#define clBuildProgram            sdpa__cl_api.clBuildProgram
#define clCreateBuffer            sdpa__cl_api.clCreateBuffer
#define clCreateCommandQueue      sdpa__cl_api.clCreateCommandQueue
#define clCreateContext           sdpa__cl_api.clCreateContext
#define clCreateKernel            sdpa__cl_api.clCreateKernel
#define clCreateProgramWithBinary sdpa__cl_api.clCreateProgramWithBinary
#define clCreateProgramWithSource sdpa__cl_api.clCreateProgramWithSource
#define clEnqueueFillBuffer       sdpa__cl_api.clEnqueueFillBuffer
#define clEnqueueNDRangeKernel    sdpa__cl_api.clEnqueueNDRangeKernel
#define clEnqueueReadBuffer       sdpa__cl_api.clEnqueueReadBuffer
#define clEnqueueWriteBuffer      sdpa__cl_api.clEnqueueWriteBuffer
#define clFinish                  sdpa__cl_api.clFinish
#define clGetCommandQueueInfo     sdpa__cl_api.clGetCommandQueueInfo
#define clGetDeviceIDs            sdpa__cl_api.clGetDeviceIDs
#define clGetDeviceInfo           sdpa__cl_api.clGetDeviceInfo
#define clGetEventProfilingInfo   sdpa__cl_api.clGetEventProfilingInfo
#define clGetKernelWorkGroupInfo  sdpa__cl_api.clGetKernelWorkGroupInfo
#define clGetMemObjectInfo        sdpa__cl_api.clGetMemObjectInfo
#define clGetPlatformIDs          sdpa__cl_api.clGetPlatformIDs
#define clGetPlatformInfo         sdpa__cl_api.clGetPlatformInfo
#define clGetProgramBuildInfo     sdpa__cl_api.clGetProgramBuildInfo
#define clGetProgramInfo          sdpa__cl_api.clGetProgramInfo
#define clReleaseCommandQueue     sdpa__cl_api.clReleaseCommandQueue
#define clReleaseContext          sdpa__cl_api.clReleaseContext
#define clReleaseEvent            sdpa__cl_api.clReleaseEvent
#define clReleaseKernel           sdpa__cl_api.clReleaseKernel
#define clReleaseMemObject        sdpa__cl_api.clReleaseMemObject
#define clReleaseProgram          sdpa__cl_api.clReleaseProgram
#define clRetainCommandQueue      sdpa__cl_api.clRetainCommandQueue
#define clRetainContext           sdpa__cl_api.clRetainContext
#define clRetainMemObject         sdpa__cl_api.clRetainMemObject
#define clSetKernelArg            sdpa__cl_api.clSetKernelArg
#define clWaitForEvents           sdpa__cl_api.clWaitForEvents
#endif

#endif
