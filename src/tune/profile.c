/*
 * profile.c — the profile store's file format: one JSON object per line
 * (written and parsed with cJSON), read with size limits and stored with an
 * atomic, multi-process-safe rewrite.
 *
 * Reading treats the file as untrusted input: files above
 * SDPA__PROFILE_MAX_FILE are refused, lines above SDPA__PROFILE_MAX_LINE or
 * holding NUL bytes are skipped, and every field is type- and range-checked
 * before a record is accepted; a bad line costs that line only and the file
 * gets one WARN. Writing takes an exclusive flock on "<path>.lock", re-reads
 * the current file under the lock, replaces or appends the record, writes a
 * temp file in the same directory, fsyncs it and renames it over the profile,
 * so readers see the old or the new file, never a torn one, and concurrent
 * writers never lose each other's records. The file mechanics are
 * src/core/fileio.c's: a FIFO or device at the path (or its lock) is refused
 * without blocking, a symlinked profile is written through to its target,
 * and temp files of killed writers are removed. The file mechanics are generic
 * (sdpa__jsonl_read / sdpa__jsonl_store: any JSON-lines file, with a caller's
 * "same key" test) so that peak_cache.c shares them. Called by lookup.c,
 * tune.c and peak_cache.c.
 */
#include "tune.h"

#include "../core/fileio.h"
#include "device_table.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* ---- record -> JSON -------------------------------------------------------- */

/* The set values of t by parameter name (sdpa_tile_param_name), then the
 * members of unknown names kept from the parsed record. */
static cJSON *tile_to_json(const sdpa_tile_config *t, const sdpa__tile_extra *extra, int n_extra)
{
    cJSON *o = cJSON_CreateObject();
    if (!o) return NULL;
    for (int i = 0; i < SDPA_TILE_PARAM_SLOTS; i++) {
        int v = sdpa_tile_config_get(t, (sdpa_tile_param)i);
        const char *name = sdpa_tile_param_name((sdpa_tile_param)i);
        if (v != SDPA_AUTO && name) cJSON_AddNumberToObject(o, name, v);
    }
    for (int i = 0; i < n_extra; i++) {
        if (cJSON_GetObjectItemCaseSensitive(o, extra[i].name)) continue;
        cJSON *v = cJSON_Parse(extra[i].json);
        if (v) cJSON_AddItemToObject(o, extra[i].name, v);
    }
    return o;
}

char *sdpa__profile_record_to_json(const sdpa__profile_record *r)
{
    cJSON *o = cJSON_CreateObject();
    if (!o) return NULL;
    char bucket[160];
    sdpa__bucket_string(&r->bucket, bucket, sizeof bucket);
    cJSON_AddNumberToObject(o, "format", SDPA__PROFILE_FORMAT);
    cJSON_AddStringToObject(o, "backend", r->dev.backend);
    cJSON_AddStringToObject(o, "vendor", r->dev.vendor);
    cJSON_AddStringToObject(o, "device", r->dev.device);
    cJSON_AddNumberToObject(o, "compute_units", r->dev.compute_units);
    cJSON_AddStringToObject(o, "driver", r->dev.driver);
    cJSON_AddStringToObject(o, "source_hash", r->dev.source_hash);
    if (r->dev.family[0]) cJSON_AddStringToObject(o, "family", r->dev.family);
    cJSON_AddStringToObject(o, "bucket", bucket);
    cJSON_AddStringToObject(o, "kind", r->bucket.kind);
    cJSON_AddStringToObject(o, "dtype", sdpa_dtype_name(r->bucket.dtype));
    if (r->bucket.kv_dtype != SDPA_DTYPE_NONE) /* only when K/V's differs from q's */
        cJSON_AddStringToObject(o, "kv_dtype", sdpa_dtype_name(r->bucket.kv_dtype));
    cJSON_AddNumberToObject(o, "d", r->bucket.d);
    cJSON_AddNumberToObject(o, "dv", r->bucket.dv);
    cJSON_AddStringToObject(o, "mask", r->bucket.mask);
    cJSON_AddNumberToObject(o, "sq_log2", r->bucket.sq_log2);
    cJSON_AddNumberToObject(o, "skv_log2", r->bucket.skv_log2);
    cJSON_AddNumberToObject(o, "bh_log2", r->bucket.bh_log2);
    cJSON_AddItemToObject(o, "tile", tile_to_json(&r->tile, r->extra, r->n_extra));
    /* times to 0.1 us: enough, and short lines */
    cJSON_AddNumberToObject(o, "best_ms", round(r->best_ms * 1e4) / 1e4);
    cJSON_AddNumberToObject(o, "default_ms", round(r->default_ms * 1e4) / 1e4);
    cJSON *rej = cJSON_AddArrayToObject(o, "rejected");
    for (int i = 0; rej && i < r->n_rejected && i < SDPA__PROFILE_MAX_REJECTED; i++) {
        cJSON *e = cJSON_CreateObject();
        if (!e) continue;
        cJSON_AddItemToObject(e, "tile", tile_to_json(&r->rejected[i].tile, NULL, 0));
        cJSON_AddStringToObject(e, "reason", r->rejected[i].reason);
        cJSON_AddItemToArray(rej, e);
    }
    cJSON_AddStringToObject(o, "tuned_at", r->tuned_at);
    char *s = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    return s;
}

/* ---- JSON -> record (untrusted) -------------------------------------------- */

static bool get_int(const cJSON *o, const char *name, int lo, int hi, int *out)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, name);
    if (!cJSON_IsNumber(v)) return false;
    double d = v->valuedouble;
    if (!isfinite(d) || d != floor(d) || d < lo || d > hi) return false;
    *out = (int)d;
    return true;
}

static bool get_str(const cJSON *o, const char *name, char *out, size_t size)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, name);
    if (!cJSON_IsString(v) || !v->valuestring) return false;
    if (strlen(v->valuestring) >= size) return false;
    sdpa__strlcpy(out, v->valuestring, size);
    return true;
}

static bool get_ms(const cJSON *o, const char *name, double *out)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, name);
    if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble) || v->valuedouble < 0 ||
        v->valuedouble > 1e9)
        return false;
    *out = v->valuedouble;
    return true;
}

/* The record's backend table when it is compiled in, else NULL. */
static const sdpa__backend *backend_named(const char *name)
{
    for (int k = SDPA_BACKEND_REFERENCE; k <= SDPA_BACKEND_VULKAN; k++) {
        const sdpa__backend *be = sdpa__backend_get((sdpa_backend_kind)k);
        if (be && strcmp(be->name, name) == 0) return be;
    }
    return NULL;
}

/* A tile object: members keyed by parameter name, each optional (absent =
 * SDPA_AUTO) but, when present, an integer: SDPA_AUTO or 0..SDPA__TILE_MAX,
 * and within the table of `be` (the record's backend, when compiled in:
 * the checker of src/core/tile_check.c). Members of names no compiled-in
 * backend knows are kept in extra (when not NULL) to be written back. Old
 * records (every core name written, -1 for SDPA_AUTO) read the same. */
static bool parse_tile(const cJSON *o, const sdpa__backend *be, sdpa_tile_config *t,
                       sdpa__tile_extra *extra, int *n_extra)
{
    if (!cJSON_IsObject(o)) return false;
    sdpa_tile_config_init(t);
    if (n_extra) *n_extra = 0;
    const cJSON *m;
    cJSON_ArrayForEach(m, o) {
        if (!m->string) return false;
        sdpa_tile_param param;
        if (sdpa_tile_param_from_name(m->string, &param) != SDPA_OK) {
            if (!extra || *n_extra >= SDPA__PROFILE_MAX_EXTRA) continue;
            sdpa__tile_extra *x = &extra[*n_extra];
            char *json = cJSON_PrintUnformatted(m);
            if (json && strlen(m->string) < sizeof x->name && strlen(json) < sizeof x->json) {
                sdpa__strlcpy(x->name, m->string, sizeof x->name);
                sdpa__strlcpy(x->json, json, sizeof x->json);
                (*n_extra)++;
            }
            cJSON_free(json);
            continue;
        }
        int v;
        if (!get_int(o, m->string, SDPA_AUTO, SDPA__TILE_MAX, &v)) return false;
        t->value[param] = v;
    }
    return sdpa__tile_valid(t) && (!be || sdpa__check_tile(NULL, be, t) == SDPA_OK);
}

static bool parse_dtype(const char *s, sdpa_dtype *out)
{
    static const sdpa_dtype all[] = {SDPA_DTYPE_F32, SDPA_DTYPE_F16, SDPA_DTYPE_BF16};
    for (size_t i = 0; i < 3; i++)
        if (strcmp(s, sdpa_dtype_name(all[i])) == 0) {
            *out = all[i];
            return true;
        }
    return false;
}

/* The record's architecture family: when present, a well-formed key
 * (device_table.h) of the record's own backend; absent (records written
 * before families, or for a device of unknown architecture), derived from
 * the device key as the tuner would derive it today. */
static bool parse_family(const cJSON *o, sdpa__device_key *dev)
{
    if (!cJSON_GetObjectItemCaseSensitive(o, "family")) {
        sdpa__device_family(dev->backend, dev->vendor, dev->device, dev->family,
                            sizeof dev->family);
        return true;
    }
    size_t n = strlen(dev->backend);
    return get_str(o, "family", dev->family, sizeof dev->family) &&
           sdpa__device_family_valid(dev->family) && strncmp(dev->family, dev->backend, n) == 0 &&
           dev->family[n] == '/';
}

static bool one_of(const char *s, const char *a, const char *b, const char *c)
{
    return strcmp(s, a) == 0 || strcmp(s, b) == 0 || strcmp(s, c) == 0;
}

static bool parse_object(const cJSON *o, sdpa__profile_record *r, const char **why)
{
    memset(r, 0, sizeof *r);
    char dtype[16], bucket[160], want[160];
    if (!get_int(o, "format", 0, 1 << 30, &r->format)) return *why = "no format version", false;
    if (r->format != SDPA__PROFILE_FORMAT) return *why = "other format version", false;
    if (!get_str(o, "backend", r->dev.backend, sizeof r->dev.backend) ||
        !get_str(o, "vendor", r->dev.vendor, sizeof r->dev.vendor) ||
        !get_str(o, "device", r->dev.device, sizeof r->dev.device) ||
        !get_int(o, "compute_units", 0, 1 << 24, &r->dev.compute_units) ||
        !get_str(o, "driver", r->dev.driver, sizeof r->dev.driver) ||
        !get_str(o, "source_hash", r->dev.source_hash, sizeof r->dev.source_hash))
        return *why = "bad device key", false;
    if (!parse_family(o, &r->dev)) return *why = "bad family", false;
    if (!get_str(o, "kind", r->bucket.kind, sizeof r->bucket.kind) ||
        !one_of(r->bucket.kind, "forward", "backward", "decode") ||
        !get_str(o, "dtype", dtype, sizeof dtype) || !parse_dtype(dtype, &r->bucket.dtype) ||
        !get_int(o, "d", 1, 1 << 20, &r->bucket.d) || !get_int(o, "dv", 1, 1 << 20, &r->bucket.dv) ||
        !get_str(o, "mask", r->bucket.mask, sizeof r->bucket.mask) ||
        !one_of(r->bucket.mask, "full", "causal", "band") ||
        !get_int(o, "sq_log2", 0, 62, &r->bucket.sq_log2) ||
        !get_int(o, "skv_log2", 0, 62, &r->bucket.skv_log2) ||
        !get_int(o, "bh_log2", 0, 62, &r->bucket.bh_log2))
        return *why = "bad shape bucket", false;
    r->bucket.kv_dtype = SDPA_DTYPE_NONE; /* absent: K/V in q's dtype */
    if (cJSON_GetObjectItemCaseSensitive(o, "kv_dtype")) {
        static const sdpa_dtype kv[] = {SDPA_DTYPE_F32, SDPA_DTYPE_F16, SDPA_DTYPE_BF16,
                                        SDPA_DTYPE_Q8_0, SDPA_DTYPE_Q4_0};
        char kvs[16] = "";
        bool ok = get_str(o, "kv_dtype", kvs, sizeof kvs);
        size_t i = 0;
        while (ok && i < 5 && strcmp(kvs, sdpa_dtype_name(kv[i])) != 0) i++;
        if (!ok || i == 5 || kv[i] == r->bucket.dtype) return *why = "bad kv_dtype", false;
        r->bucket.kv_dtype = kv[i];
    }
    /* The bucket string is redundant (for people and grep); it must agree. */
    sdpa__bucket_string(&r->bucket, want, sizeof want);
    if (!get_str(o, "bucket", bucket, sizeof bucket) || strcmp(bucket, want) != 0)
        return *why = "bucket string disagrees with its fields", false;
    const sdpa__backend *be = backend_named(r->dev.backend);
    if (!parse_tile(cJSON_GetObjectItemCaseSensitive(o, "tile"), be, &r->tile, r->extra,
                    &r->n_extra))
        return *why = "bad tile configuration", false;
    if (!get_ms(o, "best_ms", &r->best_ms) || !get_ms(o, "default_ms", &r->default_ms))
        return *why = "bad times", false;
    const cJSON *rej = cJSON_GetObjectItemCaseSensitive(o, "rejected");
    if (rej) {
        if (!cJSON_IsArray(rej)) return *why = "bad rejected list", false;
        const cJSON *e;
        cJSON_ArrayForEach(e, rej) {
            if (r->n_rejected >= SDPA__PROFILE_MAX_REJECTED) break;
            sdpa__rejected *x = &r->rejected[r->n_rejected];
            if (!cJSON_IsObject(e) ||
                !parse_tile(cJSON_GetObjectItemCaseSensitive(e, "tile"), NULL, &x->tile, NULL,
                            NULL))
                return *why = "bad rejected entry", false;
            if (!get_str(e, "reason", x->reason, sizeof x->reason)) x->reason[0] = '\0';
            r->n_rejected++;
        }
    }
    if (!get_str(o, "tuned_at", r->tuned_at, sizeof r->tuned_at)) r->tuned_at[0] = '\0';
    return true;
}

bool sdpa__profile_record_parse(const char *line, size_t len, sdpa__profile_record *r,
                                const char **why)
{
    const char *dummy;
    if (!why) why = &dummy;
    if (len > SDPA__PROFILE_MAX_LINE) return *why = "line too long", false;
    if (memchr(line, '\0', len)) return *why = "binary data", false;
    cJSON *o = cJSON_ParseWithLength(line, len);
    if (!o) return *why = "not JSON", false;
    bool ok = cJSON_IsObject(o) ? parse_object(o, r, why) : (*why = "not an object", false);
    cJSON_Delete(o);
    return ok;
}

/* ---- reading files ---------------------------------------------------------- */

/* Reads the whole profile at path through the shared safe reader
 * (src/core/fileio.c: no blocking on a FIFO, regular files only, size
 * limit); *data is malloc'd and NUL-terminated. ENOENT -> SDPA_OK with *data
 * NULL. Profiles may be symlinks (users keep them elsewhere). */
static sdpa_status slurp(sdpa_context *ctx, const char *path, size_t limit, char **data,
                         size_t *len)
{
    sdpa__file_why why;
    switch (sdpa__file_read(path, limit, 0, data, len, &why)) {
    case SDPA__FILE_OK:
    case SDPA__FILE_MISSING: return SDPA_OK;
    case SDPA__FILE_NO_MEMORY:
        return SDPA__FAIL(ctx, SDPA_ERR_OUT_OF_MEMORY, "profile %s: %s", path, why.text);
    case SDPA__FILE_TOO_LARGE:
        return SDPA__FAIL(ctx, SDPA_ERR_CORRUPT, "profile %s is %s", path, why.text);
    case SDPA__FILE_REFUSED:
        return SDPA__FAIL(ctx, SDPA_ERR_IO, "profile %s is %s", path, why.text);
    case SDPA__FILE_IO: break;
    }
    return SDPA__FAIL_NATIVE(ctx, SDPA_ERR_IO, why.err, "profile %s: %s", path, why.text);
}

/* Calls fn for each line (without '\n'; a final line without '\n' counts). */
typedef void (*line_fn)(void *user, const char *line, size_t len);
static void for_each_line(const char *data, size_t len, line_fn fn, void *user)
{
    size_t i = 0;
    while (i < len) {
        const char *nl = memchr(data + i, '\n', len - i);
        size_t end = nl ? (size_t)(nl - data) : len;
        size_t l = end - i;
        if (l && data[i + l - 1] == '\r') l--;
        fn(user, data + i, l);
        i = end + 1;
    }
}

static bool blank(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (s[i] != ' ' && s[i] != '\t' && s[i] != '\r') return false;
    return true;
}

typedef struct read_state {
    sdpa__profile_file *f;
    size_t cap;
    const char *first_why;
    size_t first_line, line;
    bool oom;
} read_state;

static void read_line(void *user, const char *line, size_t len)
{
    read_state *s = user;
    s->line++;
    if (blank(line, len)) return;
    sdpa__profile_record r;
    const char *why = NULL;
    if (!sdpa__profile_record_parse(line, len, &r, &why)) {
        if (!s->f->bad_lines++) {
            s->first_why = why;
            s->first_line = s->line;
        }
        return;
    }
    if (s->f->count == s->cap) {
        size_t nc = s->cap ? 2 * s->cap : 16;
        sdpa__profile_record *nr = realloc(s->f->records, nc * sizeof *nr);
        if (!nr) {
            s->oom = true;
            return;
        }
        s->f->records = nr;
        s->cap = nc;
    }
    s->f->records[s->f->count++] = r;
}

sdpa_status sdpa__profile_read(sdpa_context *ctx, const char *path, sdpa__profile_file *f)
{
    memset(f, 0, sizeof *f);
    char *data;
    size_t len;
    sdpa_status st = slurp(ctx, path, SDPA__PROFILE_MAX_FILE, &data, &len);
    if (st != SDPA_OK) {
        char key[4200];
        snprintf(key, sizeof key, "unreadable:%s", path);
        sdpa__warn_once(ctx, key, "profile %s cannot be used (%s); ignoring it", path,
                        sdpa_status_string(st));
        return st;
    }
    if (!data) return SDPA_OK;
    sdpa__profile_parsed();
    read_state s = {.f = f};
    for_each_line(data, len, read_line, &s);
    free(data);
    if (s.oom) {
        sdpa__profile_file_free(f);
        return SDPA__FAIL(ctx, SDPA_ERR_OUT_OF_MEMORY, "profile %s: out of memory", path);
    }
    if (f->bad_lines) {
        char key[4200];
        snprintf(key, sizeof key, "bad:%s:%zu", path, f->bad_lines);
        sdpa__warn_once(ctx, key,
                        "profile %s: skipped %zu unreadable line(s) (first: line %zu, %s); "
                        "retune or delete the file",
                        path, f->bad_lines, s.first_line, s.first_why ? s.first_why : "?");
    }
    return SDPA_OK;
}

sdpa_status sdpa__jsonl_read(sdpa_context *ctx, const char *path, sdpa__jsonl_line_fn fn,
                             void *user)
{
    char *data;
    size_t len;
    SDPA__TRY(slurp(ctx, path, SDPA__PROFILE_MAX_FILE, &data, &len));
    if (!data) return SDPA_OK;
    for_each_line(data, len, fn, user);
    free(data);
    return SDPA_OK;
}

void sdpa__profile_file_free(sdpa__profile_file *f)
{
    if (!f) return;
    free(f->records);
    memset(f, 0, sizeof *f);
}

/* ---- storing ------------------------------------------------------------------ */

/* Growable output text. */
typedef struct text {
    char *p;
    size_t n, cap;
    bool oom;
} text;

static void text_add(text *t, const char *s, size_t n)
{
    if (t->oom) return;
    if (t->n + n + 2 > t->cap) {
        size_t nc = t->cap ? t->cap : 4096;
        while (t->n + n + 2 > nc) nc *= 2;
        char *np = realloc(t->p, nc);
        if (!np) {
            t->oom = true;
            return;
        }
        t->p = np;
        t->cap = nc;
    }
    memcpy(t->p + t->n, s, n);
    t->n += n;
    t->p[t->n++] = '\n';
}

typedef struct merge_state {
    text out;
    sdpa__jsonl_match_fn same; /* KEEP, REPLACE (by json) or DROP a line */
    void *user;
    bool replaced;
    const char *json; /* the new record's line */
} merge_state;

static void merge_line(void *user, const char *line, size_t len)
{
    merge_state *m = user;
    if (blank(line, len)) return;
    int what = m->same(m->user, line, len);
    if (what == SDPA__JSONL_REPLACE) {
        if (!m->replaced) text_add(&m->out, m->json, strlen(m->json));
        m->replaced = true; /* later duplicates of the key are dropped */
        return;
    }
    if (what == SDPA__JSONL_DROP) return;
    /* Keep other records and lines another version of the library wrote
     * (JSON objects within the limits); drop junk. */
    if (len <= SDPA__PROFILE_MAX_LINE && !memchr(line, '\0', len)) {
        cJSON *o = cJSON_ParseWithLength(line, len);
        if (o && cJSON_IsObject(o)) text_add(&m->out, line, len);
        cJSON_Delete(o);
    }
}

static sdpa_status store_locked(sdpa_context *ctx, const char *path, const char *json,
                                sdpa__jsonl_match_fn same, void *user)
{
    char *data;
    size_t len;
    sdpa_status st = slurp(ctx, path, SDPA__PROFILE_MAX_FILE, &data, &len);
    if (st != SDPA_OK) return st; /* refuse to rewrite what we cannot read */
    merge_state m = {.same = same, .user = user, .json = json};
    if (data) for_each_line(data, len, merge_line, &m);
    free(data);
    if (!m.replaced) text_add(&m.out, json, strlen(json));
    if (m.out.oom) {
        free(m.out.p);
        return SDPA__FAIL(ctx, SDPA_ERR_OUT_OF_MEMORY, "profile %s: out of memory", path);
    }
    /* A symlinked profile is written through to its target (users keep
     * profiles in dotfile repositories); a dangling link is refused. */
    sdpa__file_why why;
    sdpa__file_result fr =
        sdpa__file_write_atomic(path, m.out.p, m.out.n, 0644, SDPA__FILE_FOLLOW_LINK, &why);
    free(m.out.p);
    if (fr == SDPA__FILE_REFUSED)
        return SDPA__FAIL(ctx, SDPA_ERR_IO, "cannot write profile %s: it is %s", path, why.text);
    if (fr != SDPA__FILE_OK)
        return SDPA__FAIL_NATIVE(ctx, fr == SDPA__FILE_NO_MEMORY ? SDPA_ERR_OUT_OF_MEMORY
                                                                 : SDPA_ERR_IO,
                                 why.err, "cannot write profile %s: %s", path, why.text);
    sdpa__profile_cache_forget(path);
    return SDPA_OK;
}

sdpa_status sdpa__jsonl_store(sdpa_context *ctx, const char *path, const char *json,
                              sdpa__jsonl_match_fn same, void *user)
{
    SDPA__CHECK(ctx, path && *path && json && same, SDPA_ERR_NULL,
                "JSON-lines store: no path, line or key");
    char dir[4096];
    sdpa__file_why why;
    if (sdpa__path_dir(path, dir, sizeof dir) && sdpa__dir_make(dir, 0755, &why) != SDPA__FILE_OK)
        return SDPA__FAIL_NATIVE(ctx, SDPA_ERR_IO, why.err, "profile directory %s: %s", dir,
                                 why.text);
    char lock[4200];
    snprintf(lock, sizeof lock, "%s.lock", path);
    int lfd = sdpa__file_open_lock(lock, &why);
    if (lfd < 0)
        return SDPA__FAIL_NATIVE(ctx, SDPA_ERR_IO, why.err, "cannot open lock %s: %s", lock,
                                 why.text);
    if (sdpa__file_lock(lfd) != 0) {
        int e = errno;
        close(lfd);
        return SDPA__FAIL_NATIVE(ctx, SDPA_ERR_IO, e, "cannot lock %s: %s", lock, strerror(e));
    }
    sdpa_status st = store_locked(ctx, path, json, same, user);
    sdpa__file_unlock(lfd);
    close(lfd);
    return st;
}

/* REPLACE a valid record with the same device key and bucket; KEEP the
 * rest (merge_line still drops what is not a JSON object). */
static int same_record(void *user, const char *line, size_t len)
{
    const sdpa__profile_record *want = user;
    sdpa__profile_record r;
    return sdpa__profile_record_parse(line, len, &r, NULL) &&
                   sdpa__device_key_equal(&r.dev, &want->dev) &&
                   sdpa__bucket_equal(&r.bucket, &want->bucket)
               ? SDPA__JSONL_REPLACE
               : SDPA__JSONL_KEEP;
}

sdpa_status sdpa__profile_store(sdpa_context *ctx, const char *path, const sdpa__profile_record *r)
{
    SDPA__CHECK(ctx, path && *path && r, SDPA_ERR_NULL, "profile store: no path or record");
    const sdpa__backend *be = backend_named(r->dev.backend);
    SDPA__CHECK(ctx,
                sdpa__tile_valid(&r->tile) &&
                    (!be || sdpa__check_tile(NULL, be, &r->tile) == SDPA_OK),
                SDPA_ERR_INVALID_ARG, "profile store: tile configuration out of range for %s",
                r->dev.backend);
    char *json = sdpa__profile_record_to_json(r);
    SDPA__CHECK(ctx, json, SDPA_ERR_OUT_OF_MEMORY, "profile store: out of memory");
    sdpa_status st = sdpa__jsonl_store(ctx, path, json, same_record, (void *)r);
    free(json);
    return st;
}
