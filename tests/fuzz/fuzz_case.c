/*
 * fuzz_case.c — libFuzzer target for the sdpa-case/1 loader
 * (tools/common/case.c, sc_load) and, for cases that load, the runner
 * (sc_run) on the reference backend. A case is a folder, so each input is a
 * small archive the harness unpacks into a private temporary folder:
 *     repeated { u8 file index; u16 length (LE); length bytes }
 * where the index picks one of k_files (case.json, q.f32, ...). The loader
 * must return 0 with a reason, or 1 with a case that sc_run can execute;
 * never crash, read out of bounds or leak. Runs are bounded: a loaded case
 * runs only when B*Hq*Sq*Skv*(D+Dv) <= 2^18.
 * Built by tests/fuzz/meson.build; seeds in tests/fuzz/corpus/case were made
 * from ../shared/conformance by tests/fuzz/make_case_seeds.py.
 */
#ifndef SDPA_EXPERIMENTAL
#define SDPA_EXPERIMENTAL
#endif
#include "case.h"
#include "sdpa.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *const k_files[] = {
    "case.json", "q.f32", "k.f32", "v.f32", "out.expected.f32", "lse.expected.f32",
    "stats.expected.f32", "mask.u8", "bias.f32", "kv_len.i32", "kv_len.i64", "dout.f32",
    "dq.expected.f32", "dk.expected.f32", "dv.expected.f32", "q.f16", "k.f16", "v.f16",
    "q_gain.f32", "k_gain.f32", "temperature.f32", "out.expected.f16", "q.bf16", "sub/case.json",
};
#define N_FILES (sizeof k_files / sizeof k_files[0])

static char g_dir[256];
static sdpa_context *g_ctx;

static void clear_dir(void)
{
    char path[512];
    for (size_t i = 0; i < N_FILES; i++) {
        snprintf(path, sizeof path, "%s/%s", g_dir, k_files[i]);
        unlink(path);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!g_ctx) {
        const char *tmp = getenv("TMPDIR");
        snprintf(g_dir, sizeof g_dir, "%s/sdpa-fuzz-case-XXXXXX", tmp ? tmp : "/tmp");
        if (!mkdtemp(g_dir)) abort();
        char sub[300];
        snprintf(sub, sizeof sub, "%s/sub", g_dir);
        mkdir(sub, 0700);
        sdpa_context_options o;
        sdpa_context_options_init(&o);
        o.backend = SDPA_BACKEND_REFERENCE;
        o.log_level = SDPA_LOG_ERROR;
        if (sdpa_context_create(&o, &g_ctx) != SDPA_OK) abort();
    }
    clear_dir();
    size_t i = 0;
    while (i + 3 <= size) {
        size_t idx = data[i] % N_FILES;
        size_t len = (size_t)data[i + 1] | (size_t)data[i + 2] << 8;
        i += 3;
        if (len > size - i) len = size - i;
        char path[512];
        snprintf(path, sizeof path, "%s/%s", g_dir, k_files[idx]);
        FILE *f = fopen(path, "ab");
        if (!f) abort();
        fwrite(data + i, 1, len, f);
        fclose(f);
        i += len;
    }
    sc_case c;
    char err[512];
    if (sc_load(g_dir, &c, err, sizeof err)) {
        double w = (double)c.B * (double)c.Hq * (double)c.Sq * (double)c.Skv *
                   (double)(c.D + c.Dv);
        if (w <= (double)(1 << 18)) {
            sc_result r;
            sc_run(g_ctx, &c, &r);
        }
        sc_free(&c);
    } else if (!err[0]) {
        abort(); /* a refusal always says why */
    }
    /* sc_find over the folder (one nested level) must not crash either. */
    sc_list list;
    memset(&list, 0, sizeof list);
    if (sc_find(g_dir, &list, err, sizeof err)) sc_list_free(&list);
    return 0;
}
