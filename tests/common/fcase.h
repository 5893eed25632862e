/*
 * fcase.h — compact feature-flag descriptions of attention cases (a row:
 * name, shape, F_* features) and the one table of them that every backend
 * runs: tparity_fcases / tparity_bcases (tests/common/parity_cases.c), the
 * cases of the parity suite (tests/test_parity.c). Backend suites
 * (test_cpu.c, test_opencl.c) pick rows of the same table by name for their
 * backend-specific checks (forced tiles, one thread, kernel sets, caches);
 * fcase_make turns a row into testutil's tcase.
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
    F_TEMP = 1u << 20,  /* per-head temperature without QK-norm */
    F_SCALE2 = 1u << 21,/* explicit scale 2.0 (saturated rows) */
    F_SPARSE = 1u << 22,/* mask keep 0.05 instead of 0.7 */
    F_ALLDT = 1u << 23, /* parity runs the row in f32, f16 and bf16 */
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

/* The parity table (parity_cases.c): forward rows and backward rows. Lengths
 * cross tile edges (1, 7, 63, 65, 257, 1000); feature sets are shared between
 * rows where possible, because a GPU kernel variant is fixed by (dtype, D, Dv,
 * mask, bias, softcap, stats), not by lengths. */
extern const fcase tparity_fcases[];
extern const int tparity_n_fcases;
extern const fcase tparity_bcases[];
extern const int tparity_n_bcases;
/* fcase_find over tparity_fcases / tparity_bcases. */
const fcase *tparity_fcase(const char *name);
const fcase *tparity_bcase(const char *name);

#endif
