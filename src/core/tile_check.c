/*
 * tile_check.c — the one check of a tile configuration against the
 * backend's table of parameters (sdpa__backend.tile_params), made by
 * dispatch.c before the backend completes or builds a configuration: forced
 * tiles, profile records and tuning candidates alike. Out-of-range values are
 * refused, never clamped, with the same status (SDPA_ERR_UNSUPPORTED: what
 * the backend cannot run, so AUTO falls back to the CPU) and message on
 * every backend.
 */
#include "dispatch.h"
#include "tile.h"

#include <stdio.h>

static bool accepts(const sdpa__tile_param_info *r, int v)
{
    return v >= r->lo && v <= r->hi && (r->multiple <= 1 || v % r->multiple == 0) &&
           (!r->pow2 || (v > 0 && (v & (v - 1)) == 0));
}

sdpa_status sdpa__check_tile(sdpa_context *ctx, const sdpa__backend *be,
                             const sdpa_tile_config *t)
{
    if (!t) return SDPA_OK;
    for (int i = 0; i < SDPA_TILE_PARAM_SLOTS; i++) {
        sdpa_tile_param param = (sdpa_tile_param)i;
        int v = sdpa_tile_config_get(t, param);
        if (v == SDPA_AUTO) continue;
        const sdpa__tile_param_info *r = sdpa__tile_param_info_of(be, param);
        const char *name = sdpa_tile_param_name(param);
        char unnamed[24];
        if (!name) snprintf(unnamed, sizeof unnamed, "param%d", i), name = unnamed;
        if (!r)
            return SDPA__FAIL(ctx, SDPA_ERR_UNSUPPORTED,
                              "%s: tile.%s %d: the %s backend has no such parameter (leave it "
                              "SDPA_AUTO)", be->name, name, v, be->name);
        if (accepts(r, v)) continue;
        char extra[64] = "";
        if (r->multiple > 1) snprintf(extra, sizeof extra, ", a multiple of %d", r->multiple);
        if (r->pow2) snprintf(extra, sizeof extra, ", a power of two");
        return SDPA__FAIL(ctx, SDPA_ERR_UNSUPPORTED,
                          "%s: tile.%s %d is out of range: must be SDPA_AUTO or %d..%d%s", be->name,
                          name, v, r->lo, r->hi, extra);
    }
    return SDPA_OK;
}
