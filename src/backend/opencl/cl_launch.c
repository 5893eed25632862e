/*
 * cl_launch.c — kernel argument setting and launching shared by the
 * forward and backward enqueue code.
 *
 * Arguments are set strictly in kernel-signature order through an
 * sdpa__cl_args cursor that keeps the first failure, so call sites stay
 * flat. Tensors travel as (cl_mem, long offset, long4 strides) in elements;
 * absent tensors bind the context's dummy buffer. Launches always pass an
 * explicit local size and round the global size up to it (kernels guard
 * their tails). Called by cl_forward.c and cl_backward.c.
 */
#include "cl_internal.h"

void sdpa__cl_arg(sdpa__cl_args *a, size_t size, const void *value)
{
    cl_int e = clSetKernelArg(a->k, a->n++, size, value);
    if (e != CL_SUCCESS && a->err == CL_SUCCESS) a->err = e;
}

void sdpa__cl_arg_mem(sdpa__cl_args *a, cl_mem m)
{
    if (!m) m = a->dummy;
    sdpa__cl_arg(a, sizeof m, &m);
}

void sdpa__cl_arg_i32(sdpa__cl_args *a, int v)
{
    cl_int x = v;
    sdpa__cl_arg(a, sizeof x, &x);
}

void sdpa__cl_arg_i64(sdpa__cl_args *a, int64_t v)
{
    cl_long x = v;
    sdpa__cl_arg(a, sizeof x, &x);
}

void sdpa__cl_arg_f32(sdpa__cl_args *a, float v)
{
    cl_float x = v;
    sdpa__cl_arg(a, sizeof x, &x);
}

void sdpa__cl_arg_ref(sdpa__cl_args *a, const sdpa__ref *r)
{
    cl_long4 s;
    for (int i = 0; i < 4; i++) s.s[i] = r->mem ? r->stride[i] : 0;
    sdpa__cl_arg_mem(a, (cl_mem)r->mem);
    sdpa__cl_arg_i64(a, r->mem ? (int64_t)r->offset : 0);
    sdpa__cl_arg(a, sizeof s, &s);
}

sdpa_status sdpa__cl_launch(sdpa_context *ctx, sdpa__cl_state *st, cl_kernel k,
                            const char *name, cl_uint dims, const size_t *global,
                            const size_t *local)
{
    size_t g[3];
    for (cl_uint i = 0; i < dims; i++) g[i] = (global[i] + local[i] - 1) / local[i] * local[i];
    cl_int err = clEnqueueNDRangeKernel(st->queue, k, dims, NULL, g, local, 0, NULL, NULL);
    if (err != CL_SUCCESS) return sdpa__cl_fail(ctx, err, name, __FILE__, __LINE__);
    return SDPA_OK;
}
