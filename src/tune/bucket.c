/*
 * bucket.c — the keys of the profile store: which device a record belongs to
 * (backend, vendor, device name, compute units; driver and kernel-source hash
 * kept beside the key to mark records stale; the architecture family beside
 * it for lookups without an exact record), which shape bucket it covers,
 * and the per-device file name (the tile-config helpers are src/core/tile.h's).
 *
 * Invariants: bucket and device keys are pure functions of the problem and
 * the device's reported info, so the tuner and plan creation always agree on
 * where a record lives. Called by lookup.c, profile.c and tune.c.
 */
#include "tune.h"

#include "device_table.h"

#include <ctype.h>
#include <stdio.h>

static int ceil_log2(int64_t x)
{
    int n = 0;
    while (n < 62 && ((int64_t)1 << n) < x) n++;
    return n;
}

void sdpa__bucket_of(const sdpa__problem *p, unsigned plan_flags, sdpa__bucket *b)
{
    memset(b, 0, sizeof *b);
    const char *kind = "forward";
    if (plan_flags & SDPA_PLAN_BACKWARD)
        kind = "backward";
    else if (p->Sq <= 16 && p->Skv >= 1024)
        kind = "decode";
    sdpa__strlcpy(b->kind, kind, sizeof b->kind);
    b->dtype = p->dtype;
    b->kv_dtype = p->kv_dtype != p->dtype ? p->kv_dtype : SDPA_DTYPE_NONE;
    b->d = (int)p->D;
    b->dv = (int)p->Dv;
    const char *mask = "full";
    if (p->window_left == -1 && p->window_right == 0)
        mask = "causal";
    else if (p->window_left >= 0 || p->window_right >= 0)
        mask = "band";
    sdpa__strlcpy(b->mask, mask, sizeof b->mask);
    b->sq_log2 = ceil_log2(p->Sq);
    b->skv_log2 = ceil_log2(p->Skv);
    int64_t bh = 0;
    if (!sdpa__mul_i64(p->B, p->Hq, &bh)) bh = INT64_MAX;
    b->bh_log2 = ceil_log2(bh);
}

void sdpa__bucket_string(const sdpa__bucket *b, char *out, size_t size)
{
    /* K/V stored in another type than q's: "f32+q8_0" (else q's alone, as before) */
    char dt[24];
    if (b->kv_dtype == SDPA_DTYPE_NONE || b->kv_dtype == b->dtype)
        snprintf(dt, sizeof dt, "%s", sdpa_dtype_name(b->dtype));
    else
        snprintf(dt, sizeof dt, "%s+%s", sdpa_dtype_name(b->dtype), sdpa_dtype_name(b->kv_dtype));
    snprintf(out, size, "%s/%s/d%d/dv%d/%s/sq%d/skv%d/bh%d", b->kind, dt, b->d, b->dv, b->mask,
             b->sq_log2, b->skv_log2, b->bh_log2);
}

bool sdpa__bucket_equal(const sdpa__bucket *a, const sdpa__bucket *b)
{
    return strcmp(a->kind, b->kind) == 0 && a->dtype == b->dtype && a->kv_dtype == b->kv_dtype &&
           a->d == b->d &&
           a->dv == b->dv && strcmp(a->mask, b->mask) == 0 && a->sq_log2 == b->sq_log2 &&
           a->skv_log2 == b->skv_log2 && a->bh_log2 == b->bh_log2;
}

sdpa_status sdpa__device_key_of(sdpa_context *ctx, const sdpa__backend *be,
                                sdpa__device_key *key)
{
    int index = be->kind == sdpa_context_backend(ctx) ? sdpa__context_device_index(ctx) : 0;
    sdpa_device_info info;
    memset(&info, 0, sizeof info);
    info.struct_size = sizeof info;
    if (sdpa_device_get_info(be->kind, index, &info) != SDPA_OK) {
        memset(&info, 0, sizeof info);
        /* Interop contexts may not map to a listed device: key by name. */
        sdpa__strlcpy(info.name, sdpa_context_device_name(ctx), sizeof info.name);
        sdpa__strlcpy(info.vendor, "unknown", sizeof info.vendor);
        sdpa__strlcpy(info.driver, "unknown", sizeof info.driver);
        info.compute_units = 0;
    }
    sdpa__device_key_from_info(be, &info, key);
    return SDPA_OK;
}

void sdpa__device_key_from_info(const sdpa__backend *be, const sdpa_device_info *info,
                                sdpa__device_key *key)
{
    memset(key, 0, sizeof *key);
    sdpa__strlcpy(key->backend, be->name, sizeof key->backend);
    sdpa__strlcpy(key->vendor, info->vendor, sizeof key->vendor);
    sdpa__strlcpy(key->device, info->name, sizeof key->device);
    sdpa__strlcpy(key->driver, info->driver, sizeof key->driver);
    key->compute_units = info->compute_units;
    const char *h = sdpa__query_source_hash(be);
    sdpa__strlcpy(key->source_hash, h && *h ? h : "none", sizeof key->source_hash);
    /* from the strings a record keeps, so old records derive the same one */
    sdpa__device_family(key->backend, key->vendor, key->device, key->family,
                        sizeof key->family);
}

bool sdpa__device_key_equal(const sdpa__device_key *a, const sdpa__device_key *b)
{
    return strcmp(a->backend, b->backend) == 0 && strcmp(a->vendor, b->vendor) == 0 &&
           strcmp(a->device, b->device) == 0 && a->compute_units == b->compute_units;
}

void sdpa__profile_file_name(const sdpa__device_key *key, char *out, size_t size)
{
    char dev[81];
    size_t n = 0;
    bool sep = false;
    for (const char *s = key->device; *s && n < sizeof dev - 1; s++) {
        unsigned char c = (unsigned char)*s;
        if (isalnum(c) || c == '.') {
            if (sep && n > 0) dev[n++] = '_';
            if (n < sizeof dev - 1) dev[n++] = (char)tolower(c);
            sep = false;
        } else {
            sep = true; /* runs of anything else become one '_' */
        }
    }
    dev[n] = '\0';
    if (n == 0) sdpa__strlcpy(dev, "device", sizeof dev);
    snprintf(out, size, "%s-%s.jsonl", key->backend, dev);
}
