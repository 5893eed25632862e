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

/* One line per (compiled-in backend, parameter it has). */
void tt_print_params(FILE *f);
/* The same as a JSON array text (malloc'd; NULL when out of memory):
 * [{"backend":..,"param":n,"name":..,"lo":..,"hi":..,"multiple":..,
 *   "pow2":0|1,"default":n|-1,"description":..}, ...] */
char *tt_params_json(void);

#endif
