/*
 * capabilities.c — the feature table of capabilities.h as functions: which optional
 * capabilities a problem needs, and their names for messages. Used by
 * dispatch.c before a backend's supports().
 */
#include "capabilities.h"

unsigned sdpa__features_needed(const sdpa__problem *p, unsigned flags)
{
    unsigned need = 0;
    (void)flags;
#define SDPA__X(id, what, needed) \
    if (needed) need |= SDPA__FEAT_##id;
    SDPA__FEATURES(SDPA__X)
#undef SDPA__X
    return need;
}

const char *sdpa__feature_name(int bit)
{
    static const char *const names[] = {
#define SDPA__X(id, what, needed) what,
        SDPA__FEATURES(SDPA__X)
#undef SDPA__X
    };
    return bit >= 0 && bit < SDPA__FEAT_COUNT ? names[bit] : "?";
}
