/*
 * tile_params.c — the tile-parameter API (sdpa.h, "tile parameters"): the
 * configuration object (init/set/get, versioned by struct_size), the names
 * of the core parameters, and the per-backend bounds query, which reads the
 * backend's own table (sdpa__backend.tile_params; each backend documents
 * there what a parameter means for it). Backend parameters
 * (SDPA_TILE_BACKEND_FIRST..) are named by their backend's table, so a new
 * one needs no change here. Also the shared helpers of tile.h.
 */
#include "tile.h"

#include "internal.h"

#include <stdio.h>

/* Core parameter names: the keys of profile records and the "tile.<name>" of
 * messages. Indexed by sdpa_tile_param below SDPA_TILE_BACKEND_FIRST. */
static const char *const k_core_names[] = {
    [SDPA_TILE_Q_TILE] = "q_tile",       [SDPA_TILE_K_TILE] = "k_tile",
    [SDPA_TILE_WG_SIZE] = "wg_size",     [SDPA_TILE_VEC_WIDTH] = "vec_width",
    [SDPA_TILE_STAGE_KV] = "stage_kv",   [SDPA_TILE_SPLIT_KV] = "split_kv",
    [SDPA_TILE_UNFUSED] = "unfused",     [SDPA_TILE_LANES] = "lanes",
};
#define N_CORE ((int)(sizeof k_core_names / sizeof k_core_names[0]))


static bool in_struct(const sdpa_tile_config *c, int param)
{
    return param >= 0 && param < SDPA_TILE_PARAM_SLOTS &&
           c->struct_size >= offsetof(sdpa_tile_config, value) + (size_t)(param + 1) * sizeof(int);
}

void sdpa_tile_config_init(sdpa_tile_config *c)
{
    if (!c) return;
    c->struct_size = sizeof *c;
    for (int i = 0; i < SDPA_TILE_PARAM_SLOTS; i++) c->value[i] = SDPA_AUTO;
}

sdpa_status sdpa_tile_config_set(sdpa_tile_config *c, sdpa_tile_param param, int value)
{
    if (!c) return SDPA_ERR_NULL;
    if (!in_struct(c, (int)param)) return SDPA_ERR_INVALID_ARG;
    c->value[param] = value;
    return SDPA_OK;
}

int sdpa_tile_config_get(const sdpa_tile_config *c, sdpa_tile_param param)
{
    return c && in_struct(c, (int)param) ? c->value[param] : SDPA_AUTO;
}

const sdpa__tile_param_info *sdpa__tile_param_info_of(const sdpa__backend *be,
                                                      sdpa_tile_param param)
{
    for (int i = 0; be && i < be->n_tile_params; i++)
        if (be->tile_params[i].param == param) return &be->tile_params[i];
    return NULL;
}

const char *sdpa_tile_param_name(sdpa_tile_param param)
{
    if ((int)param >= 0 && (int)param < N_CORE) return k_core_names[param];
    for (int k = SDPA_BACKEND_REFERENCE; k < SDPA_BACKEND_COUNT; k++) {
        const sdpa__backend *be = sdpa__backend_get((sdpa_backend_kind)k);
        const sdpa__tile_param_info *in = sdpa__tile_param_info_of(be, param);
        if (in && in->name) return in->name;
    }
    return NULL;
}

sdpa_status sdpa_tile_param_from_name(const char *name, sdpa_tile_param *param)
{
    if (!name || !param) return SDPA_ERR_NULL;
    for (int p = 0; p < SDPA_TILE_PARAM_SLOTS; p++) {
        const char *n = sdpa_tile_param_name((sdpa_tile_param)p);
        if (n && strcmp(n, name) == 0) {
            *param = (sdpa_tile_param)p;
            return SDPA_OK;
        }
    }
    return SDPA_ERR_INVALID_ARG;
}

sdpa_status sdpa_tile_param_get_bounds(sdpa_backend_kind kind, sdpa_tile_param param,
                                       sdpa_tile_bounds *b)
{
    if (!b) return SDPA_ERR_NULL;
    memset(b, 0, sizeof *b);
    b->struct_size = sizeof *b;
    b->default_value = SDPA_AUTO;
    if ((int)param < 0 || (int)param >= SDPA_TILE_PARAM_SLOTS) return SDPA_ERR_INVALID_ARG;
    b->name = sdpa_tile_param_name(param);
    const sdpa__tile_param_info *in = sdpa__tile_param_info_of(sdpa__backend_get(kind), param);
    if (!in) return SDPA_ERR_UNSUPPORTED;
    b->lo = in->lo;
    b->hi = in->hi;
    b->multiple = in->multiple > 1 ? in->multiple : 1;
    b->pow2 = in->pow2;
    b->default_value = in->def;
    b->description = in->description;
    return SDPA_OK;
}

/* ---- helpers (tile.h) ------------------------------------------------------ */

void sdpa__tile_fill_defaults(const sdpa__tile_param_info *params, int n, sdpa_tile_config *t)
{
    for (int i = 0; i < n; i++) {
        const sdpa__tile_param_info *in = &params[i];
        if (in->def != SDPA_AUTO && sdpa_tile_config_get(t, in->param) == SDPA_AUTO)
            sdpa_tile_config_set(t, in->param, in->def);
    }
}

bool sdpa__tile_valid(const sdpa_tile_config *t)
{
    for (int i = 0; i < SDPA_TILE_PARAM_SLOTS; i++) {
        int v = sdpa_tile_config_get(t, (sdpa_tile_param)i);
        if (v != SDPA_AUTO && (v < 0 || v > SDPA__TILE_MAX)) return false;
    }
    return true;
}

int sdpa__tile_differing(const sdpa_tile_config *a, const sdpa_tile_config *b)
{
    int n = 0;
    for (int i = 0; i < SDPA_TILE_PARAM_SLOTS; i++) {
        sdpa_tile_param p = (sdpa_tile_param)i;
        n += sdpa_tile_config_get(a, p) != sdpa_tile_config_get(b, p);
    }
    return n;
}

bool sdpa__tile_equal(const sdpa_tile_config *a, const sdpa_tile_config *b)
{
    return sdpa__tile_differing(a, b) == 0;
}

void sdpa__tile_describe(const sdpa_tile_config *t, char *out, size_t size)
{
    size_t n = 0;
    out[0] = '\0';
    for (int i = 0; i < SDPA_TILE_PARAM_SLOTS; i++) {
        int v = sdpa_tile_config_get(t, (sdpa_tile_param)i);
        if (v == SDPA_AUTO) continue;
        const char *name = sdpa_tile_param_name((sdpa_tile_param)i);
        char unnamed[16];
        if (!name) snprintf(unnamed, sizeof unnamed, "param%d", i), name = unnamed;
        int w = snprintf(out + n, size - n, "%s%s=%d", n ? " " : "", name, v);
        if (w < 0 || (size_t)w >= size - n) break;
        n += (size_t)w;
    }
    if (n == 0) sdpa__strlcpy(out, "auto", size);
}

void sdpa__tile_normalise(const sdpa_tile_config *t, sdpa_tile_config *out)
{
    sdpa_tile_config_init(out);
    for (int i = 0; t && i < SDPA_TILE_PARAM_SLOTS; i++)
        out->value[i] = sdpa_tile_config_get(t, (sdpa_tile_param)i);
}
