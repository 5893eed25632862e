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
    int kv;           /* dtype NONE means K/V's */
    int paged;        /* 1: exactly in paged calls; -1: never in them */
} want_slot;

#define F(f) #f, offsetof(sdpa_forward_tensors, f)
static const want_slot k_fwd[] = {
    {F(q), 0, 0, 1, SDPA_DTYPE_NONE, "BQsD", 0, "dq", 0, 0},
    {F(k), 0, 0, 1, SDPA_DTYPE_NONE, "BKkD", 0, "dk", 1, -1},
    {F(v), 0, 0, 1, SDPA_DTYPE_NONE, "BKkV", 0, "dv", 1, -1},
    {F(out), 1, 1, 1, SDPA_DTYPE_NONE, "BQsV", 0, "dout", 0, 0},
    {F(mask), 0, 0, 0, SDPA_DTYPE_U8, "BQsk", 3, NULL, 0, 0},
    {F(bias), 0, 0, 0, SDPA_DTYPE_F32, "BQsk", 3, NULL, 0, 0},
    {F(kv_len), 0, 0, 0, SDPA_DTYPE_I32, "B111", 0, NULL, 0, 0},
    {F(q_gain), 0, 0, 0, SDPA_DTYPE_F32, "111D", 0, "dq_gain", 0, 0},
    {F(k_gain), 0, 0, 0, SDPA_DTYPE_F32, "111D", 0, "dk_gain", 0, 0},
    {F(temperature), 0, 0, 0, SDPA_DTYPE_F32, "1Q11", 0, "dtemperature", 0, 0},
    {F(lse), 1, 1, 0, SDPA_DTYPE_F32, "BQs1", 0, NULL, 0, 0},
    {F(stats), 1, 0, 0, SDPA_DTYPE_F32, "BQ1C", 0, NULL, 0, 0},
    {F(alibi_slopes), 0, 0, 0, SDPA_DTYPE_F32, "1Q11", 0, NULL, 0, 0},
    {F(sinks), 0, 0, 0, SDPA_DTYPE_F32, "1Q11", 0, "dsinks", 0, 0},
    {F(k_pages), 0, 0, 0, SDPA_DTYPE_NONE, "PKGD", 0, NULL, 1, 1},
    {F(v_pages), 0, 0, 0, SDPA_DTYPE_NONE, "PKGV", 0, NULL, 1, 1},
    {F(block_table), 0, 0, 0, SDPA_DTYPE_I32, "B11T", 0, NULL, 0, 1},
};
#undef F
#define G(f) #f, offsetof(sdpa_backward_tensors, f)
static const want_slot k_bwd[] = {
    {G(dout), 0, 0, 1, SDPA_DTYPE_NONE, "BQsV", 0, "out", 0, 0},
    {G(dq), 1, 0, 1, SDPA_DTYPE_NONE, "BQsD", 0, "q", 0, 0},
    {G(dk), 1, 0, 1, SDPA_DTYPE_NONE, "BKkD", 0, "k", 1, -1},
    {G(dv), 1, 0, 1, SDPA_DTYPE_NONE, "BKkV", 0, "v", 1, -1},
    {G(dq_gain), 1, 0, 0, SDPA_DTYPE_F32, "111D", 0, "q_gain", 0, 0},
    {G(dk_gain), 1, 0, 0, SDPA_DTYPE_F32, "111D", 0, "k_gain", 0, 0},
    {G(dtemperature), 1, 0, 0, SDPA_DTYPE_F32, "1Q11", 0, "temperature", 0, 0},
    {G(dsinks), 1, 0, 0, SDPA_DTYPE_F32, "1Q11", 0, "sinks", 0, 0},
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
        ck_assert_msg(info.kv == w->kv && info.paged == w->paged, "%s: kv %d paged %d", w->name,
                      info.kv, info.paged);
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

/* The case loader's keys are the slots (the keys of sdpa-case/1), derived
 * from the slot API: forward slots, then backward ones, each with its
 * name and description; checked against the table written out above, so a
 * swapped row or a key the loader invents fails. */
START_TEST(case_keys_are_slot_names)
{
    ck_assert_int_eq(sc_key_count(), NF + NB);
    ck_assert_int_le(sc_key_count(), SC_MAX_KEYS);
    for (int k = 0; k < NF + NB; k++) {
        const want_slot *w = k < NF ? &k_fwd[k] : &k_bwd[k - NF];
        ck_assert_str_eq(sc_key_name(k), w->name);
        ck_assert_int_eq(sc_key_find(w->name), k);
        sdpa_slot_info info;
        sdpa_slot_group g;
        ck_assert(sc_key_info(k, &info, &g));
        ck_assert_int_eq(g, k < NF ? SDPA_SLOT_FORWARD : SDPA_SLOT_BACKWARD);
        ck_assert_str_eq(info.name, w->name);
        ck_assert_int_eq(info.output, w->output);
    }
    ck_assert_str_eq(sc_key_name(NF + NB), "?");
    ck_assert_str_eq(sc_key_name(-1), "?");
    ck_assert_int_eq(sc_key_find("nope"), -1);
    ck_assert_int_eq(sc_key_find(NULL), -1);
}
END_TEST

/* ---- validation driven by the table ---------------------------------------- */

static sdpa_context *g_ctx;
static void *g_data[64]; /* forward slot i at i, backward slot i at 32 + i */

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
    case 'P': return SKV + 1; /* pool pages (block-table values SKV stay inside) */
    case 'G': return 1;       /* key slots per page: logical Skv = T * G = SKV */
    case 'T': return SKV;
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

/* Whether a slot is given in a call that is (paged) or is not paged: every
 * slot but the other kind's K/V (k and v, or k_pages, v_pages and
 * block_table), from the slot API's `paged` column. */
static int in_call(const sdpa_slot_info *info, int paged)
{
    return info->paged == 0 || (info->paged > 0) == (paged != 0);
}

/* Every forward slot present that a call of its kind (paged or not) takes
 * (gains need a qk norm). */
static void full_kind(sdpa_attention_desc *d, int paged)
{
    sdpa_attention_desc_init(d);
    d->qk_norm = SDPA_QK_NORM_RMS;
    for (int i = 0; i < sdpa_slot_count(SDPA_SLOT_FORWARD); i++) {
        sdpa_slot_info info;
        ck_assert_int_eq(sdpa_slot_get_info(SDPA_SLOT_FORWARD, i, &info), SDPA_OK);
        if (in_call(&info, paged))
            *sdpa_forward_tensors_get_slot(&d->tensors, i) = make(&info, i);
    }
}
static void full(sdpa_attention_desc *d) { full_kind(d, 0); }
static void grads(sdpa_backward_tensors *g)
{
    memset(g, 0, sizeof *g);
    for (int i = 0; i < sdpa_slot_count(SDPA_SLOT_BACKWARD); i++) {
        sdpa_slot_info info;
        ck_assert_int_eq(sdpa_slot_get_info(SDPA_SLOT_BACKWARD, i, &info), SDPA_OK);
        *sdpa_backward_tensors_get_slot(g, i) = make(&info, 32 + i);
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

/* Whether a slot must be present in a call that is (paged) or is not paged. */
static int required_in(const sdpa_slot_info *info, int paged)
{
    return info->paged ? in_call(info, paged) : info->required;
}

/* The slot that defines axis letter c (the first slot required in the call
 * having it): changing its extent there changes the problem, so another
 * slot is named. In a paged call the logical key count comes from the block
 * table and the page size, so k (keys) counts as defined there too. */
static int defines(int slot, int axis, int paged)
{
    sdpa_slot_info info, s;
    sdpa_slot_get_info(SDPA_SLOT_FORWARD, slot, &info);
    if (paged && strchr("TG", info.axes[axis]) && required_in(&info, paged)) return 1;
    for (int i = 0; i < slot; i++) {
        sdpa_slot_get_info(SDPA_SLOT_FORWARD, i, &s);
        if (required_in(&s, paged) && strchr(s.axes, info.axes[axis])) return 0;
    }
    return required_in(&info, paged);
}

START_TEST(forward_rules_per_slot)
{
    sdpa_attention_desc d;
    for (int paged = 0; paged < 2; paged++) {
        full_kind(&d, paged);
        expect(create(&d, 0), SDPA_OK, NULL, paged ? "every paged-call slot present"
                                                   : "every slot present");
        expect(sdpa_attention_forward(g_ctx, &d), SDPA_OK, NULL, "every slot present runs");
    }
    char what[128], name[64];
    for (int i = 0; i < sdpa_slot_count(SDPA_SLOT_FORWARD); i++) {
        sdpa_slot_info info;
        sdpa_slot_get_info(SDPA_SLOT_FORWARD, i, &info);
        snprintf(name, sizeof name, "tensors.%s", info.name);
        /* each slot in a call of its kind: the paged slots in a paged call */
        const int paged = info.paged > 0;
#define full(d) full_kind(d, paged)

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
        expect(create(&d, 0), required_in(&info, paged) ? SDPA_ERR_INVALID_ARG : SDPA_OK, name,
               what);

        /* shape: one more on each axis; extent 1 on the broadcast axes only */
        for (int a = 0; a < 4; a++) {
            full(&d);
            x = sdpa_forward_tensors_get_slot(&d.tensors, i);
            x->shape[a] += 1;
            snprintf(what, sizeof what, "%s.shape[%d] + 1", name, a);
            expect(create(&d, 0), SDPA_ERR_SHAPE, defines(i, a, paged) ? NULL : name, what);
            if (extent(info.axes[a]) == 1 || defines(i, a, paged)) continue;
            full(&d);
            x = sdpa_forward_tensors_get_slot(&d.tensors, i);
            x->shape[a] = 1;
            snprintf(what, sizeof what, "%s.shape[%d] = 1", name, a);
            expect(create(&d, 0), info.broadcast >> a & 1 ? SDPA_OK : SDPA_ERR_SHAPE, name, what);
        }

        /* i32 slots hold key counts (past Skv refused) or pool pages (past
         * P - 1 = SKV refused) */
        if (info.dtype == SDPA_DTYPE_I32) {
            full(&d);
            int32_t *v = sdpa_forward_tensors_get_slot(&d.tensors, i)->host;
            v[1] = SKV + 1;
            snprintf(what, sizeof what, "%s[1] = SKV + 1", name);
            expect(sdpa_attention_forward(g_ctx, &d), SDPA_ERR_INVALID_ARG, name, what);
            v[1] = -1;
            snprintf(what, sizeof what, "%s[1] = -1", name);
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
#undef full
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
