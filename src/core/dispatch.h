/*
 * dispatch.h — the thin wrappers through which the front end (src/core) and
 * the tuner (src/tune) call a backend. Each passes the slot's state to the
 * backend, the fault-injection site for tests where a failure is possible,
 * and forwards the backend's status. No other file
 * calls a backend table slot: scripts/check-layers.sh greps for it.
 */
#ifndef SDPA_CORE_DISPATCH_H
#define SDPA_CORE_DISPATCH_H

#include "context_impl.h"
#include "tile.h"

sdpa_status sdpa__call_context_init(sdpa_context *ctx, sdpa__slot *slot, int device_index);
sdpa_status sdpa__call_buffer_alloc(sdpa_context *ctx, sdpa__slot *slot, size_t bytes,
                                    void **handle);
void sdpa__call_buffer_free(sdpa_context *ctx, sdpa__slot *slot, void *handle);
sdpa_status sdpa__call_buffer_write(sdpa_context *ctx, sdpa__slot *slot, void *handle,
                                    size_t offset, const void *src, size_t bytes);
sdpa_status sdpa__call_buffer_read(sdpa_context *ctx, sdpa__slot *slot, void *handle,
                                   size_t offset, void *dst, size_t bytes);
/* Checks options->tile against the backend's parameter table, then asks
 * supports() and builds the plan. */
sdpa_status sdpa__call_plan_create(sdpa_context *ctx, sdpa__slot *slot,
                                   const sdpa__problem *p, unsigned flags,
                                   const sdpa_plan_options *options, void **state);
void sdpa__call_plan_free(sdpa_context *ctx, sdpa__slot *slot, void *state);
size_t sdpa__call_plan_workspace(const sdpa__slot *slot, const void *state);
void sdpa__call_plan_describe(const sdpa__slot *slot, const void *state, sdpa_plan_info *info);
/* The complete configuration for p: `forced` (NULL = none) checked against
 * the parameter table, completed by the backend's default_tile (values that
 * depend on the device and problem), then by the table's static defaults
 * (sdpa__tile_fill_defaults). Parameters whose value the backend derives at
 * plan time (e.g. split counts from the thread count) may stay SDPA_AUTO. */
sdpa_status sdpa__call_default_tile(sdpa_context *ctx, sdpa__slot *slot, const sdpa__problem *p,
                                    unsigned flags, const sdpa_tile_config *forced,
                                    sdpa_tile_config *out);
/* The backend's tuning candidates (0 when it offers none); see backend.h. */
int sdpa__call_tile_candidates(sdpa_context *ctx, sdpa__slot *slot, const sdpa__problem *p,
                               unsigned flags, sdpa_tile_config *out, int max);
/* The two micro-benchmarks a backend may have (src/core/peak.c). */
typedef enum sdpa__measure_what { SDPA__MEASURE_PEAK, SDPA__MEASURE_BANDWIDTH } sdpa__measure_what;
/* Whether the backend has the micro-benchmark. */
bool sdpa__call_can_measure(const sdpa__slot *slot, sdpa__measure_what what);
/* Runs it for about `seconds` (fault sites "measure_peak", "measure_bandwidth"):
 * *value in GFLOP/s or GB/s, a short description of the method. */
sdpa_status sdpa__call_measure(sdpa_context *ctx, sdpa__slot *slot, sdpa__measure_what what,
                               double seconds, double *value, char *method, size_t method_len);
/* Times `repeat` reads of `bytes` after pauses (the measure_read_time slot;
 * fault site "measure_read_time"); SDPA_ERR_UNSUPPORTED without the slot. */
sdpa_status sdpa__call_read_time(sdpa_context *ctx, sdpa__slot *slot, size_t bytes,
                                 double pause_ms, int repeat, double *ms,
                                 sdpa_read_time_info *info);
/* The kernel set the FMA peak is measured for ("" when the backend has one). */
const char *sdpa__call_peak_kernels(sdpa_context *ctx, sdpa__slot *slot);
/* Finishes outstanding work and frees the backend's context state. */
void sdpa__call_context_free(sdpa_context *ctx, sdpa__slot *slot);
/* Context-free calls: devices and kernel-source hash. */
sdpa_status sdpa__call_device_count(const sdpa__backend *be, int *count);
sdpa_status sdpa__call_device_info(const sdpa__backend *be, int index, sdpa_device_info *info);
const char *sdpa__call_load(const sdpa__backend *be);
const char *sdpa__call_source_hash(const sdpa__backend *be);
sdpa_status sdpa__call_forward(sdpa_context *ctx, sdpa__slot *slot, void *state,
                               const sdpa__problem *p, const sdpa__fwd_args *a);
sdpa_status sdpa__call_backward(sdpa_context *ctx, sdpa__slot *slot, void *state,
                                const sdpa__problem *p, const sdpa__fwd_args *a,
                                const sdpa__bwd_args *g);
sdpa_status sdpa__call_finish(sdpa_context *ctx, sdpa__slot *slot);

#endif
