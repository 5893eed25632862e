/*
 * cl_launch.c — kernel argument setting and launching shared by the
 * forward and backward enqueue code.
 *
 * Arguments are set strictly in kernel-signature order through an
 * sdpa__cl_args cursor that keeps the first failure, so call sites stay
 * flat. Tensors travel as (cl_mem, long offset, long4 strides) in elements;
 * absent tensors bind the context's dummy buffer. Launches always pass an
 * explicit local size and round the global size up to it (kernels guard
 * their tails). A launch refused for resources is remembered on the state
 * (launch_err) for sdpa__cl_retry, and is a fault-injection site. Called by
 * cl_forward.c, cl_backward.c and cl_unfused.c.
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
    /* fault site: a driver out of resources for this launch */
    cl_int err = SDPA__FAULT("clEnqueueNDRangeKernel")
                     ? CL_OUT_OF_RESOURCES
                     : clEnqueueNDRangeKernel(st->queue, k, dims, NULL, g, local, 0, NULL, NULL);
    if (err != CL_SUCCESS) {
        st->launch_err = err;
        return sdpa__cl_fail(ctx, err, name, __FILE__, __LINE__);
    }
    return SDPA_OK;
}

bool sdpa__cl_retry(sdpa_context *ctx, sdpa__cl_state *st, const sdpa__problem *p,
                    sdpa__cl_plan *pl)
{
    cl_int e = st->launch_err;
    st->launch_err = CL_SUCCESS;
    if (e != CL_OUT_OF_RESOURCES && e != CL_INVALID_WORK_GROUP_SIZE) return false;
    sdpa__log(ctx, SDPA_LOG_WARN, "opencl: an enqueue failed for resources (cl_int %d)",
              (int)e);
    return sdpa__cl_plan_shrink(ctx, st, p, pl) == SDPA_OK;
}
