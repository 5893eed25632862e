/*
 * slots.c — the slot tables of slots.h as data (sdpa__fwd_info /
 * sdpa__bwd_info), the compile-time proof that the public structs and the
 * backend args hold exactly the table's fields in its order, the rules'
 * helpers (dtype, axis extents and meanings) and the experimental public slot
 * API (sdpa_slot_count, sdpa_slot_get_info, sdpa_slot_find,
 * sdpa_forward_tensors_get_slot, sdpa_backward_tensors_get_slot).
 */
#include "internal.h"

#include <stddef.h>
#include <string.h>

/* The public structs hold the table's fields, in its order, and nothing else;
 * the backend args hold one sdpa__ref per slot in the same order. */
#define SDPA__ROW_AT(pub, args, row, f)                                                     \
    _Static_assert(offsetof(pub, f) == (row) * sizeof(sdpa_tensor),                        \
                   #pub "." #f " is not at its slot-table row");                            \
    _Static_assert(offsetof(args, f) == (row) * sizeof(sdpa__ref),                         \
                   #args "." #f " is not at its slot-table row");
#define SDPA__X(id, f, ...) SDPA__ROW_AT(sdpa_forward_tensors, sdpa__fwd_args, SDPA__T_##id, f)
SDPA__FWD_SLOTS(SDPA__X)
#undef SDPA__X
#define SDPA__X(id, f, role, pres) \
    SDPA__ROW_AT(sdpa_backward_tensors, sdpa__bwd_args, SDPA__G_##id, f)
SDPA__BWD_SLOTS(SDPA__X)
#undef SDPA__X
_Static_assert(sizeof(sdpa_forward_tensors) == SDPA__T_COUNT * sizeof(sdpa_tensor),
               "sdpa_forward_tensors has fields the slot table does not list");
_Static_assert(sizeof(sdpa_backward_tensors) == SDPA__G_COUNT * sizeof(sdpa_tensor),
               "sdpa_backward_tensors has fields the slot table does not list");
_Static_assert(sizeof(sdpa__fwd_args) == SDPA__T_COUNT * sizeof(sdpa__ref),
               "sdpa__fwd_args has fields the slot table does not list");
_Static_assert(sizeof(sdpa__bwd_args) == SDPA__G_COUNT * sizeof(sdpa__ref),
               "sdpa__bwd_args has fields the slot table does not list");

/* Every gradient is named by exactly one forward row (a second row naming
 * the same one is a -Woverride-init warning in sdpa__bwd_of below). */
#define SDPA__X(id, f, role, dt, axes, bc, pres, grad) +(SDPA__G_##grad >= 0)
_Static_assert(0 SDPA__FWD_SLOTS(SDPA__X) == SDPA__G_COUNT,
               "each backward slot must be the grad of exactly one forward slot");
#undef SDPA__X

const sdpa__slot_info sdpa__fwd_info[SDPA__T_COUNT] = {
#define SDPA__X(id, f, role, dt, axes, bc, pres, grad)                                  \
    [SDPA__T_##id] = {#f, "tensors." #f, SDPA__ROLE_##role, SDPA__DT_##dt, axes,          \
                      SDPA__BCAST_##bc, SDPA__PRES_##pres != SDPA__PRES_REQ,              \
                      SDPA__PRES_##pres, SDPA__G_##grad, offsetof(sdpa_forward_tensors, f)},
    SDPA__FWD_SLOTS(SDPA__X)
#undef SDPA__X
};

/* Rows without a gradient land past SDPA__G_COUNT, one cell each. */
const int sdpa__bwd_of[SDPA__G_COUNT + SDPA__T_COUNT] = {
#define SDPA__X(id, f, role, dt, axes, bc, pres, grad) \
    [SDPA__G_##grad >= 0 ? SDPA__G_##grad : SDPA__G_COUNT + SDPA__T_##id] = SDPA__T_##id,
    SDPA__FWD_SLOTS(SDPA__X)
#undef SDPA__X
};

const sdpa__slot_info sdpa__bwd_info[SDPA__G_COUNT] = {
#define SDPA__X(id, f, role, pres)                                                   \
    [SDPA__G_##id] = {#f, "bwd." #f, SDPA__ROLE_##role, SDPA__DT_Q, "", SDPA__BCAST_NONE, \
                      SDPA__PRES_##pres != SDPA__PRES_REQ, SDPA__PRES_##pres, SDPA__G_NONE,  \
                      offsetof(sdpa_backward_tensors, f)},
    SDPA__BWD_SLOTS(SDPA__X)
#undef SDPA__X
};

sdpa_dtype sdpa__slot_dtype(int i, sdpa_dtype qd, sdpa_dtype kvd)
{
    switch (sdpa__fwd_info[i].dtype) {
    case SDPA__DT_Q: return qd;
    case SDPA__DT_KV: return kvd;
    case SDPA__DT_U8: return SDPA_DTYPE_U8;
    case SDPA__DT_I32: return SDPA_DTYPE_I32;
    default: return SDPA_DTYPE_F32;
    }
}

bool sdpa__slot_required(int i, bool paged)
{
    switch (sdpa__fwd_info[i].presence) {
    case SDPA__PRES_REQ: return true;
    case SDPA__PRES_KV: return !paged;
    case SDPA__PRES_PAGED: return paged;
    default: return false;
    }
}

bool sdpa__slot_forbidden(int i, bool paged)
{
    switch (sdpa__fwd_info[i].presence) {
    case SDPA__PRES_KV: return paged;
    case SDPA__PRES_PAGED: return !paged;
    default: return false;
    }
}

int64_t sdpa__axis_extent(char c, const sdpa__problem *p)
{
    switch (c) {
    case 'B': return p->B;
    case 'Q': return p->Hq;
    case 'K': return p->Hkv;
    case 's': return p->Sq;
    case 'k': return p->Skv;
    case 'D': return p->D;
    case 'V': return p->Dv;
    case 'C': return SDPA_STAT_COUNT;
    case 'P': return p->pages;
    case 'G': return p->page;
    case 'T': return p->max_pages;
    default: return 1;
    }
}

const char *sdpa__axis_meaning(char c)
{
    switch (c) {
    case 'B': return "batch";
    case 'Q': return "query heads";
    case 'K': return "key/value heads";
    case 's': return "queries";
    case 'k': return "keys";
    case 'D': return "head dim D";
    case 'V': return "value dim Dv";
    case 'C': return "statistics";
    case 'P': return "pool pages";
    case 'G': return "key slots per page";
    case 'T': return "block-table entries";
    default: return "unit axis";
    }
}

/* ---- public (experimental) ------------------------------------------------ */

static const sdpa__slot_info *group_table(sdpa_slot_group group, int *n)
{
    switch (group) {
    case SDPA_SLOT_FORWARD: *n = SDPA__T_COUNT; return sdpa__fwd_info;
    case SDPA_SLOT_BACKWARD: *n = SDPA__G_COUNT; return sdpa__bwd_info;
    default: *n = 0; return NULL;
    }
}

int sdpa_slot_count(sdpa_slot_group group)
{
    int n;
    group_table(group, &n);
    return n;
}

sdpa_status sdpa_slot_get_info(sdpa_slot_group group, int index, sdpa_slot_info *info)
{
    if (!info) return SDPA_ERR_NULL;
    int n;
    const sdpa__slot_info *tab = group_table(group, &n);
    if (index < 0 || index >= n) return SDPA_ERR_INVALID_ARG;
    const sdpa__slot_info *s = &tab[index];
    /* a backward row takes its forward slot's dtype and axes */
    int fwd = group == SDPA_SLOT_BACKWARD ? sdpa__bwd_of[index] : index;
    const sdpa__slot_info *rule = &sdpa__fwd_info[fwd];
    memset(info, 0, sizeof *info);
    info->struct_size = sizeof *info;
    info->name = s->field;
    info->output = group == SDPA_SLOT_BACKWARD ? s->role == SDPA__ROLE_OUT
                                               : s->role != SDPA__ROLE_IN;
    info->saved = group == SDPA_SLOT_FORWARD && s->role == SDPA__ROLE_SAVED;
    /* k and v count as required: only a paged call leaves them out */
    info->required = s->presence == SDPA__PRES_REQ || s->presence == SDPA__PRES_KV;
    /* NONE: q's dtype, or (kv) the K/V storage dtype */
    info->dtype = sdpa__slot_dtype(fwd, SDPA_DTYPE_NONE, SDPA_DTYPE_NONE);
    info->kv = rule->dtype == SDPA__DT_KV;
    info->paged = rule->presence == SDPA__PRES_PAGED ? 1 : rule->presence == SDPA__PRES_KV ? -1 : 0;
    memcpy(info->axes, rule->axes, 4);
    info->broadcast = group == SDPA_SLOT_BACKWARD ? 0 : (int)s->broadcast;
    info->pair = group == SDPA_SLOT_BACKWARD ? fwd : s->pair;
    info->offset = s->offset;
    return SDPA_OK;
}

int sdpa_slot_find(sdpa_slot_group group, const char *name)
{
    int n;
    const sdpa__slot_info *tab = group_table(group, &n);
    for (int i = 0; name && i < n; i++)
        if (strcmp(tab[i].field, name) == 0) return i;
    return -1;
}

sdpa_tensor *sdpa_forward_tensors_get_slot(sdpa_forward_tensors *t, int index)
{
    if (!t || index < 0 || index >= SDPA__T_COUNT) return NULL;
    return (sdpa_tensor *)(void *)((char *)t + sdpa__fwd_info[index].offset);
}

sdpa_tensor *sdpa_backward_tensors_get_slot(sdpa_backward_tensors *t, int index)
{
    if (!t || index < 0 || index >= SDPA__G_COUNT) return NULL;
    return (sdpa_tensor *)(void *)((char *)t + sdpa__bwd_info[index].offset);
}
