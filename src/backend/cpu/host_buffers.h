/*
 * host_buffers.h — buffers, device listing and finish for the host-memory
 * backends (reference and cpu): a buffer handle is simply a 64-byte aligned
 * host pointer, and work is synchronous, so finish has nothing to wait for.
 */
#ifndef SDPA_CPU_HOST_BUFFERS_H
#define SDPA_CPU_HOST_BUFFERS_H

#include "internal.h"

sdpa_status sdpa__host_buffer_alloc(sdpa_context *ctx, void *state, size_t bytes, void **handle);
void sdpa__host_buffer_free(sdpa_context *ctx, void *state, void *handle);
sdpa_status sdpa__host_buffer_write(sdpa_context *ctx, void *state, void *handle, size_t offset,
                                    const void *src, size_t bytes);
sdpa_status sdpa__host_buffer_read(sdpa_context *ctx, void *state, void *handle, size_t offset,
                                   void *dst, size_t bytes);
sdpa_status sdpa__host_finish(sdpa_context *ctx, void *state);
/* One device: the host CPU (model name from /proc/cpuinfo where available). */
sdpa_status sdpa__host_device_count(int *count);
sdpa_status sdpa__host_device_info(int index, sdpa_device_info *info);
/* The host CPU's fp32 FMA peak (cpu_peak.c): at the widest vector width
 * (the reference table's measure_peak; sdpa__cpu_peak_widest names it), or
 * at the width of a kernel set ("avx512", "avx2", else the portable 4 lanes:
 * the cpu table, through its context's kernels). */
sdpa_status sdpa__cpu_measure_peak(sdpa_context *ctx, void *state, double seconds, double *gflops,
                                   char *method, size_t method_len);
const char *sdpa__cpu_peak_widest(sdpa_context *ctx, void *state);
sdpa_status sdpa__cpu_measure_peak_for(sdpa_context *ctx, const char *kernels, double seconds,
                                       double *gflops, char *method, size_t method_len);
/* The host's read bandwidth (cpu_bandwidth.c): measure_bandwidth of both tables. */
sdpa_status sdpa__cpu_measure_bandwidth(sdpa_context *ctx, void *state, double seconds,
                                        double *gbps, char *method, size_t method_len);
/* Reads after a pause (cpu_bandwidth.c): measure_read_time of both tables. */
sdpa_status sdpa__cpu_measure_read_time(sdpa_context *ctx, void *state, size_t bytes,
                                        double pause_ms, int repeat, double *ms,
                                        sdpa_read_time_info *info);

#endif
