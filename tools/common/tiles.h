/*
 * tiles.h — tile parameters for the tools: the table of every compiled-in
 * backend's parameters (sdpa_tile_param_get_bounds: range, constraint,
 * default, meaning), as text or JSON (sdpa-info --tiles). Public API only.
 */
#ifndef SDPA_TOOLS_TILES_H
#define SDPA_TOOLS_TILES_H

#include <stdio.h>

#ifndef SDPA_EXPERIMENTAL
#define SDPA_EXPERIMENTAL
#endif
#include "sdpa.h"

/* Parses "name=value[,name=value...]" (names as sdpa_tile_param_name gives
 * them, e.g. q_tile=32,k_tile=64; a value is an integer or "auto") into
 * *cfg on top of what it holds. 0 with a message in err (err_size bytes) for
 * an unknown name or a value that is no integer. Ranges are the backend's
 * (checked when a plan is created). */
int tt_tile_parse(const char *spec, sdpa_tile_config *cfg, char *err, size_t err_size);

/* One line per (compiled-in backend, parameter it has). */
void tt_print_params(FILE *f);
/* The same as a JSON array text (malloc'd; NULL when out of memory):
 * [{"backend":..,"param":n,"name":..,"lo":..,"hi":..,"multiple":..,
 *   "pow2":0|1,"default":n|-1,"description":..}, ...] */
char *tt_params_json(void);

#endif
