/*
 * cl_peak.c — the OpenCL device's fp32 FMA peak: builds shaders/opencl/peak.cl
 * (eight independent floatN FMA chains per work-item), launches it over
 * enough work-items to fill the device and times it with profiling events.
 *
 * Launch: the local size is the kernel's preferred work-group multiple on CPU
 * devices (PoCL runs a work-group per thread; a multiple of 8 there) and 256
 * rounded to that multiple on GPUs, capped by the kernel's maximum; the
 * global size is compute units x 4 (CPU) or x 8 (GPU) work-groups. Vector
 * width: the device's preferred float width clamped to 4..16.
 * Timing: a private in-order queue with CL_QUEUE_PROFILING_ENABLE on the
 * context's cl_context (the context's own queue has no profiling); the
 * iteration count is calibrated and the best of a few launches counted by
 * the common loop, sdpa__peak_rounds (src/core/peak_rounds.c; the first
 * launches also absorb any per-local-size compilation). peak.cl is embedded
 * in its own table
 * (cl_peak_src.c), not with the attention kernels, so it does not change
 * their source hash (tuning profiles stay fresh). Every object is released
 * on every path. Called through the backend table by src/core/peak.c.
 */
#include "cl_internal.h"
#include "cl_peak_src.h"

#include <stdio.h>
#include <stdlib.h>

#define PEAK_CHAINS 8       /* FMA chains in peak.cl's loop body */
#define PEAK_MAX_ITERS (1 << 26)

typedef struct peak_run {
    sdpa_context *ctx;
    cl_command_queue q;
    cl_kernel k;
    size_t global, local;
    int vec, iters; /* float width; the last launch's iterations */
} peak_run;

/* Enqueues one launch with `iters` and returns its device time in seconds. */
static sdpa_status launch_timed(peak_run *r, int iters, double *seconds)
{
    cl_int err = clSetKernelArg(r->k, 1, sizeof iters, &iters);
    SDPA__CL_CHECK(r->ctx, err, "clSetKernelArg(peak iters)");
    cl_event ev = NULL;
    err = clEnqueueNDRangeKernel(r->q, r->k, 1, NULL, &r->global, &r->local, 0, NULL, &ev);
    SDPA__CL_CHECK(r->ctx, err, "clEnqueueNDRangeKernel(sdpa_peak)");
    err = clWaitForEvents(1, &ev);
    cl_ulong t0 = 0, t1 = 0;
    if (err == CL_SUCCESS)
        err = clGetEventProfilingInfo(ev, CL_PROFILING_COMMAND_START, sizeof t0, &t0, NULL);
    if (err == CL_SUCCESS)
        err = clGetEventProfilingInfo(ev, CL_PROFILING_COMMAND_END, sizeof t1, &t1, NULL);
    clReleaseEvent(ev);
    SDPA__CL_CHECK(r->ctx, err, "timing sdpa_peak (profiling event)");
    *seconds = t1 > t0 ? (double)(t1 - t0) * 1e-9 : 0.0;
    return SDPA_OK;
}

/* sdpa__peak_run_fn: one launch of `size` iterations (capped). */
static sdpa_status peak_step(void *user, double size, double *seconds, double *flops, int *full)
{
    peak_run *r = user;
    r->iters = size >= PEAK_MAX_ITERS ? PEAK_MAX_ITERS : (int)size;
    *full = r->iters == PEAK_MAX_ITERS;
    *flops = (double)r->global * (double)r->iters * PEAK_CHAINS * r->vec * 2.0;
    return launch_timed(r, r->iters, seconds);
}

static sdpa_status build(sdpa_context *ctx, sdpa__cl_state *st, int vec, cl_program *out)
{
    cl_int err;
    const char *text = (const char *)sdpa__cl_peak_src_peak_cl;
    size_t len = sdpa__cl_peak_src_peak_cl_size;
    cl_program prog = clCreateProgramWithSource(st->context, 1, &text, &len, &err);
    SDPA__CL_CHECK(ctx, err, "clCreateProgramWithSource(peak.cl)");
    char options[64];
    snprintf(options, sizeof options, "-DPEAK_VEC=%d", vec);
    err = clBuildProgram(prog, 1, &st->device, options, NULL, NULL);
    if (err != CL_SUCCESS) {
        sdpa_status s = sdpa__cl_build_failed(ctx, st, prog, err, "building peak.cl");
        clReleaseProgram(prog);
        return s;
    }
    *out = prog;
    return SDPA_OK;
}

sdpa_status sdpa__cl_measure_peak(sdpa_context *ctx, void *state, double seconds, double *gflops,
                                  char *method, size_t method_len)
{
    sdpa__cl_state *st = state;
    const sdpa__cl_props *pp = &st->props;
    int vec = pp->pref_vec_float >= 16 ? 16 : pp->pref_vec_float >= 8 ? 8 : 4;
    if (!(seconds > 0)) seconds = 0.25;

    cl_program prog = NULL;
    cl_kernel k = NULL;
    cl_command_queue q = NULL;
    cl_mem out = NULL;
    cl_int err;
    sdpa_status s = build(ctx, st, vec, &prog);
    if (s != SDPA_OK) return s;
    k = clCreateKernel(prog, "sdpa_peak", &err);
    if (err != CL_SUCCESS) {
        s = sdpa__cl_fail(ctx, err, "clCreateKernel(sdpa_peak)", __FILE__, __LINE__);
        goto cleanup;
    }
    q = clCreateCommandQueue(st->context, st->device, CL_QUEUE_PROFILING_ENABLE, &err);
    if (err != CL_SUCCESS) {
        s = sdpa__cl_fail(ctx, err, "clCreateCommandQueue(profiling)", __FILE__, __LINE__);
        goto cleanup;
    }

    size_t mult = 0, kmax = 0;
    if (clGetKernelWorkGroupInfo(k, st->device, CL_KERNEL_PREFERRED_WORK_GROUP_SIZE_MULTIPLE,
                                 sizeof mult, &mult, NULL) != CL_SUCCESS || mult == 0)
        mult = pp->is_cpu ? 8 : 32;
    if (clGetKernelWorkGroupInfo(k, st->device, CL_KERNEL_WORK_GROUP_SIZE, sizeof kmax, &kmax,
                                 NULL) != CL_SUCCESS || kmax == 0)
        kmax = pp->max_wg ? pp->max_wg : 1;
    size_t local = pp->is_cpu ? mult : (256 / mult ? 256 / mult * mult : mult);
    if (local > kmax) local = kmax;
    if (local < 1) local = 1;
    size_t cus = pp->compute_units > 0 ? (size_t)pp->compute_units : 1;
    peak_run r = {.ctx = ctx, .q = q, .k = k, .local = local,
                  .global = local * cus * (pp->is_cpu ? 4 : 8), .vec = vec};

    out = clCreateBuffer(st->context, CL_MEM_WRITE_ONLY, r.global * (size_t)vec * sizeof(float),
                         NULL, &err);
    if (err != CL_SUCCESS) {
        s = sdpa__cl_fail(ctx, err, "clCreateBuffer(peak output)", __FILE__, __LINE__);
        goto cleanup;
    }
    float a = 0.999f, b = 0.001f;
    err = clSetKernelArg(k, 0, sizeof out, &out);
    if (err == CL_SUCCESS) err = clSetKernelArg(k, 2, sizeof a, &a);
    if (err == CL_SUCCESS) err = clSetKernelArg(k, 3, sizeof b, &b);
    if (err != CL_SUCCESS) {
        s = sdpa__cl_fail(ctx, err, "clSetKernelArg(sdpa_peak)", __FILE__, __LINE__);
        goto cleanup;
    }

    double best = 0;
    s = sdpa__peak_rounds(peak_step, &r, 16, seconds, &best);
    if (s != SDPA_OK) goto cleanup;
    if (!(best > 0)) {
        s = SDPA__FAIL(ctx, SDPA_ERR_DEVICE, "OpenCL: peak kernel reported no elapsed time");
        goto cleanup;
    }
    *gflops = best;
    if (method && method_len)
        snprintf(method, method_len, "opencl fma kernel float%d, %zu x %zu items", vec,
                 r.global / r.local, r.local);
    sdpa__log(ctx, SDPA_LOG_DEBUG,
              "opencl: peak %.1f GFLOP/s: %d iterations, global %zu, local %zu",
              best, r.iters, r.global, r.local);
cleanup:
    if (out) clReleaseMemObject(out);
    if (q) clReleaseCommandQueue(q);
    if (k) clReleaseKernel(k);
    if (prog) clReleaseProgram(prog);
    return s;
}
