/*
 * search.h — the candidate space of one tuning run and the order in which
 * candidates are measured. Used by tune.c only.
 */
#ifndef SDPA_TUNE_SEARCH_H
#define SDPA_TUNE_SEARCH_H

#include "tune.h"

#define SDPA__TUNE_MAX_CANDIDATES 4096
#define SDPA__TUNE_EXHAUSTIVE 24 /* spaces up to this size are measured whole */

/* Candidate 0 is the default; the backend's candidates follow, minus
 * duplicates and configurations outside the valid ranges. Returns the count
 * (>= 1) and a malloc'd array in *out, or 0 when out of memory. */
int sdpa__tune_candidates(sdpa_context *ctx, const sdpa__backend *be, const sdpa__problem *p,
                          unsigned flags, const sdpa_tile_config *def, sdpa_tile_config **out);

/* Measurement order: exhaustive for small spaces; otherwise the default
 * (seeded heuristic start), random samples until half the budget or half the
 * space is used, then neighbours of the best so far (configurations differing
 * in one parameter), falling back to random samples when the best has none
 * left. */
typedef struct sdpa__search {
    int n;
    const sdpa_tile_config *cand;
    bool *visited;
    int visited_count;
    bool exhaustive;
    int sampled;
    uint64_t rng;
} sdpa__search;

bool sdpa__search_init(sdpa__search *s, const sdpa_tile_config *cand, int n, uint64_t seed);
void sdpa__search_free(sdpa__search *s);
/* Next candidate to measure, or -1 when all were visited. ms[i] is the time
 * of candidate i (INFINITY when unmeasured or rejected); `best` the index of
 * the best so far (-1 when none); frac = elapsed / budget. */
int sdpa__search_next(sdpa__search *s, const double *ms, int best, double frac);

#endif /* SDPA_TUNE_SEARCH_H */
