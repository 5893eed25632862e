/*
 * sdpa_opencl.h — OpenCL interop for libsdpa: run attention on an
 * application's own OpenCL context and queue, and use its cl_mem buffers
 * as sdpa_buffer without copies.
 *
 * This header includes <CL/cl.h> itself and uses only types every OpenCL
 * version has (cl_context, cl_device_id, cl_command_queue, cl_mem), so any
 * target version works. It never chooses one for you: it does not define
 * CL_TARGET_OPENCL_VERSION. Define it yourself (e.g. to 120 or 300) before the
 * first include of this header or of <CL/cl.h>, as the Khronos headers ask;
 * left undefined, they default to 300 and say so with a #pragma message.
 * tests/opencl_header.c checks both ways at build time. Link with -lOpenCL
 * when you call OpenCL yourself.
 *
 * Available when the library was built with the OpenCL backend
 * (sdpa_backend_compiled(SDPA_BACKEND_OPENCL)); otherwise these functions
 * return SDPA_ERR_UNSUPPORTED. libsdpa opens libOpenCL.so.1 at run time (it
 * does not link it); sdpa_opencl_context_create returns
 * SDPA_ERR_UNSUPPORTED when it cannot be loaded.
 */
#ifndef SDPA_OPENCL_H
#define SDPA_OPENCL_H

#include "sdpa.h"

#include <CL/cl.h>

#ifdef __cplusplus
extern "C" {
#endif

/* OpenCL backend tile parameters (sdpa.h, "tile parameters"; define
 * SDPA_EXPERIMENTAL before including). Also found by name without this
 * header: sdpa_tile_param_from_name("gemm_params", &p). */
#ifdef SDPA_EXPERIMENTAL
/* Unfused path (SDPA_TILE_UNFUSED = 1) only: the CLBlast GEMM parameter set,
 * 0 = CLBlast's own, 1..n = libsdpa's table (docs/opencl.md); SDPA_AUTO =
 * the set in force for the device. The set is process-wide per device. */
#define SDPA_TILE_OPENCL_GEMM_PARAMS ((sdpa_tile_param)(SDPA_TILE_BACKEND_FIRST + 0))
/* Fused forward kernel ("fwd_kernel"): 0 = rows per work-item (fwd.cl), 1 =
 * FlashAttention-2 blocks (fwd_block.cl: q_tile rows x k_tile keys per
 * work-group of wg_size); SDPA_AUTO = the device's class decides
 * (docs/opencl.md). */
#define SDPA_TILE_OPENCL_FWD_KERNEL ((sdpa_tile_param)(SDPA_TILE_BACKEND_FIRST + 1))
#endif

/* Creates an OpenCL-backend context around the application's objects. The
 * library retains `context`, `device` and `queue` (and releases them in
 * sdpa_context_destroy); all work is enqueued on `queue`, in order, after
 * whatever the application enqueued before. `queue` must belong to `context`
 * and `device`, and be in-order. `options` may be NULL; its backend and
 * device fields are ignored (the logging, cache and profile fields apply).
 * Not thread-safe with respect to other users of `queue`.
 * Returns SDPA_ERR_NULL, SDPA_ERR_DEVICE (an object is invalid; native
 * cl_int kept), SDPA_ERR_OUT_OF_MEMORY, SDPA_ERR_UNSUPPORTED. */
SDPA_API sdpa_status sdpa_opencl_context_create(const sdpa_context_options *options,
                                                cl_context context, cl_device_id device,
                                                cl_command_queue queue,
                                                sdpa_context **out);

/* Wraps an existing cl_mem (of ctx's cl_context) as an sdpa_buffer of its
 * full size. The library retains the cl_mem and releases that reference in
 * sdpa_buffer_destroy; the application keeps its own. Returns SDPA_ERR_NULL,
 * SDPA_ERR_MISMATCHED_CONTEXT (ctx is not an OpenCL context, or the cl_mem
 * belongs to another cl_context), SDPA_ERR_DEVICE. */
SDPA_API sdpa_status sdpa_opencl_buffer_wrap(sdpa_context *ctx, cl_mem mem,
                                             sdpa_buffer **out);

/* The cl_mem behind a buffer of an OpenCL context (not retained), or NULL. */
SDPA_API cl_mem sdpa_opencl_buffer_mem(const sdpa_buffer *buf);

/* The context's queue / cl_context (not retained), or NULL when ctx is not
 * an OpenCL context. */
SDPA_API cl_command_queue sdpa_opencl_queue(const sdpa_context *ctx);
SDPA_API cl_context sdpa_opencl_cl_context(const sdpa_context *ctx);

#ifdef __cplusplus
}
#endif
#endif /* SDPA_OPENCL_H */
