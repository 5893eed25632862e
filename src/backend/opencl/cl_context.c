/*
 * cl_context.c — the OpenCL backend's context state, buffers and finish.
 *
 * context_init picks the device by the index the core resolved (the order of
 * sdpa__cl_enumerate), creates a cl_context and an in-order command queue,
 * probes the device and allocates a one-word dummy buffer that is bound to
 * absent optional kernel arguments. Interop contexts (cl_interop.c) fill
 * the same state from the application's objects and share the setup here.
 * Buffer handles are plain cl_mem. Every OpenCL failure is recorded with its
 * native cl_int through sdpa__cl_fail. Called through the backend table.
 */
#include "cl_internal.h"

#include <stdlib.h>

sdpa_status sdpa__cl_fail(sdpa_context *ctx, cl_int err, const char *what,
                          const char *file, int line)
{
    sdpa_status s = SDPA_ERR_DEVICE;
    if (err == CL_MEM_OBJECT_ALLOCATION_FAILURE || err == CL_OUT_OF_RESOURCES ||
        err == CL_OUT_OF_HOST_MEMORY || err == CL_INVALID_BUFFER_SIZE)
        s = SDPA_ERR_OUT_OF_MEMORY;
    return sdpa__fail_native(ctx, s, err, file, line, "OpenCL: %s failed (cl_int %d)",
                             what, (int)err);
}

sdpa_status sdpa__cl_state_setup(sdpa_context *ctx, sdpa__cl_state *st)
{
    cl_int err;
    sdpa__cl_probe(st->platform, st->device, &st->props);
    st->dummy = clCreateBuffer(st->context, CL_MEM_READ_WRITE, 64, NULL, &err);
    SDPA__CL_CHECK(ctx, err, "clCreateBuffer(dummy)");
    sdpa__log(ctx, SDPA_LOG_INFO, "opencl: device '%s' (%s, driver %s); program binary cache: %s",
              st->props.device_name, st->props.platform_name, st->props.driver,
              sdpa__cl_disk_describe(&st->props));
    return SDPA_OK;
}

void sdpa__cl_state_release(sdpa__cl_state *st)
{
    if (!st) return;
    if (st->queue) clFinish(st->queue);
    sdpa__cl_programs_free(st);
    if (st->dummy) clReleaseMemObject(st->dummy);
    if (st->queue) clReleaseCommandQueue(st->queue);
    if (st->context) clReleaseContext(st->context);
    free(st);
}

sdpa_status sdpa__cl_context_init(sdpa_context *ctx, int device_index, void **state)
{
    sdpa__cl_device *list = NULL;
    int n = 0;
    *state = NULL;
    SDPA__TRY(sdpa__cl_enumerate(&list, &n));
    if (n == 0)
        return SDPA__FAIL(ctx, SDPA_ERR_NO_DEVICE,
                          "OpenCL: no platform or device found by the ICD loader");
    if (device_index < 0 || device_index >= n) {
        free(list);
        return SDPA__FAIL(ctx, SDPA_ERR_NO_DEVICE, "OpenCL: device index %d out of range (%d devices)",
                          device_index, n);
    }
    sdpa__cl_state *st = sdpa__calloc(1, sizeof *st);
    if (!st) {
        free(list);
        return SDPA__FAIL(ctx, SDPA_ERR_OUT_OF_MEMORY, "OpenCL: context state");
    }
    st->platform = list[device_index].platform;
    st->device = list[device_index].device;
    free(list);
    cl_int err;
    cl_context_properties props[] = {CL_CONTEXT_PLATFORM, (cl_context_properties)st->platform, 0};
    st->context = clCreateContext(props, 1, &st->device, NULL, NULL, &err);
    sdpa_status s = SDPA_OK;
    if (err != CL_SUCCESS) {
        s = sdpa__cl_fail(ctx, err, "clCreateContext", __FILE__, __LINE__);
        goto fail;
    }
    st->queue = clCreateCommandQueue(st->context, st->device, 0, &err);
    if (err != CL_SUCCESS) {
        s = sdpa__cl_fail(ctx, err, "clCreateCommandQueue", __FILE__, __LINE__);
        goto fail;
    }
    s = sdpa__cl_state_setup(ctx, st);
    if (s != SDPA_OK) goto fail;
    *state = st;
    return SDPA_OK;
fail:
    sdpa__cl_state_release(st);
    return s;
}

void sdpa__cl_context_free(sdpa_context *ctx, void *state)
{
    (void)ctx;
    sdpa__cl_state_release(state);
}

sdpa_status sdpa__cl_buffer_alloc(sdpa_context *ctx, void *state, size_t bytes, void **handle)
{
    sdpa__cl_state *st = state;
    cl_int err;
    cl_mem m = clCreateBuffer(st->context, CL_MEM_READ_WRITE, bytes, NULL, &err);
    SDPA__CL_CHECK(ctx, err, "clCreateBuffer");
    *handle = m;
    return SDPA_OK;
}

void sdpa__cl_buffer_free(sdpa_context *ctx, void *state, void *handle)
{
    (void)ctx;
    (void)state;
    if (handle) clReleaseMemObject((cl_mem)handle);
}

sdpa_status sdpa__cl_buffer_write(sdpa_context *ctx, void *state, void *handle, size_t offset,
                                  const void *src, size_t bytes)
{
    sdpa__cl_state *st = state;
    if (bytes == 0) return SDPA_OK;
    SDPA__CL_CHECK(ctx, clEnqueueWriteBuffer(st->queue, (cl_mem)handle, CL_TRUE, offset,
                                             bytes, src, 0, NULL, NULL),
                   "clEnqueueWriteBuffer");
    return SDPA_OK;
}

sdpa_status sdpa__cl_buffer_read(sdpa_context *ctx, void *state, void *handle, size_t offset,
                                 void *dst, size_t bytes)
{
    sdpa__cl_state *st = state;
    if (bytes == 0) return SDPA_OK;
    SDPA__CL_CHECK(ctx, clEnqueueReadBuffer(st->queue, (cl_mem)handle, CL_TRUE, offset,
                                            bytes, dst, 0, NULL, NULL),
                   "clEnqueueReadBuffer");
    return SDPA_OK;
}

sdpa_status sdpa__cl_finish(sdpa_context *ctx, void *state)
{
    sdpa__cl_state *st = state;
    SDPA__CL_CHECK(ctx, clFinish(st->queue), "clFinish");
    return SDPA_OK;
}
