/*
 * capabilities.h — the one list of the optional capabilities a problem may need
 * beyond the first feature set (ALiBi, sinks, a K/V dtype other than q's,
 * block-quantized and paged K/V, and the backward of the ones that have
 * one). Each backend declares the bits it implements (sdpa__backend.features);
 * src/core/dispatch.c refuses a problem needing one it lacks with
 * SDPA_ERR_UNSUPPORTED and a message naming the feature, before the backend
 * sees it, so a backend never has to remember to refuse what it does not
 * know. Adding a feature: one row here, the bit in the backends that
 * implement it.
 *   X(ID, what the message calls it, whether problem p with plan flags needs it)
 */
#ifndef SDPA_CORE_CAPABILITIES_H
#define SDPA_CORE_CAPABILITIES_H

#include "internal.h"

static inline bool sdpa__dtype_is_block(sdpa_dtype d)
{
    return d == SDPA_DTYPE_Q8_0 || d == SDPA_DTYPE_Q4_0;
}

#define SDPA__FEATURES(X)                                                                   \
    X(ALIBI, "ALiBi slopes (tensors.alibi_slopes)", p->has_alibi_slopes)                    \
    X(SINKS, "attention sinks (tensors.sinks)", p->has_sinks)                               \
    X(KV_DTYPE, "a K/V dtype other than q's", p->kv_dtype != p->dtype)                      \
    X(KV_BLOCK, "block-quantized K/V (q8_0, q4_0)", sdpa__dtype_is_block(p->kv_dtype))      \
    X(PAGED, "paged K/V (tensors.block_table)", p->has_block_table)                         \
    X(ALIBI_BACKWARD, "the backward with ALiBi",                                            \
      p->has_alibi_slopes && (flags & SDPA_PLAN_BACKWARD))                                  \
    X(SINKS_BACKWARD, "the backward with sinks", p->has_sinks && (flags & SDPA_PLAN_BACKWARD))

enum {
#define SDPA__X(id, what, needed) SDPA__FEAT_BIT_##id,
    SDPA__FEATURES(SDPA__X)
#undef SDPA__X
    SDPA__FEAT_COUNT
};
#define SDPA__X(id, what, needed) static const unsigned SDPA__FEAT_##id = 1u << SDPA__FEAT_BIT_##id;
SDPA__FEATURES(SDPA__X)
#undef SDPA__X
#define SDPA__FEAT_ALL ((1u << SDPA__FEAT_COUNT) - 1u)

/* The features problem p with plan flags needs (SDPA__FEAT_* bits), and the
 * name of feature bit b for messages. */
unsigned sdpa__features_needed(const sdpa__problem *p, unsigned flags);
const char *sdpa__feature_name(int bit);

#endif /* SDPA_CORE_CAPABILITIES_H */
