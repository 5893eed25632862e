/*
 * test_vulkan.c — the Vulkan backend on lavapipe: what is particular to it
 * (its parity on the shared case table is the parity suite's,
 * test_parity.c): split-KV decode choice and forced splits, backward
 * determinism, forced tile
 * configurations, the staged forward (stage_kv = 1: parity on tile- and
 * work-group-crossing shapes, refusals, tuning candidates), several query
 * rows per invocation (q_tile > 1: the same), the pipeline
 * cache (persisted, corrupt file discarded),
 * a simulated device without 16-bit storage, and interop on an
 * application-created VkDevice with wrapped VkBuffers. Test case
 * "cache_entry" (no device, < 1 s): the pipeline cache file parser
 * sdpa__vk_entry_parse accepts a valid file for the device and refuses each
 * corruption (bad magic, version, truncated header / payload, size field
 * past the end or over the limit, trailing bytes, checksum, malformed driver
 * header, another vendor / device / UUID) with its own reason.
 *
 * Every context runs with the Khronos validation layer (SDPA_VK_VALIDATION=1,
 * set in main unless the caller set it) and each test asserts that it
 * reported no errors. Outputs are poisoned with NaN by testutil.
 * Run time on the 2-core dev VM with validation: ~12 s with Mesa's shader
 * cache warm, ~4 minutes cold (compiling ~100 pipelines on lavapipe); the
 * three staged_* cases add ~2 s warm, ~40 s cold (about 15 pipelines), the
 * rows_* cases ~25 s cold (about 20 pipelines).
 */
#include "testutil.h"
#include "tfeatures.h"
#include "backend.h"
#include "sdpa_vulkan.h"
/* The pure pipeline-cache file parser, by relative path (tests/meson.build
 * does not put src/backend/vulkan on the include path). */
#include "../src/backend/vulkan/vk_cache_entry.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Test hooks from src/backend/vulkan/vk_device.c. */
int sdpa__vk_validation_error_count(sdpa_context *ctx);
int sdpa__vk_validation_active(sdpa_context *ctx);
/* From src/backend/vulkan/vk_alloc.c. */
int sdpa__vk_memory_block_count(sdpa_context *ctx);

static sdpa_context *vk, *ref;

static void setup(void)
{
    sdpa_status st;
    vk = tcontext(SDPA_BACKEND_VULKAN, &st);
    ck_assert_msg(vk, "no Vulkan context: %s", sdpa_status_name(st));
    ck_assert_int_eq(sdpa_context_backend(vk), SDPA_BACKEND_VULKAN);
    ref = tcontext(SDPA_BACKEND_REFERENCE, &st);
    ck_assert(ref);
}

static void assert_clean(sdpa_context *ctx)
{
    int n = sdpa__vk_validation_error_count(ctx);
    ck_assert_msg(n == 0, "the validation layer reported %d error(s)", n);
}

static void teardown(void)
{
    if (vk) assert_clean(vk);
    sdpa_context_destroy(vk);
    sdpa_context_destroy(ref);
    vk = ref = NULL;
}

static tcase mk(const char *name, int64_t B, int64_t Hq, int64_t Hkv, int64_t Sq, int64_t Skv,
                int64_t D, int64_t Dv)
{
    tcase c;
    tcase_init(&c, name, B, Hq, Hkv, Sq, Skv, D, Dv);
    c.lse = true;
    return c;
}

/* ---- devices ---------------------------------------------------------------- */

START_TEST(test_devices)
{
    int n = 0;
    ck_assert_int_eq(sdpa_device_count(SDPA_BACKEND_VULKAN, &n), SDPA_OK);
    ck_assert_int_ge(n, 1);
    sdpa_device_info info;
    memset(&info, 0, sizeof info);
    info.struct_size = sizeof info;
    ck_assert_int_eq(sdpa_device_get_info(SDPA_BACKEND_VULKAN, 0, &info), SDPA_OK);
    ck_assert(info.name[0]);
    ck_assert_int_gt(info.subgroup_size, 0);
    ck_assert_int_gt(info.max_workgroup_size, 0);
    ck_assert_int_gt(info.local_mem_bytes, 0);
    ck_assert_ptr_nonnull(strstr(info.details, "storageBuffer16BitAccess="));
    ck_assert_ptr_nonnull(strstr(info.details, "api=1."));
    if (strstr(info.name, "llvmpipe")) {
        ck_assert_int_eq(info.is_gpu, 0);
        ck_assert_int_eq(info.storage16, 1);
    }
    /* main() turns validation on unless the caller chose otherwise */
    const char *val = getenv("SDPA_VK_VALIDATION");
    if (val && strcmp(val, "1") == 0) ck_assert_int_eq(sdpa__vk_validation_active(vk), 1);
}
END_TEST

/* ---- decode ---------------------------------------------------------------- */

static void check_kernel(const tcase *c0, const char *want_kernel, const sdpa_plan_options *po)
{
    tproblem p;
    tproblem_make(&p, c0);
    sdpa_plan *plan = NULL;
    ck_assert_int_eq(sdpa_plan_create(vk, &p.desc, po, &plan), SDPA_OK);
    sdpa_plan_info info;
    memset(&info, 0, sizeof info);
    info.struct_size = sizeof info;
    ck_assert_int_eq(sdpa_plan_get_info(plan, &info), SDPA_OK);
    ck_assert_msg(strcmp(info.kernel, want_kernel) == 0, "%s: kernel '%s', want '%s' (%s)",
                  c0->name, info.kernel, want_kernel, info.config);
    sdpa_plan_destroy(plan);
    tproblem_free(&p);
}

START_TEST(test_decode)
{
    tcase c = mk("decode_auto", 1, 4, 2, 1, 1000, 64, 64);
    c.stats = true;
    check_kernel(&c, "decode", NULL);
    tparity_forward(vk, ref, &c, NULL);
    c = mk("decode_kvlen_causal_br", 3, 2, 2, 1, 1000, 128, 128);
    c.kv_len = true; c.window_right = 0; c.diagonal = SDPA_DIAGONAL_BOTTOM_RIGHT; c.stats = true;
    c.bias = true;
    tparity_forward(vk, ref, &c, NULL);
    c = mk("decode_f16_window", 1, 2, 2, 1, 1000, 64, 64);
    c.dtype = SDPA_DTYPE_F16; c.window_left = 300; c.diagonal = SDPA_DIAGONAL_BOTTOM_RIGHT;
    c.window_right = 0; c.stats = true;
    tparity_forward(vk, ref, &c, NULL);

    /* forced split counts, including more splits than a window covers */
    static const int splits[] = {2, 7, 64};
    for (int i = 0; i < 3; i++) {
        sdpa_tile_config tc;
        sdpa_tile_config_init(&tc);
        sdpa_tile_config_set(&tc, SDPA_TILE_SPLIT_KV, splits[i]);
        sdpa_plan_options po;
        sdpa_plan_options_init(&po);
        po.tile = &tc;
        c = mk("decode_forced_split", 1, 2, 2, 7, 257, 64, 64);
        c.stats = true; c.mask = true; c.softcap = 4.0; c.window_left = 20; c.window_right = 0;
        c.diagonal = SDPA_DIAGONAL_BOTTOM_RIGHT;
        check_kernel(&c, "decode", &po);
        tparity_forward(vk, ref, &c, &po);
    }
}
END_TEST

/* ---- tile configurations --------------------------------------------------- */

START_TEST(test_tile_configs)
{
    static const int cfg[][2] = {{1, 1}, {8, 3}, {32, 16}, {64, 32}, {128, 8}};
    for (int i = 0; i < 5; i++) {
        sdpa_tile_config tc;
        sdpa_tile_config_init(&tc);
        sdpa_tile_config_set(&tc, SDPA_TILE_WG_SIZE, cfg[i][0]);
        sdpa_tile_config_set(&tc, SDPA_TILE_K_TILE, cfg[i][1]);
        sdpa_plan_options po;
        sdpa_plan_options_init(&po);
        po.tile = &tc;
        tcase c = mk("tile", 1, 2, 2, 65, 257, 64, 64);
        c.window_left = 50; c.window_right = 0; c.stats = true; c.mask = true;
        c.seed = (uint64_t)(i + 7);
        tparity_forward(vk, ref, &c, &po);
        if (cfg[i][1] > 4) continue; /* big-tile backward pipelines compile slowly on lavapipe */
        c = mk("tile_bwd", 1, 2, 1, 63, 65, 32, 32);
        c.window_right = 0;
        tparity_backward(vk, ref, &c, &po);
    }
}
END_TEST

/* The tuner's view (src/core/backend.h tuning slots): the default is the
 * first candidate and describes the plan built without a tile; sampled
 * candidates compute the right answer. */
START_TEST(test_tuning_slots)
{
    const sdpa__backend *be = sdpa__backend_get(SDPA_BACKEND_VULKAN);
    ck_assert(be && be->default_tile && be->tile_candidates && be->source_hash);
    ck_assert_int_eq((int)strlen(be->source_hash()), 16);
    sdpa__problem p;
    memset(&p, 0, sizeof p);
    p.B = 1; p.Hq = 2; p.Hkv = 2; p.Sq = 65; p.Skv = 257; p.D = 64; p.Dv = 64;
    p.dtype = SDPA_DTYPE_F32;
    p.window_left = p.window_right = -1;
    sdpa_tile_config tiles[32], def;
    int n = be->tile_candidates(NULL, NULL, &p, 0, tiles, 32);
    ck_assert_int_ge(n, 4);
    ck_assert_int_le(n, 32);
    be->default_tile(NULL, NULL, &p, 0, NULL, &def);
    ck_assert_int_eq(TGET(&tiles[0], WG_SIZE), TGET(&def, WG_SIZE));
    ck_assert_int_eq(TGET(&tiles[0], K_TILE), TGET(&def, K_TILE));

    tcase c = mk("tuning_slots", 1, 2, 2, 65, 257, 64, 64);
    c.window_right = 0;
    sdpa_plan_options po;
    sdpa_plan_options_init(&po);
    tproblem tp;
    tproblem_make(&tp, &c);
    sdpa_plan *auto_plan = NULL, *def_plan = NULL;
    ck_assert_int_eq(sdpa_plan_create(vk, &tp.desc, &po, &auto_plan), SDPA_OK);
    po.tile = &def;
    ck_assert_int_eq(sdpa_plan_create(vk, &tp.desc, &po, &def_plan), SDPA_OK);
    sdpa_plan_info a = {.struct_size = sizeof a}, d = {.struct_size = sizeof d};
    ck_assert_int_eq(sdpa_plan_get_info(auto_plan, &a), SDPA_OK);
    ck_assert_int_eq(sdpa_plan_get_info(def_plan, &d), SDPA_OK);
    ck_assert_str_eq(a.config, d.config);
    sdpa_plan_destroy(auto_plan);
    sdpa_plan_destroy(def_plan);
    tproblem_free(&tp);
    for (int i = 1; i < n; i += n / 3 + 1) { /* a few, to bound pipeline builds */
        po.tile = &tiles[i];
        c.seed = (uint64_t)(300 + i);
        tparity_forward(vk, ref, &c, &po);
    }
}
END_TEST

/* ---- K/V staging (stage_kv = 1) -------------------------------------------- */

/* Plan options forcing tc = (wg, k_tile), everything else SDPA_AUTO; the
 * callers set the field they test. */
/* The Vulkan device's info (device 0, the one the fixture's context uses). */
static sdpa_device_info vk_device_info(void)
{
    sdpa_device_info dev;
    memset(&dev, 0, sizeof dev);
    dev.struct_size = sizeof dev;
    ck_assert_int_eq(sdpa_device_get_info(SDPA_BACKEND_VULKAN, 0, &dev), SDPA_OK);
    return dev;
}

static sdpa_plan_options tile_opts(sdpa_tile_config *tc, int wg, int k_tile)
{
    sdpa_tile_config_init(tc);
    sdpa_tile_config_set(tc, SDPA_TILE_WG_SIZE, wg);
    sdpa_tile_config_set(tc, SDPA_TILE_K_TILE, k_tile);
    sdpa_plan_options po;
    sdpa_plan_options_init(&po);
    po.tile = tc;
    return po;
}

static sdpa_plan_options staged_opts(sdpa_tile_config *tc, int wg, int k_tile)
{
    sdpa_plan_options po = tile_opts(tc, wg, k_tile);
    sdpa_tile_config_set(tc, SDPA_TILE_STAGE_KV, 1);
    return po;
}

/* Creates c's plan with po, asserts its config string holds want and
 * want2 (NULL = not checked). */
static void check_config(const tcase *c0, const sdpa_plan_options *po, const char *want,
                         const char *want2)
{
    tproblem p;
    tproblem_make(&p, c0);
    sdpa_plan *plan = NULL;
    ck_assert_int_eq(sdpa_plan_create(vk, &p.desc, po, &plan), SDPA_OK);
    sdpa_plan_info info;
    memset(&info, 0, sizeof info);
    info.struct_size = sizeof info;
    ck_assert_int_eq(sdpa_plan_get_info(plan, &info), SDPA_OK);
    ck_assert_msg(strstr(info.config, want) != NULL, "%s: config '%s' lacks '%s'", c0->name,
                  info.config, want);
    if (want2) ck_assert_msg(strstr(info.config, want2) != NULL, "%s: config '%s' lacks '%s'",
                             c0->name, info.config, want2);
    sdpa_plan_destroy(plan);
    tproblem_free(&p);
}

/* Creates c's plan with po, asserts its config reports want_stage (and no
 * key split when staged). */
static void check_stage(const tcase *c0, const sdpa_plan_options *po, int want_stage)
{
    char want[32];
    snprintf(want, sizeof want, "stage_kv=%d ", want_stage);
    check_config(c0, po, want, want_stage ? "split_kv=1 " : NULL);
}

/* Staged forward against the float64 reference: lengths that cross tile and
 * work-group edges, groups whose rows span several heads / KV slabs (Sq 1,
 * 7, 65), GQA, bands, rows left empty by masks, kv_len = 0 and a diagonal
 * offset, statistics, QK-norm (K from the workspace), f16/bf16 storage. */
START_TEST(test_staged_forward)
{
    sdpa_device_info dev = vk_device_info();
    sdpa_tile_config tc;
    sdpa_plan_options po;
    tcase cs[16];
    int n = 0;
    tcase c;
    c = mk("st_plain", 1, 2, 2, 65, 257, 64, 64); c.stats = true; cs[n++] = c;
    c = mk("st_decode_gqa", 2, 4, 2, 1, 257, 64, 64); c.stats = true; cs[n++] = c;
    c = mk("st_short_keys", 2, 3, 3, 65, 7, 32, 32); c.stats = true; cs[n++] = c;
    c = mk("st_causal_br_window_gqa", 2, 4, 1, 63, 257, 64, 32);
    c.window_right = 0; c.window_left = 40; c.diagonal = SDPA_DIAGONAL_BOTTOM_RIGHT;
    c.stats = true; cs[n++] = c;
    c = mk("st_mask_bias_kvlen", 3, 2, 2, 65, 7, 64, 64);
    c.mask = true; c.mask_keep = 0.3; c.bias = true; c.kv_len = true; c.stats = true;
    cs[n++] = c;
    c = mk("st_offset_empty_rows", 1, 2, 2, 65, 65, 32, 32);
    c.diagonal = SDPA_DIAGONAL_EXPLICIT; c.diagonal_offset = -30; c.window_left = 10;
    c.window_right = 0; c.softcap = 5.0; c.stats = true; cs[n++] = c;
    c = mk("st_rms_gains_bshd", 2, 4, 2, 7, 65, 64, 64); c.qk_norm = SDPA_QK_NORM_RMS;
    c.gains = true; c.bshd = true; c.window_right = 0; cs[n++] = c;
    /* (work-group, k_tile): 64 x 8 serves every case; the others a few */
    for (int i = 0; i < n; i++) {
        cs[i].seed = (uint64_t)(500 + i);
        po = staged_opts(&tc, 64, 8);
        tparity_forward(vk, ref, &cs[i], &po);
    }
    check_stage(&cs[0], &po, 1);
    /* near llvmpipe's loop budget by the plan's estimate (2 slabs x 200
     * tiles x 145 iterations): the estimate must be an upper bound, else
     * rows stay unwritten (NaN) */
    c = mk("st_near_budget", 1, 2, 2, 65, 1600, 64, 64); c.stats = true; c.seed = 519;
    tparity_forward(vk, ref, &c, &po);
    check_stage(&c, &po, 1);
    static const int cfg[][2] = {{16, 3}, {128, 16}};
    for (int k = 0; k < 2; k++) {
        po = staged_opts(&tc, cfg[k][0], cfg[k][1]);
        tparity_forward(vk, ref, &cs[1], &po);
        tparity_forward(vk, ref, &cs[4], &po);
    }
    if (dev.storage16) {
        c = mk("st_f16", 2, 4, 2, 65, 257, 64, 64); c.dtype = SDPA_DTYPE_F16;
        c.window_right = 0; c.stats = true; c.seed = 520;
        po = staged_opts(&tc, 64, 8);
        tparity_forward(vk, ref, &c, &po);
    }
    c = mk("st_bf16", 1, 2, 1, 7, 65, 32, 32); c.dtype = SDPA_DTYPE_BF16; c.mask = true;
    c.seed = 521;
    po = staged_opts(&tc, 64, 8);
    tparity_forward(vk, ref, &c, &po);
    /* a backward plan with a staged forward: the backward is unchanged */
    c = mk("st_bwd", 1, 2, 1, 63, 65, 32, 32); c.window_right = 0; c.seed = 522;
    po = staged_opts(&tc, 64, 4);
    tparity_backward(vk, ref, &c, &po);
}
END_TEST

/* Plan creation's status for c0 with po; on failure, the context's last
 * error must carry that status and (when given) want_in_message. */
static sdpa_status refused_plan_status(const tcase *c0, const sdpa_plan_options *po,
                                       const char *want_in_message)
{
    tproblem p;
    tproblem_make(&p, c0);
    sdpa_plan *plan = NULL;
    sdpa_status st = sdpa_plan_create(vk, &p.desc, po, &plan);
    if (st != SDPA_OK) {
        ck_assert_ptr_null(plan);
        sdpa_error_info info;
        ck_assert_int_eq(sdpa_context_last_error(vk, &info), SDPA_OK);
        ck_assert_int_eq(info.status, st);
        if (want_in_message)
            ck_assert_msg(strstr(info.message, want_in_message) != NULL,
                          "%s: message lacks '%s': %s", c0->name, want_in_message,
                          info.message);
    }
    sdpa_plan_destroy(plan);
    tproblem_free(&p);
    return st;
}

/* What a staged plan refuses: a K/V tile larger than shared memory, a key
 * split, values other than 0/1, and on llvmpipe rows past the loop budget;
 * without a tile the plan reports stage_kv=0. No pipeline is compiled. */
START_TEST(test_staged_refusals)
{
    sdpa_device_info dev = vk_device_info();
    sdpa_tile_config tc;
    sdpa_plan_options po;
    /* 64 keys x (256 + 256) floats = 128 KiB of shared memory */
    tcase c = mk("st_too_big", 1, 1, 1, 7, 65, 256, 256);
    po = staged_opts(&tc, 64, 64);
    if (dev.local_mem_bytes < 64 * 512 * 4)
        ck_assert_int_eq(refused_plan_status(&c, &po, "maxComputeSharedMemorySize"),
                         SDPA_ERR_UNSUPPORTED);
    else
        fprintf(stderr, "test_vulkan: %lld bytes of shared memory, the refusal is not "
                "reachable\n", (long long)dev.local_mem_bytes);
    c = mk("st_split", 1, 2, 2, 7, 257, 32, 32);
    po = staged_opts(&tc, 64, 8);
    sdpa_tile_config_set(&tc, SDPA_TILE_SPLIT_KV, 4);
    ck_assert_int_eq(refused_plan_status(&c, &po, "split_kv"), SDPA_ERR_UNSUPPORTED);
    po = staged_opts(&tc, 64, 8);
    sdpa_tile_config_set(&tc, SDPA_TILE_STAGE_KV, 2);
    ck_assert_int_eq(refused_plan_status(&c, &po, "stage_kv"), SDPA_ERR_UNSUPPORTED);
    if (strstr(dev.name, "llvmpipe")) {
        /* 2500 tiles x ~73 iterations: past 65535, and staging makes no split */
        c = mk("st_loop_budget", 1, 1, 1, 1, 20000, 32, 32);
        po = staged_opts(&tc, 64, 8);
        ck_assert_int_eq(refused_plan_status(&c, &po, "fwd (staged)"), SDPA_ERR_UNSUPPORTED);
    }
    c = mk("st_default", 1, 2, 2, 65, 257, 64, 64);
    check_stage(&c, NULL, 0);
}
END_TEST

/* The problem the candidate tests ask the tuning slot about: B1 H2 S65/257
 * D64 f32, unbanded. */
static sdpa__problem candidate_problem(void)
{
    sdpa__problem p;
    memset(&p, 0, sizeof p);
    p.B = 1; p.Hq = 2; p.Hkv = 2; p.Sq = 65; p.Skv = 257; p.D = 64; p.Dv = 64;
    p.dtype = SDPA_DTYPE_F32;
    p.window_left = p.window_right = -1;
    return p;
}

/* The tuner's space holds staged candidates that plan creation accepts and
 * that compute the right answer; candidates that would not fit are pruned
 * (shared memory, loop budget). */
START_TEST(test_staged_candidates)
{
    const sdpa__backend *be = sdpa__backend_get(SDPA_BACKEND_VULKAN);
    sdpa__problem p = candidate_problem();
    sdpa_tile_config tiles[64];
    int n = be->tile_candidates(vk, sdpa__context_primary_state(vk, be), &p, 0, tiles, 64);
    ck_assert_int_le(n, 64);
    ck_assert_int_le(n, 24); /* small enough to be measured whole */
    int staged = 0;
    tcase c = mk("st_candidate", 1, 2, 2, 65, 257, 64, 64);
    c.window_right = 0;
    for (int i = 0; i < n; i++) {
        if (TGET(&tiles[i], STAGE_KV) != 1) {
            ck_assert_msg(TGET(&tiles[i], STAGE_KV) == SDPA_AUTO || TGET(&tiles[i], STAGE_KV) == 0,
                          "candidate %d: stage_kv %d", i, TGET(&tiles[i], STAGE_KV));
            continue;
        }
        staged++;
        ck_assert_int_eq(TGET(&tiles[i], SPLIT_KV), SDPA_AUTO);
        sdpa_plan_options po;
        sdpa_plan_options_init(&po);
        po.tile = &tiles[i];
        check_stage(&c, &po, 1);
        if (staged == 2) {
            c.seed = 600;
            tparity_forward(vk, ref, &c, &po);
        }
    }
    ck_assert_int_ge(staged, 2);
    ck_assert_int_eq(TGET(&tiles[0], STAGE_KV) == 1, 0); /* the default is unstaged */

    /* Without a context: Vulkan's minimum (16 KiB) bounds the staged tiles. */
    p.D = p.Dv = 256;
    n = be->tile_candidates(NULL, NULL, &p, 0, tiles, 64);
    for (int i = 0; i < n; i++)
        if (TGET(&tiles[i], STAGE_KV) == 1)
            ck_assert_int_le(TGET(&tiles[i], K_TILE) * (256 + 256) * 4, 16384);
    /* On llvmpipe, long rows cannot be staged within the loop budget. */
    sdpa_device_info dev;
    memset(&dev, 0, sizeof dev);
    dev.struct_size = sizeof dev;
    ck_assert_int_eq(sdpa_device_get_info(SDPA_BACKEND_VULKAN, 0, &dev), SDPA_OK);
    if (strstr(dev.name, "llvmpipe")) {
        p.D = p.Dv = 32; p.Sq = 1; p.Skv = 20000;
        n = be->tile_candidates(vk, sdpa__context_primary_state(vk, be), &p, 0, tiles, 64);
        ck_assert_int_ge(n, 2);
        for (int i = 0; i < n; i++) ck_assert_int_ne(TGET(&tiles[i], STAGE_KV), 1);
    }
}
END_TEST

/* ---- several query rows per invocation (q_tile > 1, fwd_rows.comp) --------- */

static sdpa_plan_options rows_opts(sdpa_tile_config *tc, int rows, int k_tile, int wg)
{
    sdpa_plan_options po = tile_opts(tc, wg, k_tile);
    sdpa_tile_config_set(tc, SDPA_TILE_Q_TILE, rows);
    return po;
}

/* fwd_rows.comp against the float64 reference: blocks of rows that straddle
 * two query heads of a GQA group and end past a KV slab's last row (dead
 * rows), causal / windowed / offset bands whose rows have different key
 * ranges, rows left empty, masks, bias, kv_len, statistics, QK-norm and
 * gains (K from the workspace), temperature, strided q/out, decode with
 * automatic and forced key splits, a row long enough that llvmpipe's loop
 * budget forces splits, D = 256, f16 and bf16 storage. */
START_TEST(test_rows_forward)
{
    sdpa_device_info dev = vk_device_info();
    sdpa_tile_config tc;
    sdpa_plan_options po;
    tcase cs[16];
    int n = 0;
    tcase c;
    c = mk("rw_gqa_straddle", 2, 4, 2, 7, 65, 64, 64); c.stats = true; c.lse = true;
    cs[n++] = c;
    c = mk("rw_causal_br_window", 1, 4, 1, 63, 257, 64, 32);
    c.window_right = 0; c.window_left = 40; c.diagonal = SDPA_DIAGONAL_BOTTOM_RIGHT;
    c.stats = true; cs[n++] = c;
    c = mk("rw_mask_bias_kvlen", 3, 2, 2, 65, 7, 64, 64);
    c.mask = true; c.mask_keep = 0.3; c.bias = true; c.kv_len = true; c.stats = true;
    cs[n++] = c;
    c = mk("rw_offset_empty_rows", 1, 2, 2, 65, 65, 32, 32);
    c.diagonal = SDPA_DIAGONAL_EXPLICIT; c.diagonal_offset = -30; c.window_left = 10;
    c.window_right = 0; c.softcap = 5.0; c.stats = true; cs[n++] = c;
    c = mk("rw_rms_gains_temp_bshd", 2, 4, 2, 7, 65, 64, 64); c.qk_norm = SDPA_QK_NORM_RMS;
    c.gains = true; c.temperature = true; c.bshd = true; c.window_right = 0; cs[n++] = c;
    for (int i = 0; i < n; i++) {
        cs[i].seed = (uint64_t)(700 + i);
        po = rows_opts(&tc, 4, 8, 64);
        tparity_forward(vk, ref, &cs[i], &po);
    }
    check_config(&cs[0], &po, "q_tile=4 ", NULL);
    /* 8 rows: a long causal block, and decode (a slab has 4 rows, so half
     * the block is dead) with the automatic key split and combine */
    c = mk("rw_long_causal", 1, 2, 1, 257, 1000, 64, 64); c.window_right = 0; c.seed = 710;
    po = rows_opts(&tc, 8, 8, 64);
    tparity_forward(vk, ref, &c, &po);
    c = mk("rw_decode_gqa", 2, 8, 2, 1, 1000, 64, 64); c.stats = true; c.seed = 711;
    tparity_forward(vk, ref, &c, &po);
    check_config(&c, &po, "q_tile=8 ", NULL);
    /* a forced split, and keys enough that llvmpipe's budget splits rows */
    c = mk("rw_forced_split", 1, 2, 2, 65, 257, 64, 64); c.stats = true; c.lse = true;
    c.seed = 712;
    po = rows_opts(&tc, 2, 8, 64);
    sdpa_tile_config_set(&tc, SDPA_TILE_SPLIT_KV, 3);
    tparity_forward(vk, ref, &c, &po);
    check_config(&c, &po, "q_tile=2 ", "split_kv=3 ");
    c = mk("rw_budget_split", 1, 2, 2, 9, 4000, 64, 64); c.stats = true; c.seed = 713;
    po = rows_opts(&tc, 4, 8, 64);
    tparity_forward(vk, ref, &c, &po);
    c = mk("rw_d256", 1, 2, 2, 7, 65, 256, 256); c.window_right = 0; c.seed = 714;
    po = rows_opts(&tc, 2, 4, 32);
    tparity_forward(vk, ref, &c, &po);
    if (dev.storage16) {
        c = mk("rw_f16", 2, 4, 2, 65, 257, 64, 64); c.dtype = SDPA_DTYPE_F16;
        c.window_right = 0; c.stats = true; c.seed = 715;
        po = rows_opts(&tc, 4, 8, 64);
        tparity_forward(vk, ref, &c, &po);
    }
    /* bf16: rows of one invocation write neighbouring halves of words */
    c = mk("rw_bf16", 1, 2, 1, 7, 65, 32, 32); c.dtype = SDPA_DTYPE_BF16; c.mask = true;
    c.seed = 716;
    po = rows_opts(&tc, 4, 8, 64);
    tparity_forward(vk, ref, &c, &po);
    /* a backward plan with a multi-row forward: the backward is unchanged */
    c = mk("rw_bwd", 1, 2, 1, 63, 65, 32, 32); c.window_right = 0; c.seed = 717;
    po = rows_opts(&tc, 4, 8, 64);
    tparity_backward(vk, ref, &c, &po);
}
END_TEST

/* ---- the GPU-class forward (tile.lanes > 0, fwd_fa2.comp) ----------------- */

static sdpa_plan_options fa2_opts(sdpa_tile_config *tc, int lanes, int rows, int k_tile, int wg)
{
    sdpa_plan_options po = rows_opts(tc, rows, k_tile, wg);
    sdpa_tile_config_set(tc, SDPA_TILE_LANES, lanes);
    return po;
}

/* fwd_fa2.comp against the float64 reference, forced on lavapipe: D = 128
 * at lengths 1, 7, 63, 65, 257 and 1000 (blocks that straddle query heads
 * and end past a slab, decode with the automatic split and combine, keys
 * past a tile edge), causal / windowed / offset bands with empty rows,
 * mask, bias, kv_len, softcap, statistics, temperature, strided q/out,
 * an odd D and Dv (the scalar load path and padded chunks), more lanes than
 * the subgroup (the shared-memory reduction, fwd_fa2sh), lanes 1, f16 and
 * bf16 storage, a forced split, and a backward plan whose forward is it. */
START_TEST(test_fa2_forward)
{
    sdpa_device_info dev = vk_device_info();
    sdpa_tile_config tc;
    sdpa_plan_options po;
    tcase c;
    struct { int64_t sq, skv; } lens[] = {{1, 1000}, {7, 63}, {63, 65}, {65, 257}, {257, 7},
                                         {1000, 1000}};
    for (int i = 0; i < 6; i++) {
        c = mk("fa2_d128", 1, 4, 2, lens[i].sq, lens[i].skv, 128, 128);
        c.lse = true; c.stats = i % 2 == 0; c.window_right = i >= 3 ? 0 : -1;
        c.seed = (uint64_t)(900 + i);
        po = fa2_opts(&tc, 8, 2, 8, 64);
        tparity_forward(vk, ref, &c, &po);
    }
    check_config(&c, &po, "lanes=8", "q_tile=2 ");
    c = mk("fa2_mask_bias_kvlen", 3, 2, 2, 65, 257, 64, 64);
    c.mask = true; c.mask_keep = 0.3; c.bias = true; c.kv_len = true; c.stats = true;
    c.softcap = 5.0; c.seed = 910;
    po = fa2_opts(&tc, 4, 2, 8, 64);
    tparity_forward(vk, ref, &c, &po);
    c = mk("fa2_offset_empty_rows", 1, 2, 2, 65, 65, 32, 32);
    c.diagonal = SDPA_DIAGONAL_EXPLICIT; c.diagonal_offset = -30; c.window_left = 10;
    c.window_right = 0; c.stats = true; c.temperature = true; c.bshd = true; c.seed = 911;
    po = fa2_opts(&tc, 2, 1, 16, 32);
    tparity_forward(vk, ref, &c, &po);
    c = mk("fa2_odd_d_br", 2, 4, 1, 63, 257, 35, 17);
    c.diagonal = SDPA_DIAGONAL_BOTTOM_RIGHT; c.window_right = 0; c.window_left = 40;
    c.stats = true; c.seed = 912;
    po = fa2_opts(&tc, 4, 2, 8, 64);
    tparity_forward(vk, ref, &c, &po);
    c = mk("fa2_shared_reduce", 1, 2, 2, 7, 257, 128, 64); c.lse = true; c.seed = 913;
    po = fa2_opts(&tc, 32, 1, 4, 64);
    tparity_forward(vk, ref, &c, &po);
    c = mk("fa2_lanes1", 1, 2, 1, 65, 65, 16, 16); c.window_right = 0; c.seed = 914;
    po = fa2_opts(&tc, 1, 4, 8, 32);
    tparity_forward(vk, ref, &c, &po);
    c = mk("fa2_split", 1, 2, 2, 65, 257, 64, 64); c.stats = true; c.lse = true; c.seed = 915;
    po = fa2_opts(&tc, 4, 2, 8, 64);
    sdpa_tile_config_set(&tc, SDPA_TILE_SPLIT_KV, 3);
    tparity_forward(vk, ref, &c, &po);
    check_config(&c, &po, "lanes=4", "split_kv=3 ");
    if (dev.storage16) {
        c = mk("fa2_f16", 2, 4, 2, 65, 257, 64, 64); c.dtype = SDPA_DTYPE_F16;
        c.window_right = 0; c.stats = true; c.seed = 916;
        po = fa2_opts(&tc, 4, 2, 8, 64);
        tparity_forward(vk, ref, &c, &po);
    }
    c = mk("fa2_bf16", 1, 2, 1, 7, 65, 32, 32); c.dtype = SDPA_DTYPE_BF16; c.mask = true;
    c.seed = 917;
    po = fa2_opts(&tc, 4, 2, 8, 64);
    tparity_forward(vk, ref, &c, &po);
    c = mk("fa2_bwd", 1, 2, 1, 63, 65, 32, 32); c.window_right = 0; c.seed = 918;
    po = fa2_opts(&tc, 4, 2, 8, 64);
    tparity_backward(vk, ref, &c, &po);
}
END_TEST

/* The config of ctx's plan for c with po holds want (true) or lacks it. */
static void expect_config(sdpa_context *ctx, const tcase *c, const sdpa_plan_options *po,
                          const char *want, bool has)
{
    tproblem p;
    tproblem_make(&p, c);
    sdpa_plan_info info = tplan_info_of(ctx, &p, po, false);
    ck_assert_msg((strstr(info.config, want) != NULL) == has, "%s: config '%s' %s '%s'",
                  c->name, info.config, has ? "lacks" : "has", want);
    tproblem_free(&p);
}

/* f16 q and K made of subnormals only (multiples of 2^-24 below 2^-14,
 * the values a device that flushes 16-bit denormals turns into zeros): key
 * i mod Skv carries query row i's signs, so its logit is a sum of positive
 * products, the others random signs; the scale (about 1.3e8) makes that key's
 * logit about 8 and the others' about +-1, so every logit comes from products
 * of subnormals and a flushed q or K (all logits 0: the mean of V) misses
 * the float64 reference by O(1). Run forward on ctx (plan options po)
 * against the reference. */
static void fa2_subnormal_case(sdpa_context *ctx, const char *name, int64_t Sq, int64_t Skv,
                               const sdpa_plan_options *po)
{
    tcase c = mk(name, 1, 2, 1, Sq, Skv, 64, 64);
    c.dtype = SDPA_DTYPE_F16; c.scale = 1.3e8; c.seed = 1912;
    tproblem got, want;
    tproblem_make(&got, &c);
    tproblem_make(&want, &c);
    trng r;
    trng_seed(&r, c.seed);
    const double tiny = ldexp(1.0, -24); /* f16's smallest subnormal */
    for (size_t e = 0; e < got.n_k; e++) {
        double v = (double)(1 + trng_next(&r) % 1023) * tiny * (trng_uniform(&r) < 0.5 ? -1 : 1);
        tstore(got.k, c.dtype, e, v);
        tstore(want.k, c.dtype, e, v);
    }
    for (size_t e = 0; e < got.n_q; e++) {
        size_t d = e % (size_t)c.D, i = e / (size_t)c.D % (size_t)Sq;
        double key = tload(got.k, c.dtype, (i % (size_t)Skv) * (size_t)c.D + d);
        double v = (double)(1 + trng_next(&r) % 1023) * tiny * (key < 0 ? -1 : 1);
        tstore(got.q, c.dtype, e, v);
        tstore(want.q, c.dtype, e, v);
    }
    trun_problem(ctx, &got, false, po);
    trun_problem(ref, &want, false, NULL);
    texpect_parity(&got, &want, false);
    tproblem_free(&got);
    tproblem_free(&want);
}

/* fwd_fa2.comp on f16 storage (where `f16`, the variant fwd_fa2h: q kept
 * as stored in f16vec4 registers, products formed exactly in f32) on ctx
 * against the float64
 * reference: lengths 1, 7, 63, 65, 257 and 1000 (decode with its split,
 * GQA, causal rows), random f16 inputs, poisoned outputs; 16 lanes, more
 * than lavapipe's subgroup, for the shared-memory row sum (fwd_fa2hsh);
 * and q, k up to 300, whose products pass f16's largest finite value 65504
 * (a product rounded to f16 would be Inf and the row NaN); and q, K all
 * f16 subnormals (fa2_subnormal_case). `f16` says whether the plan must
 * report the variant ("q_regs=f16"). */
static void fa2_f16_cases(sdpa_context *ctx, bool f16)
{
    sdpa_tile_config tc;
    sdpa_plan_options po;
    static const int64_t lens[] = {1, 7, 63, 65, 257, 1000};
    tcase c;
    for (size_t i = 0; i < sizeof lens / sizeof lens[0]; i++) {
        c = mk("fa2h_len", 1, 2, 1, lens[i], lens[i] == 1 ? 1000 : lens[i], 64, 64);
        c.dtype = SDPA_DTYPE_F16; c.window_right = i % 2 ? 0 : -1; c.stats = i == 3;
        c.seed = 1900 + (uint64_t)i;
        po = fa2_opts(&tc, 8, 2, 8, 64);
        if (i == 0) expect_config(ctx, &c, &po, "q_regs=f16", f16);
        tparity_forward(ctx, ref, &c, &po);
    }
    c = mk("fa2h_shared_reduce", 1, 2, 2, 65, 63, 64, 64); c.dtype = SDPA_DTYPE_F16;
    c.seed = 1910;
    po = fa2_opts(&tc, 16, 1, 8, 64);
    tparity_forward(ctx, ref, &c, &po);
    c = mk("fa2h_large_products", 1, 2, 2, 7, 33, 16, 16); c.dtype = SDPA_DTYPE_F16;
    c.input_scale = 300.0; c.scale = 1e-4; c.seed = 1911;
    po = fa2_opts(&tc, 4, 2, 8, 64);
    tparity_forward(ctx, ref, &c, &po);
    fa2_subnormal_case(ctx, "fa2h_subnormal", 7, 33, &po);
}

/* A Vulkan context under persona (NULL: none) with SDPA_VK_MASK_FEATURES
 * mask (NULL: none), without the validation layer (see test_fa2_f16). */
static sdpa_context *fa2_f16_context(const char *persona, const char *mask)
{
    if (persona) setenv("SDPA_TEST_PERSONA", persona, 1);
    if (mask) setenv("SDPA_VK_MASK_FEATURES", mask, 1);
    setenv("SDPA_VK_VALIDATION", "0", 1);
    sdpa_status st;
    sdpa_context *ctx = tcontext(SDPA_BACKEND_VULKAN, &st);
    unsetenv("SDPA_TEST_PERSONA");
    unsetenv("SDPA_VK_MASK_FEATURES");
    setenv("SDPA_VK_VALIDATION", "1", 1);
    ck_assert_msg(ctx, "no Vulkan context under %s / %s: %s", persona ? persona : "-",
                  mask ? mask : "-", sdpa_status_name(st));
    return ctx;
}

/* fwd_fa2h runs where the device has shaderFloat16 and guarantees f16
 * denormals (shaderDenormPreserveFloat16, its modules then request
 * DenormPreserve 16); fwd_fa2 (q in f32 registers) elsewhere. lavapipe has
 * shaderFloat16 but does not promise f16 denormals (it keeps them all the
 * same: the subnormal cases pass on both paths), so the cases run:
 *  - on the device as it is (lavapipe: fwd_fa2, asserted from its report);
 *  - under the persona vk-denorm16, which reports the guarantee: fwd_fa2h;
 *  - under it with either probe result masked (SDPA_VK_MASK_FEATURES=fp16,
 *    denorm16): fwd_fa2 again, the selection and the subnormal cases only.
 * The persona's contexts run without the validation layer: it sees
 * lavapipe's real properties and flags the DenormPreserve request. */
START_TEST(test_fa2_f16)
{
    sdpa_device_info dev = vk_device_info();
    if (!dev.storage16) {
        fprintf(stderr, "fa2_f16: no storageBuffer16BitAccess, f16 storage not tested\n");
        return;
    }
    bool denorm16 = strstr(dev.details, "shaderDenormPreserveFloat16=yes") != NULL;
    if (!dev.fp16 || !denorm16)
        fprintf(stderr, "fa2_f16: shaderFloat16 %s, shaderDenormPreserveFloat16 %s: the device "
                "runs the f32-register path, the persona vk-denorm16 fwd_fa2h\n",
                dev.fp16 ? "yes" : "no", denorm16 ? "yes" : "no");
    fa2_f16_cases(vk, dev.fp16 && denorm16);
    sdpa_context *gpu = fa2_f16_context("vk-denorm16", NULL);
    fa2_f16_cases(gpu, dev.fp16);
    sdpa_context_destroy(gpu);
    static const char *masks[] = {"fp16", "denorm16"};
    for (int m = 0; m < 2; m++) {
        sdpa_context *weak = fa2_f16_context("vk-denorm16", masks[m]);
        sdpa_tile_config tc;
        sdpa_plan_options po = fa2_opts(&tc, 4, 2, 8, 64);
        tcase c = mk("fa2h_masked", 1, 2, 1, 7, 33, 64, 64); c.dtype = SDPA_DTYPE_F16;
        expect_config(weak, &c, &po, "q_regs=f16", false);
        fa2_subnormal_case(weak, "fa2h_masked_subnormal", 7, 33, &po);
        sdpa_context_destroy(weak);
    }
}
END_TEST

/* What lanes > 0 refuses (not a power of two, staging, QK-norm, more rows
 * than 4, a work-group that is no multiple of lanes), and the class
 * decision: lavapipe (a CPU) keeps the row-per-invocation default. */
START_TEST(test_fa2_refusals)
{
    sdpa_tile_config tc;
    sdpa_plan_options po;
    tcase c = mk("fa2_refuse", 1, 2, 2, 7, 65, 64, 64);
    po = fa2_opts(&tc, 3, 1, 8, 64);
    ck_assert_int_eq(refused_plan_status(&c, &po, "power of two"), SDPA_ERR_UNSUPPORTED);
    po = fa2_opts(&tc, 4, 1, 8, 64);
    sdpa_tile_config_set(&tc, SDPA_TILE_STAGE_KV, 1);
    ck_assert_int_eq(refused_plan_status(&c, &po, "stage_kv"), SDPA_ERR_UNSUPPORTED);
    po = fa2_opts(&tc, 4, 8, 8, 64);
    ck_assert_int_eq(refused_plan_status(&c, &po, "rows per lane group"), SDPA_ERR_UNSUPPORTED);
    po = fa2_opts(&tc, 16, 1, 8, 24);
    ck_assert_int_eq(refused_plan_status(&c, &po, "multiple of lanes"), SDPA_ERR_UNSUPPORTED);
    c.qk_norm = SDPA_QK_NORM_RMS;
    po = fa2_opts(&tc, 4, 1, 8, 64);
    ck_assert_int_eq(refused_plan_status(&c, &po, "QK-norm"), SDPA_ERR_UNSUPPORTED);
    c = mk("fa2_default_cpu", 1, 2, 2, 65, 257, 64, 64);
    check_config(&c, NULL, "lanes=0", NULL);
}
END_TEST

/* What q_tile > 1 refuses: more rows than MAX_ROWS, rows x head size past
 * the register limit, staging; without a tile the plan reports q_tile=1.
 * No pipeline is compiled for the refusals. */
START_TEST(test_rows_refusals)
{
    sdpa_tile_config tc;
    sdpa_plan_options po;
    tcase c = mk("rw_refuse", 1, 2, 2, 7, 65, 64, 64);
    po = rows_opts(&tc, 16, 8, 64);
    ck_assert_int_eq(refused_plan_status(&c, &po, "q_tile 16"), SDPA_ERR_UNSUPPORTED);
    c = mk("rw_refuse_d256", 1, 2, 2, 7, 65, 256, 64);
    po = rows_opts(&tc, 4, 8, 64);
    ck_assert_int_eq(refused_plan_status(&c, &po, "registers"), SDPA_ERR_UNSUPPORTED);
    c = mk("rw_refuse_staged", 1, 2, 2, 7, 65, 64, 64);
    po = rows_opts(&tc, 2, 8, 64);
    sdpa_tile_config_set(&tc, SDPA_TILE_STAGE_KV, 1);
    ck_assert_int_eq(refused_plan_status(&c, &po, "stage_kv"), SDPA_ERR_UNSUPPORTED);
    c = mk("rw_default", 1, 2, 2, 65, 257, 64, 64);
    check_config(&c, NULL, "q_tile=1 ", NULL);
}
END_TEST

/* The tuner's space holds multi-row candidates that plan creation accepts
 * and that compute the right answer, none with more rows than the registers
 * or a KV slab allow, listed first on a CPU-style device; the default stays
 * one row per invocation. */
START_TEST(test_rows_candidates)
{
    const sdpa__backend *be = sdpa__backend_get(SDPA_BACKEND_VULKAN);
    sdpa__problem p = candidate_problem();
    sdpa_tile_config tiles[64];
    int n = be->tile_candidates(vk, sdpa__context_primary_state(vk, be), &p, 0, tiles, 64);
    ck_assert_int_le(n, 24);
    ck_assert_int_le(TGET(&tiles[0], Q_TILE), 1);
    /* lavapipe (CPU-style): fwd_rows.comp's candidates right after the
     * default, so a budget that ends early ends on fwd.comp's slower grid */
    ck_assert_int_gt(TGET(&tiles[1], Q_TILE), 1);
    int multi = 0, most = 0;
    tcase c = mk("rw_candidate", 1, 2, 2, 65, 257, 64, 64);
    c.window_right = 0;
    for (int i = 0; i < n; i++) {
        if (TGET(&tiles[i], Q_TILE) <= 1) continue;
        multi++;
        if (TGET(&tiles[i], Q_TILE) > most) most = TGET(&tiles[i], Q_TILE);
        sdpa_plan_options po;
        sdpa_plan_options_init(&po);
        po.tile = &tiles[i];
        char want[32];
        snprintf(want, sizeof want, "q_tile=%d ", TGET(&tiles[i], Q_TILE));
        check_config(&c, &po, want, "stage_kv=0 ");
        if (TGET(&tiles[i], Q_TILE) == 8 && TGET(&tiles[i], K_TILE) == 16) {
            c.seed = 720;
            tparity_forward(vk, ref, &c, &po);
        }
    }
    ck_assert_int_ge(multi, 4);
    ck_assert_int_eq(most, 8);
    /* D = 256: at most 2 rows (512 registers) */
    p.D = p.Dv = 256;
    n = be->tile_candidates(vk, sdpa__context_primary_state(vk, be), &p, 0, tiles, 64);
    multi = 0;
    for (int i = 0; i < n; i++) {
        ck_assert_int_le(TGET(&tiles[i], Q_TILE), 2);
        multi += TGET(&tiles[i], Q_TILE) == 2;
    }
    ck_assert_int_ge(multi, 1);
    /* decode without GQA: a KV slab has one row, nothing to share */
    p.D = p.Dv = 64; p.Sq = 1;
    n = be->tile_candidates(vk, sdpa__context_primary_state(vk, be), &p, 0, tiles, 64);
    for (int i = 0; i < n; i++) ck_assert_int_le(TGET(&tiles[i], Q_TILE), 1);
}
END_TEST

/* ---- backward ---------------------------------------------------------------- */

START_TEST(test_backward_deterministic)
{
    tcase c = mk("det", 1, 4, 2, 257, 257, 64, 64);
    c.window_right = 0; c.gains = true; c.qk_norm = SDPA_QK_NORM_RMS; c.temperature = true;
    c.mask = true;
    tproblem a, b;
    tproblem_make(&a, &c);
    tproblem_make(&b, &c);
    sdpa_plan_options po;
    sdpa_plan_options_init(&po);
    po.flags = SDPA_PLAN_BACKWARD;
    sdpa_plan *plan = NULL;
    ck_assert_int_eq(sdpa_plan_create(vk, &a.desc, &po, &plan), SDPA_OK);
    tproblem *ps[2] = {&a, &b};
    for (int r = 0; r < 2; r++) {
        ck_assert_int_eq(sdpa_plan_forward(plan, &ps[r]->desc.tensors), SDPA_OK);
        ck_assert_int_eq(sdpa_plan_backward(plan, &ps[r]->desc.tensors, &ps[r]->bwd), SDPA_OK);
        ck_assert_int_eq(sdpa_context_finish(vk), SDPA_OK);
    }
    ck_assert(memcmp(a.dq, b.dq, a.n_q * 4) == 0);
    ck_assert(memcmp(a.dk, b.dk, a.n_k * 4) == 0);
    ck_assert(memcmp(a.dv, b.dv, a.n_v * 4) == 0);
    ck_assert(memcmp(a.dq_gain, b.dq_gain, (size_t)c.D * 4) == 0);
    ck_assert(memcmp(a.dk_gain, b.dk_gain, (size_t)c.D * 4) == 0);
    ck_assert(memcmp(a.dtemperature, b.dtemperature, (size_t)c.Hq * 4) == 0);
    for (size_t e = 0; e < a.n_q; e++) ck_assert(isfinite(((float *)a.dq)[e]));
    sdpa_plan_destroy(plan);
    tproblem_free(&a);
    tproblem_free(&b);
}
END_TEST

/* ---- device-buffer tensors (no staging by the front end) ------------------- */

START_TEST(test_device_buffers)
{
    tcase c = mk("devbuf", 1, 2, 2, 65, 65, 64, 64);
    c.window_right = 0;
    tproblem h, r;
    tproblem_make(&h, &c);
    tproblem_make(&r, &c);
    size_t nq = h.n_q * 4, nk = h.n_k * 4, nv = h.n_v * 4, no = h.n_out * 4;
    size_t nl = (size_t)(c.B * c.Hq * c.Sq) * 4;
    sdpa_buffer *buf = NULL;
    /* one buffer for everything; odd element offsets */
    size_t total = 4 * 3 + nq + nk + nv + no + nl + 64;
    ck_assert_int_eq(sdpa_buffer_create(vk, total, &buf), SDPA_OK);
    size_t oq = 3, ok_ = oq + h.n_q + 1, ov = ok_ + h.n_k + 1, oo = ov + h.n_v + 1,
           ol = oo + h.n_out;
    ck_assert_int_eq(sdpa_buffer_write(buf, oq * 4, h.q, nq), SDPA_OK);
    ck_assert_int_eq(sdpa_buffer_write(buf, ok_ * 4, h.k, nk), SDPA_OK);
    ck_assert_int_eq(sdpa_buffer_write(buf, ov * 4, h.v, nv), SDPA_OK);
    sdpa_attention_desc d = h.desc;
    d.tensors.q = sdpa_tensor_buffer(buf, oq, SDPA_DTYPE_F32, c.B, c.Hq, c.Sq, c.D);
    d.tensors.k = sdpa_tensor_buffer(buf, ok_, SDPA_DTYPE_F32, c.B, c.Hkv, c.Skv, c.D);
    d.tensors.v = sdpa_tensor_buffer(buf, ov, SDPA_DTYPE_F32, c.B, c.Hkv, c.Skv, c.Dv);
    d.tensors.out = sdpa_tensor_buffer(buf, oo, SDPA_DTYPE_F32, c.B, c.Hq, c.Sq, c.Dv);
    d.tensors.lse = sdpa_tensor_buffer(buf, ol, SDPA_DTYPE_F32, c.B, c.Hq, c.Sq, 1);
    sdpa_plan *plan = NULL;
    ck_assert_int_eq(sdpa_plan_create(vk, &d, NULL, &plan), SDPA_OK);
    ck_assert_int_eq(sdpa_plan_forward(plan, &d.tensors), SDPA_OK);
    ck_assert_int_eq(sdpa_buffer_read(buf, oo * 4, h.out, no), SDPA_OK);
    ck_assert_int_eq(sdpa_buffer_read(buf, ol * 4, h.lse, nl), SDPA_OK);
    ck_assert_int_eq(sdpa_attention_forward(ref, &r.desc), SDPA_OK);
    tcompare cmp = tcompare_arrays(h.out, SDPA_DTYPE_F32, r.out, SDPA_DTYPE_F32, h.n_out);
    ck_assert_msg(cmp.bad_nonfinite == 0 && cmp.max_abs < 2e-4, "max_abs %g", cmp.max_abs);
    cmp = tcompare_arrays(h.lse, SDPA_DTYPE_F32, r.lse, SDPA_DTYPE_F32, (size_t)(c.Hq * c.Sq));
    ck_assert_msg(cmp.bad_nonfinite == 0 && cmp.max_abs < 1e-4, "lse max_abs %g", cmp.max_abs);
    sdpa_plan_destroy(plan);
    sdpa_buffer_destroy(buf);
    tproblem_free(&h);
    tproblem_free(&r);
}
END_TEST

/* ---- missing feature ---------------------------------------------------------- */

START_TEST(test_missing_storage16)
{
    setenv("SDPA_VK_MASK_FEATURES", "storage16", 1);
    sdpa_status st;
    sdpa_context *weak = tcontext(SDPA_BACKEND_VULKAN, &st);
    unsetenv("SDPA_VK_MASK_FEATURES");
    ck_assert(weak);
    tcase c = mk("masked_f16", 1, 2, 2, 7, 7, 64, 64);
    c.dtype = SDPA_DTYPE_F16;
    tproblem p;
    tproblem_make(&p, &c);
    sdpa_plan *plan = NULL;
    ck_assert_int_eq(sdpa_plan_create(weak, &p.desc, NULL, &plan), SDPA_ERR_UNSUPPORTED);
    ck_assert_ptr_null(plan);
    sdpa_error_info info;
    ck_assert_int_eq(sdpa_context_last_error(weak, &info), SDPA_OK);
    ck_assert_int_eq(info.status, SDPA_ERR_UNSUPPORTED);
    ck_assert_msg(strstr(info.message, "storageBuffer16BitAccess") != NULL,
                  "message does not name the feature: %s", info.message);
    tproblem_free(&p);
    /* f32 still runs on the weaker device */
    c.dtype = SDPA_DTYPE_F32;
    tparity_forward(weak, ref, &c, NULL);
    assert_clean(weak);
    sdpa_context_destroy(weak);
}
END_TEST

/* ---- pipeline cache --------------------------------------------------------- */

static char *find_pcache(const char *dir)
{
    static char path[1024];
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "ls %s/vk-*.pcache 2>/dev/null", dir);
    FILE *f = popen(cmd, "r");
    if (!f) return NULL;
    char *r = fgets(path, sizeof path, f);
    pclose(f);
    if (!r) return NULL;
    path[strcspn(path, "\n")] = '\0';
    return path;
}

static sdpa_context *ctx_with_cache(const char *dir)
{
    sdpa_context_options o;
    sdpa_context_options_init(&o);
    o.backend = SDPA_BACKEND_VULKAN;
    o.log_level = SDPA_LOG_ERROR;
    o.cache_dir = dir;
    sdpa_context *ctx = NULL;
    ck_assert_int_eq(sdpa_context_create(&o, &ctx), SDPA_OK);
    return ctx;
}

START_TEST(test_pipeline_cache)
{
    char dir[] = "/tmp/sdpa-vk-pcache-XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(dir));
    char sub[300];
    snprintf(sub, sizeof sub, "%s/nested/dir", dir); /* created on demand */
    tcase c = mk("pcache", 1, 2, 2, 7, 65, 64, 64);
    sdpa_context *a = ctx_with_cache(sub);
    tparity_forward(a, ref, &c, NULL);
    assert_clean(a);
    sdpa_context_destroy(a);
    char *path = find_pcache(sub);
    ck_assert_msg(path != NULL, "no pipeline cache file under %s", sub);
    char saved[1024];
    snprintf(saved, sizeof saved, "%s", path);
    FILE *f = fopen(saved, "rb");
    ck_assert_ptr_nonnull(f);
    char magic[8];
    ck_assert_int_eq(fread(magic, 1, 8, f), 8);
    fclose(f);
    ck_assert(memcmp(magic, "SDPAVKPC", 8) == 0);

    /* corrupt it in three ways: garbage, truncated, flipped payload byte */
    for (int mode = 0; mode < 3; mode++) {
        struct stat stt;
        ck_assert_int_eq(stat(saved, &stt), 0);
        if (mode == 0) {
            f = fopen(saved, "wb");
            fputs("this is not a pipeline cache", f);
            fclose(f);
        } else if (mode == 1) {
            ck_assert_int_eq(truncate(saved, stt.st_size / 2), 0);
        } else {
            f = fopen(saved, "r+b");
            fseek(f, 40, SEEK_SET);
            int ch = fgetc(f);
            fseek(f, 40, SEEK_SET);
            fputc(ch ^ 0x5a, f);
            fclose(f);
        }
        sdpa_context *b = ctx_with_cache(sub);
        tparity_forward(b, ref, &c, NULL);
        assert_clean(b);
        sdpa_context_destroy(b);
        f = fopen(saved, "rb");
        ck_assert_ptr_nonnull(f);
        ck_assert_int_eq(fread(magic, 1, 8, f), 8);
        fclose(f);
        ck_assert_msg(memcmp(magic, "SDPAVKPC", 8) == 0, "cache not rewritten (mode %d)", mode);
    }
    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    ck_assert_int_eq(system(cmd), 0);
}
END_TEST

/* The pipeline cache folder and file are input others may have written
 * (issue 14): a file writable by others, owned by another user (chown to
 * nobody: the tests run as root), a symlink, a FIFO (it used to block the
 * context forever) and a folder writable by others are each refused with a
 * WARN; the context starts with an empty cache and computes correct results. */
static void pcache_round(const char *dir, const tcase *c, tlogcap *cap)
{
    memset(cap, 0, sizeof *cap);
    sdpa_context *ctx = tcontext_cache(SDPA_BACKEND_VULKAN, dir, cap);
    tparity_forward(ctx, ref, c, NULL);
    assert_clean(ctx);
    sdpa_context_destroy(ctx);
}

START_TEST(test_pipeline_cache_untrusted)
{
    char *dir = tmkdtemp("sdpa-vk-trust");
    char sub[600];
    snprintf(sub, sizeof sub, "%s/c", dir);
    tcase c = mk("pcache", 1, 2, 2, 7, 65, 64, 64);
    tlogcap cap;
    pcache_round(sub, &c, &cap);
    ck_assert_int_eq(cap.warns, 0);
    struct stat sb;
    ck_assert_int_eq(stat(sub, &sb), 0);
    ck_assert_int_eq(sb.st_mode & 077, 0); /* folder created private */
    char *found = find_pcache(sub);
    ck_assert_ptr_nonnull(found);
    char path[1024], other[1100];
    snprintf(path, sizeof path, "%s", found);
    ck_assert_int_eq(stat(path, &sb), 0);
    ck_assert_int_eq(sb.st_mode & 077, 0);

    ck_assert_int_eq(chmod(path, 0666), 0);
    pcache_round(sub, &c, &cap);
    ck_assert_msg(cap.warns >= 1 && strstr(cap.last, "writable by group or others"), "%s",
                  cap.last);
    ck_assert_int_eq(chmod(path, 0600), 0);
    if (geteuid() == 0) {
        ck_assert_int_eq(chown(path, 65534, 65534), 0);
        pcache_round(sub, &c, &cap);
        ck_assert_msg(cap.warns >= 1 && strstr(cap.last, "owned by uid 65534"), "%s", cap.last);
        ck_assert_int_eq(chown(path, 0, 0), 0);
    }
    snprintf(other, sizeof other, "%s.real", path);
    ck_assert_int_eq(rename(path, other), 0);
    ck_assert_int_eq(symlink(other, path), 0);
    pcache_round(sub, &c, &cap);
    ck_assert_msg(cap.warns >= 1 && strstr(cap.last, "symlink"), "%s", cap.last);
    unlink(path);
    unlink(other);
    ck_assert_int_eq(mkfifo(path, 0600), 0);
    pcache_round(sub, &c, &cap); /* blocked here before */
    ck_assert_msg(cap.warns >= 1 && strstr(cap.last, "FIFO"), "%s", cap.last);
    unlink(path);
    ck_assert_int_eq(chmod(sub, 0777), 0);
    pcache_round(sub, &c, &cap);
    ck_assert_msg(cap.warns >= 1 && strstr(cap.last, "not used"), "%s", cap.last);
    ck_assert_ptr_null(find_pcache(sub)); /* and nothing written there */
    ck_assert_int_eq(chmod(sub, 0700), 0);
    char cmd[700];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    ck_assert_int_eq(system(cmd), 0);
    free(dir);
}
END_TEST

/* ---- pipeline cache file parser (src/backend/vulkan/vk_cache_entry.c) -------
 * Pure byte-level tests, no device: a valid file is accepted with the payload
 * inside it, each corruption is refused with its own reason. The same parser
 * is fuzzed by tests/fuzz/fuzz_vkcache.c. */

static const sdpa__vk_entry_device entry_dev = {
    0x10005u, 0x2u, {0x6d, 0x65, 0x73, 0x61, 0x2d, 0x6c, 0x76, 0x70, 0x2d, 0x74, 0x65, 0x73,
                     0x74, 0x2d, 0x30, 0x31}};

static void put_le(unsigned char *p, uint64_t v, int bytes)
{
    for (int i = 0; i < bytes; i++) p[i] = (unsigned char)(v >> (8 * i));
}

/* A file for entry_dev: header, driver header, `extra` random bytes. */
static unsigned char *entry_make(size_t extra, uint64_t seed, size_t *len)
{
    size_t n = SDPA__VK_ENTRY_DRIVER_HEADER_SIZE + extra;
    unsigned char *d = malloc(SDPA__VK_ENTRY_HEADER + n + 8);
    ck_assert_ptr_nonnull(d);
    unsigned char *p = d + SDPA__VK_ENTRY_HEADER;
    put_le(p, SDPA__VK_ENTRY_DRIVER_HEADER_SIZE, 4);
    put_le(p + 4, SDPA__VK_ENTRY_DRIVER_HEADER_VERSION, 4);
    put_le(p + 8, entry_dev.vendor_id, 4);
    put_le(p + 12, entry_dev.device_id, 4);
    memcpy(p + 16, entry_dev.uuid, SDPA__VK_ENTRY_UUID_SIZE);
    trng r;
    trng_seed(&r, seed);
    for (size_t i = SDPA__VK_ENTRY_DRIVER_HEADER_SIZE; i < n; i++)
        p[i] = (unsigned char)trng_next(&r);
    sdpa__vk_entry_header(d, p, n);
    *len = SDPA__VK_ENTRY_HEADER + n;
    return d;
}

static sdpa__vk_entry_status entry_parse(const unsigned char *d, size_t n)
{
    const unsigned char *p = (const unsigned char *)"x";
    size_t pn = 99;
    sdpa__vk_entry_status s = sdpa__vk_entry_parse(d, n, &entry_dev, &p, &pn);
    if (s != SDPA__VK_ENTRY_OK) ck_assert(p == NULL && pn == 0);
    return s;
}

/* Rewrites the checksum so that a payload edit is judged on its own. */
static void entry_reseal(unsigned char *d, size_t n)
{
    sdpa__vk_entry_header(d, d + SDPA__VK_ENTRY_HEADER, n - SDPA__VK_ENTRY_HEADER);
}

START_TEST(test_cache_entry_valid)
{
    static const size_t extras[] = {0, 1, 7, 63, 65, 257, 1000};
    for (size_t i = 0; i < sizeof extras / sizeof extras[0]; i++) {
        size_t n;
        unsigned char *d = entry_make(extras[i], 50 + i, &n);
        const unsigned char *p = NULL;
        size_t pn = 0;
        ck_assert_int_eq(sdpa__vk_entry_parse(d, n, &entry_dev, &p, &pn), SDPA__VK_ENTRY_OK);
        ck_assert_ptr_eq(p, d + SDPA__VK_ENTRY_HEADER);
        ck_assert_uint_eq(pn, n - SDPA__VK_ENTRY_HEADER);
        ck_assert(memcmp(d, "SDPAVKPC", 8) == 0);
        /* Device check off: accepted too. */
        ck_assert_int_eq(sdpa__vk_entry_parse(d, n, NULL, &p, &pn), SDPA__VK_ENTRY_OK);
        free(d);
    }
    /* The reserved field is not checked (older files keep loading). */
    size_t n;
    unsigned char *d = entry_make(16, 3, &n);
    put_le(d + 12, 0xdeadbeef, 4);
    ck_assert_int_eq(entry_parse(d, n), SDPA__VK_ENTRY_OK);
    /* A driver header larger than the minimum, inside the payload. */
    put_le(d + SDPA__VK_ENTRY_HEADER, SDPA__VK_ENTRY_DRIVER_HEADER_SIZE + 16, 4);
    entry_reseal(d, n);
    ck_assert_int_eq(entry_parse(d, n), SDPA__VK_ENTRY_OK);
    free(d);
}
END_TEST

START_TEST(test_cache_entry_corruptions)
{
    size_t n;
    unsigned char *good = entry_make(257, 9, &n);
    unsigned char *d = malloc(n + 8);
    ck_assert_ptr_nonnull(d);
    unsigned char *p = d + SDPA__VK_ENTRY_HEADER;
#define RESET() memcpy(d, good, n)
    RESET();
    /* Truncated header, then truncated payload: every shorter length. */
    for (size_t len = 0; len < SDPA__VK_ENTRY_HEADER; len++)
        ck_assert_int_eq(entry_parse(d, len), SDPA__VK_ENTRY_TRUNCATED_HEADER);
    ck_assert_int_eq(entry_parse(NULL, 0), SDPA__VK_ENTRY_TRUNCATED_HEADER);
    for (size_t len = SDPA__VK_ENTRY_HEADER; len < n; len++)
        ck_assert_int_eq(entry_parse(d, len), SDPA__VK_ENTRY_TRUNCATED);
    d[n] = 0;
    ck_assert_int_eq(entry_parse(d, n + 1), SDPA__VK_ENTRY_TRAILING);
    /* Bad magic, wrong version. */
    RESET();
    d[0] = 's';
    ck_assert_int_eq(entry_parse(d, n), SDPA__VK_ENTRY_BAD_MAGIC);
    RESET();
    put_le(d + 8, 2, 4);
    ck_assert_int_eq(entry_parse(d, n), SDPA__VK_ENTRY_BAD_VERSION);
    /* Size field larger than the file, over the limit, zero. */
    RESET();
    put_le(d + 16, n - SDPA__VK_ENTRY_HEADER + 1, 8);
    ck_assert_int_eq(entry_parse(d, n), SDPA__VK_ENTRY_TRUNCATED);
    put_le(d + 16, SDPA__VK_ENTRY_MAX, 8);
    ck_assert_int_eq(entry_parse(d, n), SDPA__VK_ENTRY_TRUNCATED);
    put_le(d + 16, SDPA__VK_ENTRY_MAX + 1, 8);
    ck_assert_int_eq(entry_parse(d, n), SDPA__VK_ENTRY_BAD_SIZE);
    put_le(d + 16, UINT64_MAX, 8);
    ck_assert_int_eq(entry_parse(d, n), SDPA__VK_ENTRY_BAD_SIZE);
    put_le(d + 16, 0, 8);
    ck_assert_int_eq(entry_parse(d, n), SDPA__VK_ENTRY_BAD_SIZE);
    /* Checksum mismatch: every payload byte, and the field itself. */
    for (size_t i = SDPA__VK_ENTRY_HEADER; i < n; i++) {
        RESET();
        d[i] ^= 0x5a;
        ck_assert_int_eq(entry_parse(d, n), SDPA__VK_ENTRY_CHECKSUM);
    }
    RESET();
    d[31] ^= 0x80;
    ck_assert_int_eq(entry_parse(d, n), SDPA__VK_ENTRY_CHECKSUM);
    /* Wrong key, i.e. another device: vendor, device, each UUID byte
     * (checksum resealed so that only the driver header is wrong). */
    RESET();
    put_le(p + 8, 0x1002, 4);
    entry_reseal(d, n);
    ck_assert_int_eq(entry_parse(d, n), SDPA__VK_ENTRY_WRONG_DEVICE);
    RESET();
    put_le(p + 12, entry_dev.device_id + 1, 4);
    entry_reseal(d, n);
    ck_assert_int_eq(entry_parse(d, n), SDPA__VK_ENTRY_WRONG_DEVICE);
    for (int i = 0; i < (int)SDPA__VK_ENTRY_UUID_SIZE; i++) {
        RESET();
        p[16 + i] ^= 1;
        entry_reseal(d, n);
        ck_assert_int_eq(entry_parse(d, n), SDPA__VK_ENTRY_WRONG_DEVICE);
    }
    /* Malformed driver header: size below 32 or past the payload, version. */
    static const uint32_t bad_hsize[] = {0, 31, 257 + 32 + 1, UINT32_MAX};
    for (size_t i = 0; i < sizeof bad_hsize / sizeof bad_hsize[0]; i++) {
        RESET();
        put_le(p, bad_hsize[i], 4);
        entry_reseal(d, n);
        ck_assert_int_eq(entry_parse(d, n), SDPA__VK_ENTRY_BAD_DRIVER_HEADER);
    }
    RESET();
    put_le(p + 4, 2, 4);
    entry_reseal(d, n);
    ck_assert_int_eq(entry_parse(d, n), SDPA__VK_ENTRY_BAD_DRIVER_HEADER);
    /* A payload shorter than the driver header (consistent otherwise). */
    RESET();
    put_le(d + 16, 20, 8);
    entry_reseal(d, SDPA__VK_ENTRY_HEADER + 20);
    ck_assert_int_eq(entry_parse(d, SDPA__VK_ENTRY_HEADER + 20), SDPA__VK_ENTRY_BAD_DRIVER_HEADER);
#undef RESET
    for (int a = SDPA__VK_ENTRY_OK; a <= SDPA__VK_ENTRY_WRONG_DEVICE; a++) {
        const char *ra = sdpa__vk_entry_reason((sdpa__vk_entry_status)a);
        ck_assert(ra && ra[0]);
        for (int b = a + 1; b <= SDPA__VK_ENTRY_WRONG_DEVICE; b++)
            ck_assert_str_ne(ra, sdpa__vk_entry_reason((sdpa__vk_entry_status)b));
    }
    free(d);
    free(good);
}
END_TEST

/* ---- interop ------------------------------------------------------------------ */

typedef struct app_vk {
    VkInstance inst;
    VkPhysicalDevice phys;
    VkDevice dev;
    VkQueue queue;
    uint32_t fam;
} app_vk;

static void app_create(app_vk *a)
{
    VkApplicationInfo ai = {.sType = VK_STRUCTURE_TYPE_APPLICATION_INFO,
                            .apiVersion = VK_API_VERSION_1_1};
    VkInstanceCreateInfo ici = {.sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO,
                                .pApplicationInfo = &ai};
    ck_assert_int_eq(vkCreateInstance(&ici, NULL, &a->inst), VK_SUCCESS);
    uint32_t n = 1;
    VkResult r = vkEnumeratePhysicalDevices(a->inst, &n, &a->phys);
    ck_assert(r == VK_SUCCESS || r == VK_INCOMPLETE);
    ck_assert_int_ge(n, 1);
    VkQueueFamilyProperties qf[16];
    uint32_t nq = 16;
    vkGetPhysicalDeviceQueueFamilyProperties(a->phys, &nq, qf);
    a->fam = 0;
    while (a->fam < nq && !(qf[a->fam].queueFlags & VK_QUEUE_COMPUTE_BIT)) a->fam++;
    ck_assert_uint_lt(a->fam, nq);
    float prio = 1.0f;
    VkDeviceQueueCreateInfo qci = {.sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO,
                                   .queueFamilyIndex = a->fam, .queueCount = 1,
                                   .pQueuePriorities = &prio};
    VkDeviceCreateInfo dci = {.sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO,
                              .queueCreateInfoCount = 1, .pQueueCreateInfos = &qci};
    ck_assert_int_eq(vkCreateDevice(a->phys, &dci, NULL, &a->dev), VK_SUCCESS);
    vkGetDeviceQueue(a->dev, a->fam, 0, &a->queue);
}

START_TEST(test_interop)
{
    app_vk a;
    app_create(&a);
    sdpa_vulkan_device vd;
    sdpa_vulkan_device_init(&vd);
    vd.instance = a.inst;
    vd.physical_device = a.phys;
    vd.device = a.dev;
    vd.queue_family = a.fam;
    vd.queue = a.queue;
    vd.storage16_enabled = 0; /* the app did not enable 16-bit storage */
    sdpa_context_options o;
    sdpa_context_options_init(&o);
    o.log_level = SDPA_LOG_ERROR;
    sdpa_context *ctx = NULL;
    ck_assert_int_eq(sdpa_vulkan_context_create(&o, &vd, &ctx), SDPA_OK);
    ck_assert_int_eq(sdpa_context_backend(ctx), SDPA_BACKEND_VULKAN);

    /* host tensors staged through the app's device */
    tcase c = mk("interop", 1, 2, 2, 63, 65, 64, 64);
    c.window_right = 0;
    tparity_forward(ctx, ref, &c, NULL);
    c.dtype = SDPA_DTYPE_F16;
    tproblem p;
    tproblem_make(&p, &c);
    sdpa_plan *plan = NULL;
    ck_assert_int_eq(sdpa_plan_create(ctx, &p.desc, NULL, &plan), SDPA_ERR_UNSUPPORTED);
    tproblem_free(&p);

    /* application VkBuffers (device-local, unmapped by libsdpa: staging path) */
    c.dtype = SDPA_DTYPE_F32;
    tproblem h, r;
    tproblem_make(&h, &c);
    tproblem_make(&r, &c);
    size_t sizes[4] = {h.n_q * 4, h.n_k * 4, h.n_v * 4, h.n_out * 4};
    VkBuffer vb[4];
    VkDeviceMemory vm[4];
    sdpa_buffer *sb[4];
    VkPhysicalDeviceMemoryProperties mp;
    vkGetPhysicalDeviceMemoryProperties(a.phys, &mp);
    for (int i = 0; i < 4; i++) {
        VkBufferCreateInfo bci = {.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO,
                                  .size = sizes[i],
                                  .usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT |
                                           VK_BUFFER_USAGE_TRANSFER_SRC_BIT |
                                           VK_BUFFER_USAGE_TRANSFER_DST_BIT};
        ck_assert_int_eq(vkCreateBuffer(a.dev, &bci, NULL, &vb[i]), VK_SUCCESS);
        VkMemoryRequirements req;
        vkGetBufferMemoryRequirements(a.dev, vb[i], &req);
        uint32_t t = 0;
        while (t < mp.memoryTypeCount && !(req.memoryTypeBits & (1u << t))) t++;
        VkMemoryAllocateInfo mai = {.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO,
                                    .allocationSize = req.size, .memoryTypeIndex = t};
        ck_assert_int_eq(vkAllocateMemory(a.dev, &mai, NULL, &vm[i]), VK_SUCCESS);
        ck_assert_int_eq(vkBindBufferMemory(a.dev, vb[i], vm[i], 0), VK_SUCCESS);
        ck_assert_int_eq(sdpa_vulkan_buffer_wrap(ctx, vb[i], sizes[i], &sb[i]), SDPA_OK);
        ck_assert(sdpa_vulkan_buffer_handle(sb[i]) == vb[i]);
    }
    /* NULL arguments are refused with a message naming them */
    sdpa_error_info ei;
    sdpa_buffer *nb = NULL;
    ck_assert_int_eq(sdpa_vulkan_buffer_wrap(ctx, vb[0], sizes[0], NULL), SDPA_ERR_NULL);
    sdpa_context_last_error(ctx, &ei);
    ck_assert_msg(strstr(ei.message, "sdpa_vulkan_buffer_wrap: out is NULL"), "%s", ei.message);
    ck_assert_int_eq(sdpa_vulkan_buffer_wrap(ctx, VK_NULL_HANDLE, sizes[0], &nb), SDPA_ERR_NULL);
    sdpa_context_last_error(ctx, &ei);
    ck_assert_msg(strstr(ei.message, "sdpa_vulkan_buffer_wrap: buffer is VK_NULL_HANDLE"), "%s",
                  ei.message);
    ck_assert_ptr_null(nb);
    ck_assert_int_eq(sdpa_buffer_write(sb[0], 0, h.q, sizes[0]), SDPA_OK);
    ck_assert_int_eq(sdpa_buffer_write(sb[1], 0, h.k, sizes[1]), SDPA_OK);
    ck_assert_int_eq(sdpa_buffer_write(sb[2], 0, h.v, sizes[2]), SDPA_OK);
    sdpa_attention_desc d = h.desc;
    d.tensors.q = sdpa_tensor_buffer(sb[0], 0, SDPA_DTYPE_F32, c.B, c.Hq, c.Sq, c.D);
    d.tensors.k = sdpa_tensor_buffer(sb[1], 0, SDPA_DTYPE_F32, c.B, c.Hkv, c.Skv, c.D);
    d.tensors.v = sdpa_tensor_buffer(sb[2], 0, SDPA_DTYPE_F32, c.B, c.Hkv, c.Skv, c.Dv);
    d.tensors.out = sdpa_tensor_buffer(sb[3], 0, SDPA_DTYPE_F32, c.B, c.Hq, c.Sq, c.Dv);
    d.tensors.lse.dtype = SDPA_DTYPE_NONE;
    r.desc.tensors.lse.dtype = SDPA_DTYPE_NONE;
    ck_assert_int_eq(sdpa_attention_forward(ctx, &d), SDPA_OK);
    ck_assert_int_eq(sdpa_buffer_read(sb[3], 0, h.out, sizes[3]), SDPA_OK);
    ck_assert_int_eq(sdpa_attention_forward(ref, &r.desc), SDPA_OK);
    tcompare cmp = tcompare_arrays(h.out, SDPA_DTYPE_F32, r.out, SDPA_DTYPE_F32, h.n_out);
    ck_assert_msg(cmp.bad_nonfinite == 0 && cmp.max_abs < 2e-4, "max_abs %g", cmp.max_abs);
    for (int i = 0; i < 4; i++) sdpa_buffer_destroy(sb[i]);
    sdpa_context_destroy(ctx);
    for (int i = 0; i < 4; i++) {
        vkDestroyBuffer(a.dev, vb[i], NULL);
        vkFreeMemory(a.dev, vm[i], NULL);
    }
    tproblem_free(&h);
    tproblem_free(&r);
    vkDestroyDevice(a.dev, NULL);
    vkDestroyInstance(a.inst, NULL);
}
END_TEST

/* The sub-allocator (vk_alloc.c): buffers of assorted sizes created and
 * destroyed in random order, each holding a distinct pattern that must
 * survive its neighbours' writes; 100 small buffers share a few blocks. */
static uint32_t suballoc_rng(uint32_t *s)
{
    *s = *s * 1664525u + 1013904223u;
    return *s >> 8;
}

static void suballoc_fill(uint32_t *w, size_t n, uint32_t tag)
{
    for (size_t i = 0; i < n; i++) w[i] = tag * 2654435761u ^ (uint32_t)i;
}

static void suballoc_check(sdpa_buffer *b, size_t bytes, uint32_t tag, uint32_t *tmp)
{
    size_t n = bytes / 4;
    ck_assert_int_eq(sdpa_buffer_read(b, 0, tmp, bytes), SDPA_OK);
    size_t bad = n; /* one ck_assert per buffer: each costs a syscall */
    for (size_t i = 0; i < n && bad == n; i++)
        if (tmp[i] != (tag * 2654435761u ^ (uint32_t)i)) bad = i;
    ck_assert_msg(bad == n, "buffer %u word %zu corrupted", tag, bad);
}

START_TEST(test_suballocator)
{
    int base = sdpa__vk_memory_block_count(vk);
    ck_assert_int_ge(base, 1); /* the dummy buffer's block */
    enum { N = 100 };
    sdpa_buffer *bufs[N] = {0};
    for (int i = 0; i < N; i++)
        ck_assert_int_eq(sdpa_buffer_create(vk, 256, &bufs[i]), SDPA_OK);
    int after = sdpa__vk_memory_block_count(vk);
    ck_assert_msg(after - base <= 2, "100 small buffers used %d new blocks", after - base);
    for (int i = 0; i < N; i++) sdpa_buffer_destroy(bufs[i]);
    ck_assert_int_le(sdpa__vk_memory_block_count(vk), after);

    /* Assorted sizes, random create/destroy order, one oversized buffer. */
    enum { M = 48 };
    sdpa_buffer *b[M] = {0};
    size_t sz[M] = {0};
    uint32_t tag[M] = {0};
    const size_t big = (size_t)80 << 20; /* larger than one 64 MiB block */
    uint32_t *tmp = malloc(big);
    ck_assert(tmp);
    uint32_t seed = 12345, next_tag = 1;
    for (int round = 0; round < 400; round++) {
        int i = (int)(suballoc_rng(&seed) % M);
        if (b[i]) {
            suballoc_check(b[i], sz[i], tag[i], tmp);
            sdpa_buffer_destroy(b[i]);
            b[i] = NULL;
            continue;
        }
        uint32_t r = suballoc_rng(&seed);
        size_t bytes = round == 100 ? big
                     : (r & 3) == 0 ? (size_t)4 << (r % 20)   /* 4 B .. 2 MiB */
                     : (size_t)4 * (1 + r % 5000);            /* up to ~20 KB */
        ck_assert_int_eq(sdpa_buffer_create(vk, bytes, &b[i]), SDPA_OK);
        sz[i] = bytes;
        tag[i] = next_tag++;
        suballoc_fill(tmp, bytes / 4, tag[i]);
        ck_assert_int_eq(sdpa_buffer_write(b[i], 0, tmp, bytes), SDPA_OK);
        if (round % 50 == 0)
            for (int j = 0; j < M; j++)
                if (b[j]) suballoc_check(b[j], sz[j], tag[j], tmp);
    }
    for (int j = 0; j < M; j++)
        if (b[j]) {
            suballoc_check(b[j], sz[j], tag[j], tmp);
            sdpa_buffer_destroy(b[j]);
        }
    free(tmp);
    /* Everything freed: at most the dummy's block plus one spare remain. */
    ck_assert_int_le(sdpa__vk_memory_block_count(vk), base + 1);
}
END_TEST


/* ---- real-device limits under test personas (src/backend/vulkan/vk_persona.c) ----
 * Each case sets SDPA_TEST_PERSONA in its (forked) fixture, so lavapipe
 * answers with a GPU's limits and the library's own checks choose what that
 * GPU would get. */
int sdpa__vk_packed_layout(sdpa_context *ctx);

static void setup_persona(const char *name)
{
    setenv("SDPA_TEST_PERSONA", name, 1);
    setup();
}
static void setup_sb4(void) { setup_persona("vk-sb4"); }
static void setup_nobar(void) { setup_persona("vk-nobar"); }
static void setup_bar256(void) { setup_persona("vk-bar256"); }

/* A device with 4 storage buffers per stage (Vulkan's minimum): the packed
 * descriptor layout runs every path against the reference: prefill with
 * every input, decode (auto and forced splits), several rows per
 * invocation, the staged forward, f16 / bf16 storage and the backward with
 * every gradient (bf16 two-halves-per-word stores included). Without the
 * packed layout the persona refuses the 24-buffer descriptor-set layout and
 * no context is created. */
START_TEST(test_persona_sb4_paths)
{
    ck_assert_int_eq(sdpa__vk_packed_layout(vk), 1);
    sdpa_tile_config tc;
    sdpa_plan_options po;
    tcase c = mk("sb4_prefill_all", 2, 4, 2, 65, 63, 64, 64);
    c.mask = true; c.bias = true; c.kv_len = true; c.softcap = 8.0; c.window_left = 30;
    c.window_right = 0; c.diagonal = SDPA_DIAGONAL_BOTTOM_RIGHT; c.qk_norm = SDPA_QK_NORM_RMS;
    c.gains = true; c.temperature = true; c.stats = true; c.seed = 901;
    tparity_forward(vk, ref, &c, NULL);
    c = mk("sb4_decode", 3, 2, 2, 1, 1000, 128, 128);
    c.kv_len = true; c.bias = true; c.stats = true; c.seed = 902;
    check_kernel(&c, "decode", NULL);
    tparity_forward(vk, ref, &c, NULL);
    sdpa_tile_config_init(&tc);
    sdpa_tile_config_set(&tc, SDPA_TILE_SPLIT_KV, 7);
    sdpa_plan_options_init(&po);
    po.tile = &tc;
    c = mk("sb4_forced_split", 1, 2, 2, 7, 257, 64, 64);
    c.stats = true; c.mask = true; c.softcap = 4.0; c.seed = 903;
    tparity_forward(vk, ref, &c, &po);
    po = rows_opts(&tc, 4, 8, 64);
    c = mk("sb4_rows", 2, 4, 2, 7, 65, 64, 64);
    c.stats = true; c.mask = true; c.bias = true; c.seed = 904;
    tparity_forward(vk, ref, &c, &po);
    po = staged_opts(&tc, 64, 8);
    c = mk("sb4_staged", 2, 4, 1, 63, 257, 64, 32);
    c.window_right = 0; c.stats = true; c.kv_len = true; c.seed = 905;
    tparity_forward(vk, ref, &c, &po);
    c = mk("sb4_f16", 1, 2, 2, 65, 63, 64, 64); c.dtype = SDPA_DTYPE_F16; c.seed = 906;
    tparity_forward(vk, ref, &c, NULL);
    c = mk("sb4_bf16_odd", 1, 3, 3, 7, 9, 32, 32); c.dtype = SDPA_DTYPE_BF16; c.seed = 907;
    tparity_forward(vk, ref, &c, NULL);
    c = mk("sb4_bwd_all", 2, 4, 2, 65, 63, 64, 64); c.window_left = 30; c.window_right = 0;
    c.diagonal = SDPA_DIAGONAL_BOTTOM_RIGHT; c.softcap = 10.0; c.mask = true; c.bias = true;
    c.kv_len = true; c.qk_norm = SDPA_QK_NORM_RMS; c.gains = true; c.temperature = true;
    c.seed = 908;
    tparity_backward(vk, ref, &c, NULL);
    c = mk("sb4_bwd_bf16", 1, 2, 1, 63, 65, 64, 64); c.dtype = SDPA_DTYPE_BF16;
    c.qk_norm = SDPA_QK_NORM_RMS; c.gains = true; c.seed = 909;
    tparity_backward(vk, ref, &c, NULL);
}
END_TEST

/* Fills a buffer with a pattern, reads it back and compares. */
static void roundtrip(sdpa_buffer *b, size_t offset, size_t bytes, unsigned seed)
{
    unsigned char *w = malloc(bytes), *r = malloc(bytes);
    ck_assert(w && r);
    for (size_t i = 0; i < bytes; i++) w[i] = (unsigned char)(i * 131u + seed);
    ck_assert_int_eq(sdpa_buffer_write(b, offset, w, bytes), SDPA_OK);
    memset(r, 0, bytes);
    ck_assert_int_eq(sdpa_buffer_read(b, offset, r, bytes), SDPA_OK);
    ck_assert(memcmp(w, r, bytes) == 0);
    free(w);
    free(r);
}

/* No memory type both host-visible and device-local (separate heaps):
 * buffers go to device-local memory through staging, the parameter block to
 * host memory, and forward and backward run. */
START_TEST(test_persona_nobar)
{
    ck_assert_int_eq(sdpa__vk_packed_layout(vk), 0);
    sdpa_buffer *b = NULL;
    ck_assert_int_eq(sdpa_buffer_create(vk, 1 << 20, &b), SDPA_OK);
    roundtrip(b, 12, 100000, 3);
    sdpa_buffer_destroy(b);
    tcase c = mk("nobar_fwd", 2, 4, 2, 65, 63, 64, 64);
    c.mask = true; c.stats = true; c.seed = 911;
    tparity_forward(vk, ref, &c, NULL);
    /* a persona reports a discrete GPU: the GPU-class forward is the default
     * (D = 64: 4 lanes per row), decode with its key split and combine */
    check_config(&c, NULL, "lanes=4", "q_tile=2 ");
    c = mk("nobar_decode", 1, 4, 2, 1, 1000, 64, 64); c.stats = true; c.seed = 912;
    tparity_forward(vk, ref, &c, NULL);
    check_config(&c, NULL, "lanes=4", "split_kv=7 ");
    c = mk("nobar_bwd", 1, 2, 2, 65, 63, 64, 64); c.gains = true; c.qk_norm = SDPA_QK_NORM_RMS;
    c.seed = 913;
    tparity_backward(vk, ref, &c, NULL);
}
END_TEST

/* A 256 MiB host-visible device-local (BAR) heap beside the big
 * device-local one: six 64 MiB buffers fill it (the persona counts its
 * allocations and refuses past 256 MiB), the rest fall back to device-local
 * memory with staging, and buffers, forward and backward keep working.
 * Before the fallback, the buffer past the BAR failed with OUT_OF_MEMORY. */
START_TEST(test_persona_bar256_full)
{
    sdpa_buffer *fill[6] = {0};
    for (int i = 0; i < 6; i++) {
        sdpa_status st = sdpa_buffer_create(vk, (size_t)64 << 20, &fill[i]);
        ck_assert_msg(st == SDPA_OK, "64 MiB buffer %d: %s", i, sdpa_status_name(st));
    }
    roundtrip(fill[5], ((size_t)64 << 20) - 4096, 4096, 5);
    roundtrip(fill[0], 0, 4096, 7);
    tcase c = mk("bar_fwd", 2, 4, 2, 65, 63, 64, 64);
    c.bias = true; c.stats = true; c.seed = 921;
    tparity_forward(vk, ref, &c, NULL);
    c = mk("bar_bwd", 1, 2, 2, 65, 63, 64, 64); c.softcap = 5.0; c.seed = 922;
    tparity_backward(vk, ref, &c, NULL);
    for (int i = 0; i < 6; i++) sdpa_buffer_destroy(fill[i]);
}
END_TEST


/* From src/backend/vulkan/vk_spirv_patch.c (modes: SDPA__VK_INF_NAN_32 1,
 * SDPA__VK_DENORM_16 2, _32 4, _64 8, vk_internal.h). */
int sdpa__vk_spirv_float_controls(const uint32_t *code, size_t size, unsigned modes,
                                  uint32_t **patched, size_t *out_size);

/* The float-controls requests land in the right sections of a module: the
 * capabilities after the capabilities, the extension before the imports, the
 * execution modes after the entry point; a module asking already, or
 * malformed, or asked for nothing, is left alone (0). Inf/NaN preservation
 * alone, then with DenormPreserve 16 and 64 (a device that sets the 16- and
 * 64-bit denormal modes together). No device. */
START_TEST(test_spirv_float_controls)
{
    enum { CAP = 17, EXT = 10, IMPORT = 11, MODEL = 14, ENTRY = 15, MODE = 16, VOID = 19 };
    const uint32_t mod[] = {
        0x07230203u, 0x00010300u, 0, 10, 0,
        (2u << 16) | CAP, 1,                           /* Shader */
        (3u << 16) | IMPORT, 1, 0x4c534c47u,           /* %1 = "GLSL" (short) */
        (3u << 16) | MODEL, 0, 1,
        (5u << 16) | ENTRY, 5, 4, 0x6e69616du, 0,      /* GLCompute %4 "main" */
        (6u << 16) | MODE, 4, 17, 64, 1, 1,            /* LocalSize 64 1 1 */
        (2u << 16) | VOID, 2,
    };
    size_t n = 0;
    uint32_t *out = NULL;
    ck_assert_int_eq(sdpa__vk_spirv_float_controls(mod, sizeof mod, 1u, &out, &n), 1);
    ck_assert_ptr_nonnull(out);
    ck_assert_uint_eq(n, sizeof mod + 4 * (2 + 7 + 4));
    const uint32_t *w = out;
    ck_assert_uint_eq(w[5], (2u << 16) | CAP);
    ck_assert_uint_eq(w[7], (2u << 16) | CAP);
    ck_assert_uint_eq(w[8], 4466);                     /* SignedZeroInfNanPreserve */
    ck_assert_uint_eq(w[9], (7u << 16) | EXT);
    ck_assert(memcmp(&w[10], "SPV_KHR_float_controls", 23) == 0);
    ck_assert_uint_eq(w[16], (3u << 16) | IMPORT);
    ck_assert_uint_eq(w[22], (5u << 16) | ENTRY);
    ck_assert_uint_eq(w[27], (4u << 16) | MODE);       /* right after the entry point */
    ck_assert_uint_eq(w[28], 4);
    ck_assert_uint_eq(w[29], 4461);
    ck_assert_uint_eq(w[30], 32);
    ck_assert_uint_eq(w[31], (6u << 16) | MODE);       /* LocalSize kept */
    size_t n2 = 0;
    uint32_t *again = NULL;
    ck_assert_int_eq(sdpa__vk_spirv_float_controls(out, n, 1u, &again, &n2), 0); /* asks already */
    ck_assert_int_eq(sdpa__vk_spirv_float_controls(mod, sizeof mod - 2, 1u, &again, &n2), 0);
    uint32_t bad[sizeof mod / 4];
    memcpy(bad, mod, sizeof mod);
    bad[13] = (40u << 16) | ENTRY;                     /* length past the end */
    ck_assert_int_eq(sdpa__vk_spirv_float_controls(bad, sizeof bad, 1u, &again, &n2), 0);
    ck_assert_int_eq(sdpa__vk_spirv_float_controls(mod, sizeof mod, 0u, &again, &n2), 0);
    ck_assert_ptr_null(again);
    free(out);

    ck_assert_int_eq(sdpa__vk_spirv_float_controls(mod, sizeof mod, 1u | 2u | 8u, &out, &n), 1);
    ck_assert_uint_eq(n, sizeof mod + 4 * (2 * 2 + 7 + 3 * 4));
    w = out;
    ck_assert_uint_eq(w[7], (2u << 16) | CAP);
    ck_assert_uint_eq(w[8], 4466);                     /* SignedZeroInfNanPreserve */
    ck_assert_uint_eq(w[9], (2u << 16) | CAP);
    ck_assert_uint_eq(w[10], 4464);                    /* DenormPreserve */
    ck_assert_uint_eq(w[11], (7u << 16) | EXT);
    ck_assert_uint_eq(w[24], (5u << 16) | ENTRY);
    const uint32_t want[3][2] = {{4461, 32}, {4459, 16}, {4459, 64}};
    for (int m = 0; m < 3; m++) {
        ck_assert_uint_eq(w[29 + 4 * m], (4u << 16) | MODE);
        ck_assert_uint_eq(w[30 + 4 * m], 4);
        ck_assert_uint_eq(w[31 + 4 * m], want[m][0]);
        ck_assert_uint_eq(w[32 + 4 * m], want[m][1]);
    }
    ck_assert_uint_eq(w[41], (6u << 16) | MODE);       /* LocalSize kept */
    /* a module with DenormPreserve already: left alone */
    ck_assert_int_eq(sdpa__vk_spirv_float_controls(out, n, 2u, &again, &n2), 0);
    ck_assert_ptr_null(again);
    free(out);
}
END_TEST

/* ---- issue 19: ALiBi, sinks, K/V dtypes, q8_0 / q4_0 and paged K/V ---------
 * Parity with the reference (tests/common/tfeatures.c: random inputs,
 * poisoned outputs) for each feature and combination, decode (Sq 1) and
 * prefill (Sq = Skv) at lengths 1, 7, 63, 65, 257 and 1000 on the default
 * configuration ("features", "features_backward"), every forward shader at
 * two lengths ("features_kernels": fwd_rows, the staged fwd, fwd_fa2, a
 * forced key split) and a short set for the GPU personas ("features_short",
 * scripts/vk-personas.sh: fwd_fa2 by default, packed layouts). */
#define F32 SDPA_DTYPE_F32
#define F16 SDPA_DTYPE_F16
#define BF16 SDPA_DTYPE_BF16
#define Q8 SDPA_DTYPE_Q8_0
#define Q4 SDPA_DTYPE_Q4_0
#define TL SDPA_DIAGONAL_TOP_LEFT
#define BR SDPA_DIAGONAL_BOTTOM_RIGHT
#define EX SDPA_DIAGONAL_EXPLICIT
static const tfcase k_fcases[] = {
    /* name, q, kv, B, Hq, Hkv, D, Dv, diagonal, offset, wl, wr, softcap, alibi, sinks,
     * kv_len, stats, page */
    {"alibi_causal", F32, F32, 2, 4, 2, 32, 32, BR, 0, -1, 0, 0, true, false, true, true, 0},
    {"sinks_window_gqa", F32, F32, 1, 4, 2, 32, 32, TL, 0, 20, 0, 0, false, true, false, true, 0},
    {"alibi_sinks_cap_explicit", F32, F32, 2, 4, 2, 32, 32, EX, 5, 50, 10, 5.0, true, true, true,
     true, 0},
    {"f32q_f16kv_sinks", F32, F16, 1, 2, 1, 64, 32, TL, 0, -1, -1, 0, false, true, false, false, 0},
    {"f16q_bf16kv_alibi", F16, BF16, 1, 4, 2, 32, 64, BR, 0, -1, 0, 0, true, false, false, false,
     0},
    {"bf16q_f32kv", BF16, F32, 1, 2, 2, 32, 32, TL, 0, -1, -1, 0, false, false, false, true, 0},
    {"q8_0_f32q", F32, Q8, 1, 4, 1, 64, 64, BR, 0, -1, 0, 0, false, false, true, false, 0},
    {"q4_0_f16q_sinks", F16, Q4, 1, 2, 2, 32, 32, TL, 0, -1, -1, 0, false, true, false, true, 0},
    {"paged_f32", F32, F32, 2, 2, 1, 32, 32, TL, 0, -1, -1, 0, false, false, true, false, 16},
    {"paged_q8_0_f16q_sinks_alibi", F16, Q8, 2, 4, 2, 32, 32, BR, 0, -1, 0, 0, true, true, true,
     true, 7},
    {"paged_q4_0_bf16q_alibi_explicit", BF16, Q4, 2, 2, 2, 64, 32, EX, 3, -1, 0, 0, true, true,
     true, false, 32},
    {"paged_f32q_f16kv_sinks", F32, F16, 1, 2, 1, 32, 32, TL, 0, -1, -1, 0, false, true, true,
     false, 5},
};
#define N_FCASES ((int)(sizeof k_fcases / sizeof k_fcases[0]))
static const tfcase k_fbcases[] = {
    {"bwd_alibi", F32, F32, 2, 4, 2, 32, 32, BR, 0, -1, 0, 0, true, false, true, false, 0},
    {"bwd_sinks", F32, F32, 1, 4, 2, 32, 32, TL, 0, 20, 0, 0, false, true, false, false, 0},
    {"bwd_alibi_sinks_cap_f16q_bf16kv", F16, BF16, 1, 4, 2, 32, 32, BR, 0, -1, 0, 5.0, true, true,
     false, false, 0},
    {"bwd_f32q_f16kv", F32, F16, 1, 2, 2, 32, 64, TL, 0, -1, -1, 0, false, false, false, false, 0},
};
#define N_FBCASES ((int)(sizeof k_fbcases / sizeof k_fbcases[0]))
static const int64_t k_flens[] = {1, 7, 63, 65, 257, 1000};
#define N_FLENS 6

/* Case _i / N_FLENS at length _i % N_FLENS, decode and prefill. */
START_TEST(test_features)
{
    const tfcase *c = &k_fcases[_i / N_FLENS];
    const int64_t L = k_flens[_i % N_FLENS];
    tfeatures_parity(vk, ref, c, 1, L, false, NULL, (uint64_t)_i + 1);
    tfeatures_parity(vk, ref, c, L, L, false, NULL, (uint64_t)_i + 101);
}
END_TEST

START_TEST(test_features_backward)
{
    const tfcase *c = &k_fbcases[_i / N_FLENS];
    const int64_t L = k_flens[_i % N_FLENS];
    tfeatures_parity(vk, ref, c, 1, L, true, NULL, (uint64_t)_i + 201);
    tfeatures_parity(vk, ref, c, L, L, true, NULL, (uint64_t)_i + 301);
}
END_TEST

/* Case _i with every forward shader: fwd_rows (q_tile 4), the staged fwd,
 * fwd_fa2 (lanes 4) and fwd.comp with a forced key split (combine.comp),
 * prefill 65 x 65 and decode 1 x 257. */
START_TEST(test_features_kernels)
{
    const tfcase *c = &k_fcases[_i];
    for (int kern = 0; kern < 4; kern++) {
        sdpa_tile_config tc;
        sdpa_plan_options po;
        if (kern == 0) po = rows_opts(&tc, 4, 8, 64);
        else if (kern == 2) po = fa2_opts(&tc, 4, 2, 8, 64);
        else {
            po = rows_opts(&tc, 1, 8, 64);
            sdpa_tile_config_set(&tc, kern == 1 ? SDPA_TILE_STAGE_KV : SDPA_TILE_SPLIT_KV,
                                 kern == 1 ? 1 : 3);
        }
        tfeatures_parity(vk, ref, c, 65, 65, false, &po, (uint64_t)(_i * 8 + kern + 401));
        tfeatures_parity(vk, ref, c, 1, 257, false, &po, (uint64_t)(_i * 8 + kern + 501));
    }
}
END_TEST

/* Case _i at the default configuration, 65 and 257 (prefill, decode), then
 * the backward cases at 65: run under the GPU personas
 * (scripts/vk-personas.sh). */
START_TEST(test_features_short)
{
    if (_i < N_FCASES) {
        tfeatures_parity(vk, ref, &k_fcases[_i], 65, 65, false, NULL, (uint64_t)_i + 601);
        tfeatures_parity(vk, ref, &k_fcases[_i], 1, 257, false, NULL, (uint64_t)_i + 701);
    } else {
        tfeatures_parity(vk, ref, &k_fbcases[_i - N_FCASES], 65, 65, true, NULL,
                         (uint64_t)_i + 801);
    }
}
END_TEST

/* The Vulkan backend's own limit on the issue-19 inputs: ALiBi measures
 * distances in 32-bit ints, so an EXPLICIT diagonal_offset of 2^29 or more
 * with alibi_slopes is refused (SDPA_ERR_UNSUPPORTED, message saying so);
 * without ALiBi the same offset plans (the band clamps it). */
START_TEST(test_features_refusals)
{
    float q[32] = {0}, k[32] = {0}, v[32] = {0}, out[32], slope = 0.5f;
    sdpa_attention_desc d;
    sdpa_attention_desc_init(&d);
    d.diagonal = SDPA_DIAGONAL_EXPLICIT;
    d.diagonal_offset = (int64_t)1 << 29;
    d.tensors.q = sdpa_tensor_host(q, SDPA_DTYPE_F32, 1, 1, 1, 32);
    d.tensors.k = sdpa_tensor_host(k, SDPA_DTYPE_F32, 1, 1, 1, 32);
    d.tensors.v = sdpa_tensor_host(v, SDPA_DTYPE_F32, 1, 1, 1, 32);
    d.tensors.out = sdpa_tensor_host(out, SDPA_DTYPE_F32, 1, 1, 1, 32);
    d.tensors.alibi_slopes = sdpa_tensor_host(&slope, SDPA_DTYPE_F32, 1, 1, 1, 1);
    for (int sign = -1; sign <= 1; sign += 2) {
        d.diagonal_offset = sign * ((int64_t)1 << 29);
        sdpa_plan *plan = NULL;
        ck_assert_int_eq(sdpa_plan_create(vk, &d, NULL, &plan), SDPA_ERR_UNSUPPORTED);
        sdpa_error_info info;
        memset(&info, 0, sizeof info);
        sdpa_context_last_error(vk, &info);
        ck_assert_msg(info.message && strstr(info.message, "2^29") &&
                      strstr(info.message, "ALiBi"), "message: %s", info.message);
        ck_assert_int_eq(sdpa_plan_create(ref, &d, NULL, &plan), SDPA_OK);
        sdpa_plan_destroy(plan);
    }
}
END_TEST

static void add_features_cases(Suite *s)
{
    /* parity: tagged TTAG_DEVICE_PARITY (the short set stays untagged) */
    struct { const char *name; const TTest *fn; int n; bool parity; } loops[] = {
        {"features", test_features, N_FCASES * N_FLENS, true},
        {"features_backward", test_features_backward, N_FBCASES * N_FLENS, true},
        {"features_kernels", test_features_kernels, N_FCASES, true},
        {"features_short", test_features_short, N_FCASES + N_FBCASES, false},
        {"features_refusals", test_features_refusals, 1, false},
    };
    for (size_t i = 0; i < sizeof loops / sizeof loops[0]; i++) {
        TCase *tc = tcase_create(loops[i].name);
        if (loops[i].parity) tcase_set_tags(tc, TTAG_DEVICE_PARITY);
        tcase_add_checked_fixture(tc, setup, teardown);
        tcase_set_timeout(tc, 900);
        tcase_add_loop_test(tc, loops[i].fn, 0, loops[i].n);
        suite_add_tcase(s, tc);
    }
}

/* The GPU-class backward (bwd_fa2_dq.comp, bwd_fa2_dkv.comp) under a GPU
 * persona: lengths 1, 7, 63, 65, 257 and 1000, random inputs, poisoned
 * outputs, against the float64 reference; the plan's config says the new
 * shaders run ("bwd=fa2"). GQA except at 1000 (whose dkv pass over a group
 * of two heads would pass llvmpipe's loop budget and keep the older
 * shaders). `wide` adds the feature and storage cases: mask, bias, softcap,
 * kv_len, a window, temperature and GQA; f16 and bf16; Dv != D; D = 128 with
 * 16 lanes forced, more than lavapipe's subgroup of 8, so the shared-memory
 * reduction variants (bwd_fa2_*sh) run; ALiBi and sinks (tfeatures.c). */
static void fa2_backward_cases(bool wide)
{
    static const int64_t lens[] = {1, 7, 63, 65, 257, 1000};
    sdpa_plan_options bo; /* the backward plan's options, for its config */
    sdpa_plan_options_init(&bo);
    bo.flags = SDPA_PLAN_BACKWARD;
    for (size_t i = 0; i < sizeof lens / sizeof lens[0]; i++) {
        int64_t L = lens[i];
        char name[64];
        snprintf(name, sizeof name, "fa2_bwd_len%lld", (long long)L);
        tcase c = mk(name, 1, 2, L < 1000 ? 1 : 2, L, L, 64, 64);
        if (i % 2) c.diagonal = SDPA_DIAGONAL_BOTTOM_RIGHT;
        c.seed = 1700 + (uint64_t)L;
        check_config(&c, &bo, "bwd=fa2", NULL);
        tparity_backward(vk, ref, &c, NULL);
    }
    if (!wide) return;
    tcase c = mk("fa2_bwd_features", 2, 4, 2, 65, 63, 64, 64);
    c.mask = true; c.bias = true; c.kv_len = true; c.softcap = 8.0; c.temperature = true;
    c.window_left = 30; c.window_right = 2; c.seed = 1711;
    check_config(&c, &bo, "bwd=fa2", NULL);
    tparity_backward(vk, ref, &c, NULL);
    c = mk("fa2_bwd_f16", 1, 2, 1, 63, 65, 64, 64); c.dtype = SDPA_DTYPE_F16; c.seed = 1712;
    tparity_backward(vk, ref, &c, NULL);
    c = mk("fa2_bwd_bf16_dv", 1, 3, 3, 7, 9, 64, 32); c.dtype = SDPA_DTYPE_BF16; c.seed = 1713;
    check_config(&c, &bo, "bwd=fa2", NULL);
    tparity_backward(vk, ref, &c, NULL);
    sdpa_tile_config tc;
    sdpa_tile_config_init(&tc);
    sdpa_tile_config_set(&tc, SDPA_TILE_LANES, 16);
    sdpa_plan_options po;
    sdpa_plan_options_init(&po);
    po.tile = &tc;
    po.flags = SDPA_PLAN_BACKWARD;
    c = mk("fa2_bwd_shared_reduce", 1, 2, 1, 65, 257, 128, 128); c.bshd = true; c.seed = 1714;
    check_config(&c, &po, "bwd=fa2/l16", "/sh");
    tparity_backward(vk, ref, &c, &po);
    /* ALiBi and sinks (dsinks from the D the first pass stores; head 1 has
     * no sink) with softcap, kv_len, a window and an explicit diagonal:
     * prefill 65 x 65 and decode 1 x 257, the GPU-class backward asserted
     * (one case: each feature set is a pipeline set to compile) */
    const tfcase *fc = &k_fcases[2];
    sdpa_plan_info info;
    tfeatures_parity_info(vk, ref, fc, 65, 65, true, NULL, 1720, &info);
    ck_assert_msg(strstr(info.config, "bwd=fa2") != NULL, "%s: config '%s'", fc->name,
                  info.config);
    tfeatures_parity(vk, ref, fc, 1, 257, true, NULL, 1730);
}

START_TEST(test_persona_sb4_fa2_backward)
{
    ck_assert_int_eq(sdpa__vk_packed_layout(vk), 1);
    fa2_backward_cases(true);
}
END_TEST

START_TEST(test_persona_nobar_fa2_backward)
{
    ck_assert_int_eq(sdpa__vk_packed_layout(vk), 0);
    fa2_backward_cases(false);
}
END_TEST

static void add_persona_cases(Suite *s)
{
    /* parity: tagged TTAG_DEVICE_PARITY */
    struct { const char *name; void (*fixture)(void); const TTest *fn; bool parity; } cases[] = {
        {"persona_sb4_paths", setup_sb4, test_persona_sb4_paths, true},
        {"persona_sb4_device_buffers", setup_sb4, test_device_buffers, false},
        {"persona_nobar", setup_nobar, test_persona_nobar, false},
        {"persona_bar256_full", setup_bar256, test_persona_bar256_full, false},
        {"persona_sb4_fa2_backward", setup_sb4, test_persona_sb4_fa2_backward, true},
        {"persona_nobar_fa2_backward", setup_nobar, test_persona_nobar_fa2_backward, true},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        TCase *tc = tcase_create(cases[i].name);
        if (cases[i].parity) tcase_set_tags(tc, TTAG_DEVICE_PARITY);
        tcase_add_checked_fixture(tc, cases[i].fixture, teardown);
        tcase_set_timeout(tc, 900);
        tcase_add_test(tc, cases[i].fn);
        suite_add_tcase(s, tc);
    }
    TCase *tc = tcase_create("spirv_float_controls"); /* no device */
    tcase_add_test(tc, test_spirv_float_controls);
    suite_add_tcase(s, tc);
}

static Suite *vulkan_suite(void)
{
    Suite *s = suite_create("vulkan");
    /* parity: the kernels against the reference, tagged TTAG_DEVICE_PARITY */
    struct { const char *name; const TTest *fn; bool parity; } tests[] = {
        {"devices", test_devices, false},
        {"decode", test_decode, true},
        {"tile_configs", test_tile_configs, true},
        {"tuning_slots", test_tuning_slots, false},
        {"staged_forward", test_staged_forward, true},
        {"staged_refusals", test_staged_refusals, false},
        {"staged_candidates", test_staged_candidates, false},
        {"rows_forward", test_rows_forward, true},
        {"rows_refusals", test_rows_refusals, false},
        {"rows_candidates", test_rows_candidates, false},
        {"fa2_forward", test_fa2_forward, true},
        {"fa2_refusals", test_fa2_refusals, false},
        {"fa2_f16", test_fa2_f16, true},
        {"backward_deterministic", test_backward_deterministic, false},
        {"device_buffers", test_device_buffers, false},
        {"missing_storage16", test_missing_storage16, false},
        {"pipeline_cache", test_pipeline_cache, false},
        {"pipeline_cache_untrusted", test_pipeline_cache_untrusted, false},
        {"interop", test_interop, false},
        {"suballocator", test_suballocator, false},
    };
    for (size_t i = 0; i < sizeof tests / sizeof tests[0]; i++) {
        TCase *tc = tcase_create(tests[i].name);
        if (tests[i].parity) tcase_set_tags(tc, TTAG_DEVICE_PARITY);
        tcase_add_checked_fixture(tc, setup, teardown);
        tcase_set_timeout(tc, 600);
        tcase_add_test(tc, tests[i].fn);
        suite_add_tcase(s, tc);
    }
    /* No fixture: pure parser tests, no device. */
    TCase *tc = tcase_create("cache_entry");
    tcase_add_test(tc, test_cache_entry_valid);
    tcase_add_test(tc, test_cache_entry_corruptions);
    suite_add_tcase(s, tc);
    add_persona_cases(s);
    add_features_cases(s);
    return s;
}

int main(void)
{
    int n = 0;
    if (sdpa_device_count(SDPA_BACKEND_VULKAN, &n) != SDPA_OK || n == 0) {
        fprintf(stderr, "test_vulkan: no Vulkan device; skipping\n");
        return 77;
    }
    setenv("SDPA_VK_VALIDATION", "1", 0);
    return trun_suite(vulkan_suite());
}
