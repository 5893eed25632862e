/*
 * tile_check.c — the one check of a forced sdpa_tile_config against the
 * backend's table of accepted values (sdpa__backend.tile_ranges), made by
 * dispatch.c before every plan_create: forced tiles, profile records and
 * tuning candidates alike. Out-of-range values are refused, never clamped,
 * with the same status (SDPA_ERR_UNSUPPORTED: what the backend cannot run,
 * so AUTO falls back to the CPU) and message on every backend.
 */
#include "dispatch.h"

#include <stdio.h>

static const char *const k_names[SDPA__TILE_FIELDS] = {
    "q_tile", "k_tile", "wg_size", "vec_width", "stage_kv", "split_kv", "unfused", "gemm_params"};

static int field(const sdpa_tile_config *t, int f)
{
    const int v[SDPA__TILE_FIELDS] = {t->q_tile,   t->k_tile,   t->wg_size, t->vec_width,
                                      t->stage_kv, t->split_kv, t->unfused, t->gemm_params};
    return v[f];
}

static bool accepts(const sdpa__tile_range *r, int v)
{
    return r->used && v >= r->lo && v <= r->hi && (r->multiple <= 1 || v % r->multiple == 0) &&
           (!r->pow2 || (v > 0 && (v & (v - 1)) == 0));
}

sdpa_status sdpa__check_tile(sdpa_context *ctx, const sdpa__backend *be,
                             const sdpa_tile_config *t)
{
    if (!t) return SDPA_OK;
    for (int f = 0; f < SDPA__TILE_FIELDS; f++) {
        int v = field(t, f);
        if (v == SDPA_AUTO) continue;
        static const sdpa__tile_range none = {false, 0, 0, 0, false};
        const sdpa__tile_range *r = be->tile_ranges ? &be->tile_ranges[f] : &none;
        if (accepts(r, v)) continue;
        if (!r->used)
            return SDPA__FAIL(ctx, SDPA_ERR_UNSUPPORTED,
                              "%s: tile.%s %d: the %s backend has no such parameter (leave it "
                              "SDPA_AUTO)", be->name, k_names[f], v, be->name);
        char extra[64] = "";
        if (r->multiple > 1) snprintf(extra, sizeof extra, ", a multiple of %d", r->multiple);
        if (r->pow2) snprintf(extra, sizeof extra, ", a power of two");
        return SDPA__FAIL(ctx, SDPA_ERR_UNSUPPORTED,
                          "%s: tile.%s %d is out of range: must be SDPA_AUTO or %d..%d%s", be->name,
                          k_names[f], v, r->lo, r->hi, extra);
    }
    return SDPA_OK;
}
