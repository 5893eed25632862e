/*
 * profile_cache.c — parsed profiles kept per process, so that plan creation
 * does not re-read and re-parse a profile file every time (a 13 MB profile
 * cost 210 ms per sdpa_plan_create before; now one parse, then a stat).
 *
 * A slot holds, for one (path, device key, mode), the records of that file
 * for that device (mode exact) or for the other devices of its architecture
 * family (mode family) in compact form (bucket, tile, driver, kernel-source
 * hash, device name),
 * plus the identity of the file when it was read: device, inode, size,
 * mtime and ctime. A lookup stats the path (following symlinks, like the
 * read) and re-parses only when that identity changed. Writers of this
 * process (sdpa__profile_store) drop the slot; other processes replace the
 * file by rename (new inode) or rewrite it (new mtime). A file modified less
 * than RACY_NS before it was read is not trusted to show a later rewrite in
 * its timestamps (coarse file-system clocks), so it is parsed again until it
 * is older (git's "racy" rule). The table is small (SLOTS, least recently
 * used goes) and guarded by one mutex, never held while a file is parsed
 * (parsing logs through the caller's sink). Called by lookup.c.
 */
#include "tune.h"

#include "../core/platform.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>

#define SLOTS 16 /* exact and family slots of a few folders' files */
#define RACY_NS 100000000ll /* 100 ms: above any file-system timestamp granularity here */

typedef struct entry {
    sdpa__bucket bucket;
    sdpa_tile_config tile;
    char driver[sizeof ((sdpa__device_key *)0)->driver];
    char source_hash[sizeof ((sdpa__device_key *)0)->source_hash];
    char device[sizeof ((sdpa__device_key *)0)->device];
} entry;

typedef struct file_id {
    dev_t dev;
    ino_t ino;
    off_t size;
    struct timespec mtime, ctime;
} file_id;

typedef struct slot {
    char *path;
    sdpa__device_key key;
    bool family;           /* mode: records of key's family, not of key */
    file_id id;
    bool racy;
    entry *e;
    size_t n;
    uint64_t used;
} slot;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static slot slots[SLOTS];
static uint64_t clock_tick;
static atomic_ulong parses;

unsigned long sdpa__profile_parse_count(void) { return atomic_load(&parses); }

void sdpa__profile_parsed(void) { atomic_fetch_add(&parses, 1); }

static bool same_id(const file_id *a, const file_id *b)
{
    return a->dev == b->dev && a->ino == b->ino && a->size == b->size &&
           a->mtime.tv_sec == b->mtime.tv_sec && a->mtime.tv_nsec == b->mtime.tv_nsec &&
           a->ctime.tv_sec == b->ctime.tv_sec && a->ctime.tv_nsec == b->ctime.tv_nsec;
}

static bool same_key(const sdpa__device_key *a, const sdpa__device_key *b)
{
    return sdpa__device_key_equal(a, b) && strcmp(a->driver, b->driver) == 0 &&
           strcmp(a->source_hash, b->source_hash) == 0 && strcmp(a->family, b->family) == 0;
}

/* Whether record r belongs to the slot: key's own (exact) or another device
 * of key's family (a family must be known). */
static bool wanted(const sdpa__device_key *r, const sdpa__device_key *key, bool family)
{
    if (!family) return sdpa__device_key_equal(r, key);
    return key->family[0] && strcmp(r->family, key->family) == 0 &&
           strcmp(r->backend, key->backend) == 0 && !sdpa__device_key_equal(r, key);
}

static void slot_clear(slot *s)
{
    free(s->path);
    free(s->e);
    memset(s, 0, sizeof *s);
}

static bool is_stale(const entry *r, const sdpa__device_key *k)
{
    return strcmp(r->driver, k->driver) != 0 || strcmp(r->source_hash, k->source_hash) != 0;
}

/* Best entry: fresh beats stale, later lines beat earlier. */
static bool search(const entry *e, size_t n, const sdpa__device_key *key, const sdpa__bucket *b,
                   sdpa__profile_hit *out, bool *stale)
{
    long best = -1;
    bool best_stale = true;
    for (size_t i = 0; i < n; i++) {
        if (!sdpa__bucket_equal(&e[i].bucket, b)) continue;
        bool s = is_stale(&e[i], key);
        if (best < 0 || !s || best_stale) {
            best = (long)i;
            best_stale = s;
        }
    }
    if (best < 0) return false;
    out->tile = e[best].tile;
    sdpa__strlcpy(out->driver, e[best].driver, sizeof out->driver);
    sdpa__strlcpy(out->source_hash, e[best].source_hash, sizeof out->source_hash);
    sdpa__strlcpy(out->device, e[best].device, sizeof out->device);
    *stale = best_stale;
    return true;
}

/* This device's records of the file, compact; false on a read failure
 * (already reported by sdpa__profile_read) or no memory. */
static bool parse(sdpa_context *ctx, const char *path, const sdpa__device_key *key, bool family,
                  entry **e, size_t *n)
{
    sdpa__profile_file f;
    *e = NULL;
    *n = 0;
    if (sdpa__profile_read(ctx, path, &f) != SDPA_OK) return false;
    size_t m = 0;
    for (size_t i = 0; i < f.count; i++) m += wanted(&f.records[i].dev, key, family);
    if (m && !(*e = malloc(m * sizeof **e))) {
        sdpa__profile_file_free(&f);
        return false;
    }
    for (size_t i = 0; i < f.count; i++) {
        const sdpa__profile_record *r = &f.records[i];
        if (!wanted(&r->dev, key, family)) continue;
        entry *x = &(*e)[(*n)++];
        x->bucket = r->bucket;
        x->tile = r->tile;
        sdpa__strlcpy(x->driver, r->dev.driver, sizeof x->driver);
        sdpa__strlcpy(x->source_hash, r->dev.source_hash, sizeof x->source_hash);
        sdpa__strlcpy(x->device, r->dev.device, sizeof x->device);
    }
    sdpa__profile_file_free(&f);
    return true;
}

static bool find(sdpa_context *ctx, const char *path, const sdpa__device_key *key, bool family,
                 const sdpa__bucket *b, sdpa__profile_hit *out, bool *stale)
{
    struct stat sb;
    if (stat(path, &sb) != 0) {
        entry *e = NULL;
        size_t n;
        if (errno != ENOENT && parse(ctx, path, key, family, &e, &n)) free(e); /* reports why, once */
        return false; /* no file: no record (nothing to report) */
    }
    file_id id = {sb.st_dev, sb.st_ino, sb.st_size, sdpa__os_stat_mtime(&sb),
                  sdpa__os_stat_ctime(&sb)};
    bool found = false, hit = false;
    pthread_mutex_lock(&lock);
    for (int i = 0; i < SLOTS && !hit; i++) {
        slot *s = &slots[i];
        if (!s->path || strcmp(s->path, path) != 0 || !same_key(&s->key, key) ||
            s->family != family)
            continue;
        if (s->racy || !same_id(&s->id, &id) || !S_ISREG(sb.st_mode)) {
            slot_clear(s);
            continue;
        }
        s->used = ++clock_tick;
        hit = true;
        found = search(s->e, s->n, key, b, out, stale);
    }
    pthread_mutex_unlock(&lock);
    if (hit) return found;

    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    entry *e;
    size_t n;
    if (!parse(ctx, path, key, family, &e, &n))
        return false; /* not cached: reported once per process */
    found = search(e, n, key, b, out, stale);
    long long age = (long long)(now.tv_sec - id.mtime.tv_sec) * 1000000000ll +
                    (now.tv_nsec - id.mtime.tv_nsec);
    char *p = S_ISREG(sb.st_mode) ? strdup(path) : NULL;
    if (!p) {
        free(e);
        return found;
    }
    pthread_mutex_lock(&lock);
    slot *victim = &slots[0];
    for (int i = 0; i < SLOTS; i++) {
        if (slots[i].path && strcmp(slots[i].path, path) == 0 && same_key(&slots[i].key, key) &&
            slots[i].family == family) {
            victim = &slots[i]; /* another thread parsed it meanwhile */
            break;
        }
        if (slots[i].used < victim->used) victim = &slots[i];
    }
    slot_clear(victim);
    *victim = (slot){.path = p, .key = *key, .family = family, .id = id, .racy = age < RACY_NS,
                     .e = e, .n = n, .used = ++clock_tick};
    pthread_mutex_unlock(&lock);
    return found;
}

bool sdpa__profile_find(sdpa_context *ctx, const char *path, const sdpa__device_key *key,
                        const sdpa__bucket *b, sdpa__profile_hit *out, bool *stale)
{
    return find(ctx, path, key, false, b, out, stale);
}

bool sdpa__profile_find_family(sdpa_context *ctx, const char *path, const sdpa__device_key *key,
                               const sdpa__bucket *b, sdpa__profile_hit *out, bool *stale)
{
    return key->family[0] && find(ctx, path, key, true, b, out, stale);
}

void sdpa__profile_cache_forget(const char *path)
{
    pthread_mutex_lock(&lock);
    for (int i = 0; i < SLOTS; i++)
        if (slots[i].path && strcmp(slots[i].path, path) == 0) slot_clear(&slots[i]);
    pthread_mutex_unlock(&lock);
}
