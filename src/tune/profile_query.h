/*
 * profile_query.h — the narrow interface of the profile store (src/tune) to
 * the front end: the one header of src/tune that src/core may include
 * (scripts/check-layers.sh checks it). Plan creation asks for the record of
 * a device and bucket; sdpa_context_peak reads and writes the peak cache.
 * Nothing here exposes records, files or the tuner.
 */
#ifndef SDPA_TUNE_PROFILE_QUERY_H
#define SDPA_TUNE_PROFILE_QUERY_H

#include "internal.h"

#include <stdbool.h>
#include <stddef.h>

/* Which device a record belongs to. */
typedef struct sdpa__device_key {
    char backend[16];
    char vendor[128];
    char device[256];
    int compute_units;
    char driver[128];      /* not part of the key: a mismatch marks "stale" */
    char source_hash[72];  /* not part of the key: a mismatch marks "stale" */
    char family[64];       /* not part of the key: the architecture family
                              (src/core/device_table.h), "" when unknown; a
                              lookup without an exact record falls back to a
                              record of the same family */
} sdpa__device_key;

/* Shape bucket: kernel kind, dtype, head dims, mask kind, log2 lengths. */
typedef struct sdpa__bucket {
    char kind[12];         /* "forward" | "backward" | "decode" */
    sdpa_dtype dtype;
    sdpa_dtype kv_dtype;   /* K/V's storage when it differs from q's, else NONE */
    int d, dv;
    char mask[8];          /* "full" | "causal" | "band" */
    int sq_log2, skv_log2, bh_log2; /* ceil(log2(x)) */
} sdpa__bucket;

/* Bucket of a problem under the given plan flags. Decode = Sq <= 16 and
 * Skv >= 1024 (forward only). */
void sdpa__bucket_of(const sdpa__problem *p, unsigned plan_flags, sdpa__bucket *b);
/* Device key of backend `be` on ctx (the context's device when be is the
 * context's backend, else device 0, e.g. the AUTO CPU fallback). */
sdpa_status sdpa__device_key_of(sdpa_context *ctx, const sdpa__backend *be,
                                sdpa__device_key *key);
/* Directory of shipped profiles (shipped_dir.c): $SDPA_SHIPPED_PROFILE_DIR,
 * else the source tree's data/profiles when the library runs from its build
 * directory, else <datadir>/sdpa/profiles relative to the loaded library, else
 * the configured prefix's. *how (when how is not NULL) names the rule:
 * "SDPA_SHIPPED_PROFILE_DIR", "build tree", "library location" or
 * "configured prefix". Never NULL. */
const char *sdpa__shipped_profile_dir(const char **how);

/* Where a lookup's record came from. */
typedef struct sdpa__profile_origin {
    int dir;               /* index of the folder in dirs */
    bool family;           /* a record of another device of the same family */
    char device[256];      /* that device's name (family records) */
    char family_key[64];   /* the family (family records) */
} sdpa__profile_origin;

/* The store's lookup: the record for device `key` and bucket `b` in the
 * profile files of the folders dirs[0..n) (the file <backend>-<device>.jsonl
 * of each; empty or NULL folders are skipped), the first folder that has one
 * winning. Without such an exact record in any folder, a record made on
 * another device of the same architecture family (key->family, not empty:
 * any <backend>-*.jsonl file of the folders, the first folder that has one
 * winning, fresh before stale) is taken, with one INFO line naming the
 * device it came from: exact records always win over family records. On a
 * hit fills *tile (the record's values: a partial configuration the backend
 * completes), *origin (when not NULL) and returns true; a stale record
 * (other driver or kernel sources) is used with one WARN. Never fails.
 * `log` only receives log lines (NULL = none): the store reads no context
 * state. */
bool sdpa__profile_lookup(sdpa_context *log, const sdpa__device_key *key, const sdpa__bucket *b,
                          const char *const *dirs, int n, sdpa_tile_config *tile,
                          sdpa__profile_origin *origin);

/* What a peak-cache record measures, and for which configuration: part of
 * its key. */
typedef struct sdpa__peak_what {
    const char *metric;  /* "fma": fp32 FMA peak, value in "gflops"; "read": read
                            bandwidth, value in "gbps" */
    const char *kernels; /* the kernel set measured for ("avx2", ...), "" for devices */
    int threads;         /* CPU backends: the context's thread count; 0 for devices */
} sdpa__peak_what;

/* The cached value of device `key` for `what`: true and *value, method when
 * <dir>/peak.jsonl holds a record with this device key, metric, kernel set,
 * thread count and driver version. A record of another driver is stale
 * (false, logged at INFO); damaged lines are skipped with one WARN. Never
 * fails. `log` receives log lines and the reason of a failed read. */
bool sdpa__peak_cache_get(sdpa_context *log, const char *dir, const sdpa__device_key *key,
                          const sdpa__peak_what *what, double *value, char *method,
                          size_t method_len);
/* Records a measurement in <dir>/peak.jsonl, replacing the device's record
 * for the same `what` (any driver). A failure (unwritable directory, ...) is
 * returned and recorded on `log`; the caller decides whether it matters. */
sdpa_status sdpa__peak_cache_put(sdpa_context *log, const char *dir, const sdpa__device_key *key,
                                 const sdpa__peak_what *what, double value, const char *method);

#endif /* SDPA_TUNE_PROFILE_QUERY_H */
