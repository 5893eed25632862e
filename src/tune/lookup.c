/*
 * lookup.c — where profiles live and how plan creation finds its record.
 *
 * User profiles: <profile dir>/<backend>-<device>.jsonl, the directory being
 * the context's resolved profile dir ($SDPA_PROFILE_DIR, else
 * $XDG_DATA_HOME/sdpa/profiles, else ~/.local/share/sdpa/profiles). Shipped
 * profiles: the same file name in the shipped-profile folder (shipped_dir.c:
 * $SDPA_SHIPPED_PROFILE_DIR, else data/profiles of the build tree or of the
 * install the library was loaded from). Chain: user record for
 * this device and bucket, then the shipped one, then nothing (the backend's
 * default; the chain itself is src/core/plan.c's, which passes the folders).
 * Within a file a fresh record beats a stale one (other driver or kernel
 * sources); a stale record is still used, with one WARN per process.
 *
 * Files are parsed once per process and re-read when they change
 * (profile_cache.c). Never fails: an unreadable profile is reported (once)
 * and skipped. The lookup takes a device key and folders, not a context
 * (profile_query.h). Called by src/core/plan.c (sdpa__profile_lookup) and tune.c.
 */
#include "tune.h"

#include "../core/bytes.h"
#include "../core/fileio.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

/* ---- warn once ------------------------------------------------------------------ */

#define WARN_SLOTS 256
static pthread_mutex_t warn_lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t warn_seen[WARN_SLOTS];
static int warn_count;

static uint64_t fnv1a(const char *s)
{
    return sdpa__fnv1a64(SDPA__HASH_SEED, s, strlen(s)) | 1; /* never 0 (empty slot) */
}

void sdpa__warn_once(sdpa_context *ctx, const char *key, const char *fmt, ...)
{
    if (!ctx) return; /* nothing to log to: keep the key for a context that has a sink */
    uint64_t h = fnv1a(key);
    bool first = true;
    pthread_mutex_lock(&warn_lock);
    for (int i = 0; i < warn_count; i++)
        if (warn_seen[i] == h) first = false;
    if (first) {
        /* A full table forgets the oldest half: at worst a warning repeats. */
        if (warn_count == WARN_SLOTS) {
            memmove(warn_seen, warn_seen + WARN_SLOTS / 2, sizeof warn_seen / 2);
            warn_count = WARN_SLOTS / 2;
        }
        warn_seen[warn_count++] = h;
    }
    pthread_mutex_unlock(&warn_lock);
    if (!first) return;
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    sdpa__log(ctx, SDPA_LOG_WARN, "%s", msg);
}

/* ---- paths ---------------------------------------------------------------------- */

static bool join(char *out, size_t size, const char *dir, const char *name)
{
    if (!dir || !*dir) return false;
    int n = snprintf(out, size, "%s%s%s", dir, dir[strlen(dir) - 1] == '/' ? "" : "/", name);
    return n > 0 && (size_t)n < size;
}

bool sdpa__profile_path_for(sdpa_context *ctx, const sdpa__backend *be, char *out, size_t size)
{
    sdpa__device_key key;
    if (sdpa__device_key_of(ctx, be, &key) != SDPA_OK) return false;
    char name[160];
    sdpa__profile_file_name(&key, name, sizeof name);
    return join(out, size, sdpa__context_profile_dir(ctx), name);
}

const char *sdpa_context_profile_path(const sdpa_context *cctx)
{
    /* One context is used by one thread at a time, so a per-thread buffer
     * holds the answer until this thread asks again. */
    static _Thread_local char path[4096];
    if (!cctx) return NULL;
    sdpa_context *ctx = (sdpa_context *)cctx; /* only read: device info, dirs */
    const sdpa__backend *be = sdpa__backend_get(sdpa_context_backend(ctx));
    if (!be || !sdpa__profile_path_for(ctx, be, path, sizeof path)) return "";
    return path;
}

sdpa_status sdpa_context_profile_writable(sdpa_context *ctx)
{
    if (!ctx) return SDPA_ERR_NULL;
    const char *dir = sdpa__context_profile_dir(ctx);
    SDPA__CHECK(ctx, dir && *dir, SDPA_ERR_IO,
                "no profile directory (set SDPA_PROFILE_DIR or HOME)");
    sdpa__file_why why;
    if (sdpa__dir_writable(dir, 0755, &why) != SDPA__FILE_OK)
        return SDPA__FAIL_NATIVE(ctx, SDPA_ERR_IO, why.err,
                                 "profile directory %s is not writable (%s)", dir, why.text);
    return SDPA_OK;
}

/* ---- lookup ---------------------------------------------------------------------- */

bool sdpa__profile_lookup(sdpa_context *log, const sdpa__device_key *key, const sdpa__bucket *b,
                          const char *const *dirs, int n, sdpa_tile_config *tile, int *found_in)
{
    if (!key || !b || !tile) return false;
    char name[160], path[4096], bucket[160];
    sdpa__profile_file_name(key, name, sizeof name);
    sdpa__bucket_string(b, bucket, sizeof bucket);
    for (int i = 0; i < n; i++) {
        if (!join(path, sizeof path, dirs[i], name)) continue;
        sdpa__profile_hit r;
        bool stale = false;
        if (!sdpa__profile_find(log, path, key, b, &r, &stale)) continue;
        if (!sdpa__tile_valid(&r.tile)) continue; /* parse checked it; belt and braces */
        char desc[256];
        sdpa__tile_describe(&r.tile, desc, sizeof desc);
        if (stale) {
            char wkey[4400];
            snprintf(wkey, sizeof wkey, "stale:%s:%s", path, bucket);
            sdpa__warn_once(log, wkey,
                            "record for %s in %s is stale (tuned with driver '%s', kernels %s; "
                            "now driver '%s', kernels %s): using it until retuned (sdpa-tune)",
                            bucket, path, r.driver, r.source_hash, key->driver,
                            key->source_hash);
        }
        sdpa__log(log, SDPA_LOG_INFO, "%s: record for %s in %s: %s", key->backend, bucket, path,
                  desc);
        *tile = r.tile;
        tile->struct_size = sizeof *tile;
        if (found_in) *found_in = i;
        return true;
    }
    sdpa__log(log, SDPA_LOG_DEBUG, "%s: no profile record for %s; backend defaults", key->backend,
              bucket);
    return false;
}

int sdpa__tune_fault_candidate(void)
{
    const char *s = getenv("SDPA_TUNE_FAULT_CANDIDATE");
    if (!s || !*s) return -1;
    char *end;
    long v = strtol(s, &end, 10);
    return (*end == '\0' && v >= 0 && v < 1000000) ? (int)v : -1;
}
