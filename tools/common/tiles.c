/*
 * tiles.c — see tiles.h. Walks every backend kind and parameter number and
 * keeps what sdpa_tile_param_get_bounds answers SDPA_OK for, so a new
 * parameter or backend shows up without a change here.
 */
#include "tiles.h"

#include <cJSON.h>
#include <stdlib.h>

static const sdpa_backend_kind k_kinds[] = {SDPA_BACKEND_REFERENCE, SDPA_BACKEND_CPU,
                                            SDPA_BACKEND_OPENCL, SDPA_BACKEND_VULKAN};
#define NKINDS (sizeof k_kinds / sizeof k_kinds[0])

/* Calls fn for each (backend, parameter) the library reports. */
typedef void (*param_fn)(void *user, sdpa_backend_kind kind, int param,
                         const sdpa_tile_bounds *b);
static void each_param(param_fn fn, void *user)
{
    for (size_t k = 0; k < NKINDS; k++) {
        if (!sdpa_backend_compiled(k_kinds[k])) continue;
        for (int p = 0; p < SDPA_TILE_PARAM_SLOTS; p++) {
            sdpa_tile_bounds b;
            if (sdpa_tile_param_get_bounds(k_kinds[k], (sdpa_tile_param)p, &b) == SDPA_OK)
                fn(user, k_kinds[k], p, &b);
        }
    }
}

static void print_one(void *user, sdpa_backend_kind kind, int param, const sdpa_tile_bounds *b)
{
    (void)param;
    FILE *f = user;
    char range[64], def[16];
    int n = snprintf(range, sizeof range, "%d..%d", b->lo, b->hi);
    if (b->multiple > 1) snprintf(range + n, sizeof range - (size_t)n, " x%d", b->multiple);
    if (b->pow2) snprintf(range + n, sizeof range - (size_t)n, " pow2");
    if (b->default_value == SDPA_AUTO) snprintf(def, sizeof def, "auto");
    else snprintf(def, sizeof def, "%d", b->default_value);
    fprintf(f, "  %-10s %-12s %-14s %-7s %s\n", sdpa_backend_name(kind), b->name, range, def,
            b->description ? b->description : "");
}

void tt_print_params(FILE *f)
{
    fprintf(f, "tile parameters (sdpa_tile_param_get_bounds; auto = chosen per device and "
               "problem):\n  %-10s %-12s %-14s %-7s %s\n",
            "backend", "name", "values", "default", "meaning");
    each_param(print_one, f);
}

static void json_one(void *user, sdpa_backend_kind kind, int param, const sdpa_tile_bounds *b)
{
    cJSON *o = cJSON_CreateObject();
    if (!o) return;
    cJSON_AddStringToObject(o, "backend", sdpa_backend_name(kind));
    cJSON_AddNumberToObject(o, "param", param);
    cJSON_AddStringToObject(o, "name", b->name ? b->name : "");
    cJSON_AddNumberToObject(o, "lo", b->lo);
    cJSON_AddNumberToObject(o, "hi", b->hi);
    cJSON_AddNumberToObject(o, "multiple", b->multiple);
    cJSON_AddNumberToObject(o, "pow2", b->pow2);
    cJSON_AddNumberToObject(o, "default", b->default_value);
    cJSON_AddStringToObject(o, "description", b->description ? b->description : "");
    cJSON_AddItemToArray((cJSON *)user, o);
}

char *tt_params_json(void)
{
    cJSON *a = cJSON_CreateArray();
    if (!a) return NULL;
    each_param(json_one, a);
    char *s = cJSON_PrintUnformatted(a);
    cJSON_Delete(a);
    return s;
}
