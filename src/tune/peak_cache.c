/*
 * peak_cache.c — the measured device peaks (sdpa_context_peak), cached as
 * JSON lines in <profile dir>/peak.jsonl, one record per device:
 *
 *   {"format":1,"backend":"cpu","vendor":"GenuineIntel","device":"...",
 *    "compute_units":2,"driver":"...","threads":2,"metric":"fma",
 *    "kernels":"avx2","gflops":412.3,"method":"cpu avx2 2 threads",
 *    "measured_at":"2026-11-29T12:00:00Z"}
 *   {... "metric":"read","kernels":"","gbps":31.2,"method":"cpu read ..." ...}
 *
 * The key is the profile device key (backend, vendor, device, compute units;
 * src/tune/bucket.c) plus the thread count (CPU backends; 0 for devices,
 * whose peak does not depend on it), the metric ("fma": the fp32 FMA peak in
 * "gflops"; "read": the read bandwidth in "gbps") and the kernel set the FMA
 * peak was measured with (the CPU backends' vector width; "" otherwise).
 * Records written before the metric and kernel fields existed read as
 * metric "fma", kernels "", and are replaced by the first store for their
 * device and thread count. A record whose driver differs from the
 * device's current one is stale: not used, and replaced by the next store.
 * The file is untrusted like a profile: lines are size-limited and every
 * field type- and range-checked; a bad line is skipped (one WARN per file
 * and count), never fatal, and dropped by the next store (JSON objects of
 * other format versions are kept). Reading and the locked, atomic rewrite are the
 * profile store's (sdpa__jsonl_read / sdpa__jsonl_store in profile.c).
 * Takes the folder and the device key, not a context (which only receives
 * log lines and errors). Called by src/core/peak.c.
 */
#include "tune.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define PEAK_MAX_VALUE 1e9 /* 1 EFLOP/s or 1 EB/s: anything above is junk */

static const char why_version[] = "no or other format version";

typedef struct peak_record {
    sdpa__device_key dev;
    int threads;
    char metric[16], kernels[32];
    double value;
    char method[64];
} peak_record;

/* The JSON field of a metric's value. */
static const char *value_field(const char *metric)
{
    return strcmp(metric, "read") == 0 ? "gbps" : "gflops";
}

static bool peak_path(const char *dir, char *out, size_t size)
{
    if (!dir || !*dir) return false;
    int n = snprintf(out, size, "%s%s%s", dir, dir[strlen(dir) - 1] == '/' ? "" : "/",
                     SDPA__PEAK_FILE);
    return n > 0 && (size_t)n < size;
}

static bool get_str(const cJSON *o, const char *name, char *out, size_t size)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, name);
    if (!cJSON_IsString(v) || !v->valuestring || strlen(v->valuestring) >= size) return false;
    sdpa__strlcpy(out, v->valuestring, size);
    return true;
}

static bool get_num(const cJSON *o, const char *name, double lo, double hi, bool integer,
                    double *out)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, name);
    if (!cJSON_IsNumber(v)) return false;
    double d = v->valuedouble;
    if (!isfinite(d) || d < lo || d > hi || (integer && d != floor(d))) return false;
    *out = d;
    return true;
}

/* A string field that may be absent (then dflt). */
static bool get_opt_str(const cJSON *o, const char *name, const char *dflt, char *out, size_t size)
{
    if (!cJSON_GetObjectItemCaseSensitive(o, name)) {
        sdpa__strlcpy(out, dflt, size);
        return true;
    }
    return get_str(o, name, out, size);
}

/* Whether record r is about the same thing as what (driver aside). */
static bool same_what(const peak_record *r, const sdpa__device_key *key, const sdpa__peak_what *w)
{
    return sdpa__device_key_equal(&r->dev, key) && r->threads == w->threads &&
           strcmp(r->metric, w->metric) == 0 && strcmp(r->kernels, w->kernels) == 0;
}

/* One line -> record; false (with a reason) for anything but a valid record
 * of this format. */
static bool parse_line(const char *line, size_t len, peak_record *r, const char **why)
{
    if (len > SDPA__PROFILE_MAX_LINE) return *why = "line too long", false;
    if (memchr(line, '\0', len)) return *why = "binary data", false;
    cJSON *o = cJSON_ParseWithLength(line, len);
    if (!o || !cJSON_IsObject(o)) {
        cJSON_Delete(o);
        return *why = "not a JSON object", false;
    }
    memset(r, 0, sizeof *r);
    double format = 0, cu = 0, threads = 0;
    bool ok = false;
    if (!get_num(o, "format", 0, 1 << 30, true, &format) || format != SDPA__PEAK_FORMAT)
        *why = why_version;
    else if (!get_str(o, "backend", r->dev.backend, sizeof r->dev.backend) ||
             !get_str(o, "vendor", r->dev.vendor, sizeof r->dev.vendor) ||
             !get_str(o, "device", r->dev.device, sizeof r->dev.device) ||
             !get_num(o, "compute_units", 0, 1 << 24, true, &cu) ||
             !get_str(o, "driver", r->dev.driver, sizeof r->dev.driver) ||
             !get_num(o, "threads", 0, 1 << 16, true, &threads))
        *why = "bad device key";
    else if (!get_opt_str(o, "metric", "fma", r->metric, sizeof r->metric) ||
             !get_opt_str(o, "kernels", "", r->kernels, sizeof r->kernels))
        *why = "bad metric or kernels";
    else if (!get_num(o, value_field(r->metric), 0, PEAK_MAX_VALUE, false, &r->value) ||
             !(r->value > 0))
        *why = "bad value";
    else if (!get_str(o, "method", r->method, sizeof r->method))
        *why = "bad method";
    else
        ok = true;
    r->dev.compute_units = (int)cu;
    r->threads = (int)threads;
    cJSON_Delete(o);
    return ok;
}

static bool blank(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (s[i] != ' ' && s[i] != '\t' && s[i] != '\r') return false;
    return true;
}

typedef struct find_state {
    const sdpa__device_key *key;
    const sdpa__peak_what *what;
    bool hit, stale;
    peak_record best;
    char stale_driver[128];
    size_t bad, line, first_bad_line;
    const char *first_why;
} find_state;

static void find_line(void *user, const char *line, size_t len)
{
    find_state *s = user;
    s->line++;
    if (blank(line, len)) return;
    peak_record r;
    const char *why = "?";
    if (!parse_line(line, len, &r, &why)) {
        if (!s->bad++) {
            s->first_why = why;
            s->first_bad_line = s->line;
        }
        return;
    }
    if (!same_what(&r, s->key, s->what)) return;
    if (strcmp(r.dev.driver, s->key->driver) != 0) {
        s->stale = true;
        sdpa__strlcpy(s->stale_driver, r.dev.driver, sizeof s->stale_driver);
        return;
    }
    s->hit = true; /* later lines win */
    s->best = r;
}

bool sdpa__peak_cache_get(sdpa_context *ctx, const char *dir, const sdpa__device_key *key,
                          const sdpa__peak_what *what, double *value, char *method,
                          size_t method_len)
{
    char path[4096];
    if (!peak_path(dir, path, sizeof path)) return false;
    find_state s = {.key = key, .what = what};
    if (sdpa__jsonl_read(ctx, path, find_line, &s) != SDPA_OK) {
        /* A file that is there but refused (a FIFO, a directory, oversized:
         * never blocks, fileio.c) is a WARN; a failing system call (no such
         * folder, no permission) only INFO: the store fails the same way
         * and warns. */
        sdpa_error_info e;
        sdpa_context_last_error(ctx, &e);
        sdpa__log(ctx, e.native_code ? SDPA_LOG_INFO : SDPA_LOG_WARN,
                  "peak cache ignored (%s); measuring", e.message);
        return false;
    }
    if (s.bad) {
        char wkey[4200];
        snprintf(wkey, sizeof wkey, "peak-bad:%s:%zu", path, s.bad);
        sdpa__warn_once(ctx, wkey,
                        "peak cache %s: skipped %zu unreadable line(s) (first: line %zu, %s)",
                        path, s.bad, s.first_bad_line, s.first_why ? s.first_why : "?");
    }
    if (!s.hit) {
        if (s.stale)
            sdpa__log(ctx, SDPA_LOG_INFO,
                      "%s: cached peak in %s was measured with driver '%s' (now '%s'): "
                      "measuring again", key->backend, path, s.stale_driver, key->driver);
        return false;
    }
    *value = s.best.value;
    if (method && method_len) sdpa__strlcpy(method, s.best.method, method_len);
    return true;
}

typedef struct same_state {
    const sdpa__device_key *key;
    const sdpa__peak_what *what;
} same_state;

/* REPLACE this device's record for the same thing (any driver; a record of
 * the FMA peak from before kernel sets were recorded counts as the same); DROP damaged records of our
 * format (they would be skipped with a WARN on every read); KEEP the rest:
 * other devices, and JSON objects of other format versions. */
static int same_device(void *user, const char *line, size_t len)
{
    const same_state *s = user;
    peak_record r;
    const char *why = NULL;
    if (parse_line(line, len, &r, &why)) {
        if (same_what(&r, s->key, s->what)) return SDPA__JSONL_REPLACE;
        const bool old_fma = !r.kernels[0] && strcmp(r.metric, "fma") == 0 &&
                             strcmp(s->what->metric, "fma") == 0 &&
                             sdpa__device_key_equal(&r.dev, s->key) &&
                             r.threads == s->what->threads;
        return old_fma ? SDPA__JSONL_REPLACE : SDPA__JSONL_KEEP;
    }
    return why == why_version ? SDPA__JSONL_KEEP : SDPA__JSONL_DROP;
}

sdpa_status sdpa__peak_cache_put(sdpa_context *ctx, const char *dir, const sdpa__device_key *dev,
                                 const sdpa__peak_what *what, double value, const char *method)
{
    char path[4096];
    SDPA__CHECK(ctx, peak_path(dir, path, sizeof path), SDPA_ERR_IO,
                "peak cache: no usable profile directory");
    SDPA__CHECK(ctx, isfinite(value) && value > 0 && value <= PEAK_MAX_VALUE,
                SDPA_ERR_INVALID_ARG, "peak cache: %g %s is not a peak", value,
                value_field(what->metric));
    const sdpa__device_key key = *dev;
    char stamp[32] = "";
    time_t now = time(NULL);
    struct tm tm;
    if (gmtime_r(&now, &tm)) strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%SZ", &tm);

    cJSON *o = cJSON_CreateObject();
    SDPA__CHECK(ctx, o, SDPA_ERR_OUT_OF_MEMORY, "peak cache: out of memory");
    cJSON_AddNumberToObject(o, "format", SDPA__PEAK_FORMAT);
    cJSON_AddStringToObject(o, "backend", key.backend);
    cJSON_AddStringToObject(o, "vendor", key.vendor);
    cJSON_AddStringToObject(o, "device", key.device);
    cJSON_AddNumberToObject(o, "compute_units", key.compute_units);
    cJSON_AddStringToObject(o, "driver", key.driver);
    cJSON_AddNumberToObject(o, "threads", what->threads);
    cJSON_AddStringToObject(o, "metric", what->metric);
    cJSON_AddStringToObject(o, "kernels", what->kernels);
    cJSON_AddNumberToObject(o, value_field(what->metric), value);
    cJSON_AddStringToObject(o, "method", method ? method : "");
    cJSON_AddStringToObject(o, "measured_at", stamp);
    char *json = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    SDPA__CHECK(ctx, json, SDPA_ERR_OUT_OF_MEMORY, "peak cache: out of memory");
    same_state s = {.key = &key, .what = what};
    sdpa_status st = sdpa__jsonl_store(ctx, path, json, same_device, &s);
    free(json);
    return st;
}
