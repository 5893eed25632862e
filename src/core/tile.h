/*
 * tile.h — tile configurations inside libsdpa (src/core/tile_params.c): the
 * parameter names, each backend's table lookup, and the helpers every part
 * that handles a configuration shares (plan creation, the checker, the
 * profile store, the tuner): equality, text, a generic sanity range.
 */
#ifndef SDPA_CORE_TILE_H
#define SDPA_CORE_TILE_H

#include "backend.h"

#include <stddef.h>

/* Largest value a profile record may carry for any parameter (the backends'
 * own tables are narrower; src/core/tile_check.c checks those). */
#define SDPA__TILE_MAX 65536
/* Minimum struct_size of an sdpa_tile_config (the first seven values). */
#define SDPA__TILE_CONFIG_MIN_SIZE SDPA_TILE_CONFIG_SIZE_V1

/* Refuses a value outside be->tile_params (tile_check.c): the one check, made
 * by dispatch.c before a backend completes or builds a configuration, and by
 * the profile store on the records of a compiled-in backend. t may be NULL;
 * ctx may be NULL (then only the status travels). */
sdpa_status sdpa__check_tile(sdpa_context *ctx, const sdpa__backend *be,
                             const sdpa_tile_config *t);
/* be's entry for param, or NULL when be has no such parameter. */
const sdpa__tile_param_info *sdpa__tile_param_info_of(const sdpa__backend *be,
                                                      sdpa_tile_param param);
/* Sets every SDPA_AUTO value of t whose parameter has a static default in
 * the table params[0..n) (def != SDPA_AUTO) to that default: how the
 * tables' defaults are applied (dispatch.c after the backend's default_tile;
 * backends' default_tile for their own table). */
void sdpa__tile_fill_defaults(const sdpa__tile_param_info *params, int n, sdpa_tile_config *t);
/* Every value is SDPA_AUTO or within 0..SDPA__TILE_MAX. */
bool sdpa__tile_valid(const sdpa_tile_config *t);
bool sdpa__tile_equal(const sdpa_tile_config *a, const sdpa_tile_config *b);
/* Parameters whose values differ between a and b. */
int sdpa__tile_differing(const sdpa_tile_config *a, const sdpa_tile_config *b);
/* "q_tile=32 k_tile=64" (the set values, by name), "auto" when none. */
void sdpa__tile_describe(const sdpa_tile_config *t, char *out, size_t size);
/* A copy of t with every value of a smaller (older) struct read as
 * SDPA_AUTO and struct_size the library's; t may be NULL (all AUTO). */
void sdpa__tile_normalise(const sdpa_tile_config *t, sdpa_tile_config *out);

#endif /* SDPA_CORE_TILE_H */
