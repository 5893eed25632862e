/*
 * host_buffers.h — buffers, device listing and finish for the host-memory
 * backends (reference and cpu): a buffer handle is simply a 64-byte aligned
 * host pointer, and work is synchronous, so finish has nothing to wait for.
 */
#ifndef SDPA_CPU_HOST_BUFFERS_H
#define SDPA_CPU_HOST_BUFFERS_H

#include "internal.h"

/* Host memory for K/V-sized data (buffers, and the read probes that stand
 * for them, so `% bw` and `vs read` compare like with like): 64-byte
 * aligned; from two huge pages up (sdpa__os_huge_page_size) aligned to a huge
 * page and advised to be backed by them. K/V are streamed once per call and
 * a paged pool is read in blocks of a few KiB at random places: with 4 KiB
 * pages each block costs a TLB miss, and the hardware prefetchers restart at
 * every page. A buffer written only here and there then takes memory in
 * huge-page steps: SDPA_CPU_HUGE_PAGES=0 turns the advice off (a bad value
 * is logged on ctx, which may be NULL). Freed with sdpa__aligned_free; NULL
 * when out of memory. */
void *sdpa__host_alloc(sdpa_context *ctx, size_t bytes);

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
