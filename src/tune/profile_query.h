/*
 * profile_query.h — the narrow interface of the profile store (src/tune) to
 * the front end: the one header of src/tune that src/core may include
 * (scripts/check-layers.sh checks it). Plan creation asks for the record of
 * a device and bucket; sdpa_context_peak reads and writes the peak cache.
 * Nothing here exposes records, files or the tuner.
 */
#ifndef SDPA_TUNE_PROFILE_QUERY_H
#define SDPA_TUNE_PROFILE_QUERY_H

#include "internal.h"

#include <stdbool.h>
#include <stddef.h>

/* Plan creation without a forced tile: the user profile's record for be's
 * device (on ctx) and the problem's bucket, then the shipped profile's. On a
 * hit fills *tile (the record's values; a partial configuration the backend
 * completes) and `source` ("profile" or "shipped profile") and returns true;
 * a stale record (other driver or kernel sources) is used with one WARN.
 * Never fails; logs through ctx. */
bool sdpa__profile_lookup(sdpa_context *ctx, const sdpa__backend *be,
                          const sdpa__problem *p, unsigned plan_flags,
                          sdpa_tile_config *tile, char *source, size_t source_size);

/* The cached peak of backend be's device on ctx with `threads` (0 for
 * device backends): true and *gflops, method when <profile dir>/peak.jsonl
 * holds a record with this device key, thread count and driver version. A
 * record of another driver is stale (false, logged at INFO); damaged lines
 * are skipped with one WARN. Never fails. */
bool sdpa__peak_cache_get(sdpa_context *ctx, const sdpa__backend *be, int threads,
                          double *gflops, char *method, size_t method_len);
/* Records a measurement, replacing the device's record (any driver). A
 * failure (unwritable directory, ...) is returned and recorded as usual;
 * the caller decides whether it matters. */
sdpa_status sdpa__peak_cache_put(sdpa_context *ctx, const sdpa__backend *be, int threads,
                                 double gflops, const char *method);

#endif /* SDPA_TUNE_PROFILE_QUERY_H */
