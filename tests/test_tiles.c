/*
 * test_tiles.c — tile parameters (sdpa.h, "tile parameters"): the
 * configuration object addressed by enum (set/get, struct_size versioning),
 * names, the per-backend bounds query, and the one checker
 * (src/core/tile_check.c): values outside a backend's table are refused on
 * every backend with SDPA_ERR_UNSUPPORTED and the same message form, never
 * clamped or rounded; the bounds query agrees with the checker value by
 * value; values inside run and match the reference.
 *
 * Run time: about a second (the refusals come before any kernel build; one
 * small plan per backend runs).
 */
#include "testutil.h"
#include "../src/core/tile.h"

#include <stdio.h>
#include <string.h>

static const sdpa_backend_kind k_kinds[] = {SDPA_BACKEND_REFERENCE, SDPA_BACKEND_CPU,
                                            SDPA_BACKEND_OPENCL, SDPA_BACKEND_VULKAN};

typedef struct bad_value {
    sdpa_tile_param param;
    int value;
} bad_value;

/* Out of range on every backend: negative, zero where 0 means nothing,
 * huge, and values of the 0/1 switches other than 0 and 1. (The OpenCL
 * backend's CLBlast set, a backend parameter, is added by name below.) */
static const bad_value k_bad[] = {
    {SDPA_TILE_Q_TILE, -7},     {SDPA_TILE_Q_TILE, 0},       {SDPA_TILE_Q_TILE, 1 << 30},
    {SDPA_TILE_K_TILE, -2},     {SDPA_TILE_K_TILE, 0},       {SDPA_TILE_K_TILE, 1 << 30},
    {SDPA_TILE_WG_SIZE, -3},    {SDPA_TILE_WG_SIZE, 0},      {SDPA_TILE_WG_SIZE, 1 << 30},
    {SDPA_TILE_VEC_WIDTH, 0},   {SDPA_TILE_VEC_WIDTH, 3},    {SDPA_TILE_VEC_WIDTH, 1 << 30},
    {SDPA_TILE_STAGE_KV, 2},    {SDPA_TILE_STAGE_KV, -5},    {SDPA_TILE_SPLIT_KV, 0},
    {SDPA_TILE_SPLIT_KV, 1 << 30}, {SDPA_TILE_UNFUSED, 2},   {SDPA_TILE_UNFUSED, -9},
    {SDPA_TILE_BACKEND_FIRST, -4}, {SDPA_TILE_BACKEND_FIRST, 1 << 30},
};

static tcase small_case(void)
{
    tcase c;
    tcase_init(&c, "tiles", 1, 2, 2, 33, 40, 16, 16);
    c.lse = true;
    return c;
}

/* "tile.<name> <value>" as messages spell it. */
static void tile_text(sdpa_tile_param param, int value, char *out, size_t size)
{
    const char *name = sdpa_tile_param_name(param);
    if (name)
        snprintf(out, size, "tile.%s %d", name, value);
    else
        snprintf(out, size, "tile.param%d %d", (int)param, value);
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
        ck_assert_int_eq(sdpa_tile_config_set(&tc, k_bad[i].param, k_bad[i].value), SDPA_OK);
        sdpa_plan_options po;
        sdpa_plan_options_init(&po);
        po.tile = &tc;
        sdpa_plan *plan = NULL;
        st = sdpa_plan_create(ctx, &p.desc, &po, &plan);
        char want[96], field[64];
        tile_text(k_bad[i].param, k_bad[i].value, field, sizeof field);
        snprintf(want, sizeof want, "%s: %s", sdpa_backend_name(kind), field);
        ck_assert_msg(st == SDPA_ERR_UNSUPPORTED, "%s gave %s", want, sdpa_status_name(st));
        ck_assert_ptr_null(plan);
        sdpa_error_info e;
        sdpa_context_last_error(ctx, &e);
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

/* For every compiled-in backend and parameter number: the bounds query and
 * the checker agree value by value (lo, hi, multiples and powers of two
 * pass; lo - 1, hi + 1, a non-multiple and a non-power are refused with the
 * bounds in the message); a parameter the query says the backend lacks is
 * refused whatever the value. No device needed: the tables are static. */
START_TEST(bounds_agree_with_checker)
{
    int checked = 0;
    for (size_t k = 0; k < sizeof k_kinds / sizeof k_kinds[0]; k++) {
        if (!sdpa_backend_compiled(k_kinds[k])) continue;
        const sdpa__backend *be = sdpa__backend_get(k_kinds[k]);
        ck_assert_ptr_nonnull(be);
        for (int pi = 0; pi < SDPA_TILE_PARAM_SLOTS; pi++) {
            sdpa_tile_param param = (sdpa_tile_param)pi;
            sdpa_tile_bounds b;
            sdpa_status st = sdpa_tile_param_get_bounds(k_kinds[k], param, &b);
            sdpa_tile_config t;
            sdpa_tile_config_init(&t);
            if (st == SDPA_ERR_UNSUPPORTED) {
                sdpa_tile_config_set(&t, param, 1);
                ck_assert_int_eq(sdpa__check_tile(NULL, be, &t), SDPA_ERR_UNSUPPORTED);
                continue;
            }
            ck_assert_int_eq(st, SDPA_OK);
            ck_assert_ptr_nonnull(b.name);
            ck_assert_msg(b.description && *b.description, "%s %s: no description", be->name,
                          b.name);
            ck_assert_int_le(b.lo, b.hi);
            const int ok[] = {b.lo, b.hi};
            for (int j = 0; j < 2; j++) {
                sdpa_tile_config_set(&t, param, ok[j]);
                ck_assert_msg(sdpa__check_tile(NULL, be, &t) == SDPA_OK, "%s %s %d refused",
                              be->name, b.name, ok[j]);
            }
            int bad[4], nbad = 0;
            if (b.lo - 1 != SDPA_AUTO) bad[nbad++] = b.lo - 1;
            bad[nbad++] = b.hi + 1;
            if (b.multiple > 1 && b.lo + 1 <= b.hi) bad[nbad++] = b.lo + 1;
            if (b.pow2 && b.lo < 3 && b.hi >= 3) bad[nbad++] = 3;
            for (int j = 0; j < nbad; j++) {
                sdpa_tile_config_set(&t, param, bad[j]);
                ck_assert_msg(sdpa__check_tile(NULL, be, &t) == SDPA_ERR_UNSUPPORTED,
                              "%s %s %d accepted outside %d..%d", be->name, b.name, bad[j],
                              b.lo, b.hi);
            }
            if (b.default_value != SDPA_AUTO) {
                ck_assert_int_ge(b.default_value, b.lo);
                ck_assert_int_le(b.default_value, b.hi);
            }
            checked++;
        }
    }
    ck_assert_int_ge(checked, 5); /* the cpu and reference tables at least */
    /* numbers that are no parameter */
    sdpa_tile_bounds b;
    ck_assert_int_eq(sdpa_tile_param_get_bounds(SDPA_BACKEND_CPU, (sdpa_tile_param)-1, &b),
                     SDPA_ERR_INVALID_ARG);
    ck_assert_int_eq(sdpa_tile_param_get_bounds(SDPA_BACKEND_CPU,
                                                (sdpa_tile_param)SDPA_TILE_PARAM_SLOTS, &b),
                     SDPA_ERR_INVALID_ARG);
    ck_assert_int_eq(sdpa_tile_param_get_bounds(SDPA_BACKEND_CPU, SDPA_TILE_Q_TILE, NULL),
                     SDPA_ERR_NULL);
}
END_TEST

/* The cpu table as documented: q_tile 16..256 and k_tile 16..512 in
 * multiples of 16 (defaults 64), no work-group size; q_tile means a
 * different thing on Vulkan (rows per invocation) and says so. */
START_TEST(bounds_per_backend)
{
    sdpa_tile_bounds b;
    ck_assert_int_eq(sdpa_tile_param_get_bounds(SDPA_BACKEND_CPU, SDPA_TILE_Q_TILE, &b), SDPA_OK);
    ck_assert_int_eq(b.lo, 16);
    ck_assert_int_eq(b.hi, 256);
    ck_assert_int_eq(b.multiple, 16);
    ck_assert_int_eq(b.default_value, 64);
    ck_assert_str_eq(b.name, "q_tile");
    ck_assert_int_eq(sdpa_tile_param_get_bounds(SDPA_BACKEND_CPU, SDPA_TILE_K_TILE, &b), SDPA_OK);
    ck_assert_int_eq(b.hi, 512);
    ck_assert_int_eq(sdpa_tile_param_get_bounds(SDPA_BACKEND_CPU, SDPA_TILE_WG_SIZE, &b),
                     SDPA_ERR_UNSUPPORTED);
    ck_assert_int_eq(sdpa_tile_param_get_bounds(SDPA_BACKEND_REFERENCE, SDPA_TILE_Q_TILE, &b),
                     SDPA_ERR_UNSUPPORTED);
    if (sdpa_backend_compiled(SDPA_BACKEND_VULKAN)) {
        ck_assert_int_eq(sdpa_tile_param_get_bounds(SDPA_BACKEND_VULKAN, SDPA_TILE_Q_TILE, &b),
                         SDPA_OK);
        ck_assert_msg(strstr(b.description, "per invocation"), "%s", b.description);
    }
    if (sdpa_backend_compiled(SDPA_BACKEND_OPENCL)) {
        sdpa_tile_param gemm;
        ck_assert_int_eq(sdpa_tile_param_from_name("gemm_params", &gemm), SDPA_OK);
        ck_assert_int_ge(gemm, SDPA_TILE_BACKEND_FIRST);
        ck_assert_int_eq(sdpa_tile_param_get_bounds(SDPA_BACKEND_OPENCL, gemm, &b), SDPA_OK);
        ck_assert_int_eq(b.lo, 0);
        ck_assert_int_eq(sdpa_tile_param_get_bounds(SDPA_BACKEND_CPU, gemm, &b),
                         SDPA_ERR_UNSUPPORTED);
    }
}
END_TEST

/* set/get by enum, names both ways, and struct_size versioning: a struct of
 * an older (smaller) header reads the parameters beyond its size as
 * SDPA_AUTO and refuses to set them. */
START_TEST(config_set_get_versioned)
{
    sdpa_tile_config t;
    sdpa_tile_config_init(&t);
    for (int i = 0; i < SDPA_TILE_PARAM_SLOTS; i++)
        ck_assert_int_eq(sdpa_tile_config_get(&t, (sdpa_tile_param)i), SDPA_AUTO);
    ck_assert_int_eq(sdpa_tile_config_set(&t, SDPA_TILE_K_TILE, 48), SDPA_OK);
    ck_assert_int_eq(sdpa_tile_config_get(&t, SDPA_TILE_K_TILE), 48);
    ck_assert_int_eq(sdpa_tile_config_get(&t, SDPA_TILE_Q_TILE), SDPA_AUTO);
    ck_assert_int_eq(sdpa_tile_config_set(&t, (sdpa_tile_param)SDPA_TILE_PARAM_SLOTS, 1),
                     SDPA_ERR_INVALID_ARG);
    ck_assert_int_eq(sdpa_tile_config_set(NULL, SDPA_TILE_K_TILE, 1), SDPA_ERR_NULL);
    ck_assert_int_eq(sdpa_tile_config_get(NULL, SDPA_TILE_K_TILE), SDPA_AUTO);

    /* an older header's struct: only the first seven values */
    t.value[SDPA_TILE_BACKEND_FIRST] = 5;
    t.struct_size = SDPA__TILE_CONFIG_MIN_SIZE;
    ck_assert_int_eq(sdpa_tile_config_get(&t, SDPA_TILE_BACKEND_FIRST), SDPA_AUTO);
    ck_assert_int_eq(sdpa_tile_config_set(&t, SDPA_TILE_BACKEND_FIRST, 1), SDPA_ERR_INVALID_ARG);
    ck_assert_int_eq(sdpa_tile_config_get(&t, SDPA_TILE_K_TILE), 48);

    sdpa_tile_param p;
    for (int i = 0; i <= SDPA_TILE_LANES; i++) {
        const char *name = sdpa_tile_param_name((sdpa_tile_param)i);
        ck_assert_ptr_nonnull(name);
        ck_assert_int_eq(sdpa_tile_param_from_name(name, &p), SDPA_OK);
        ck_assert_int_eq(p, i);
    }
    ck_assert_int_eq(sdpa_tile_param_from_name("no_such_knob", &p), SDPA_ERR_INVALID_ARG);
    ck_assert_ptr_null(sdpa_tile_param_name((sdpa_tile_param)(SDPA_TILE_LANES + 1)));
}
END_TEST

/* The cpu backend's tiles are multiples of 16: 20 used to be rounded up to
 * 32 silently; now it is refused, and 32 itself runs, also from a struct of
 * the first version's size (a smaller one is refused). */
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
    sdpa_tile_config_set(&tc, SDPA_TILE_Q_TILE, 20);
    ck_assert_int_eq(sdpa_plan_create(ctx, &p.desc, &po, &plan), SDPA_ERR_UNSUPPORTED);
    sdpa_error_info e;
    sdpa_context_last_error(ctx, &e);
    ck_assert_msg(strstr(e.message, "cpu: tile.q_tile 20 is out of range: must be SDPA_AUTO or "
                                    "16..256, a multiple of 16") != NULL,
                  "message '%s'", e.message);
    sdpa_tile_config_set(&tc, SDPA_TILE_Q_TILE, 32);
    sdpa_tile_config_set(&tc, SDPA_TILE_K_TILE, 48);
    sdpa_tile_config_set(&tc, SDPA_TILE_SPLIT_KV, 2);
    tparity_forward(ctx, ref, &c, &po);
    tc.struct_size = SDPA__TILE_CONFIG_MIN_SIZE;
    tparity_forward(ctx, ref, &c, &po);
    tc.struct_size = SDPA__TILE_CONFIG_MIN_SIZE - sizeof(int);
    ck_assert_int_eq(sdpa_plan_create(ctx, &p.desc, &po, &plan), SDPA_ERR_INVALID_ARG);
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
    tcase_add_test(t, bounds_agree_with_checker);
    tcase_add_test(t, bounds_per_backend);
    tcase_add_test(t, config_set_get_versioned);
    tcase_add_test(t, cpu_tiles_not_rounded);
    suite_add_tcase(s, t);
    return trun_suite(s);
}
