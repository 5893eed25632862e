/*
 * tune.h — internal interface of the autotuner and the per-device profile
 * store (src/tune), for src/tune's own files and its tests. The front end
 * includes only profile_query.h (the lookup at plan creation, the peak
 * cache); sdpa_tune() (tune.c) measures candidates and writes records through
 * sdpa__profile_store().
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
#include "profile_query.h"
#include "tile.h"
#include "tune_query.h"

#include <stdbool.h>
#include <stddef.h>

#define SDPA__PROFILE_FORMAT 1
#define SDPA__PROFILE_MAX_FILE (16u << 20)  /* larger files are refused */
#define SDPA__PROFILE_MAX_LINE (64u << 10)  /* longer lines are skipped */
#define SDPA__PROFILE_MAX_REJECTED 16       /* rejected configs kept per record */

typedef struct sdpa__rejected {
    sdpa_tile_config tile;
    char reason[128];
} sdpa__rejected;

/* A tile member of a record that this library does not know (written by a
 * newer one): kept as its name and JSON value text and written back when the
 * record is rewritten. */
#define SDPA__PROFILE_MAX_EXTRA 8
typedef struct sdpa__tile_extra {
    char name[48];
    char json[48];
} sdpa__tile_extra;

typedef struct sdpa__profile_record {
    int format;
    sdpa__device_key dev;
    sdpa__bucket bucket;
    sdpa_tile_config tile;  /* the winner, keyed by parameter name in the file */
    int n_extra;            /* the winner's members of unknown names */
    sdpa__tile_extra extra[SDPA__PROFILE_MAX_EXTRA];
    double best_ms, default_ms;
    int n_rejected;
    sdpa__rejected rejected[SDPA__PROFILE_MAX_REJECTED];
    char tuned_at[32];      /* UTC, ISO 8601; informational */
} sdpa__profile_record;

/* ---- keys (bucket.c) ---------------------------------------------------- */

/* "forward/f32/d64/dv64/causal/sq9/skv9/bh3" */
void sdpa__bucket_string(const sdpa__bucket *b, char *out, size_t size);
bool sdpa__bucket_equal(const sdpa__bucket *a, const sdpa__bucket *b);

/* Device key of a listed device of backend be (no context needed). */
void sdpa__device_key_from_info(const sdpa__backend *be, const sdpa_device_info *info,
                                sdpa__device_key *key);
/* backend, vendor, device name and compute units equal. */
bool sdpa__device_key_equal(const sdpa__device_key *a, const sdpa__device_key *b);
/* "<backend>-<sanitised device name>.jsonl" */
void sdpa__profile_file_name(const sdpa__device_key *key, char *out, size_t size);


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


/* ---- parsed-profile cache (profile_cache.c) ------------------------------ */

/* What a lookup needs of a record. */
typedef struct sdpa__profile_hit {
    sdpa_tile_config tile;
    char driver[128];
    char source_hash[72];
    char device[256];       /* the record's device name */
} sdpa__profile_hit;

/* The best record of the profile at path for device key and bucket b (a
 * record whose driver or kernel-source hash differs from key's is stale;
 * fresh beats stale, later lines beat earlier). The file is parsed once per
 * process and re-parsed only when its device, inode, size, mtime or ctime
 * changed. Thread-safe. False when there is no such record or the file
 * cannot be read (reported once by sdpa__profile_read). */
bool sdpa__profile_find(sdpa_context *ctx, const char *path, const sdpa__device_key *key,
                        const sdpa__bucket *b, sdpa__profile_hit *out, bool *stale);
/* The same over the records of the other devices of key's architecture
 * family (key->family; false when it is empty): same backend and family,
 * another device key. Cached apart from the exact records. */
bool sdpa__profile_find_family(sdpa_context *ctx, const char *path, const sdpa__device_key *key,
                               const sdpa__bucket *b, sdpa__profile_hit *out, bool *stale);
/* Drops what is cached for path (after this process rewrote it). */
void sdpa__profile_cache_forget(const char *path);
/* Test hook: how many profile files sdpa__profile_read has parsed in this
 * process (sdpa__profile_parsed counts one). */
unsigned long sdpa__profile_parse_count(void);
void sdpa__profile_parsed(void);

/* ---- lookup (lookup.c) -------------------------------------------------- */


/* Full path of the user profile for backend be on ctx; false if none. */
bool sdpa__profile_path_for(sdpa_context *ctx, const sdpa__backend *be, char *out,
                            size_t size);


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
