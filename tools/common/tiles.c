/*
 * tiles.c — see tiles.h. Walks every backend kind and parameter number and
 * keeps what sdpa_tile_param_get_bounds answers SDPA_OK for, so a new
 * parameter or backend shows up without a change here.
 */
#include "tiles.h"

#include <cJSON.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>


/* Calls fn for each (backend, parameter) the library reports. */
typedef void (*param_fn)(void *user, sdpa_backend_kind kind, int param,
                         const sdpa_tile_bounds *b);
static void each_param(param_fn fn, void *user)
{
    for (int ki = SDPA_BACKEND_REFERENCE; ki < SDPA_BACKEND_COUNT; ki++) {
        const sdpa_backend_kind kind = (sdpa_backend_kind)ki;
        if (!sdpa_backend_compiled(kind)) continue;
        for (int p = 0; p < SDPA_TILE_PARAM_SLOTS; p++) {
            sdpa_tile_bounds b;
            if (sdpa_tile_param_get_bounds(kind, (sdpa_tile_param)p, &b) == SDPA_OK)
                fn(user, kind, p, &b);
        }
    }
}

int tt_tile_parse(const char *spec, sdpa_tile_config *cfg, char *err, size_t err_size)
{
    const char *s = spec;
    while (s && *s) {
        const char *end = strchr(s, ',');
        size_t len = end ? (size_t)(end - s) : strlen(s);
        char item[96], *eq;
        if (len == 0 || len >= sizeof item || !(eq = memchr(s, '=', len))) {
            snprintf(err, err_size, "expected name=value, got \"%.*s\"", (int)len, s);
            return 0;
        }
        memcpy(item, s, len);
        item[len] = '\0';
        item[eq - s] = '\0';
        const char *name = item, *value = item + (eq - s) + 1;
        sdpa_tile_param param;
        if (sdpa_tile_param_from_name(name, &param) != SDPA_OK) {
            snprintf(err, err_size, "no parameter \"%s\" (sdpa-info --tiles lists them)",
                     name);
            return 0;
        }
        long v = SDPA_AUTO;
        if (strcmp(value, "auto") != 0) {
            char *stop;
            errno = 0;
            v = strtol(value, &stop, 10);
            if (!*value || *stop || errno || v < -(1L << 30) || v > (1L << 30)) {
                snprintf(err, err_size, "%s=%s: expected an integer or auto", name, value);
                return 0;
            }
        }
        sdpa_tile_config_set(cfg, param, (int)v);
        s = end ? end + 1 : NULL;
    }
    return 1;
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
