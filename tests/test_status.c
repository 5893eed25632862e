/*
 * test_status.c — the small free functions of the public API: the status
 * table (names, messages, pinned values, unknown values), version, dtype /
 * backend / statistic names, backend parsing, options _init defaults,
 * _destroy(NULL), buffers on the reference backend, and the context's last
 * error after a failed call (status, message naming the field, log sink).
 *
 * Runs in well under a second; uses only the reference backend.
 */
#include "testutil.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- status table ---------------------------------------------------------- */

typedef struct status_row { sdpa_status s; int value; const char *name, *msg; } status_row;
static const status_row k_rows[] = {
#define ROW(name, value, message) {name, value, #name, message},
    SDPA_STATUS_TABLE(ROW)
#undef ROW
};
#define N_ROWS ((int)(sizeof k_rows / sizeof k_rows[0]))

START_TEST(status_table_distinct)
{
    ck_assert_int_eq(N_ROWS, 19);
    ck_assert_int_eq(SDPA_OK, 0);
    for (int i = 0; i < N_ROWS; i++) {
        ck_assert_int_eq((int)k_rows[i].s, k_rows[i].value);
        ck_assert_str_eq(sdpa_status_name(k_rows[i].s), k_rows[i].name);
        ck_assert_str_eq(sdpa_status_string(k_rows[i].s), k_rows[i].msg);
        ck_assert_str_ne(sdpa_status_string(k_rows[i].s), "unknown status");
        ck_assert_int_gt((int)strlen(k_rows[i].msg), 0);
        for (int j = 0; j < i; j++) {
            ck_assert_int_ne(k_rows[i].value, k_rows[j].value);
            ck_assert_str_ne(k_rows[i].name, k_rows[j].name);
            ck_assert_str_ne(k_rows[i].msg, k_rows[j].msg);
        }
    }
}
END_TEST

START_TEST(status_pinned_values)
{
    /* Values are pinned forever: a renumbering breaks binaries. */
    ck_assert_int_eq(SDPA_ERR_NULL, 1);
    ck_assert_int_eq(SDPA_ERR_SHAPE, 3);
    ck_assert_int_eq(SDPA_ERR_EMPTY, 6);
    ck_assert_int_eq(SDPA_ERR_UNSUPPORTED, 7);
    ck_assert_int_eq(SDPA_ERR_MISMATCHED_CONTEXT, 13);
    ck_assert_int_eq(SDPA_ERR_INTERNAL, 18);
}
END_TEST

START_TEST(status_unknown)
{
    const int bad[] = {-1, 19, 100, 1 << 30};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        ck_assert_str_eq(sdpa_status_string((sdpa_status)bad[i]), "unknown status");
        ck_assert_str_eq(sdpa_status_name((sdpa_status)bad[i]), "SDPA_UNKNOWN");
    }
}
END_TEST

/* ---- version and names -------------------------------------------------- */

START_TEST(version_matches_macros)
{
    char want[64];
    ck_assert_uint_eq(sdpa_version(), SDPA_VERSION_NUMBER);
    ck_assert_uint_eq(sdpa_version(), SDPA_VERSION_MAJOR * 10000u +
                                          SDPA_VERSION_MINOR * 100u +
                                          SDPA_VERSION_PATCH);
    snprintf(want, sizeof want, "%d.%d.%d", SDPA_VERSION_MAJOR,
             SDPA_VERSION_MINOR, SDPA_VERSION_PATCH);
    ck_assert_ptr_nonnull(sdpa_version_string());
    ck_assert_str_eq(sdpa_version_string(), want);
}
END_TEST

START_TEST(dtype_names_and_sizes)
{
    ck_assert_uint_eq(sdpa_dtype_size(SDPA_DTYPE_F32), 4);
    ck_assert_uint_eq(sdpa_dtype_size(SDPA_DTYPE_F16), 2);
    ck_assert_uint_eq(sdpa_dtype_size(SDPA_DTYPE_BF16), 2);
    ck_assert_uint_eq(sdpa_dtype_size(SDPA_DTYPE_U8), 1);
    ck_assert_uint_eq(sdpa_dtype_size(SDPA_DTYPE_I32), 4);
    ck_assert_uint_eq(sdpa_dtype_size(SDPA_DTYPE_NONE), 0);
    ck_assert_uint_eq(sdpa_dtype_size((sdpa_dtype)99), 0);
    ck_assert_uint_eq(sdpa_dtype_size((sdpa_dtype)-3), 0);
    ck_assert_str_eq(sdpa_dtype_name(SDPA_DTYPE_F32), "f32");
    ck_assert_str_eq(sdpa_dtype_name(SDPA_DTYPE_F16), "f16");
    ck_assert_str_eq(sdpa_dtype_name(SDPA_DTYPE_BF16), "bf16");
    ck_assert_str_eq(sdpa_dtype_name(SDPA_DTYPE_U8), "u8");
    ck_assert_str_eq(sdpa_dtype_name(SDPA_DTYPE_I32), "i32");
    ck_assert_str_eq(sdpa_dtype_name(SDPA_DTYPE_NONE), "none");
    ck_assert_str_eq(sdpa_dtype_name((sdpa_dtype)99), "?");
}
END_TEST

START_TEST(backend_names_and_parse)
{
    static const struct { sdpa_backend_kind k; const char *name; } rows[] = {
        {SDPA_BACKEND_AUTO, "auto"},     {SDPA_BACKEND_REFERENCE, "reference"},
        {SDPA_BACKEND_CPU, "cpu"},       {SDPA_BACKEND_OPENCL, "opencl"},
        {SDPA_BACKEND_VULKAN, "vulkan"},
    };
    sdpa_backend_kind k;
    ck_assert_str_eq(sdpa_backend_name(SDPA_BACKEND_DEFAULT), "default");
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        ck_assert_str_eq(sdpa_backend_name(rows[i].k), rows[i].name);
        k = (sdpa_backend_kind)77;
        ck_assert_int_eq(sdpa_backend_parse(rows[i].name, &k), SDPA_OK);
        ck_assert_int_eq(k, rows[i].k);
    }
    /* case-insensitive */
    ck_assert_int_eq(sdpa_backend_parse("OpenCL", &k), SDPA_OK);
    ck_assert_int_eq(k, SDPA_BACKEND_OPENCL);
    ck_assert_int_eq(sdpa_backend_parse("REFERENCE", &k), SDPA_OK);
    ck_assert_int_eq(k, SDPA_BACKEND_REFERENCE);
    ck_assert_int_eq(sdpa_backend_parse("Vulkan", &k), SDPA_OK);
    ck_assert_int_eq(k, SDPA_BACKEND_VULKAN);
    /* unknown names, prefixes, trailing junk */
    ck_assert_int_eq(sdpa_backend_parse("cuda", &k), SDPA_ERR_INVALID_ARG);
    ck_assert_int_eq(sdpa_backend_parse("", &k), SDPA_ERR_INVALID_ARG);
    ck_assert_int_eq(sdpa_backend_parse("open", &k), SDPA_ERR_INVALID_ARG);
    ck_assert_int_eq(sdpa_backend_parse("cpux", &k), SDPA_ERR_INVALID_ARG);
    /* NULLs */
    ck_assert_int_eq(sdpa_backend_parse(NULL, &k), SDPA_ERR_NULL);
    ck_assert_int_eq(sdpa_backend_parse("cpu", NULL), SDPA_ERR_NULL);
}
END_TEST

START_TEST(stat_names)
{
    static const char *want[SDPA_STAT_COUNT] = {
        "logit_mean", "logit_std", "logit_min", "logit_max", "entropy_mean",
        "entropy_min", "pmax_mean", "saturated_frac", "jacobian_fro_mean",
        "sink_mass", "empty_rows"};
    ck_assert_int_eq(SDPA_STAT_COUNT, 11);
    for (int i = 0; i < SDPA_STAT_COUNT; i++) {
        ck_assert_ptr_nonnull(sdpa_stat_name(i));
        ck_assert_str_eq(sdpa_stat_name(i), want[i]);
    }
    ck_assert_ptr_null(sdpa_stat_name(-1));
    ck_assert_ptr_null(sdpa_stat_name(SDPA_STAT_COUNT));
    ck_assert_ptr_null(sdpa_stat_name(1000));
}
END_TEST

/* ---- options _init ---------------------------------------------------------- */

START_TEST(options_init_defaults)
{
    sdpa_context_options co;
    sdpa_plan_options po;
    sdpa_attention_desc d;
    sdpa_tile_config tc;
    const sdpa_tensor *opt[9];

    memset(&co, 0x5a, sizeof co);
    sdpa_context_options_init(&co);
    ck_assert_uint_eq(co.struct_size, sizeof co);
    ck_assert_int_eq(co.backend, SDPA_BACKEND_DEFAULT);
    ck_assert_ptr_null(co.device);
    ck_assert_int_eq(co.threads, SDPA_AUTO);
    ck_assert_int_eq(co.log_level, SDPA_AUTO);
    ck_assert_ptr_null((void *)co.log_fn);
    ck_assert_ptr_null(co.log_user);
    ck_assert_ptr_null(co.profile_dir);
    ck_assert_ptr_null(co.cache_dir);

    memset(&po, 0x5a, sizeof po);
    sdpa_plan_options_init(&po);
    ck_assert_uint_eq(po.struct_size, sizeof po);
    ck_assert_uint_eq(po.flags, 0);
    ck_assert_int_eq(po.workspace_limit, SDPA_AUTO);
    ck_assert_ptr_null(po.tile);

    memset(&d, 0x5a, sizeof d);
    sdpa_attention_desc_init(&d);
    ck_assert_uint_eq(d.struct_size, sizeof d);
    ck_assert(d.scale == SDPA_SCALE_DEFAULT);
    ck_assert_int_eq(d.diagonal, SDPA_DIAGONAL_TOP_LEFT);
    ck_assert_int_eq(d.diagonal_offset, 0);
    ck_assert_int_eq(d.window_left, -1);
    ck_assert_int_eq(d.window_right, -1);
    ck_assert(d.softcap == 0.0);
    ck_assert_int_eq(d.qk_norm, SDPA_QK_NORM_NONE);
    ck_assert(fabs(d.qk_norm_eps - 1e-6) < 1e-18);
    ck_assert(fabs(d.stats_saturation - 0.99) < 1e-15);
    opt[0] = &d.tensors.mask; opt[1] = &d.tensors.bias; opt[2] = &d.tensors.kv_len;
    opt[3] = &d.tensors.q_gain; opt[4] = &d.tensors.k_gain;
    opt[5] = &d.tensors.temperature; opt[6] = &d.tensors.lse;
    opt[7] = &d.tensors.stats; opt[8] = &d.tensors.q;
    for (int i = 0; i < 9; i++) {
        ck_assert_int_eq(opt[i]->dtype, SDPA_DTYPE_NONE);
        ck_assert_ptr_null(opt[i]->buf);
        ck_assert_ptr_null(opt[i]->host);
    }

    sdpa_attention_desc_set_causal(&d, SDPA_DIAGONAL_BOTTOM_RIGHT);
    ck_assert_int_eq(d.window_left, -1);
    ck_assert_int_eq(d.window_right, 0);
    ck_assert_int_eq(d.diagonal, SDPA_DIAGONAL_BOTTOM_RIGHT);

    memset(&tc, 0x5a, sizeof tc);
    sdpa_tile_config_init(&tc);
    ck_assert_uint_eq(tc.struct_size, sizeof tc);
    ck_assert_int_eq(TGET(&tc, Q_TILE), SDPA_AUTO);
    ck_assert_int_eq(TGET(&tc, K_TILE), SDPA_AUTO);
    ck_assert_int_eq(TGET(&tc, WG_SIZE), SDPA_AUTO);
    ck_assert_int_eq(TGET(&tc, VEC_WIDTH), SDPA_AUTO);
}
END_TEST

START_TEST(tensor_constructors)
{
    float x[2 * 3 * 4 * 5];
    sdpa_tensor t = sdpa_tensor_host(x, SDPA_DTYPE_F32, 2, 3, 4, 5);
    ck_assert_ptr_eq(t.host, x);
    ck_assert_ptr_null(t.buf);
    ck_assert_uint_eq(t.offset, 0);
    ck_assert_int_eq(t.dtype, SDPA_DTYPE_F32);
    ck_assert_int_eq(t.shape[0], 2); ck_assert_int_eq(t.shape[3], 5);
    ck_assert_int_eq(t.stride[0], 60); ck_assert_int_eq(t.stride[1], 20);
    ck_assert_int_eq(t.stride[2], 5); ck_assert_int_eq(t.stride[3], 1);
    t = sdpa_tensor_buffer(NULL, 7, SDPA_DTYPE_F16, 1, 2, 3, 4);
    ck_assert_ptr_null(t.host);
    ck_assert_uint_eq(t.offset, 7);
    ck_assert_int_eq(t.stride[0], 24); ck_assert_int_eq(t.stride[2], 4);
}
END_TEST

START_TEST(destroy_null_noops)
{
    sdpa_context_destroy(NULL);
    sdpa_plan_destroy(NULL);
    sdpa_buffer_destroy(NULL);
}
END_TEST

/* ---- contexts, buffers and errors --------------------------------------------- */

typedef struct log_capture { int n; int n_debug; char last[512]; } log_capture;
static void capture_log(void *user, sdpa_log_level level, const char *message)
{
    log_capture *c = user;
    c->n++;
    if (level == SDPA_LOG_DEBUG) c->n_debug++;
    ck_assert_ptr_nonnull(message);
    ck_assert_ptr_null(strchr(message, '\n'));
    snprintf(c->last, sizeof c->last, "%s", message);
}

static sdpa_context *ref_context(log_capture *cap, int level)
{
    sdpa_context_options o;
    sdpa_context *ctx = NULL;
    sdpa_context_options_init(&o);
    o.backend = SDPA_BACKEND_REFERENCE;
    o.log_level = level;
    o.log_fn = capture_log;
    o.log_user = cap;
    ck_assert_int_eq(sdpa_context_create(&o, &ctx), SDPA_OK);
    ck_assert_ptr_nonnull(ctx);
    return ctx;
}

START_TEST(context_basics)
{
    log_capture cap = {0};
    sdpa_context *ctx = NULL;
    sdpa_context_options o;
    int count = -1;

    ck_assert_int_eq(sdpa_backend_compiled(SDPA_BACKEND_REFERENCE), 1);
    ck_assert_int_eq(sdpa_device_count(SDPA_BACKEND_REFERENCE, &count), SDPA_OK);
    ck_assert_int_ge(count, 1);
    ck_assert_int_eq(sdpa_device_count(SDPA_BACKEND_REFERENCE, NULL), SDPA_ERR_NULL);

    ck_assert_int_eq(sdpa_context_create(NULL, NULL), SDPA_ERR_NULL);
    ctx = ref_context(&cap, SDPA_LOG_ERROR);
    ck_assert_int_eq(sdpa_context_backend(ctx), SDPA_BACKEND_REFERENCE);
    ck_assert_ptr_nonnull(sdpa_context_device_name(ctx));
    ck_assert_int_gt((int)strlen(sdpa_context_device_name(ctx)), 0);
    ck_assert_int_eq(sdpa_context_finish(ctx), SDPA_OK);
    ck_assert_int_eq(sdpa_context_finish(NULL), SDPA_ERR_NULL);
    sdpa_context_destroy(ctx);

    /* struct_size too small to hold the fields: refused, *out stays NULL. */
    sdpa_context_options_init(&o);
    o.backend = SDPA_BACKEND_REFERENCE;
    o.struct_size = 0;
    ctx = (sdpa_context *)&o;
    ck_assert_int_eq(sdpa_context_create(&o, &ctx), SDPA_ERR_INVALID_ARG);
    ck_assert_ptr_null(ctx);
    /* an unknown backend value */
    sdpa_context_options_init(&o);
    o.backend = (sdpa_backend_kind)42;
    ck_assert_int_eq(sdpa_context_create(&o, &ctx), SDPA_ERR_INVALID_ARG);
    ck_assert_ptr_null(ctx);
}
END_TEST

START_TEST(buffer_roundtrip)
{
    log_capture cap = {0};
    sdpa_context *ctx = ref_context(&cap, SDPA_LOG_ERROR);
    sdpa_buffer *b = NULL;
    float src[16], dst[16];
    for (int i = 0; i < 16; i++) { src[i] = (float)i * 1.5f - 3.0f; dst[i] = NAN; }

    ck_assert_int_eq(sdpa_buffer_create(ctx, 0, &b), SDPA_ERR_EMPTY);
    ck_assert_ptr_null(b);
    ck_assert_int_eq(sdpa_buffer_create(NULL, 64, &b), SDPA_ERR_NULL);
    ck_assert_int_eq(sdpa_buffer_create(ctx, 64, NULL), SDPA_ERR_NULL);
    ck_assert_int_eq(sdpa_buffer_create(ctx, sizeof src, &b), SDPA_OK);
    ck_assert_uint_eq(sdpa_buffer_size(b), sizeof src);
    ck_assert_int_eq(sdpa_buffer_write(b, 0, src, sizeof src), SDPA_OK);
    ck_assert_int_eq(sdpa_buffer_read(b, 0, dst, sizeof dst), SDPA_OK);
    ck_assert_mem_eq(src, dst, sizeof src);
    ck_assert_int_eq(sdpa_buffer_read(b, 8, dst, 8), SDPA_OK);
    ck_assert_mem_eq(&src[2], dst, 8);
    /* out of range, including an offset that wraps size_t */
    ck_assert_int_eq(sdpa_buffer_write(b, 4, src, sizeof src), SDPA_ERR_INVALID_ARG);
    ck_assert_int_eq(sdpa_buffer_read(b, sizeof src + 1, dst, 0), SDPA_ERR_INVALID_ARG);
    ck_assert_int_eq(sdpa_buffer_read(b, (size_t)-8, dst, 16), SDPA_ERR_INVALID_ARG);
    ck_assert_int_eq(sdpa_buffer_write(b, 0, NULL, 4), SDPA_ERR_NULL);
    ck_assert_int_eq(sdpa_buffer_read(NULL, 0, dst, 4), SDPA_ERR_NULL);
    sdpa_buffer_destroy(b);
    sdpa_context_destroy(ctx);
}
END_TEST

/* A valid small desc over host arrays (q 1x1x2x8, k 1x1x3x8, v 1x1x3x4). */
static float g_q[16], g_k[24], g_v[12], g_out[8];
static void small_desc(sdpa_attention_desc *d)
{
    for (int i = 0; i < 16; i++) g_q[i] = 0.1f * (float)i - 0.7f;
    for (int i = 0; i < 24; i++) g_k[i] = 0.05f * (float)i - 0.3f;
    for (int i = 0; i < 12; i++) g_v[i] = 0.2f * (float)i + 0.1f;
    sdpa_attention_desc_init(d);
    d->tensors.q = sdpa_tensor_host(g_q, SDPA_DTYPE_F32, 1, 1, 2, 8);
    d->tensors.k = sdpa_tensor_host(g_k, SDPA_DTYPE_F32, 1, 1, 3, 8);
    d->tensors.v = sdpa_tensor_host(g_v, SDPA_DTYPE_F32, 1, 1, 3, 4);
    d->tensors.out = sdpa_tensor_host(g_out, SDPA_DTYPE_F32, 1, 1, 2, 4);
}

START_TEST(last_error_after_failure)
{
    log_capture cap = {0};
    sdpa_context *ctx = ref_context(&cap, SDPA_LOG_DEBUG);
    sdpa_error_info info;
    sdpa_attention_desc d;
    sdpa_plan *plan = (sdpa_plan *)&d;

    ck_assert_int_eq(sdpa_context_last_error(NULL, &info), SDPA_ERR_NULL);
    ck_assert_int_eq(sdpa_context_last_error(ctx, NULL), SDPA_ERR_NULL);

    small_desc(&d);
    d.softcap = -1.0;
    ck_assert_int_eq(sdpa_plan_create(ctx, &d, NULL, &plan), SDPA_ERR_INVALID_ARG);
    ck_assert_ptr_null(plan);
    memset(&info, 0, sizeof info);
    ck_assert_int_eq(sdpa_context_last_error(ctx, &info), SDPA_OK);
    ck_assert_int_eq(info.status, SDPA_ERR_INVALID_ARG);
    ck_assert_ptr_nonnull(info.message);
    ck_assert_msg(strstr(info.message, "softcap") != NULL,
                  "message does not name the field: '%s'", info.message);
    ck_assert_int_eq(info.native_code, 0);
    ck_assert_ptr_nonnull(info.build_log);
    ck_assert_int_gt(cap.n_debug, 0); /* the failure site is in the DEBUG log */

    /* A second, different failure replaces the first. */
    d.softcap = 0.0;
    d.tensors.k.shape[3] = 7;
    ck_assert_int_eq(sdpa_plan_create(ctx, &d, NULL, &plan), SDPA_ERR_SHAPE);
    ck_assert_int_eq(sdpa_context_last_error(ctx, &info), SDPA_OK);
    ck_assert_int_eq(info.status, SDPA_ERR_SHAPE);
    ck_assert_msg(strstr(info.message, "k") != NULL, "'%s'", info.message);
    ck_assert_msg(strstr(info.message, "softcap") == NULL, "'%s'", info.message);
    sdpa_context_destroy(ctx);
}
END_TEST

START_TEST(log_level_from_env)
{
    /* With log_level AUTO the level comes from SDPA_LOG; code options win. */
    log_capture cap = {0};
    sdpa_context *ctx;
    sdpa_attention_desc d;
    sdpa_plan *plan = NULL;

    setenv("SDPA_LOG", "debug", 1);
    ctx = ref_context(&cap, SDPA_AUTO);
    small_desc(&d);
    d.window_left = -5;
    ck_assert_int_eq(sdpa_plan_create(ctx, &d, NULL, &plan), SDPA_ERR_INVALID_ARG);
    ck_assert_int_gt(cap.n_debug, 0);
    sdpa_context_destroy(ctx);

    memset(&cap, 0, sizeof cap);
    ctx = ref_context(&cap, SDPA_LOG_ERROR);
    ck_assert_int_eq(sdpa_plan_create(ctx, &d, NULL, &plan), SDPA_ERR_INVALID_ARG);
    ck_assert_int_eq(cap.n_debug, 0);
    sdpa_context_destroy(ctx);
    setenv("SDPA_LOG", "error", 1);
}
END_TEST

/* SDPA_BACKEND / SDPA_DEVICE apply when the options say DEFAULT / NULL;
 * options passed in code win; bad values are refused. */
START_TEST(environment_and_options)
{
    sdpa_context_options o;
    sdpa_context *ctx = NULL;
    log_capture cap = {0};

    setenv("SDPA_BACKEND", "reference", 1);
    sdpa_context_options_init(&o);
    o.log_level = SDPA_LOG_ERROR;
    o.log_fn = capture_log;
    o.log_user = &cap;
    ck_assert_int_eq(sdpa_context_create(&o, &ctx), SDPA_OK);
    ck_assert_int_eq(sdpa_context_backend(ctx), SDPA_BACKEND_REFERENCE);
    sdpa_context_destroy(ctx);

    setenv("SDPA_BACKEND", "no-such-backend", 1);
    ctx = (sdpa_context *)&o;
    ck_assert_int_eq(sdpa_context_create(&o, &ctx), SDPA_ERR_INVALID_ARG);
    ck_assert_ptr_null(ctx);
    ck_assert_msg(strstr(cap.last, "SDPA_BACKEND") != NULL, "log: '%s'", cap.last);
    o.backend = SDPA_BACKEND_REFERENCE; /* code wins over the environment */
    ck_assert_int_eq(sdpa_context_create(&o, &ctx), SDPA_OK);
    ck_assert_int_eq(sdpa_context_backend(ctx), SDPA_BACKEND_REFERENCE);
    sdpa_context_destroy(ctx);
    unsetenv("SDPA_BACKEND");

    o.device = "0";
    ck_assert_int_eq(sdpa_context_create(&o, &ctx), SDPA_OK);
    sdpa_context_destroy(ctx);
    o.device = "no device has this name";
    ck_assert_int_eq(sdpa_context_create(&o, &ctx), SDPA_ERR_NO_DEVICE);
    ck_assert_ptr_null(ctx);
    o.device = NULL;
    setenv("SDPA_DEVICE", "no device has this name", 1);
    ck_assert_int_eq(sdpa_context_create(&o, &ctx), SDPA_ERR_NO_DEVICE);
    o.device = "0"; /* code wins */
    ck_assert_int_eq(sdpa_context_create(&o, &ctx), SDPA_OK);
    sdpa_context_destroy(ctx);
    /* device indices are parsed whole: no wrap-around to device 0 (2^32 would
     * be 0 through atoi), no sign, no overflow; refused with a message */
    o.device = NULL;
    static const char *const bad_index[] = {"4294967296", "2147483648", "-1",
                                            "99999999999999999999999", "+4294967296"};
    for (size_t i = 0; i < sizeof bad_index / sizeof bad_index[0]; i++) {
        setenv("SDPA_DEVICE", bad_index[i], 1);
        cap.last[0] = '\0';
        ctx = (sdpa_context *)&o;
        ck_assert_msg(sdpa_context_create(&o, &ctx) == SDPA_ERR_INVALID_ARG, "SDPA_DEVICE=%s",
                      bad_index[i]);
        ck_assert_ptr_null(ctx);
        ck_assert_msg(strstr(cap.last, "SDPA_DEVICE") && strstr(cap.last, bad_index[i]) &&
                          strstr(cap.last, "not a device index"),
                      "log: '%s'", cap.last);
    }
    unsetenv("SDPA_DEVICE");
    o.device = "4294967296";
    ck_assert_int_eq(sdpa_context_create(&o, &ctx), SDPA_ERR_INVALID_ARG);
    ck_assert_msg(strstr(cap.last, "options.device='4294967296' is not a device index"),
                  "log: '%s'", cap.last);
    o.device = "1"; /* a valid index with no such device */
    ck_assert_int_eq(sdpa_context_create(&o, &ctx), SDPA_ERR_NO_DEVICE);
    o.device = NULL;

    sdpa_context_options_init(&o);
    o.backend = SDPA_BACKEND_REFERENCE;
    o.log_fn = capture_log;
    o.log_user = &cap;
    o.threads = 0;
    ck_assert_int_eq(sdpa_context_create(&o, &ctx), SDPA_ERR_INVALID_ARG);
    o.threads = 1;
    o.log_level = 17;
    ck_assert_int_eq(sdpa_context_create(&o, &ctx), SDPA_ERR_INVALID_ARG);
    ck_assert_ptr_null(ctx);
}
END_TEST

/* Under AUTO, a device selector that matches no OpenCL or Vulkan device says
 * so in one WARN line naming it (from the options or SDPA_DEVICE), then the
 * CPU backend runs; no selector and no GPU stay quiet at WARN. */
typedef struct level_capture { int warns; char warn[512]; } level_capture;
static void capture_warns(void *user, sdpa_log_level level, const char *message)
{
    level_capture *c = user;
    if (level != SDPA_LOG_WARN) return;
    c->warns++;
    snprintf(c->warn, sizeof c->warn, "%s", message);
}

static void auto_with_selector(const char *sel, level_capture *cap)
{
    sdpa_context_options o;
    sdpa_context *ctx = NULL;
    sdpa_context_options_init(&o);
    o.backend = SDPA_BACKEND_AUTO;
    o.device = sel;
    o.log_level = SDPA_LOG_WARN;
    o.log_fn = capture_warns;
    o.log_user = cap;
    memset(cap, 0, sizeof *cap);
    ck_assert_int_eq(sdpa_context_create(&o, &ctx), SDPA_OK);
    sdpa_backend_kind want = sdpa_backend_compiled(SDPA_BACKEND_CPU) ? SDPA_BACKEND_CPU
                                                                     : SDPA_BACKEND_REFERENCE;
    ck_assert_int_eq(sdpa_context_backend(ctx), want);
    sdpa_context_destroy(ctx);
}

START_TEST(auto_selector_matching_nothing_warns)
{
    level_capture cap;
    const char *sel = "no device has this name";
    auto_with_selector(sel, &cap);
    ck_assert_int_eq(cap.warns, 1);
    ck_assert_msg(strstr(cap.warn, sel) != NULL, "warn: '%s'", cap.warn);
    setenv("SDPA_DEVICE", sel, 1);
    auto_with_selector(NULL, &cap);
    unsetenv("SDPA_DEVICE");
    ck_assert_int_eq(cap.warns, 1);
    ck_assert_msg(strstr(cap.warn, sel) != NULL, "warn: '%s'", cap.warn);
}
END_TEST

START_TEST(plan_introspection)
{
    log_capture cap = {0};
    sdpa_context *ctx = ref_context(&cap, SDPA_LOG_ERROR);
    sdpa_attention_desc d;
    sdpa_plan *plan = NULL;
    sdpa_plan_info info = {.struct_size = sizeof info};
    small_desc(&d);
    ck_assert_int_eq(sdpa_plan_create(ctx, &d, NULL, &plan), SDPA_OK);
    ck_assert_int_eq(sdpa_plan_get_info(plan, &info), SDPA_OK);
    ck_assert_uint_eq(info.struct_size, sizeof info);
    ck_assert_int_eq(info.backend, SDPA_BACKEND_REFERENCE);
    ck_assert_str_eq(info.kernel, "reference");
    ck_assert_int_eq(info.compute_dtype, SDPA_DTYPE_F32);
    ck_assert_uint_eq(info.workspace_bytes, sdpa_plan_workspace_size(plan));
    ck_assert_int_eq(sdpa_plan_get_info(NULL, &info), SDPA_ERR_NULL);
    ck_assert_int_eq(sdpa_plan_get_info(plan, NULL), SDPA_ERR_NULL);
    ck_assert_uint_eq(sdpa_plan_workspace_size(NULL), 0);
    ck_assert_int_eq(sdpa_plan_forward(plan, &d.tensors), SDPA_OK);
    for (int i = 0; i < 8; i++) ck_assert(isfinite(g_out[i]));
    sdpa_plan_destroy(plan);
    sdpa_context_destroy(ctx);
}
END_TEST


/* Every public call that has a context (directly or through a plan or
 * buffer) and fails on a NULL argument records its own error: the status is
 * SDPA_ERR_NULL and the message names the function and the argument, not an
 * older failure. Each call is preceded by a different failure (an empty
 * buffer) whose message must be replaced. */
static void stale_error(sdpa_context *ctx)
{
    sdpa_buffer *b = NULL;
    ck_assert_int_eq(sdpa_buffer_create(ctx, 0, &b), SDPA_ERR_EMPTY);
}
static void expect_null_arg(sdpa_context *ctx, sdpa_status got, const char *fn,
                            const char *arg, int line)
{
    char want[96];
    snprintf(want, sizeof want, "%s: %s is NULL", fn, arg);
    ck_assert_msg(got == SDPA_ERR_NULL, "line %d: %s returned %s", line, want,
                  sdpa_status_name(got));
    sdpa_error_info info;
    ck_assert_int_eq(sdpa_context_last_error(ctx, &info), SDPA_OK);
    ck_assert_msg(info.status == SDPA_ERR_NULL, "line %d (%s): last_error status %s", line, want,
                  sdpa_status_name(info.status));
    ck_assert_msg(strstr(info.message, want) != NULL, "line %d: message '%s' lacks '%s'", line,
                  info.message, want);
}
#define NULL_ARG(call, fn, arg)                                         \
    do {                                                                \
        stale_error(ctx);                                               \
        sdpa_status st_ = (call);                                       \
        expect_null_arg(ctx, st_, fn, arg, __LINE__);                   \
    } while (0)

START_TEST(null_arguments_set_messages)
{
    log_capture cap = {0};
    sdpa_context *ctx = ref_context(&cap, SDPA_LOG_ERROR);
    sdpa_attention_desc d;
    small_desc(&d);
    sdpa_plan_options po;
    sdpa_plan_options_init(&po);
    po.flags = SDPA_PLAN_BACKWARD;
    float lse[8];
    d.tensors.lse = sdpa_tensor_host(lse, SDPA_DTYPE_F32, 1, 1, 2, 1);
    sdpa_plan *plan = NULL;
    ck_assert_int_eq(sdpa_plan_create(ctx, &d, &po, &plan), SDPA_OK);
    sdpa_buffer *buf = NULL;
    ck_assert_int_eq(sdpa_buffer_create(ctx, 64, &buf), SDPA_OK);
    sdpa_backward_tensors g;
    memset(&g, 0, sizeof g);
    sdpa_tensor t1 = d.tensors.out, l1 = d.tensors.lse;

    NULL_ARG(sdpa_plan_create(ctx, &d, NULL, NULL), "sdpa_plan_create", "out");
    sdpa_plan *none = NULL;
    NULL_ARG(sdpa_plan_create(ctx, NULL, NULL, &none), "sdpa_plan_create", "desc");
    ck_assert_ptr_null(none);
    NULL_ARG(sdpa_plan_forward(plan, NULL), "sdpa_plan_forward", "t");
    NULL_ARG(sdpa_plan_backward(plan, NULL, &g), "sdpa_plan_backward", "fwd");
    NULL_ARG(sdpa_plan_backward(plan, &d.tensors, NULL), "sdpa_plan_backward", "bwd");
    NULL_ARG(sdpa_plan_get_info(plan, NULL), "sdpa_plan_get_info", "info");
    NULL_ARG(sdpa_attention_forward(ctx, NULL), "sdpa_attention_forward", "desc");
    NULL_ARG(sdpa_buffer_create(ctx, 16, NULL), "sdpa_buffer_create", "out");
    NULL_ARG(sdpa_buffer_write(buf, 0, NULL, 4), "sdpa_buffer_write", "src");
    NULL_ARG(sdpa_buffer_read(buf, 0, NULL, 4), "sdpa_buffer_read", "dst");
    NULL_ARG(sdpa_merge(ctx, 1, NULL, &l1, &t1, &l1), "sdpa_merge", "outs");
    NULL_ARG(sdpa_merge(ctx, 1, &t1, NULL, &t1, &l1), "sdpa_merge", "lses");
    NULL_ARG(sdpa_merge(ctx, 1, &t1, &l1, NULL, &l1), "sdpa_merge", "out");
    NULL_ARG(sdpa_merge(ctx, 1, &t1, &l1, &t1, NULL), "sdpa_merge", "lse");
    NULL_ARG(sdpa_context_last_error(ctx, NULL), "sdpa_context_last_error", "info");
    NULL_ARG(sdpa_context_peak(ctx, 0, NULL), "sdpa_context_peak", "info");
    sdpa_tune_result res = {.struct_size = sizeof res};
    NULL_ARG(sdpa_tune(ctx, NULL, NULL, &res), "sdpa_tune", "desc");
    NULL_ARG(sdpa_tune(ctx, &d, NULL, NULL), "sdpa_tune", "result");
    /* zero-byte copies need no pointer */
    ck_assert_int_eq(sdpa_buffer_write(buf, 0, NULL, 0), SDPA_OK);
    ck_assert_int_eq(sdpa_buffer_read(buf, 0, NULL, 0), SDPA_OK);
    sdpa_buffer_destroy(buf);
    sdpa_plan_destroy(plan);
    sdpa_context_destroy(ctx);
}
END_TEST

static Suite *status_suite(void)
{
    Suite *s = suite_create("status");
    TCase *t = tcase_create("status");
    tcase_add_test(t, status_table_distinct);
    tcase_add_test(t, status_pinned_values);
    tcase_add_test(t, status_unknown);
    tcase_add_test(t, version_matches_macros);
    tcase_add_test(t, dtype_names_and_sizes);
    tcase_add_test(t, backend_names_and_parse);
    tcase_add_test(t, stat_names);
    tcase_add_test(t, options_init_defaults);
    tcase_add_test(t, tensor_constructors);
    tcase_add_test(t, destroy_null_noops);
    tcase_add_test(t, context_basics);
    tcase_add_test(t, buffer_roundtrip);
    tcase_add_test(t, last_error_after_failure);
    tcase_add_test(t, log_level_from_env);
    tcase_add_test(t, environment_and_options);
    tcase_add_test(t, auto_selector_matching_nothing_warns);
    tcase_add_test(t, plan_introspection);
    tcase_add_test(t, null_arguments_set_messages);
    suite_add_tcase(s, t);
    return s;
}

int main(void) { return trun_suite(status_suite()); }
