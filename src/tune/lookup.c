/*
 * lookup.c — where profiles live and how plan creation finds its record.
 *
 * User profiles: <profile dir>/<backend>-<device>.jsonl, the directory being
 * the context's resolved profile dir ($SDPA_PROFILE_DIR, else
 * $XDG_DATA_HOME/sdpa/profiles, else ~/.local/share/sdpa/profiles). Shipped
 * profiles: the same file name in the shipped-profile folder (shipped_dir.c:
 * $SDPA_SHIPPED_PROFILE_DIR, else data/profiles of the build tree or of the
 * install the library was loaded from). Chain: user record for
 * this device and bucket, then the shipped one; without either, a record made
 * on another device of the same architecture family (device_table.h: same
 * backend, vendor and architecture, e.g. PoCL on any AVX-512 CPU), user
 * folder first, logged at INFO with the device it came from; then nothing
 * (the backend's default; the chain itself is src/core/plan.c's, which
 * passes the folders).
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

#include <dirent.h>
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

/* Uses record r of path: the stale warning (once per file and bucket), one
 * INFO line, the tile. */
static void take(sdpa_context *log, const sdpa__device_key *key, const char *bucket,
                 const char *path, const sdpa__profile_hit *r, bool stale, sdpa_tile_config *tile)
{
    char desc[256];
    sdpa__tile_describe(&r->tile, desc, sizeof desc);
    if (stale) {
        char wkey[4400];
        snprintf(wkey, sizeof wkey, "stale:%s:%s", path, bucket);
        sdpa__warn_once(log, wkey,
                        "record for %s in %s is stale (tuned with driver '%s', kernels %s; "
                        "now driver '%s', kernels %s): using it until retuned (sdpa-tune)",
                        bucket, path, r->driver, r->source_hash, key->driver, key->source_hash);
    }
    sdpa__log(log, SDPA_LOG_INFO, "%s: record for %s in %s: %s", key->backend, bucket, path,
              desc);
    *tile = r->tile;
    tile->struct_size = sizeof *tile;
}

#define MAX_FAMILY_FILES 64
#define NAME_MAX_LEN 160

static int by_name(const void *a, const void *b) { return strcmp(a, b); }

/* The profile files of backend in dir ("<backend>-*.jsonl", at most
 * MAX_FAMILY_FILES), sorted so that the choice among them is stable. */
static int backend_files(const char *dir, const char *backend,
                         char names[][NAME_MAX_LEN])
{
    if (!dir || !*dir) return 0;
    DIR *d = opendir(dir);
    if (!d) return 0;
    size_t bl = strlen(backend);
    int n = 0;
    struct dirent *e;
    while (n < MAX_FAMILY_FILES && (e = readdir(d)) != NULL) {
        const char *nm = e->d_name;
        size_t l = strlen(nm);
        if (l >= NAME_MAX_LEN || l <= bl + 7 || strncmp(nm, backend, bl) != 0 || nm[bl] != '-' ||
            strcmp(nm + l - 6, ".jsonl") != 0)
            continue;
        memcpy(names[n++], nm, l + 1);
    }
    closedir(d);
    qsort(names, (size_t)n, NAME_MAX_LEN, by_name);
    return n;
}

/* A record of another device of key's family in dirs: the first folder that
 * has one, fresh before stale within it. */
static bool family_lookup(sdpa_context *log, const sdpa__device_key *key, const sdpa__bucket *b,
                          const char *bucket, const char *const *dirs, int n,
                          sdpa_tile_config *tile, sdpa__profile_origin *origin)
{
    static _Thread_local char names[MAX_FAMILY_FILES][NAME_MAX_LEN];
    char path[4096], stale_path[4096];
    for (int i = 0; i < n; i++) {
        int nf = backend_files(dirs[i], key->backend, names);
        sdpa__profile_hit r, stale_r;
        bool have_stale = false, found = false, stale = false;
        for (int f = 0; f < nf && !found; f++) {
            if (!join(path, sizeof path, dirs[i], names[f])) continue;
            if (!sdpa__profile_find_family(log, path, key, b, &r, &stale)) continue;
            if (!sdpa__tile_valid(&r.tile)) continue;
            if (!stale) found = true;
            else if (!have_stale) {
                have_stale = true;
                stale_r = r;
                sdpa__strlcpy(stale_path, path, sizeof stale_path);
            }
        }
        if (!found && !have_stale) continue;
        if (!found) {
            r = stale_r;
            sdpa__strlcpy(path, stale_path, sizeof path);
        }
        sdpa__log(log, SDPA_LOG_INFO,
                  "%s: no profile record of this device ('%s') for %s: using the record of "
                  "'%s' (same family %s)", key->backend, key->device, bucket, r.device,
                  key->family);
        take(log, key, bucket, path, &r, !found, tile);
        if (origin) {
            origin->dir = i;
            origin->family = true;
            sdpa__strlcpy(origin->device, r.device, sizeof origin->device);
            sdpa__strlcpy(origin->family_key, key->family, sizeof origin->family_key);
        }
        return true;
    }
    return false;
}

bool sdpa__profile_lookup(sdpa_context *log, const sdpa__device_key *key, const sdpa__bucket *b,
                          const char *const *dirs, int n, sdpa_tile_config *tile,
                          sdpa__profile_origin *origin)
{
    if (!key || !b || !tile) return false;
    if (origin) memset(origin, 0, sizeof *origin);
    char name[160], path[4096], bucket[160];
    sdpa__profile_file_name(key, name, sizeof name);
    sdpa__bucket_string(b, bucket, sizeof bucket);
    for (int i = 0; i < n; i++) {
        if (!join(path, sizeof path, dirs[i], name)) continue;
        sdpa__profile_hit r;
        bool stale = false;
        if (!sdpa__profile_find(log, path, key, b, &r, &stale)) continue;
        if (!sdpa__tile_valid(&r.tile)) continue; /* parse checked it; belt and braces */
        take(log, key, bucket, path, &r, stale, tile);
        if (origin) origin->dir = i;
        return true;
    }
    /* exact records win, in any folder; then the device's family */
    if (key->family[0] && family_lookup(log, key, b, bucket, dirs, n, tile, origin)) return true;
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
