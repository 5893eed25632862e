/*
 * tune.h — internal interface of the autotuner and the per-device profile
 * store (src/tune). The front end calls sdpa__profile_lookup() when a plan is
 * created without a forced tile; sdpa_tune() (tune.c) measures candidates and
 * writes records through sdpa__profile_store().
 *
 * A profile is a JSON-lines file per device: one record (one JSON object) per
 * shape bucket. Everything read from a profile is untrusted: lines are size-
 * limited, parsed with cJSON, type- and range-checked, and a line that fails
 * any check is skipped (one WARN per file), never fatal. docs/tuning.md has
 * the record format.
 */
#ifndef SDPA_TUNE_TUNE_H
#define SDPA_TUNE_TUNE_H

#include "internal.h"

#include <stdbool.h>
#include <stddef.h>

#define SDPA__PROFILE_FORMAT 1
#define SDPA__PROFILE_MAX_FILE (16u << 20)  /* larger files are refused */
#define SDPA__PROFILE_MAX_LINE (64u << 10)  /* longer lines are skipped */
#define SDPA__PROFILE_MAX_REJECTED 16       /* rejected configs kept per record */
#define SDPA__TILE_MAX 65536                /* upper bound of any tile field */

/* Which device a record belongs to. */
typedef struct sdpa__device_key {
    char backend[16];
    char vendor[128];
    char device[256];
    int compute_units;
    char driver[128];      /* not part of the key: a mismatch marks "stale" */
    char source_hash[72];  /* not part of the key: a mismatch marks "stale" */
} sdpa__device_key;

/* Shape bucket: kernel kind, dtype, head dims, mask kind, log2 lengths. */
typedef struct sdpa__bucket {
    char kind[12];         /* "forward" | "backward" | "decode" */
    sdpa_dtype dtype;
    int d, dv;
    char mask[8];          /* "full" | "causal" | "band" */
    int sq_log2, skv_log2, bh_log2; /* ceil(log2(x)) */
} sdpa__bucket;

typedef struct sdpa__rejected {
    sdpa_tile_config tile;
    char reason[128];
} sdpa__rejected;

typedef struct sdpa__profile_record {
    int format;
    sdpa__device_key dev;
    sdpa__bucket bucket;
    sdpa_tile_config tile;  /* the winner */
    double best_ms, default_ms;
    int n_rejected;
    sdpa__rejected rejected[SDPA__PROFILE_MAX_REJECTED];
    char tuned_at[32];      /* UTC, ISO 8601; informational */
} sdpa__profile_record;

/* ---- keys (bucket.c) ---------------------------------------------------- */

/* Bucket of a problem under the given plan flags. Decode = Sq <= 16 and
 * Skv >= 1024 (forward only). */
void sdpa__bucket_of(const sdpa__problem *p, unsigned plan_flags, sdpa__bucket *b);
/* "forward/f32/d64/dv64/causal/sq9/skv9/bh3" */
void sdpa__bucket_string(const sdpa__bucket *b, char *out, size_t size);
bool sdpa__bucket_equal(const sdpa__bucket *a, const sdpa__bucket *b);

/* Device key of backend `be` on ctx (the context's device when be is the
 * context's backend, else device 0, e.g. the AUTO CPU fallback). */
sdpa_status sdpa__device_key_of(sdpa_context *ctx, const sdpa__backend *be,
                                sdpa__device_key *key);
/* Device key of a listed device of backend be (no context needed). */
void sdpa__device_key_from_info(const sdpa__backend *be, const sdpa_device_info *info,
                                sdpa__device_key *key);
/* backend, vendor, device name and compute units equal. */
bool sdpa__device_key_equal(const sdpa__device_key *a, const sdpa__device_key *b);
/* "<backend>-<sanitised device name>.jsonl" */
void sdpa__profile_file_name(const sdpa__device_key *key, char *out, size_t size);

/* Tile configs: valid ranges, equality, human-readable text. */
bool sdpa__tile_valid(const sdpa_tile_config *t);
bool sdpa__tile_equal(const sdpa_tile_config *a, const sdpa_tile_config *b);
void sdpa__tile_describe(const sdpa_tile_config *t, char *out, size_t size);

/* ---- records and files (profile.c) ------------------------------------ */

/* Record <-> one JSON line (no newline). Returns a malloc'd string, NULL on
 * allocation failure. */
char *sdpa__profile_record_to_json(const sdpa__profile_record *r);
/* Parses one line: false (with a short reason) when the line is not a valid
 * record of this format version. */
bool sdpa__profile_record_parse(const char *line, size_t len, sdpa__profile_record *r,
                                const char **why);

/* Result of reading one file. */
typedef struct sdpa__profile_file {
    sdpa__profile_record *records;
    size_t count;
    size_t bad_lines;       /* skipped: junk, wrong types, wrong version, too long */
} sdpa__profile_file;

/* Reads path. A missing file is SDPA_OK with no records. Files larger than
 * SDPA__PROFILE_MAX_FILE are refused (SDPA_ERR_CORRUPT). Bad lines are
 * counted, and logged as one WARN per file on ctx (ctx may be NULL). */
sdpa_status sdpa__profile_read(sdpa_context *ctx, const char *path, sdpa__profile_file *f);
void sdpa__profile_file_free(sdpa__profile_file *f);

/* Stores r in the file at path, replacing the record with the same device
 * key and bucket: takes an flock on "<path>.lock", re-reads the file, writes
 * "<path>.tmp.<pid>", fsyncs it and renames it over path (through a symlink
 * to its target; a dangling link or a non-regular file is refused with
 * SDPA_ERR_IO; stale temp files of dead writers are removed). Creates the
 * directory. Safe with several processes. Lines of other format versions
 * that are valid JSON objects are kept; junk lines are dropped. */
sdpa_status sdpa__profile_store(sdpa_context *ctx, const char *path,
                                const sdpa__profile_record *r);

/* Generic JSON-lines files (the mechanics above, shared with peak_cache.c).
 * sdpa__jsonl_read: reads path under the same size limits (a missing file is
 * SDPA_OK and calls nothing) and calls fn for every line, without its '\n'.
 * sdpa__jsonl_store: the locked, atomic rewrite of sdpa__profile_store: each
 * non-blank line is classified by `same`; `json` (one line, no '\n') takes
 * the place of the first REPLACE line (later ones dropped; appended when
 * none), DROP lines go, KEEP lines stay when they are JSON objects within
 * the limits (junk is dropped); creates the directory. */
typedef void (*sdpa__jsonl_line_fn)(void *user, const char *line, size_t len);
enum { SDPA__JSONL_KEEP = 0, SDPA__JSONL_REPLACE = 1, SDPA__JSONL_DROP = 2 };
typedef int (*sdpa__jsonl_match_fn)(void *user, const char *line, size_t len);
sdpa_status sdpa__jsonl_read(sdpa_context *ctx, const char *path, sdpa__jsonl_line_fn fn,
                             void *user);
sdpa_status sdpa__jsonl_store(sdpa_context *ctx, const char *path, const char *json,
                              sdpa__jsonl_match_fn same, void *user);

/* ---- device peak cache (peak_cache.c) ------------------------------------ */

#define SDPA__PEAK_FORMAT 1
#define SDPA__PEAK_FILE "peak.jsonl"

/* What a record measures, and for which configuration: part of its key. */
typedef struct sdpa__peak_what {
    const char *metric;  /* "fma": fp32 FMA peak, value in "gflops"; "read": read
                            bandwidth, value in "gbps" */
    const char *kernels; /* the kernel set measured for ("avx2", ...), "" for devices */
    int threads;         /* CPU backends: the context's thread count; 0 for devices */
} sdpa__peak_what;

/* The cached value of backend be's device on ctx for `what`: true and
 * *value, method when <profile dir>/peak.jsonl holds a record with this
 * device key, metric, kernel set, thread count and driver version. A record
 * of another driver is stale (false, logged at INFO); damaged lines are
 * skipped with one WARN. Never fails. */
bool sdpa__peak_cache_get(sdpa_context *ctx, const sdpa__backend *be, const sdpa__peak_what *what,
                          double *value, char *method, size_t method_len);
/* Records a measurement, replacing the device's record for `what` (any
 * driver). A failure (unwritable directory, ...) is returned and recorded as
 * usual; the caller decides whether it matters. */
sdpa_status sdpa__peak_cache_put(sdpa_context *ctx, const sdpa__backend *be,
                                 const sdpa__peak_what *what, double value, const char *method);

/* ---- parsed-profile cache (profile_cache.c) ------------------------------ */

/* What a lookup needs of a record. */
typedef struct sdpa__profile_hit {
    sdpa_tile_config tile;
    char driver[128];
    char source_hash[72];
} sdpa__profile_hit;

/* The best record of the profile at path for device key and bucket b (a
 * record whose driver or kernel-source hash differs from key's is stale;
 * fresh beats stale, later lines beat earlier). The file is parsed once per
 * process and re-parsed only when its device, inode, size, mtime or ctime
 * changed. Thread-safe. False when there is no such record or the file
 * cannot be read (reported once by sdpa__profile_read). */
bool sdpa__profile_find(sdpa_context *ctx, const char *path, const sdpa__device_key *key,
                        const sdpa__bucket *b, sdpa__profile_hit *out, bool *stale);
/* Drops what is cached for path (after this process rewrote it). */
void sdpa__profile_cache_forget(const char *path);
/* Test hook: how many profile files sdpa__profile_read has parsed in this
 * process (sdpa__profile_parsed counts one). */
unsigned long sdpa__profile_parse_count(void);
void sdpa__profile_parsed(void);

/* ---- lookup (lookup.c) -------------------------------------------------- */

/* Directory of shipped profiles (shipped_dir.c): $SDPA_SHIPPED_PROFILE_DIR,
 * else the source tree's data/profiles when the library runs from its build
 * directory, else <datadir>/sdpa/profiles relative to the loaded library, else
 * the configured prefix's. *how (when how is not NULL) names the rule:
 * "SDPA_SHIPPED_PROFILE_DIR", "build tree", "library location" or
 * "configured prefix". Never NULL. */
const char *sdpa__shipped_profile_dir(const char **how);

/* Full path of the user profile for backend be on ctx; false if none. */
bool sdpa__profile_path_for(sdpa_context *ctx, const sdpa__backend *be, char *out,
                            size_t size);

/* The hook plan creation calls when options->tile is NULL: user record for
 * this device and bucket, then a shipped one. On a hit fills *tile and
 * `source` ("profile" or "shipped profile") and returns true; a stale record
 * (other driver or kernel sources) is used with one WARN. Never fails. */
bool sdpa__profile_lookup(sdpa_context *ctx, const sdpa__backend *be,
                          const sdpa__problem *p, unsigned plan_flags,
                          sdpa_tile_config *tile, char *source, size_t source_size);

/* Logs `fmt` at WARN only the first time `key` is seen in this process
 * (bounded table; thread-safe). With ctx NULL nothing is logged and the key
 * is not marked seen. */
void sdpa__warn_once(sdpa_context *ctx, const char *key, const char *fmt, ...)
    SDPA__PRINTF(3, 4);

/* ---- test hook ------------------------------------------------------------ */

/* Test hook (documented in docs/tuning.md): when the environment variable
 * SDPA_TUNE_FAULT_CANDIDATE=N is set, sdpa_tune corrupts the checked output of
 * candidate number N (0 = the default) so that the check must reject it. */
int sdpa__tune_fault_candidate(void);

#endif /* SDPA_TUNE_TUNE_H */
