/*
 * fcase.h — compact feature-flag descriptions of parity cases, shared by the
 * backend parity suites (test_cpu.c, test_opencl.c, test_vulkan.c): each suite
 * keeps its own table of shapes x features (backends differ in limits), and
 * turns rows into testutil's tcase the same way.
 */
#ifndef SDPA_FCASE_H
#define SDPA_FCASE_H

#include "testutil.h"

enum {
    F_CAUSAL = 1,       /* window (-1, 0) */
    F_BR = 2,           /* bottom-right diagonal */
    F_EXPL = 4,         /* explicit diagonal, offset Skv - Sq - 5 */
    F_WIN = 8,          /* causal sliding window (37, 0) */
    F_WIN2 = 16,        /* local bidirectional window (20, 20) */
    F_CAP = 32,         /* softcap 5 */
    F_BIAS = 64,        /* random bias with some -inf */
    F_MASK = 128,       /* random bool mask, keep 0.7 */
    F_KVLEN = 256,      /* random kv_len per batch */
    F_RMS = 512,        /* qk_norm rms */
    F_LAYER = 1024,     /* qk_norm layer */
    F_L2T = 2048,       /* qk_norm l2 + per-head temperature */
    F_GAINS = 4096,     /* q/k gains */
    F_STATS = 8192,     /* statistics output */
    F_BSHD = 16384,     /* q/out laid out (B,S,H,D) */
    F_BCAST = 32768,    /* mask/bias broadcast over batch/heads */
    F_F16 = 65536,      /* f16 storage */
    F_BF16 = 131072,    /* bf16 storage */
    F_HOT = 262144,     /* inputs x3: peaked softmax */
    F_MUP = 524288,     /* muP scale 1/D */
};

typedef struct fcase {
    const char *name;
    int64_t B, Hq, Hkv, Sq, Skv, D, Dv;
    unsigned f;
} fcase;

/* The tcase for a row (lse always requested); seed_base varies inputs per suite. */
tcase fcase_make(const fcase *f, uint64_t seed_base);
/* The row named `name` (aborts the test when missing). */
const fcase *fcase_find(const fcase *table, int n, const char *name);

#endif
