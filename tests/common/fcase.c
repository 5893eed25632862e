/*
 * fcase.c — see fcase.h.
 */
#include "fcase.h"

#include <string.h>

tcase fcase_make(const fcase *f, uint64_t seed_base)
{
    tcase c;
    tcase_init(&c, f->name, f->B, f->Hq, f->Hkv, f->Sq, f->Skv, f->D, f->Dv);
    c.seed = seed_base + (uint64_t)f->Sq * 7u + (uint64_t)f->D;
    c.lse = true;
    if (f->f & F_CAUSAL) c.window_right = 0;
    if (f->f & F_BR) c.diagonal = SDPA_DIAGONAL_BOTTOM_RIGHT;
    if (f->f & F_EXPL) {
        c.diagonal = SDPA_DIAGONAL_EXPLICIT;
        c.diagonal_offset = f->Skv - f->Sq - 5;
    }
    if (f->f & F_WIN) {
        c.window_left = 37;
        c.window_right = 0;
    }
    if (f->f & F_WIN2) c.window_left = c.window_right = 20;
    if (f->f & F_CAP) c.softcap = 5.0;
    if (f->f & F_BIAS) {
        c.bias = true;
        c.bias_broadcast = (f->f & F_BCAST) != 0;
    }
    if (f->f & F_MASK) {
        c.mask = true;
        c.mask_broadcast = (f->f & F_BCAST) != 0;
        c.mask_keep = (f->f & F_SPARSE) ? 0.05 : 0.7;
    }
    c.kv_len = (f->f & F_KVLEN) != 0;
    if (f->f & F_RMS) c.qk_norm = SDPA_QK_NORM_RMS;
    if (f->f & F_LAYER) c.qk_norm = SDPA_QK_NORM_LAYER;
    if (f->f & F_L2T) {
        c.qk_norm = SDPA_QK_NORM_L2;
        c.temperature = true;
    }
    if (f->f & F_TEMP) c.temperature = true;
    if (f->f & F_SCALE2) c.scale = 2.0;
    c.gains = (f->f & F_GAINS) != 0;
    c.stats = (f->f & F_STATS) != 0;
    c.bshd = (f->f & F_BSHD) != 0;
    if (f->f & F_F16) c.dtype = SDPA_DTYPE_F16;
    if (f->f & F_BF16) c.dtype = SDPA_DTYPE_BF16;
    if (f->f & F_HOT) c.input_scale = 3.0;
    if (f->f & F_MUP) c.scale = SDPA_SCALE_MUP;
    return c;
}

const fcase *fcase_find(const fcase *table, int n, const char *name)
{
    for (int i = 0; i < n; i++)
        if (strcmp(table[i].name, name) == 0) return &table[i];
    ck_abort_msg("no parity case named %s", name);
    return NULL;
}
