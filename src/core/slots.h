/*
 * slots.h — the one table of the tensor slots of an attention call and of
 * the scalar attributes of sdpa_attention_desc. Everything that lists them
 * is generated from here: the SDPA__T_* / SDPA__G_* enums and names, the
 * fields of sdpa__fwd_args / sdpa__bwd_args and the has_* flags and scalar
 * fields of sdpa__problem (backend.h), the dtype / shape / broadcast rules
 * validate.c checks, the roles staging (plan.c) and the aliasing check use,
 * the shape key (context_impl.h), the tuner's instances (src/tune/measure.c)
 * and the experimental public slot API (sdpa_slot_get_info, slots.c) that the
 * tools map case-file keys through. Adding an input is one row here (see
 * docs/architecture.md, "Recipe: add an input").
 *
 * Included by backend.h, so every backend sees the enums; nothing here needs
 * more than sdpa.h.
 */
#ifndef SDPA_CORE_SLOTS_H
#define SDPA_CORE_SLOTS_H

#ifndef SDPA_EXPERIMENTAL
#define SDPA_EXPERIMENTAL
#endif
#include "sdpa.h"

#include <stdbool.h>

/* ---- tensor slots ---------------------------------------------------------
 * Forward slots, in the declaration order of sdpa_forward_tensors:
 *   X(ID, field, role, dtype, axes, broadcast, presence, grad)
 * role      IN: read by the forward and the backward;
 *           SAVED: written by the forward, read by the backward;
 *           OUT: written by the forward, unused by the backward.
 * dtype     Q: the storage dtype of q; KV: the K/V storage dtype (that of
 *           k or k_pages: f32, f16, bf16, q8_0 or q4_0, may differ from
 *           q's); F32, U8, I32: that dtype. U8 slots are keep masks (0
 *           drops); I32 slots hold indices whose values in host memory must
 *           lie in [0, bound] (sdpa__slot_value_bound: Skv for kv_len, P - 1
 *           for block_table; validate.c).
 * axes      the problem extent each axis takes: B batch, Q query heads,
 *           K key/value heads, s queries Sq, k keys Skv, D head dim,
 *           V value dim Dv, C SDPA_STAT_COUNT, P pool pages, G key slots
 *           per page, T block-table entries per batch, 1 unit axis.
 * broadcast NONE, or BH: the batch and head axes may also be 1.
 * presence  REQ (always present), OPT (dtype SDPA_DTYPE_NONE = absent),
 *           KV (present unless the call is paged, i.e. has block_table) or
 *           PAGED (present exactly when the call is paged; block_table's
 *           presence is what makes it paged). The REQ, KV and
 *           PAGED slots present in a call define the problem's extents.
 * grad      the backward slot holding this slot's gradient, or NONE. */
#define SDPA__FWD_SLOTS(X)                                               \
    X(Q, q, IN, Q, "BQsD", NONE, REQ, DQ)                                \
    X(K, k, IN, KV, "BKkD", NONE, KV, DK)                                \
    X(V, v, IN, KV, "BKkV", NONE, KV, DV)                                \
    X(OUT, out, SAVED, Q, "BQsV", NONE, REQ, DOUT)                       \
    X(MASK, mask, IN, U8, "BQsk", BH, OPT, NONE)                         \
    X(BIAS, bias, IN, F32, "BQsk", BH, OPT, NONE)                        \
    X(KV_LEN, kv_len, IN, I32, "B111", NONE, OPT, NONE)                  \
    X(Q_GAIN, q_gain, IN, F32, "111D", NONE, OPT, DQ_GAIN)               \
    X(K_GAIN, k_gain, IN, F32, "111D", NONE, OPT, DK_GAIN)               \
    X(TEMPERATURE, temperature, IN, F32, "1Q11", NONE, OPT, DTEMPERATURE) \
    X(LSE, lse, SAVED, F32, "BQs1", NONE, OPT, NONE)                     \
    X(STATS, stats, OUT, F32, "BQ1C", NONE, OPT, NONE)                   \
    X(ALIBI_SLOPES, alibi_slopes, IN, F32, "1Q11", NONE, OPT, NONE)      \
    X(SINKS, sinks, IN, F32, "1Q11", NONE, OPT, DSINKS)                  \
    X(K_PAGES, k_pages, IN, KV, "PKGD", NONE, PAGED, NONE)               \
    X(V_PAGES, v_pages, IN, KV, "PKGV", NONE, PAGED, NONE)               \
    X(BLOCK_TABLE, block_table, IN, I32, "B11T", NONE, PAGED, NONE)

/* Backward slots, in the declaration order of sdpa_backward_tensors:
 *   X(ID, field, role, presence)
 * Each is the gradient of the forward slot whose grad column names it and
 * takes that slot's dtype and shape (never broadcast). role IN (read) or OUT
 * (written); an OPT gradient may be given only when its forward slot is. */
#define SDPA__BWD_SLOTS(X)               \
    X(DOUT, dout, IN, REQ)               \
    X(DQ, dq, OUT, REQ)                  \
    X(DK, dk, OUT, REQ)                  \
    X(DV, dv, OUT, REQ)                  \
    X(DQ_GAIN, dq_gain, OUT, OPT)        \
    X(DK_GAIN, dk_gain, OUT, OPT)        \
    X(DTEMPERATURE, dtemperature, OUT, OPT) \
    X(DSINKS, dsinks, OUT, OPT)

enum {
#define SDPA__X(id, f, role, dt, axes, bc, pres, grad) SDPA__T_##id,
    SDPA__FWD_SLOTS(SDPA__X)
#undef SDPA__X
    SDPA__T_COUNT
};
enum {
    SDPA__G_NONE = -1,
#define SDPA__X(id, f, role, pres) SDPA__G_##id,
    SDPA__BWD_SLOTS(SDPA__X)
#undef SDPA__X
    SDPA__G_COUNT
};

typedef enum sdpa__role { SDPA__ROLE_IN, SDPA__ROLE_SAVED, SDPA__ROLE_OUT } sdpa__role;
typedef enum sdpa__dtype_rule {
    SDPA__DT_Q, SDPA__DT_KV, SDPA__DT_F32, SDPA__DT_U8, SDPA__DT_I32
} sdpa__dtype_rule;
typedef enum sdpa__presence {
    SDPA__PRES_REQ, SDPA__PRES_OPT, SDPA__PRES_KV, SDPA__PRES_PAGED
} sdpa__presence;
#define SDPA__BCAST_NONE 0u
#define SDPA__BCAST_BH 3u /* axes 0 and 1 */

/* One row of either table, as data (slots.c). */
typedef struct sdpa__slot_info {
    const char *field;     /* "q", "dq_gain": the struct field and case-file key */
    const char *name;      /* "tensors.q", "bwd.dq_gain": what messages say */
    sdpa__role role;
    sdpa__dtype_rule dtype;
    const char *axes;      /* 4 extent letters (see above) */
    unsigned broadcast;    /* SDPA__BCAST_* */
    bool optional;         /* may be absent in some call (presence != REQ) */
    sdpa__presence presence;
    int pair;              /* forward row: its gradient's SDPA__G_* (or
                              SDPA__G_NONE); backward row: SDPA__G_NONE (see
                              sdpa__bwd_of) */
    size_t offset;         /* of the field in sdpa_forward_tensors /
                              sdpa_backward_tensors */
} sdpa__slot_info;

extern const sdpa__slot_info sdpa__fwd_info[SDPA__T_COUNT];
extern const sdpa__slot_info sdpa__bwd_info[SDPA__G_COUNT];
/* The forward slot backward slot g is the gradient of (and whose dtype and
 * shape it takes), from the forward table's grad column; indices past
 * SDPA__G_COUNT are unused. */
extern const int sdpa__bwd_of[SDPA__G_COUNT + SDPA__T_COUNT];

/* Whether a slot is written by the call: forward (backward = false) or
 * backward (where the forward's SAVED slots are inputs). */
static inline bool sdpa__fwd_is_output(int i, bool backward)
{
    return !backward && sdpa__fwd_info[i].role != SDPA__ROLE_IN;
}
/* Whether the backward reads forward slot i (all but OUT-role slots). */
static inline bool sdpa__fwd_read_by_backward(int i)
{
    return sdpa__fwd_info[i].role != SDPA__ROLE_OUT;
}

/* Expected dtype of forward slot i for q's storage dtype qd and the K/V
 * storage dtype kvd. */
sdpa_dtype sdpa__slot_dtype(int i, sdpa_dtype qd, sdpa_dtype kvd);
/* Whether forward slot i must be present (required = true) or absent in a
 * call that is (paged) or is not paged; OPT slots return false (either). */
bool sdpa__slot_required(int i, bool paged);
bool sdpa__slot_forbidden(int i, bool paged);
/* The problem extent that axis letter c stands for. */
struct sdpa__problem;
int64_t sdpa__axis_extent(char c, const struct sdpa__problem *p);
/* What axis letter c means in messages ("query heads", "unit axis"). */
const char *sdpa__axis_meaning(char c);

/* Slot i of a call's tensors (the offset column). */
static inline const sdpa_tensor *sdpa__fwd_slot(const sdpa_forward_tensors *t, int i)
{
    return (const sdpa_tensor *)(const void *)((const char *)t + sdpa__fwd_info[i].offset);
}
static inline const sdpa_tensor *sdpa__bwd_slot(const sdpa_backward_tensors *t, int i)
{
    return (const sdpa_tensor *)(const void *)((const char *)t + sdpa__bwd_info[i].offset);
}

/* Generators for backend.h: one sdpa__ref per slot, one has_<field> flag per
 * optional forward slot. */
#define SDPA__X_REF(id, f, ...) sdpa__ref f;
#define SDPA__X_BREF(id, f, role, pres) sdpa__ref f;
#define SDPA__HAS_OPT(f) bool has_##f;
#define SDPA__HAS_PAGED(f) bool has_##f;
#define SDPA__HAS_KV(f)
#define SDPA__HAS_REQ(f)
#define SDPA__X_HAS(id, f, role, dt, axes, bc, pres, grad) SDPA__HAS_##pres(f)

/* ---- scalar attributes of sdpa_attention_desc -----------------------------
 *   X(field, ctype, default, rule, f32, enum_max)
 * in declaration order. rule (checked by validate.c, message per rule):
 *   SCALE   finite and > 0, or SDPA_SCALE_DEFAULT / SDPA_SCALE_MUP
 *   ENUM    0..enum_max ("diagonal 7 is not an sdpa_diagonal")
 *   OFFSET  |value| < 2^62
 *   WINDOW  -1 (unbounded) or 0..2^62
 *   CAP     0 (none) or finite and > 0
 *   POS     finite and > 0
 *   UNIT    in (0, 1]
 * f32 = 1: a non-zero (resolved) value must also be a normal f32, the range
 * the kernels compute in. sdpa_attention_desc_init fills the defaults and
 * sdpa__problem holds one field of each (the scale resolved, the band
 * canonicalised by validation). */
#define SDPA__ATTRS(X)                                                               \
    X(scale, double, SDPA_SCALE_DEFAULT, SCALE, 1, 0)                                \
    X(diagonal, sdpa_diagonal, SDPA_DIAGONAL_TOP_LEFT, ENUM, 0, SDPA_DIAGONAL_EXPLICIT) \
    X(diagonal_offset, int64_t, 0, OFFSET, 0, 0)                                     \
    X(window_left, int64_t, -1, WINDOW, 0, 0)                                        \
    X(window_right, int64_t, -1, WINDOW, 0, 0)                                       \
    X(softcap, double, 0.0, CAP, 1, 0)                                               \
    X(qk_norm, sdpa_qk_norm, SDPA_QK_NORM_NONE, ENUM, 0, SDPA_QK_NORM_L2)            \
    X(qk_norm_eps, double, 1e-6, POS, 1, 0)                                          \
    X(stats_saturation, double, 0.99, UNIT, 0, 0)

#define SDPA__X_ATTR_FIELD(f, ctype, def, rule, f32, max) ctype f;

#endif /* SDPA_CORE_SLOTS_H */
