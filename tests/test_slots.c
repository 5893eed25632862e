/*
 * test_slots.c — the slot table (src/core/slots.h) through the experimental
 * public slot API: every slot's name, pointer, offset, role, dtype, axes,
 * broadcast and pairing against the named struct field and an independent
 * list written out here; the case-file keys of tools/common/case.h; and every
 * validation rule the table drives, exercised per slot on the reference
 * backend: a wrong dtype is SDPA_ERR_DTYPE, a wrong extent on each axis
 * SDPA_ERR_SHAPE, extent 1 is accepted exactly on the broadcast axes, a
 * required slot may not be absent, an optional gradient needs its forward
 * slot, and each output may not alias an input — each message naming the
 * slot. Also the attribute table: defaults and one refused value per rule.
 *
 * Run time: about a second (tiny shapes, reference backend).
 */
#include "testutil.h"

#include "case.h"

#include <float.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { B = 2, HQ = 4, HKV = 2, SQ = 3, SKV = 5, D = 4, DV = 6 };

/* The expected table, written out independently of src/core/slots.h. */
typedef struct want_slot {
    const char *name;
    size_t offset;
    int output, saved, required;
    sdpa_dtype dtype; /* NONE = q's */
    const char *axes;
    int broadcast;
    const char *pair; /* the other group's slot, or NULL */
} want_slot;

#define F(f) #f, offsetof(sdpa_forward_tensors, f)
static const want_slot k_fwd[] = {
    {F(q), 0, 0, 1, SDPA_DTYPE_NONE, "BQsD", 0, "dq"},
    {F(k), 0, 0, 1, SDPA_DTYPE_NONE, "BKkD", 0, "dk"},
    {F(v), 0, 0, 1, SDPA_DTYPE_NONE, "BKkV", 0, "dv"},
    {F(out), 1, 1, 1, SDPA_DTYPE_NONE, "BQsV", 0, "dout"},
    {F(mask), 0, 0, 0, SDPA_DTYPE_U8, "BQsk", 3, NULL},
    {F(bias), 0, 0, 0, SDPA_DTYPE_F32, "BQsk", 3, NULL},
    {F(kv_len), 0, 0, 0, SDPA_DTYPE_I32, "B111", 0, NULL},
    {F(q_gain), 0, 0, 0, SDPA_DTYPE_F32, "111D", 0, "dq_gain"},
    {F(k_gain), 0, 0, 0, SDPA_DTYPE_F32, "111D", 0, "dk_gain"},
    {F(temperature), 0, 0, 0, SDPA_DTYPE_F32, "1Q11", 0, "dtemperature"},
    {F(lse), 1, 1, 0, SDPA_DTYPE_F32, "BQs1", 0, NULL},
    {F(stats), 1, 0, 0, SDPA_DTYPE_F32, "BQ1C", 0, NULL},
    {F(alibi_slopes), 0, 0, 0, SDPA_DTYPE_F32, "1Q11", 0, NULL},
    {F(sinks), 0, 0, 0, SDPA_DTYPE_F32, "1Q11", 0, "dsinks"},
    {F(k_pages), 0, 0, 0, SDPA_DTYPE_NONE, "PKGD", 0, NULL},
    {F(v_pages), 0, 0, 0, SDPA_DTYPE_NONE, "PKGV", 0, NULL},
    {F(block_table), 0, 0, 0, SDPA_DTYPE_I32, "B11T", 0, NULL},
};
#undef F
#define G(f) #f, offsetof(sdpa_backward_tensors, f)
static const want_slot k_bwd[] = {
    {G(dout), 0, 0, 1, SDPA_DTYPE_NONE, "BQsV", 0, "out"},
    {G(dq), 1, 0, 1, SDPA_DTYPE_NONE, "BQsD", 0, "q"},
    {G(dk), 1, 0, 1, SDPA_DTYPE_NONE, "BKkD", 0, "k"},
    {G(dv), 1, 0, 1, SDPA_DTYPE_NONE, "BKkV", 0, "v"},
    {G(dq_gain), 1, 0, 0, SDPA_DTYPE_F32, "111D", 0, "q_gain"},
    {G(dk_gain), 1, 0, 0, SDPA_DTYPE_F32, "111D", 0, "k_gain"},
    {G(dtemperature), 1, 0, 0, SDPA_DTYPE_F32, "1Q11", 0, "temperature"},
    {G(dsinks), 1, 0, 0, SDPA_DTYPE_F32, "1Q11", 0, "sinks"},
};
#undef G
#define NF ((int)(sizeof k_fwd / sizeof k_fwd[0]))
#define NB ((int)(sizeof k_bwd / sizeof k_bwd[0]))

static void check_group(sdpa_slot_group group, const want_slot *want, int n, void *obj,
                        sdpa_slot_group other)
{
    ck_assert_int_eq(sdpa_slot_count(group), n);
    for (int i = 0; i < n; i++) {
        const want_slot *w = &want[i];
        sdpa_slot_info info;
        memset(&info, 0xA5, sizeof info);
        ck_assert_int_eq(sdpa_slot_get_info(group, i, &info), SDPA_OK);
        ck_assert_uint_eq(info.struct_size, sizeof info);
        ck_assert_msg(strcmp(info.name, w->name) == 0, "slot %d is '%s', struct field '%s'", i,
                      info.name, w->name);
        ck_assert_uint_eq(info.offset, w->offset);
        sdpa_tensor *p = group == SDPA_SLOT_FORWARD
                             ? sdpa_forward_tensors_get_slot(obj, i)
                             : sdpa_backward_tensors_get_slot(obj, i);
        ck_assert_ptr_eq(p, (void *)((char *)obj + w->offset));
        ck_assert_int_eq(sdpa_slot_find(group, w->name), i);
        ck_assert_msg(info.output == w->output && info.saved == w->saved &&
                          info.required == w->required,
                      "%s: output %d saved %d required %d", w->name, info.output, info.saved,
                      info.required);
        ck_assert_msg(info.dtype == w->dtype, "%s: dtype %s", w->name, sdpa_dtype_name(info.dtype));
        ck_assert_msg(strcmp(info.axes, w->axes) == 0, "%s: axes %s, want %s", w->name,
                      info.axes, w->axes);
        ck_assert_int_eq(info.broadcast, w->broadcast);
        int pair = w->pair ? sdpa_slot_find(other, w->pair) : -1;
        ck_assert_msg(info.pair == pair, "%s: pair %d, want %d (%s)", w->name, info.pair, pair,
                      w->pair ? w->pair : "none");
    }
    sdpa_slot_info info;
    ck_assert_int_eq(sdpa_slot_get_info(group, n, &info), SDPA_ERR_INVALID_ARG);
    ck_assert_int_eq(sdpa_slot_get_info(group, -1, &info), SDPA_ERR_INVALID_ARG);
    ck_assert_int_eq(sdpa_slot_get_info(group, 0, NULL), SDPA_ERR_NULL);
    ck_assert_int_eq(sdpa_slot_find(group, "nope"), -1);
    ck_assert_int_eq(sdpa_slot_find(group, NULL), -1);
}

START_TEST(table_matches_structs)
{
    sdpa_forward_tensors t;
    sdpa_backward_tensors g;
    check_group(SDPA_SLOT_FORWARD, k_fwd, NF, &t, SDPA_SLOT_BACKWARD);
    check_group(SDPA_SLOT_BACKWARD, k_bwd, NB, &g, SDPA_SLOT_FORWARD);
    ck_assert_ptr_null(sdpa_forward_tensors_get_slot(&t, NF));
    ck_assert_ptr_null(sdpa_forward_tensors_get_slot(NULL, 0));
    ck_assert_ptr_null(sdpa_backward_tensors_get_slot(&g, -1));
    ck_assert_int_eq(sdpa_slot_count((sdpa_slot_group)7), 0);
    ck_assert_uint_eq(sizeof(sdpa_forward_tensors), NF * sizeof(sdpa_tensor));
    ck_assert_uint_eq(sizeof(sdpa_backward_tensors), NB * sizeof(sdpa_tensor));
}
END_TEST

/* The case loader's indices name the slots (the keys of sdpa-case/1). */
START_TEST(case_keys_are_slot_names)
{
    static const struct { int w; const char *name; } in[] = {
        {SC_IN_Q, "q"}, {SC_IN_K, "k"}, {SC_IN_V, "v"}, {SC_IN_MASK, "mask"},
        {SC_IN_BIAS, "bias"}, {SC_IN_KV_LEN, "kv_len"}, {SC_IN_Q_GAIN, "q_gain"},
        {SC_IN_K_GAIN, "k_gain"}, {SC_IN_TEMPERATURE, "temperature"}, {SC_IN_DOUT, "dout"}};
    static const struct { int w; const char *name; } out[] = {
        {SC_OUT_OUT, "out"}, {SC_OUT_LSE, "lse"}, {SC_OUT_STATS, "stats"},
        {SC_OUT_DQ, "dq"}, {SC_OUT_DK, "dk"}, {SC_OUT_DV, "dv"},
        {SC_OUT_DQ_GAIN, "dq_gain"}, {SC_OUT_DK_GAIN, "dk_gain"},
        {SC_OUT_DTEMPERATURE, "dtemperature"}};
    ck_assert_int_eq(SC_IN_COUNT, (int)(sizeof in / sizeof in[0]));
    ck_assert_int_eq(SC_OUT_COUNT, (int)(sizeof out / sizeof out[0]));
    for (size_t i = 0; i < sizeof in / sizeof in[0]; i++)
        ck_assert_str_eq(sc_input_name(in[i].w), in[i].name);
    for (size_t i = 0; i < sizeof out / sizeof out[0]; i++)
        ck_assert_str_eq(sc_output_name(out[i].w), out[i].name);
    /* every slot is a key: inputs + outputs cover both groups */
    ck_assert_int_eq(SC_IN_COUNT + SC_OUT_COUNT, NF + NB);
    ck_assert_str_eq(sc_input_name(SC_IN_COUNT), "?");
}
END_TEST

/* ---- validation driven by the table ---------------------------------------- */

static sdpa_context *g_ctx;
static void *g_data[32];

static int64_t extent(char c)
{
    switch (c) {
    case 'B': return B;
    case 'Q': return HQ;
    case 'K': return HKV;
    case 's': return SQ;
    case 'k': return SKV;
    case 'D': return D;
    case 'V': return DV;
    case 'C': return SDPA_STAT_COUNT;
    default: return 1;
    }
}

/* A host tensor for slot info of the description (dtype f32 for q's),
 * with valid data: ones for masks, Skv for key counts, small values else. */
static sdpa_tensor make(const sdpa_slot_info *info, int k)
{
    sdpa_dtype dt = info->dtype == SDPA_DTYPE_NONE ? SDPA_DTYPE_F32 : info->dtype;
    int64_t s[4], n = 1;
    for (int a = 0; a < 4; a++) n *= s[a] = extent(info->axes[a]);
    if (!g_data[k]) {
        g_data[k] = calloc((size_t)n, 4);
        for (int64_t e = 0; e < n; e++) {
            if (dt == SDPA_DTYPE_U8) ((uint8_t *)g_data[k])[e] = 1;
            else if (dt == SDPA_DTYPE_I32) ((int32_t *)g_data[k])[e] = SKV;
            else ((float *)g_data[k])[e] = 0.25f + 0.01f * (float)(e % 13);
        }
    }
    return sdpa_tensor_host(g_data[k], dt, s[0], s[1], s[2], s[3]);
}

/* Every forward slot present (gains need a qk norm). */
static void full(sdpa_attention_desc *d)
{
    sdpa_attention_desc_init(d);
    d->qk_norm = SDPA_QK_NORM_RMS;
    for (int i = 0; i < sdpa_slot_count(SDPA_SLOT_FORWARD); i++) {
        sdpa_slot_info info;
        ck_assert_int_eq(sdpa_slot_get_info(SDPA_SLOT_FORWARD, i, &info), SDPA_OK);
        if (strchr(info.axes, 'P') || strchr(info.axes, 'T')) continue; /* paged: not with k, v */
        *sdpa_forward_tensors_get_slot(&d->tensors, i) = make(&info, i);
    }
}
static void grads(sdpa_backward_tensors *g)
{
    memset(g, 0, sizeof *g);
    for (int i = 0; i < sdpa_slot_count(SDPA_SLOT_BACKWARD); i++) {
        sdpa_slot_info info;
        ck_assert_int_eq(sdpa_slot_get_info(SDPA_SLOT_BACKWARD, i, &info), SDPA_OK);
        *sdpa_backward_tensors_get_slot(g, i) = make(&info, 16 + i);
    }
}

static void setup(void)
{
    sdpa_status st;
    g_ctx = tcontext(SDPA_BACKEND_REFERENCE, &st);
    ck_assert_int_eq(st, SDPA_OK);
}
static void teardown(void)
{
    sdpa_context_destroy(g_ctx);
    g_ctx = NULL;
    for (size_t i = 0; i < sizeof g_data / sizeof g_data[0]; i++) {
        free(g_data[i]);
        g_data[i] = NULL;
    }
}

static void expect(sdpa_status got, sdpa_status want, const char *needle, const char *what)
{
    sdpa_error_info info;
    ck_assert_msg(got == want, "%s: got %s, want %s", what, sdpa_status_name(got),
                  sdpa_status_name(want));
    if (want == SDPA_OK || !needle) return;
    ck_assert_int_eq(sdpa_context_last_error(g_ctx, &info), SDPA_OK);
    ck_assert_msg(strstr(info.message, needle), "%s: message '%s' does not name '%s'", what,
                  info.message, needle);
}

static sdpa_status create(const sdpa_attention_desc *d, unsigned flags)
{
    sdpa_plan_options po;
    sdpa_plan_options_init(&po);
    po.flags = flags;
    sdpa_plan *plan = NULL;
    sdpa_status st = sdpa_plan_create(g_ctx, d, &po, &plan);
    sdpa_plan_destroy(plan);
    return st;
}

/* The slot that defines axis letter c (the first required slot having it):
 * changing its extent there changes the problem, so another slot is named. */
static int defines(int slot, int axis)
{
    sdpa_slot_info info, s;
    sdpa_slot_get_info(SDPA_SLOT_FORWARD, slot, &info);
    for (int i = 0; i < slot; i++) {
        sdpa_slot_get_info(SDPA_SLOT_FORWARD, i, &s);
        if (s.required && strchr(s.axes, info.axes[axis])) return 0;
    }
    return info.required;
}

START_TEST(forward_rules_per_slot)
{
    sdpa_attention_desc d;
    full(&d);
    expect(create(&d, 0), SDPA_OK, NULL, "every slot present");
    expect(sdpa_attention_forward(g_ctx, &d), SDPA_OK, NULL, "every slot present runs");
    char what[128], name[64];
    for (int i = 0; i < sdpa_slot_count(SDPA_SLOT_FORWARD); i++) {
        sdpa_slot_info info;
        sdpa_slot_get_info(SDPA_SLOT_FORWARD, i, &info);
        snprintf(name, sizeof name, "tensors.%s", info.name);

        /* dtype: the rule's dtype and no other */
        full(&d);
        sdpa_tensor *x = sdpa_forward_tensors_get_slot(&d.tensors, i);
        x->dtype = x->dtype == SDPA_DTYPE_F32 ? SDPA_DTYPE_I32 : SDPA_DTYPE_F32;
        snprintf(what, sizeof what, "%s with dtype %s", name, sdpa_dtype_name(x->dtype));
        expect(create(&d, 0), SDPA_ERR_DTYPE, name, what);

        /* presence */
        full(&d);
        x = sdpa_forward_tensors_get_slot(&d.tensors, i);
        x->dtype = SDPA_DTYPE_NONE;
        snprintf(what, sizeof what, "%s absent", name);
        expect(create(&d, 0), info.required ? SDPA_ERR_INVALID_ARG : SDPA_OK, name, what);

        /* shape: one more on each axis; extent 1 on the broadcast axes only */
        for (int a = 0; a < 4; a++) {
            full(&d);
            x = sdpa_forward_tensors_get_slot(&d.tensors, i);
            x->shape[a] += 1;
            snprintf(what, sizeof what, "%s.shape[%d] + 1", name, a);
            expect(create(&d, 0), SDPA_ERR_SHAPE, defines(i, a) ? NULL : name, what);
            if (extent(info.axes[a]) == 1 || defines(i, a)) continue;
            full(&d);
            x = sdpa_forward_tensors_get_slot(&d.tensors, i);
            x->shape[a] = 1;
            snprintf(what, sizeof what, "%s.shape[%d] = 1", name, a);
            expect(create(&d, 0), info.broadcast >> a & 1 ? SDPA_OK : SDPA_ERR_SHAPE, name, what);
        }

        /* i32 slots hold key counts: host values past Skv are refused */
        if (info.dtype == SDPA_DTYPE_I32) {
            full(&d);
            int32_t *v = sdpa_forward_tensors_get_slot(&d.tensors, i)->host;
            v[1] = SKV + 1;
            snprintf(what, sizeof what, "%s[1] = Skv + 1", name);
            expect(sdpa_attention_forward(g_ctx, &d), SDPA_ERR_INVALID_ARG, name, what);
            v[1] = SKV;
        }

        /* an output may not alias an input (q) */
        if (info.output) {
            full(&d);
            x = sdpa_forward_tensors_get_slot(&d.tensors, i);
            x->host = d.tensors.q.host;
            snprintf(what, sizeof what, "%s aliasing q", name);
            expect(sdpa_attention_forward(g_ctx, &d), SDPA_ERR_INVALID_ARG, name, what);
        }
    }
}
END_TEST

START_TEST(backward_rules_per_slot)
{
    sdpa_attention_desc d;
    sdpa_backward_tensors g;
    sdpa_plan_options po;
    sdpa_plan_options_init(&po);
    po.flags = SDPA_PLAN_BACKWARD;
    char what[128], name[64];
    for (int i = 0; i < sdpa_slot_count(SDPA_SLOT_BACKWARD); i++) {
        sdpa_slot_info info, fwd;
        sdpa_slot_get_info(SDPA_SLOT_BACKWARD, i, &info);
        sdpa_slot_get_info(SDPA_SLOT_FORWARD, info.pair, &fwd);
        snprintf(name, sizeof name, "bwd.%s", info.name);
        for (int c = 0; c < 4; c++) {
            full(&d);
            grads(&g);
            sdpa_tensor *x = sdpa_backward_tensors_get_slot(&g, i);
            sdpa_status want = SDPA_ERR_INVALID_ARG;
            if (c == 0) { /* wrong dtype */
                x->dtype = SDPA_DTYPE_I32;
                want = SDPA_ERR_DTYPE;
                snprintf(what, sizeof what, "%s with dtype i32", name);
            } else if (c == 1) { /* absent */
                x->dtype = SDPA_DTYPE_NONE;
                want = info.required ? SDPA_ERR_INVALID_ARG : SDPA_OK;
                snprintf(what, sizeof what, "%s absent", name);
            } else if (c == 2) { /* given without its forward slot */
                if (info.required) continue;
                sdpa_forward_tensors_get_slot(&d.tensors, info.pair)->dtype = SDPA_DTYPE_NONE;
                snprintf(what, sizeof what, "%s without tensors.%s", name, fwd.name);
            } else { /* wrong shape: its forward slot's, one more on axis 3 */
                x->shape[3] += 1;
                want = SDPA_ERR_SHAPE;
                snprintf(what, sizeof what, "%s.shape[3] + 1", name);
            }
            if (c == 3 && info.output) { /* and an output aliasing q */
                sdpa_backward_tensors g2;
                grads(&g2);
                sdpa_backward_tensors_get_slot(&g2, i)->host = d.tensors.q.host;
                sdpa_plan *plan = NULL;
                expect(sdpa_plan_create(g_ctx, &d, &po, &plan), SDPA_OK, NULL, "plan");
                snprintf(what, sizeof what, "%s aliasing q", name);
                expect(sdpa_plan_backward(plan, &d.tensors, &g2), SDPA_ERR_INVALID_ARG, name,
                       what);
                sdpa_plan_destroy(plan);
                snprintf(what, sizeof what, "%s.shape[3] + 1", name);
            }
            sdpa_plan *plan = NULL;
            expect(sdpa_plan_create(g_ctx, &d, &po, &plan), SDPA_OK, NULL, "plan");
            expect(sdpa_plan_forward(plan, &d.tensors), SDPA_OK, NULL, "forward");
            expect(sdpa_plan_backward(plan, &d.tensors, &g), want, name, what);
            sdpa_plan_destroy(plan);
        }
    }
    /* the backward reads the saved outputs: a backward plan without lse is refused */
    full(&d);
    d.tensors.lse.dtype = SDPA_DTYPE_NONE;
    expect(create(&d, SDPA_PLAN_BACKWARD), SDPA_ERR_INVALID_ARG, "lse", "backward without lse");
}
END_TEST

/* ---- the attribute table ---------------------------------------------------- */

START_TEST(attribute_defaults_and_rules)
{
    sdpa_attention_desc d;
    memset(&d, 0x5A, sizeof d);
    sdpa_attention_desc_init(&d);
    ck_assert(d.scale == SDPA_SCALE_DEFAULT);
    ck_assert_int_eq(d.diagonal, SDPA_DIAGONAL_TOP_LEFT);
    ck_assert_int_eq(d.diagonal_offset, 0);
    ck_assert_int_eq(d.window_left, -1);
    ck_assert_int_eq(d.window_right, -1);
    ck_assert(d.softcap == 0);
    ck_assert_int_eq(d.qk_norm, SDPA_QK_NORM_NONE);
    ck_assert(d.qk_norm_eps == 1e-6);
    ck_assert(d.stats_saturation == 0.99);
    for (int i = 0; i < sdpa_slot_count(SDPA_SLOT_FORWARD); i++)
        ck_assert_int_eq(sdpa_forward_tensors_get_slot(&d.tensors, i)->dtype, SDPA_DTYPE_NONE);

    /* one refused value per rule, the message starting with the field */
    static const struct { const char *msg; int field; double v; } bad[] = {
        {"scale is -3: must be finite and > 0", 0, -3},
        {"scale is 1e+39: outside the f32 range", 0, 1e39},
        {"diagonal 3 is not an sdpa_diagonal", 1, 3},
        {"diagonal_offset 4611686018427387904 is out of range", 2, 0x1p62},
        {"window_left is -2: must be -1 (unbounded) or >= 0", 3, -2},
        {"window_right is -2: must be -1 (unbounded) or >= 0", 4, -2},
        {"softcap is -1: must be 0 (none) or a finite value > 0", 5, -1},
        {"softcap is 1e-40: outside the f32 range", 5, 1e-40},
        {"qk_norm -1 is not an sdpa_qk_norm", 6, -1},
        {"qk_norm_eps is 0: must be finite and > 0", 7, 0},
        {"qk_norm_eps is 1e+300: outside the f32 range", 7, 1e300},
        {"stats_saturation is 1.5: must lie in (0, 1]", 8, 1.5},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        full(&d);
        double v = bad[i].v;
        switch (bad[i].field) {
        case 0: d.scale = v; break;
        case 1: d.diagonal = (sdpa_diagonal)(int)v; break;
        case 2: d.diagonal_offset = (int64_t)v; break;
        case 3: d.window_left = (int64_t)v; break;
        case 4: d.window_right = (int64_t)v; break;
        case 5: d.softcap = v; break;
        case 6: d.qk_norm = (sdpa_qk_norm)(int)v; break;
        case 7: d.qk_norm_eps = v; break;
        default: d.stats_saturation = v; break;
        }
        expect(create(&d, 0), SDPA_ERR_INVALID_ARG, bad[i].msg, bad[i].msg);
    }
}
END_TEST

static Suite *slots_suite(void)
{
    Suite *s = suite_create("slots");
    TCase *t = tcase_create("table");
    tcase_add_test(t, table_matches_structs);
    tcase_add_test(t, case_keys_are_slot_names);
    suite_add_tcase(s, t);
    t = tcase_create("rules");
    tcase_add_checked_fixture(t, setup, teardown);
    tcase_add_test(t, forward_rules_per_slot);
    tcase_add_test(t, backward_rules_per_slot);
    tcase_add_test(t, attribute_defaults_and_rules);
    suite_add_tcase(s, t);
    return s;
}

int main(void)
{
    return trun_suite(slots_suite());
}
