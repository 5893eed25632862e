/*
 * search.c — candidate spaces and search order for the tuner.
 *
 * The space comes from the backend's tile_candidates slot (already pruned by
 * the device's limits); a backend without the slot has one candidate, its
 * default. Candidate 0 is always the default, so every run measures the
 * baseline first. Small spaces (<= SDPA__TUNE_EXHAUSTIVE) are measured whole
 * in order; larger ones are sampled at random (seeded, reproducible), then
 * refined around the best by one-parameter moves. Called by tune.c.
 */
#include "search.h"

#include <math.h>
#include <stdlib.h>

int sdpa__tune_candidates(sdpa_context *ctx, const sdpa__backend *be, const sdpa__problem *p,
                          unsigned flags, const sdpa_tile_config *def, sdpa_tile_config **out)
{
    *out = NULL;
    int total = 0;
    sdpa_tile_config *raw = NULL;
    raw = calloc(SDPA__TUNE_MAX_CANDIDATES, sizeof *raw);
    if (!raw) return 0;
    for (int i = 0; i < SDPA__TUNE_MAX_CANDIDATES; i++) sdpa_tile_config_init(&raw[i]);
    total = sdpa__query_tile_candidates(ctx, p, flags, raw, SDPA__TUNE_MAX_CANDIDATES);
    if (total > SDPA__TUNE_MAX_CANDIDATES) {
        sdpa__log(ctx, SDPA_LOG_INFO, "tune: %s offers %d candidates; using the first %d",
                  be->name, total, SDPA__TUNE_MAX_CANDIDATES);
        total = SDPA__TUNE_MAX_CANDIDATES;
    }
    sdpa_tile_config *c = calloc((size_t)total + 1, sizeof *c);
    if (!c) {
        free(raw);
        return 0;
    }
    int n = 0;
    c[n++] = *def;
    for (int i = 0; i < total; i++) {
        raw[i].struct_size = sizeof raw[i];
        if (!sdpa__tile_valid(&raw[i])) continue;
        bool dup = false;
        for (int j = 0; j < n && !dup; j++) dup = sdpa__tile_equal(&c[j], &raw[i]);
        if (!dup) c[n++] = raw[i];
    }
    free(raw);
    *out = c;
    return n;
}

bool sdpa__search_init(sdpa__search *s, const sdpa_tile_config *cand, int n, uint64_t seed)
{
    memset(s, 0, sizeof *s);
    s->n = n;
    s->cand = cand;
    s->visited = calloc((size_t)n, sizeof *s->visited);
    s->exhaustive = n <= SDPA__TUNE_EXHAUSTIVE;
    s->rng = seed * 0x9E3779B97F4A7C15ull + 0x5851F42D4C957F2Dull;
    if (!s->rng) s->rng = 1;
    return s->visited != NULL;
}

void sdpa__search_free(sdpa__search *s)
{
    free(s->visited);
    s->visited = NULL;
}

static uint64_t next_u64(uint64_t *x)
{
    *x ^= *x >> 12;
    *x ^= *x << 25;
    *x ^= *x >> 27;
    return *x * 2685821657736338717ull;
}

static int take(sdpa__search *s, int i)
{
    s->visited[i] = true;
    s->visited_count++;
    return i;
}

static int random_unvisited(sdpa__search *s)
{
    int left = s->n - s->visited_count;
    if (left <= 0) return -1;
    int k = (int)(next_u64(&s->rng) % (uint64_t)left);
    for (int i = 0; i < s->n; i++)
        if (!s->visited[i] && k-- == 0) return take(s, i);
    return -1;
}

int sdpa__search_next(sdpa__search *s, const double *ms, int best, double frac)
{
    (void)ms;
    if (s->visited_count >= s->n) return -1;
    if (!s->visited[0]) return take(s, 0); /* the default first */
    if (s->exhaustive) {
        for (int i = 0; i < s->n; i++)
            if (!s->visited[i]) return take(s, i);
        return -1;
    }
    bool sampling = frac < 0.5 && s->sampled < s->n / 2;
    if (!sampling && best >= 0) {
        /* Local refinement: the unvisited one-parameter neighbour of the
         * best, the earliest in the backend's order (its preferred first). */
        for (int i = 0; i < s->n; i++)
            if (!s->visited[i] && sdpa__tile_differing(&s->cand[i], &s->cand[best]) == 1)
                return take(s, i);
    }
    s->sampled++;
    return random_unvisited(s);
}
