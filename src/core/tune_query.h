/*
 * tune_query.h — the narrow interface the tuner (src/tune) has to the front
 * end beyond the public and experimental API of sdpa.h: the validated
 * problem of a description, the context's backend table (for its name and
 * kind), and the backend's configuration slots through dispatch.c. The
 * tuner never sees context internals (context_impl.h); scripts/check-layers.sh
 * checks that src/tune includes no other core header that exposes them.
 */
#ifndef SDPA_CORE_TUNE_QUERY_H
#define SDPA_CORE_TUNE_QUERY_H

#include "internal.h"

/* Validates desc (as sdpa_plan_create does) into *p; the status and message
 * of the first problem otherwise. */
sdpa_status sdpa__query_problem(sdpa_context *ctx, const sdpa_attention_desc *desc,
                                sdpa__problem *p);
/* The backend table of ctx's primary backend (never the AUTO fallback). */
const sdpa__backend *sdpa__query_backend(const sdpa_context *ctx);
/* The complete default configuration of the primary backend for p. */
sdpa_status sdpa__query_default_tile(sdpa_context *ctx, const sdpa__problem *p, unsigned flags,
                                     sdpa_tile_config *out);
/* The primary backend's tuning candidates (backend.h, tile_candidates). */
int sdpa__query_tile_candidates(sdpa_context *ctx, const sdpa__problem *p, unsigned flags,
                                sdpa_tile_config *out, int max);
/* be's kernel-source hash (backend.h, source_hash), NULL when it has none. */
const char *sdpa__query_source_hash(const sdpa__backend *be);

#endif /* SDPA_CORE_TUNE_QUERY_H */
