/*
 * cl_interop.c — include/sdpa_opencl.h: contexts around an application's
 * cl_context/cl_device_id/cl_command_queue and sdpa_buffers around its
 * cl_mem objects.
 *
 * The state is filled from the application's objects (each retained once,
 * released with the context through sdpa__cl_state_release) and handed to
 * the core with sdpa__context_create_with_state; wrapped cl_mem are retained
 * and passed to sdpa__buffer_wrap as owned handles, so buffer_free releases
 * exactly the reference taken here. Called by applications.
 */
#include "cl_internal.h"

#include "sdpa_opencl.h"

#include <stdlib.h>

sdpa_status sdpa_opencl_context_create(const sdpa_context_options *options,
                                       cl_context context, cl_device_id device,
                                       cl_command_queue queue, sdpa_context **out)
{
    if (!out) return SDPA_ERR_NULL;
    *out = NULL;
    if (!context || !device || !queue) return SDPA_ERR_NULL;
    if (sdpa__cl_api_load()) return SDPA_ERR_UNSUPPORTED; /* no libOpenCL.so.1 */
    cl_context qctx = NULL;
    cl_device_id qdev = NULL;
    cl_platform_id plat = NULL;
    if (clGetCommandQueueInfo(queue, CL_QUEUE_CONTEXT, sizeof qctx, &qctx, NULL) !=
            CL_SUCCESS ||
        clGetCommandQueueInfo(queue, CL_QUEUE_DEVICE, sizeof qdev, &qdev, NULL) != CL_SUCCESS ||
        clGetDeviceInfo(device, CL_DEVICE_PLATFORM, sizeof plat, &plat, NULL) != CL_SUCCESS ||
        qctx != context || qdev != device)
        return SDPA_ERR_DEVICE;
    sdpa__cl_state *st = sdpa__calloc(1, sizeof *st);
    if (!st) return SDPA_ERR_OUT_OF_MEMORY;
    st->platform = plat;
    st->device = device;
    st->context = context;
    st->queue = queue;
    clRetainContext(context);
    clRetainCommandQueue(queue);
    sdpa_status s = sdpa__cl_state_setup(NULL, st);
    if (s != SDPA_OK) {
        sdpa__cl_state_release(st);
        return s;
    }
    s = sdpa__context_create_with_state(options, &sdpa__backend_opencl, st,
                                        st->props.device_name, out);
    if (s != SDPA_OK) sdpa__cl_state_release(st);
    return s;
}

sdpa_status sdpa_opencl_buffer_wrap(sdpa_context *ctx, cl_mem mem, sdpa_buffer **out)
{
    if (out) *out = NULL;
    if (!ctx) return SDPA_ERR_NULL;
    SDPA__CHECK_ARG(ctx, out, "sdpa_opencl_buffer_wrap", "out");
    *out = NULL;
    SDPA__CHECK_ARG(ctx, mem, "sdpa_opencl_buffer_wrap", "mem");
    if (sdpa_context_backend(ctx) != SDPA_BACKEND_OPENCL)
        return SDPA__FAIL(ctx, SDPA_ERR_MISMATCHED_CONTEXT,
                          "sdpa_opencl_buffer_wrap: context is not an OpenCL context");
    sdpa__cl_state *st = sdpa__context_primary_state(ctx, &sdpa__backend_opencl);
    cl_context mctx = NULL;
    size_t size = 0;
    cl_int err = clGetMemObjectInfo(mem, CL_MEM_CONTEXT, sizeof mctx, &mctx, NULL);
    if (err == CL_SUCCESS) err = clGetMemObjectInfo(mem, CL_MEM_SIZE, sizeof size, &size, NULL);
    if (err != CL_SUCCESS)
        return SDPA__FAIL_NATIVE(ctx, SDPA_ERR_DEVICE, err,
                                 "sdpa_opencl_buffer_wrap: clGetMemObjectInfo failed");
    if (mctx != st->context)
        return SDPA__FAIL(ctx, SDPA_ERR_MISMATCHED_CONTEXT,
                          "sdpa_opencl_buffer_wrap: cl_mem belongs to another cl_context");
    clRetainMemObject(mem);
    sdpa_status s = sdpa__buffer_wrap(ctx, mem, size, true, out);
    if (s != SDPA_OK) clReleaseMemObject(mem);
    return s;
}

cl_mem sdpa_opencl_buffer_mem(const sdpa_buffer *buf)
{
    if (!buf) return NULL;
    sdpa_context *ctx = sdpa__buffer_context(buf);
    if (!ctx || sdpa_context_backend(ctx) != SDPA_BACKEND_OPENCL) return NULL;
    return (cl_mem)sdpa__buffer_handle(buf);
}

cl_command_queue sdpa_opencl_queue(const sdpa_context *ctx)
{
    if (!ctx || sdpa_context_backend(ctx) != SDPA_BACKEND_OPENCL) return NULL;
    return ((sdpa__cl_state *)sdpa__context_primary_state(ctx, &sdpa__backend_opencl))->queue;
}

cl_context sdpa_opencl_cl_context(const sdpa_context *ctx)
{
    if (!ctx || sdpa_context_backend(ctx) != SDPA_BACKEND_OPENCL) return NULL;
    return ((sdpa__cl_state *)sdpa__context_primary_state(ctx, &sdpa__backend_opencl))->context;
}
