/*
 * test_vksplit.c — the Vulkan backend's dispatch splitting (issue 16,
 * src/backend/vulkan/vk_split.c): no single dispatch carries more than a
 * bounded amount of work, and no forward invocation walks more than a
 * bounded number of keys.
 *
 * split_plan (no device): sdpa__vk_split_plan's pieces cover every
 * work-group exactly once, keep the grid's width, stay within the device's
 * group limits and within the work bound (one work-group at least).
 *
 * tiny_pieces_* (lavapipe): with the test-only bounds at their smallest
 * (SDPA_TEST_VK_DISPATCH_WORK=1: one work-group per dispatch;
 * SDPA_TEST_VK_DISPATCH_KEYS=16: a key split every 16 keys, combined by LSE)
 * the forward, decode and backward at lengths 1, 7, 63, 65, 257 and 1000
 * match the reference, the plan reports the key splits, and pieces with a
 * non-zero base were recorded. Its own executable (suite vksplit), so the
 * bounds never leak into the vulkan suite.
 */
#include "testutil.h"

#include "../src/backend/vulkan/vk_split.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the planner alone -------------------------------------------------------- */

static void check_plan(uint64_t invocations, int wg, uint32_t max_x, uint32_t max_y,
                       uint64_t work_bound)
{
    sdpa__vk_state s;
    memset(&s, 0, sizeof s);
    s.caps.max_groups[0] = max_x;
    s.caps.max_groups[1] = max_y;
    sdpa__vk_plan pl;
    memset(&pl, 0, sizeof pl);
    pl.wg_size = wg;
    pl.nsplit = 1;
    pl.p.B = 1; pl.p.Hq = 2; pl.p.Hkv = 1; pl.p.Sq = 100; pl.p.Skv = 300;
    pl.p.D = 64; pl.p.Dv = 32;
    char bound[32];
    snprintf(bound, sizeof bound, "%llu", (unsigned long long)work_bound);
    setenv(SDPA__VK_DISPATCH_WORK_ENV, bound, 1);
    for (int pipe = 0; pipe < SDPA__VK_P_COUNT; pipe++) {
        sdpa__vk_split sp;
        ck_assert_int_eq(sdpa__vk_split_plan(NULL, &s, &pl, pipe, invocations, &sp), SDPA_OK);
        const uint64_t groups = (invocations + (uint64_t)wg - 1) / (uint64_t)wg;
        const uint64_t per_group = (uint64_t)wg * sdpa__vk_split_work(&pl, pipe);
        ck_assert_uint_ge(sp.gx, 1);
        ck_assert_uint_le(sp.gx, max_x);
        ck_assert_uint_le(sp.rows, max_y);
        /* every group in exactly one row of the grid, no row empty */
        ck_assert_uint_ge(sp.rows * sp.gx, groups);
        ck_assert_uint_lt((sp.rows - 1) * sp.gx, groups);
        /* the pieces cover the rows */
        ck_assert_uint_ge(sp.pieces * sp.rows_per, sp.rows);
        ck_assert_uint_lt((sp.pieces - 1) * sp.rows_per, sp.rows);
        /* within the bound, or one work-group, or one row as narrow as the
         * second dimension allows */
        const uint64_t piece = sp.rows_per * sp.gx;
        ck_assert_msg(piece * per_group <= work_bound || piece == 1 ||
                      (sp.rows_per == 1 && sp.gx == (groups + max_y - 1) / max_y),
                      "pipe %d: %llu groups x %llu per piece over the bound %llu", pipe,
                      (unsigned long long)piece, (unsigned long long)per_group,
                      (unsigned long long)work_bound);
        /* a bound above the whole dispatch leaves it whole */
        if (groups * per_group <= work_bound) ck_assert_uint_eq(sp.pieces, 1);
    }
}

START_TEST(test_split_plan)
{
    static const uint64_t inv[] = {1, 63, 64, 65, 1000, 4099, 200000, 5000000};
    static const uint64_t bounds[] = {1, 100000, 10000000, (uint64_t)1 << 34};
    for (size_t i = 0; i < sizeof inv / sizeof inv[0]; i++)
        for (size_t b = 0; b < sizeof bounds / sizeof bounds[0]; b++) {
            check_plan(inv[i], 64, 65535, 65535, bounds[b]);
            check_plan(inv[i], 32, 7, 100000, bounds[b]); /* narrow first dimension */
        }
    /* more groups than the grid can hold: refused with a message */
    sdpa__vk_state s;
    memset(&s, 0, sizeof s);
    s.caps.max_groups[0] = s.caps.max_groups[1] = 4;
    sdpa__vk_plan pl;
    memset(&pl, 0, sizeof pl);
    pl.wg_size = 1;
    pl.nsplit = 1;
    pl.p.Hq = pl.p.Hkv = pl.p.B = pl.p.Sq = pl.p.Skv = pl.p.D = pl.p.Dv = 1;
    sdpa__vk_split sp;
    sdpa_status st;
    sdpa_context *ctx = tcontext(SDPA_BACKEND_REFERENCE, &st);
    ck_assert_ptr_nonnull(ctx);
    ck_assert_int_eq(sdpa__vk_split_plan(ctx, &s, &pl, SDPA__VK_P_FWD, 17, &sp),
                     SDPA_ERR_UNSUPPORTED);
    sdpa_error_info ei;
    memset(&ei, 0, sizeof ei);
    sdpa_context_last_error(ctx, &ei);
    ck_assert_ptr_nonnull(strstr(ei.message, "dispatch limits"));
    sdpa_context_destroy(ctx);
    unsetenv(SDPA__VK_DISPATCH_WORK_ENV);
}
END_TEST

/* ---- on the device ------------------------------------------------------------ */

static const int64_t lengths[] = {1, 7, 63, 65, 257, 1000};
#define TINY_KEYS 16

static sdpa_context *vk, *ref;

/* Test hook from src/backend/vulkan/vk_device.c. */
int sdpa__vk_validation_error_count(sdpa_context *ctx);

static void setup(void)
{
    setenv(SDPA__VK_DISPATCH_WORK_ENV, "1", 1);
    char keys[16];
    snprintf(keys, sizeof keys, "%d", TINY_KEYS);
    setenv(SDPA__VK_INVOCATION_KEYS_ENV, keys, 1);
    sdpa_status st;
    vk = tcontext(SDPA_BACKEND_VULKAN, &st);
    ck_assert_msg(vk, "no Vulkan context: %s", sdpa_status_name(st));
    ref = tcontext(SDPA_BACKEND_REFERENCE, &st);
    ck_assert(ref);
}

static void teardown(void)
{
    /* dispatches with a base need pipelines created for them (Khronos
     * validation layer, when installed; SDPA_VK_VALIDATION) */
    if (vk) {
        int n = sdpa__vk_validation_error_count(vk);
        ck_assert_msg(n == 0, "the validation layer reported %d error(s)", n);
    }
    sdpa_context_destroy(vk);
    sdpa_context_destroy(ref);
    vk = ref = NULL;
    unsetenv(SDPA__VK_DISPATCH_WORK_ENV);
    unsetenv(SDPA__VK_INVOCATION_KEYS_ENV);
}

static tcase mk(const char *name, int64_t Sq, int64_t Skv, uint64_t seed)
{
    tcase c;
    tcase_init(&c, name, 1, 4, 2, Sq, Skv, 32, 32);
    c.lse = true;
    c.seed = seed;
    return c;
}

/* A number the plan's config reports ("<key>=N"). */
static int config_value(const sdpa_plan_info *info, const char *key)
{
    const char *at = strstr(info->config, key);
    ck_assert_msg(at, "no %s in '%s'", key, info->config);
    return atoi(at + strlen(key));
}

/* Runs c (forward, or forward + backward) against the reference and asserts
 * that the work was split: key splits of at most TINY_KEYS keys for the
 * forward (up to the plan's 64), pieces with a base whenever a dispatch had
 * more than one work-group. */
static void tiny(const tcase *c, bool backward)
{
    const sdpa_plan_info info = tplan_info(vk, c);
    const int splits = config_value(&info, "split_kv="), wg = config_value(&info, "wg_size=");
    const int q_tile = config_value(&info, "q_tile=");
    const int want = (int)((c->Skv + TINY_KEYS - 1) / TINY_KEYS);
    ck_assert_msg(splits == (want < 64 ? want : 64), "%s: %d key splits, want %d (%s)",
                  c->name, splits, want, info.config);

    uint64_t before = sdpa__vk_split_based_pieces();
    if (backward)
        tparity_backward(vk, ref, c, NULL);
    else
        tparity_forward(vk, ref, c, NULL);
    uint64_t pieces = sdpa__vk_split_based_pieces() - before;
    const int64_t fwd = c->B * c->Hq * c->Sq * splits / (q_tile > 1 ? q_tile : 1);
    if (fwd > wg || (backward && (c->B * c->Hq * c->Sq > wg || c->B * c->Hkv * c->Skv > wg)))
        ck_assert_msg(pieces > 0, "%s: no dispatch was split (%s)", c->name, info.config);
}

/* Every length as prefill (causal bottom-right on odd ones, statistics on
 * every third), decode (Sq = 1, kv_len on odd ones) or prefill backward. */
typedef enum { TINY_FORWARD, TINY_DECODE, TINY_BACKWARD } tiny_kind;

static void tiny_lengths(tiny_kind kind)
{
    static const char *const names[] = {"forward", "decode", "backward"};
    char name[64];
    for (size_t i = 0; i < sizeof lengths / sizeof lengths[0]; i++) {
        snprintf(name, sizeof name, "%s_len%lld", names[kind], (long long)lengths[i]);
        tcase c = mk(name, kind == TINY_DECODE ? 1 : lengths[i], lengths[i],
                     700 + 20 * (uint64_t)kind + i);
        if (kind == TINY_DECODE) {
            c.kv_len = i % 2 == 1;
        } else if (i % 2) { /* causal, bottom-right */
            c.window_right = 0;
            c.diagonal = SDPA_DIAGONAL_BOTTOM_RIGHT;
        }
        c.stats = kind == TINY_FORWARD && i % 3 == 0;
        tiny(&c, kind == TINY_BACKWARD);
    }
}

START_TEST(test_tiny_forward) { tiny_lengths(TINY_FORWARD); }
END_TEST
START_TEST(test_tiny_decode) { tiny_lengths(TINY_DECODE); }
END_TEST
START_TEST(test_tiny_backward) { tiny_lengths(TINY_BACKWARD); }
END_TEST

int main(void)
{
    Suite *s = suite_create("vksplit");
    TCase *tc = tcase_create("split_plan");
    tcase_add_test(tc, test_split_plan);
    suite_add_tcase(s, tc);
    int n = 0;
    if (sdpa_device_count(SDPA_BACKEND_VULKAN, &n) == SDPA_OK && n > 0) {
        struct { const char *name; const TTest *t; } cases[] = {
            {"tiny_pieces_forward", test_tiny_forward},
            {"tiny_pieces_decode", test_tiny_decode},
            {"tiny_pieces_backward", test_tiny_backward},
        };
        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
            tc = tcase_create(cases[i].name);
            tcase_add_checked_fixture(tc, setup, teardown);
            tcase_set_timeout(tc, 900);
            tcase_add_test(tc, cases[i].t);
            suite_add_tcase(s, tc);
        }
        setenv("SDPA_VK_VALIDATION", "1", 0);
    } else {
        fprintf(stderr, "test_vksplit: no Vulkan device: the tiny_pieces cases are not run\n");
    }
    return trun_suite(s);
}
