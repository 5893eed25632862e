/*
 * test_tiles.c — forced tile values outside a backend's table
 * (sdpa__backend.tile_ranges, checked once in src/core/tile_check.c) are
 * refused on every backend with SDPA_ERR_UNSUPPORTED and the same message
 * form, never clamped or rounded; values inside run and match the reference.
 *
 * Run time: about a second (the refusals come before any kernel build; one
 * small plan per backend runs).
 */
#include "testutil.h"

#include <stdio.h>
#include <string.h>

static const sdpa_backend_kind k_kinds[] = {SDPA_BACKEND_REFERENCE, SDPA_BACKEND_CPU,
                                            SDPA_BACKEND_OPENCL, SDPA_BACKEND_VULKAN};

typedef struct bad_value {
    size_t field;     /* offsetof in sdpa_tile_config */
    const char *name;
    int value;
} bad_value;
#define BAD(f, v) {offsetof(sdpa_tile_config, f), #f, v}

/* Out of range on every backend: negative, zero where 0 means nothing,
 * huge, and values of the 0/1 switches other than 0 and 1. */
static const bad_value k_bad[] = {
    BAD(q_tile, -7),      BAD(q_tile, 0),       BAD(q_tile, 1 << 30),
    BAD(k_tile, -2),      BAD(k_tile, 0),       BAD(k_tile, 1 << 30),
    BAD(wg_size, -3),     BAD(wg_size, 0),      BAD(wg_size, 1 << 30),
    BAD(vec_width, 0),    BAD(vec_width, 3),    BAD(vec_width, 1 << 30),
    BAD(stage_kv, 2),     BAD(stage_kv, -5),    BAD(split_kv, 0),
    BAD(split_kv, 1 << 30), BAD(unfused, 2),    BAD(unfused, -9),
    BAD(gemm_params, -4), BAD(gemm_params, 1 << 30),
};

static tcase small_case(void)
{
    tcase c;
    tcase_init(&c, "tiles", 1, 2, 2, 33, 40, 16, 16);
    c.lse = true;
    return c;
}

START_TEST(out_of_range_refused)
{
    sdpa_backend_kind kind = k_kinds[_i];
    sdpa_status st;
    sdpa_context *ctx = tcontext(kind, &st);
    if (!ctx) {
        printf("tiles %s: skipped (%s)\n", sdpa_backend_name(kind), sdpa_status_name(st));
        ck_assert(kind == SDPA_BACKEND_OPENCL || kind == SDPA_BACKEND_VULKAN);
        return;
    }
    tcase c = small_case();
    tproblem p;
    tproblem_make(&p, &c);
    for (size_t i = 0; i < sizeof k_bad / sizeof k_bad[0]; i++) {
        sdpa_tile_config tc;
        sdpa_tile_config_init(&tc);
        memcpy((char *)&tc + k_bad[i].field, &k_bad[i].value, sizeof(int));
        sdpa_plan_options po;
        sdpa_plan_options_init(&po);
        po.tile = &tc;
        sdpa_plan *plan = NULL;
        st = sdpa_plan_create(ctx, &p.desc, &po, &plan);
        ck_assert_msg(st == SDPA_ERR_UNSUPPORTED, "%s: tile.%s %d gave %s",
                      sdpa_backend_name(kind), k_bad[i].name, k_bad[i].value,
                      sdpa_status_name(st));
        ck_assert_ptr_null(plan);
        sdpa_error_info e;
        sdpa_context_last_error(ctx, &e);
        char want[96];
        snprintf(want, sizeof want, "%s: tile.%s %d", sdpa_backend_name(kind), k_bad[i].name,
                 k_bad[i].value);
        ck_assert_msg(strstr(e.message, want) != NULL &&
                          (strstr(e.message, "is out of range: must be SDPA_AUTO or") ||
                           strstr(e.message, "has no such parameter (leave it SDPA_AUTO)")),
                      "%s: message '%s'", want, e.message);
    }
    printf("tiles %s: %zu out-of-range values refused with one message form\n",
           sdpa_backend_name(kind), sizeof k_bad / sizeof k_bad[0]);
    tproblem_free(&p);
    sdpa_context_destroy(ctx);
}
END_TEST

/* The cpu backend's tiles are multiples of 16: 20 used to be rounded up to
 * 32 silently; now it is refused, and 32 itself runs. */
START_TEST(cpu_tiles_not_rounded)
{
    sdpa_context *ctx = tcontext(SDPA_BACKEND_CPU, NULL);
    sdpa_context *ref = tcontext(SDPA_BACKEND_REFERENCE, NULL);
    ck_assert(ctx && ref);
    tcase c = small_case();
    tproblem p;
    tproblem_make(&p, &c);
    sdpa_tile_config tc;
    sdpa_tile_config_init(&tc);
    sdpa_plan_options po;
    sdpa_plan_options_init(&po);
    po.tile = &tc;
    sdpa_plan *plan = NULL;
    tc.q_tile = 20;
    ck_assert_int_eq(sdpa_plan_create(ctx, &p.desc, &po, &plan), SDPA_ERR_UNSUPPORTED);
    sdpa_error_info e;
    sdpa_context_last_error(ctx, &e);
    ck_assert_msg(strstr(e.message, "cpu: tile.q_tile 20 is out of range: must be SDPA_AUTO or "
                                    "16..256, a multiple of 16") != NULL,
                  "message '%s'", e.message);
    tc.q_tile = 32;
    tc.k_tile = 48;
    tc.split_kv = 2;
    tparity_forward(ctx, ref, &c, &po);
    tproblem_free(&p);
    sdpa_context_destroy(ref);
    sdpa_context_destroy(ctx);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("tiles");
    TCase *t = tcase_create("tiles");
    tcase_set_timeout(t, 300);
    tcase_add_loop_test(t, out_of_range_refused, 0,
                        (int)(sizeof k_kinds / sizeof k_kinds[0]));
    tcase_add_test(t, cpu_tiles_not_rounded);
    suite_add_tcase(s, t);
    return trun_suite(s);
}
