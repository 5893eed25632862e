/*
 * fuzz_profile.c — libFuzzer target for the tuning profile store's reader
 * (src/tune/profile.c): sdpa__profile_record_parse on the whole input as one
 * line, and sdpa__profile_read on the input written to a file (many lines,
 * size limits, NUL bytes, junk). Every record that parses must survive a
 * round trip (to_json, then parse again) unchanged in its key fields. Profiles
 * are untrusted input (docs/reliability.md): no crash, no leak, only statuses.
 * Built by tests/fuzz/meson.build; seeds in tests/fuzz/corpus/profile.
 */
#include "tune.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char g_path[256];

static void roundtrip(const sdpa__profile_record *r)
{
    char *json = sdpa__profile_record_to_json(r);
    if (!json) return;
    sdpa__profile_record again;
    const char *why = NULL;
    if (!sdpa__profile_record_parse(json, strlen(json), &again, &why)) abort();
    if (!sdpa__bucket_equal(&r->bucket, &again.bucket) ||
        !sdpa__device_key_equal(&r->dev, &again.dev) || !sdpa__tile_equal(&r->tile, &again.tile))
        abort();
    free(json);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!g_path[0]) {
        const char *tmp = getenv("TMPDIR");
        snprintf(g_path, sizeof g_path, "%s/sdpa-fuzz-profile-%d.jsonl", tmp ? tmp : "/tmp",
                 (int)getpid());
    }
    sdpa__profile_record r;
    const char *why = NULL;
    if (sdpa__profile_record_parse((const char *)data, size, &r, &why)) {
        roundtrip(&r);
    } else if (!why || !why[0]) {
        abort(); /* a refused line always says why */
    }
    FILE *f = fopen(g_path, "wb");
    if (!f) abort();
    fwrite(data, 1, size, f);
    fclose(f);
    sdpa__profile_file pf;
    memset(&pf, 0, sizeof pf);
    if (sdpa__profile_read(NULL, g_path, &pf) == SDPA_OK) {
        for (size_t i = 0; i < pf.count; i++) roundtrip(&pf.records[i]);
    }
    sdpa__profile_file_free(&pf);
    unlink(g_path);
    return 0;
}
