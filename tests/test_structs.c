/*
 * test_structs.c — versioned structs (sdpa.h, "Versioned structs"): every
 * public struct with a struct_size has a v1 size; a caller's struct of exactly
 * v1 bytes works, one of a newer, larger header works and its tail is left
 * alone, one of an older, smaller header (below v1) is SDPA_ERR_INVALID_ARG
 * with a message and nothing is written. Outputs live in a buffer followed by
 * guard bytes that must stay untouched. The internal copy helpers
 * (sdpa__struct_in / _out) are checked on a made-up v2 struct: a v1 caller's
 * missing fields take their defaults, a v2 output is cut at the caller's size.
 * Runs on the cpu backend only (no device), well under a second.
 */
#include "testutil.h"
#include "internal.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#define GUARD 0xA5
#define ROOM 8192

/* A caller's struct of `size` bytes at the start of a guarded buffer: the
 * struct's bytes are `fill`, everything after them GUARD. */
typedef struct caller_buf {
    unsigned char b[ROOM];
    size_t size;
} caller_buf;

static void *caller(caller_buf *c, size_t size, unsigned char fill)
{
    ck_assert_uint_le(size + 64, ROOM);
    memset(c->b, GUARD, sizeof c->b);
    memset(c->b, fill, size);
    memcpy(c->b, &size, sizeof size); /* struct_size */
    c->size = size;
    return c->b;
}

/* Every byte from `from` on is still GUARD. */
static void guard_intact(const caller_buf *c, size_t from, const char *what)
{
    for (size_t i = from; i < ROOM; i++)
        ck_assert_msg(c->b[i] == GUARD, "%s: byte %zu past the caller's %zu was written", what,
                      i, from);
}

/* Nothing at all was written: struct_size as set, the rest `fill` then GUARD. */
static void untouched(const caller_buf *c, unsigned char fill, const char *what)
{
    size_t got;
    memcpy(&got, c->b, sizeof got);
    ck_assert_msg(got == c->size, "%s: struct_size rewritten (%zu)", what, got);
    for (size_t i = sizeof got; i < c->size; i++)
        ck_assert_msg(c->b[i] == fill, "%s: byte %zu written by a refused call", what, i);
    guard_intact(c, c->size, what);
}

static size_t struct_size_of(const caller_buf *c)
{
    size_t n;
    memcpy(&n, c->b, sizeof n);
    return n;
}

static sdpa_context *cpu(void)
{
    sdpa_status st;
    sdpa_context *ctx = tcontext(SDPA_BACKEND_CPU, &st);
    ck_assert_msg(ctx, "cpu context: %s", sdpa_status_name(st));
    return ctx;
}

static const char *last_message(sdpa_context *ctx)
{
    sdpa_error_info ei;
    memset(&ei, 0, sizeof ei);
    sdpa_context_last_error(ctx, &ei);
    return ei.message ? ei.message : "";
}

/* The v1 sizes are documented and today's structs are v1. */
START_TEST(v1_sizes_are_todays)
{
    ck_assert_uint_eq(SDPA_CONTEXT_OPTIONS_SIZE_V1,
                      offsetof(sdpa_context_options, cache_dir) + sizeof(const char *));
    ck_assert_uint_le(SDPA_CONTEXT_OPTIONS_SIZE_V1, sizeof(sdpa_context_options));
    ck_assert_uint_le(SDPA_ATTENTION_DESC_SIZE_V1, sizeof(sdpa_attention_desc));
    ck_assert_uint_le(SDPA_PLAN_OPTIONS_SIZE_V1, sizeof(sdpa_plan_options));
    ck_assert_uint_le(SDPA_TILE_CONFIG_SIZE_V1, sizeof(sdpa_tile_config));
    ck_assert_uint_le(SDPA_DEVICE_INFO_SIZE_V1, sizeof(sdpa_device_info));
    ck_assert_uint_le(SDPA_PLAN_INFO_SIZE_V1, sizeof(sdpa_plan_info));
    ck_assert_uint_le(SDPA_TUNE_OPTIONS_SIZE_V1, sizeof(sdpa_tune_options));
    ck_assert_uint_le(SDPA_TUNE_RESULT_SIZE_V1, sizeof(sdpa_tune_result));
    ck_assert_uint_le(SDPA_SHIPPED_PROFILES_INFO_SIZE_V1, sizeof(sdpa_shipped_profiles_info));
    ck_assert_uint_le(SDPA_PEAK_INFO_SIZE_V1, sizeof(sdpa_peak_info));
    ck_assert_uint_le(SDPA_BANDWIDTH_INFO_SIZE_V1, sizeof(sdpa_bandwidth_info));
    /* nothing but tail padding lies past v1 today */
    ck_assert_uint_gt(SDPA_DEVICE_INFO_SIZE_V1 + 8, sizeof(sdpa_device_info));
    ck_assert_uint_gt(SDPA_PLAN_INFO_SIZE_V1 + 8, sizeof(sdpa_plan_info));
}
END_TEST

/* ---- inputs ------------------------------------------------------------------ */

/* A desc whose tensors describe a small valid problem. */
static float g_data[4 * 8 * 16];
static void small_desc(sdpa_attention_desc *d)
{
    sdpa_attention_desc_init(d);
    d->tensors.q = sdpa_tensor_host(g_data, SDPA_DTYPE_F32, 1, 1, 8, 16);
    d->tensors.k = sdpa_tensor_host(g_data + 128, SDPA_DTYPE_F32, 1, 1, 8, 16);
    d->tensors.v = sdpa_tensor_host(g_data + 256, SDPA_DTYPE_F32, 1, 1, 8, 16);
    d->tensors.out = sdpa_tensor_host(g_data + 384, SDPA_DTYPE_F32, 1, 1, 8, 16);
}

START_TEST(input_structs_v1_and_smaller)
{
    for (int i = 0; i < 4 * 8 * 16; i++) g_data[i] = 0.01f * (float)(i % 17 + 1);
    /* context options: v1 accepted, smaller refused (no context for a message) */
    sdpa_context_options co;
    sdpa_context_options_init(&co);
    co.backend = SDPA_BACKEND_CPU;
    co.log_level = SDPA_LOG_ERROR;
    co.struct_size = SDPA_CONTEXT_OPTIONS_SIZE_V1;
    sdpa_context *ctx = NULL;
    ck_assert_int_eq(sdpa_context_create(&co, &ctx), SDPA_OK);
    sdpa_context_destroy(ctx);
    co.struct_size = SDPA_CONTEXT_OPTIONS_SIZE_V1 - 1;
    ctx = (sdpa_context *)&co;
    ck_assert_int_eq(sdpa_context_create(&co, &ctx), SDPA_ERR_INVALID_ARG);
    ck_assert_ptr_null(ctx);

    ctx = cpu();
    sdpa_attention_desc d;
    small_desc(&d);
    sdpa_plan_options po;
    sdpa_plan_options_init(&po);
    sdpa_tile_config tc;
    sdpa_tile_config_init(&tc);
    po.tile = &tc;
    d.struct_size = SDPA_ATTENTION_DESC_SIZE_V1;
    po.struct_size = SDPA_PLAN_OPTIONS_SIZE_V1;
    tc.struct_size = SDPA_TILE_CONFIG_SIZE_V1;
    sdpa_plan *plan = NULL;
    ck_assert_int_eq(sdpa_plan_create(ctx, &d, &po, &plan), SDPA_OK);
    ck_assert_int_eq(sdpa_plan_forward(plan, &d.tensors), SDPA_OK);
    sdpa_plan_destroy(plan);
    ck_assert_int_eq(sdpa_attention_forward(ctx, &d), SDPA_OK);

    /* each one below v1: refused with a message naming it */
    struct { size_t *field; size_t v1; const char *name; } in[] = {
        {&d.struct_size, SDPA_ATTENTION_DESC_SIZE_V1, "desc.struct_size"},
        {&po.struct_size, SDPA_PLAN_OPTIONS_SIZE_V1, "plan options.struct_size"},
        {&tc.struct_size, SDPA_TILE_CONFIG_SIZE_V1, "tile config.struct_size"},
    };
    for (size_t i = 0; i < sizeof in / sizeof in[0]; i++) {
        *in[i].field = in[i].v1 - 8;
        plan = (sdpa_plan *)&d;
        ck_assert_int_eq(sdpa_plan_create(ctx, &d, &po, &plan), SDPA_ERR_INVALID_ARG);
        ck_assert_ptr_null(plan);
        const char *m = last_message(ctx);
        ck_assert_msg(strstr(m, in[i].name) && strstr(m, "below its v1 size"), "%s", m);
        *in[i].field = in[i].v1;
    }
    /* a newer caller's larger structs are accepted */
    d.struct_size = sizeof d + 64;
    ck_assert_int_eq(sdpa_attention_forward(ctx, &d), SDPA_OK);
    sdpa_context_destroy(ctx);
}
END_TEST

/* ---- outputs ------------------------------------------------------------------- */

START_TEST(output_structs_cut_at_the_callers_size)
{
    sdpa_context *ctx = cpu();
    sdpa_attention_desc d;
    small_desc(&d);
    sdpa_plan *plan = NULL;
    ck_assert_int_eq(sdpa_plan_create(ctx, &d, NULL, &plan), SDPA_OK);
    caller_buf c;

    /* plan info */
    sdpa_plan_info *pi = caller(&c, SDPA_PLAN_INFO_SIZE_V1, 0);
    ck_assert_int_eq(sdpa_plan_get_info(plan, pi), SDPA_OK);
    ck_assert_uint_eq(struct_size_of(&c), SDPA_PLAN_INFO_SIZE_V1);
    ck_assert_int_eq(pi->backend, SDPA_BACKEND_CPU);
    guard_intact(&c, SDPA_PLAN_INFO_SIZE_V1, "plan info v1");
    caller(&c, SDPA_PLAN_INFO_SIZE_V1 - 8, 0x3C); /* an older, smaller caller */
    ck_assert_int_eq(sdpa_plan_get_info(plan, (sdpa_plan_info *)c.b), SDPA_ERR_INVALID_ARG);
    ck_assert_ptr_nonnull(strstr(last_message(ctx), "plan info.struct_size"));
    untouched(&c, 0x3C, "plan info below v1");
    pi = caller(&c, sizeof *pi + 40, 0); /* a newer, larger caller */
    ck_assert_int_eq(sdpa_plan_get_info(plan, pi), SDPA_OK);
    ck_assert_uint_eq(struct_size_of(&c), sizeof *pi);
    for (size_t i = sizeof *pi; i < sizeof *pi + 40; i++) ck_assert_uint_eq(c.b[i], 0);
    guard_intact(&c, sizeof *pi + 40, "plan info newer");
    sdpa_plan_destroy(plan);

    /* device info (no context: only the status) */
    sdpa_device_info *di = caller(&c, SDPA_DEVICE_INFO_SIZE_V1, 0);
    ck_assert_int_eq(sdpa_device_get_info(SDPA_BACKEND_CPU, 0, di), SDPA_OK);
    ck_assert_uint_eq(struct_size_of(&c), SDPA_DEVICE_INFO_SIZE_V1);
    ck_assert(di->name[0]);
    guard_intact(&c, SDPA_DEVICE_INFO_SIZE_V1, "device info v1");
    caller(&c, offsetof(sdpa_device_info, details), 0x3C);
    ck_assert_int_eq(sdpa_device_get_info(SDPA_BACKEND_CPU, 0, (sdpa_device_info *)c.b),
                     SDPA_ERR_INVALID_ARG);
    untouched(&c, 0x3C, "device info below v1");

    /* peak info */
    sdpa_peak_info *pk = caller(&c, SDPA_PEAK_INFO_SIZE_V1 - 4, 0x3C);
    ck_assert_int_eq(sdpa_context_peak(ctx, 0, pk), SDPA_ERR_INVALID_ARG);
    ck_assert_ptr_nonnull(strstr(last_message(ctx), "peak info.struct_size"));
    untouched(&c, 0x3C, "peak info below v1");

    /* bandwidth info */
    caller(&c, SDPA_BANDWIDTH_INFO_SIZE_V1 - 4, 0x3C);
    ck_assert_int_eq(sdpa_context_bandwidth(ctx, 0, (sdpa_bandwidth_info *)c.b),
                     SDPA_ERR_INVALID_ARG);
    ck_assert_ptr_nonnull(strstr(last_message(ctx), "bandwidth info.struct_size"));
    untouched(&c, 0x3C, "bandwidth info below v1");

    /* shipped profiles info */
    caller(&c, SDPA_SHIPPED_PROFILES_INFO_SIZE_V1 - 4, 0x3C);
    ck_assert_int_eq(sdpa_shipped_profiles_get_info((sdpa_shipped_profiles_info *)c.b),
                     SDPA_ERR_INVALID_ARG);
    untouched(&c, 0x3C, "shipped profiles info below v1");
    sdpa_shipped_profiles_info *si = caller(&c, SDPA_SHIPPED_PROFILES_INFO_SIZE_V1, 0);
    ck_assert_int_eq(sdpa_shipped_profiles_get_info(si), SDPA_OK);
    ck_assert(si->dir[0]);
    guard_intact(&c, SDPA_SHIPPED_PROFILES_INFO_SIZE_V1, "shipped profiles info v1");

    /* tune result and options */
    sdpa_tune_options to;
    sdpa_tune_options_init(&to);
    to.dry_run = 1;
    to.struct_size = SDPA_TUNE_OPTIONS_SIZE_V1;
    sdpa_tune_result *tr = caller(&c, SDPA_TUNE_RESULT_SIZE_V1, 0);
    ck_assert_int_eq(sdpa_tune(ctx, &d, &to, tr), SDPA_OK);
    ck_assert_int_ge(tr->candidates, 1);
    guard_intact(&c, SDPA_TUNE_RESULT_SIZE_V1, "tune result v1");
    caller(&c, SDPA_TUNE_RESULT_SIZE_V1 - 4, 0x3C);
    ck_assert_int_eq(sdpa_tune(ctx, &d, &to, (sdpa_tune_result *)c.b), SDPA_ERR_INVALID_ARG);
    untouched(&c, 0x3C, "tune result below v1");
    to.struct_size = SDPA_TUNE_OPTIONS_SIZE_V1 - 8;
    tr = caller(&c, sizeof *tr, 0x3C);
    ck_assert_int_eq(sdpa_tune(ctx, &d, &to, tr), SDPA_ERR_INVALID_ARG);
    ck_assert_ptr_nonnull(strstr(last_message(ctx), "tune options.struct_size"));
    untouched(&c, 0x3C, "tune result with old options");
    sdpa_context_destroy(ctx);
}
END_TEST

/* ---- the copy helpers on a made-up second version ------------------------------ */

typedef struct v2_struct {
    size_t struct_size;
    int a;      /* v1 */
    double b;   /* v2 */
    int c;      /* v2 */
} v2_struct;
#define V2_SIZE_V1 SDPA_SIZE_THROUGH(v2_struct, a)

START_TEST(helpers_default_missing_fields_and_cut_outputs)
{
    /* an input from a v1 caller: a taken, b and c keep the library's defaults */
    caller_buf c;
    v2_struct *in = caller(&c, V2_SIZE_V1, 0x3C);
    in->a = 7;
    v2_struct full = {sizeof full, 1, 2.5, 3};
    sdpa__struct_in(&full, sizeof full, in);
    ck_assert_uint_eq(full.struct_size, sizeof full);
    ck_assert_int_eq(full.a, 7);
    ck_assert(full.b == 2.5);
    ck_assert_int_eq(full.c, 3);
    /* an output to a v1 caller: only its bytes written, struct_size = them */
    v2_struct *out = caller(&c, V2_SIZE_V1, 0x3C);
    v2_struct filled = {sizeof filled, 11, 12.5, 13};
    sdpa__struct_out(out, &filled, sizeof filled);
    ck_assert_uint_eq(struct_size_of(&c), V2_SIZE_V1);
    ck_assert_int_eq(out->a, 11);
    guard_intact(&c, V2_SIZE_V1, "v2 output to a v1 caller");
}
END_TEST

int main(void)
{
    Suite *s = suite_create("structs");
    TCase *tc = tcase_create("structs");
    tcase_add_test(tc, v1_sizes_are_todays);
    tcase_add_test(tc, input_structs_v1_and_smaller);
    tcase_add_test(tc, output_structs_cut_at_the_callers_size);
    tcase_add_test(tc, helpers_default_missing_fields_and_cut_outputs);
    suite_add_tcase(s, tc);
    return trun_suite(s);
}
