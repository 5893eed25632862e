/*
 * parity_cases.c — the one table of attention cases that every backend runs
 * against the float64 oracle (tests/test_parity.c), declared in fcase.h.
 *
 * Rows are shapes x features (F_* flags, fcase.h). Lengths cross tile edges
 * (1, 7, 63, 65, 257, 1000); head sizes 17..256; GQA with Dv != D; BSHD
 * strides; decode shapes (Sq 1..3, long Skv: the split-KV kernels); every
 * score feature alone and combined; lse always, statistics where F_STATS.
 * F_ALLDT rows also run in f16 and bf16; F_F16 / F_BF16 rows only in that
 * dtype. Backend suites pick rows by name (tparity_fcase) for their own
 * checks, so renaming a row means updating them. Adding a row costs one more
 * test per backend; a new feature set costs one more kernel variant on the
 * GPU backends (about 1 s to build cold on PoCL / lavapipe).
 */
#include "fcase.h"

const fcase tparity_fcases[] = {
    /* lengths and head sizes */
    {"len1_d32", 1, 2, 2, 1, 1, 32, 32, 0},
    {"len7_d64", 2, 2, 1, 7, 7, 64, 64, F_CAUSAL},
    {"len63x65_d64", 1, 3, 3, 63, 65, 64, 64, 0},
    {"len65x63_d64_br", 1, 2, 2, 65, 63, 64, 64, F_CAUSAL | F_BR},
    {"len257_d256", 1, 1, 1, 257, 257, 256, 256, F_CAUSAL},
    {"len257_d64_stats", 1, 2, 2, 257, 257, 64, 64, F_STATS},
    {"len65x257_d96_stats", 1, 2, 2, 65, 257, 96, 96, F_STATS},
    {"len1000_causal_stats", 1, 1, 1, 1000, 1000, 64, 64, F_CAUSAL | F_STATS},
    {"len1000_window", 1, 1, 1, 1000, 1000, 32, 32, F_WIN | F_CAUSAL},
    {"d128_len65", 1, 2, 2, 65, 65, 128, 128, 0},
    {"d80_odd", 1, 2, 2, 63, 65, 80, 80, F_CAUSAL},
    {"d33_dv17", 1, 2, 1, 7, 9, 33, 17, 0},
    /* GQA and Dv != D */
    {"gqa_dv", 2, 8, 2, 65, 130, 64, 32, F_CAUSAL | F_BR},
    {"gqa_dv_big", 1, 6, 2, 70, 257, 48, 96, 0},
    /* windows and diagonals */
    {"window_local", 1, 2, 2, 200, 200, 64, 64, F_WIN2},
    {"window_explicit", 2, 2, 2, 63, 257, 32, 32, F_EXPL | F_WIN},
    {"kvlen_br", 3, 2, 2, 65, 129, 64, 64, F_KVLEN | F_CAUSAL | F_BR},
    {"kvlen_stats", 3, 2, 1, 40, 100, 64, 64, F_KVLEN | F_STATS},
    /* score features */
    {"softcap_bias", 2, 2, 2, 65, 65, 64, 64, F_CAP | F_BIAS},
    {"mask_bcast", 2, 2, 2, 65, 130, 64, 64, F_MASK | F_BCAST},
    {"mask_bcast_sparse_stats", 2, 2, 2, 7, 63, 32, 32, F_MASK | F_BCAST | F_SPARSE | F_STATS},
    {"bias_bcast", 2, 2, 2, 63, 65, 64, 64, F_BIAS | F_BCAST},
    {"bias_bcast_mask_stats", 2, 4, 2, 33, 77, 64, 64, F_MASK | F_BIAS | F_BCAST | F_STATS},
    {"everything", 2, 4, 2, 70, 90, 64, 48,
     F_CAP | F_BIAS | F_MASK | F_KVLEN | F_RMS | F_GAINS | F_CAUSAL | F_BR | F_STATS},
    {"everything_cosine", 2, 4, 4, 63, 65, 32, 64,
     F_EXPL | F_WIN2 | F_CAP | F_MASK | F_BIAS | F_BCAST | F_L2T | F_GAINS | F_STATS},
    {"rms_gain", 1, 2, 2, 65, 65, 64, 64, F_RMS | F_GAINS},
    {"layer_norm", 1, 2, 2, 65, 65, 64, 64, F_LAYER | F_GAINS | F_CAUSAL},
    {"cosine_temp_stats", 1, 4, 4, 65, 65, 64, 64, F_L2T | F_STATS},
    {"temp_only", 1, 2, 2, 63, 65, 64, 64, F_TEMP},
    {"scale2_saturated_stats", 1, 2, 2, 65, 65, 64, 64, F_SCALE2 | F_STATS},
    {"hot_mup_stats", 1, 2, 2, 65, 300, 64, 64, F_HOT | F_MUP | F_STATS | F_CAUSAL},
    {"bshd", 2, 4, 2, 65, 65, 64, 64, F_BSHD | F_CAUSAL},
    /* storage dtypes */
    {"plain_stats", 2, 2, 2, 65, 63, 64, 64, F_STATS | F_ALLDT},
    {"gqa_bshd_br", 2, 4, 2, 7, 257, 32, 32, F_CAUSAL | F_BR | F_BSHD | F_ALLDT},
    {"features_d128_dv64", 1, 2, 1, 63, 65, 128, 64,
     F_MASK | F_BIAS | F_CAP | F_RMS | F_GAINS | F_ALLDT},
    {"d256_len65", 1, 1, 1, 65, 65, 256, 256, F_ALLDT},
    {"f16", 1, 4, 2, 65, 257, 64, 64, F_F16 | F_CAUSAL},
    {"f16_d128_len1000", 1, 1, 1, 1000, 1000, 128, 128, F_F16},
    {"f16_window_mask_len1000", 1, 1, 1, 1000, 1000, 64, 64, F_F16 | F_WIN | F_MASK},
    {"bf16", 1, 4, 2, 65, 257, 128, 128, F_BF16},
    {"f16_features", 2, 2, 2, 63, 63, 64, 64, F_F16 | F_MASK | F_BIAS | F_CAP},
    /* decode shapes */
    {"decode_gqa", 2, 8, 2, 1, 1000, 128, 128, F_KVLEN},
    {"decode_long", 1, 4, 1, 1, 4100, 64, 64, 0},
    {"decode_window", 1, 4, 4, 3, 2000, 64, 64, F_EXPL | F_WIN},
    {"decode_kvlen_br_bias_stats", 3, 2, 2, 1, 1000, 128, 128,
     F_KVLEN | F_CAUSAL | F_BR | F_BIAS | F_STATS},
    {"decode_f16_window_stats", 1, 2, 2, 1, 1000, 64, 64, F_F16 | F_WIN | F_BR | F_STATS},
    {"decode_bf16_stats", 1, 4, 2, 2, 1000, 64, 64, F_BF16 | F_STATS},
    /* K/V streamed in their dtype (the cpu backend's dots_kv/pv_kv): 4- and
     * 5-row groups, head sizes with vector tails, GQA, f32/f16/bf16, causal
     * + kv_len */
    {"decode_f16_gqa", 1, 8, 2, 1, 1000, 128, 128, F_F16 | F_KVLEN},
    {"decode_f16_tails", 2, 10, 2, 1, 333, 70, 37, F_F16 | F_CAUSAL},
    {"decode_bf16_tails", 1, 10, 2, 3, 130, 23, 81, F_BF16},
    {"decode_f32_tails", 1, 6, 2, 1, 200, 9, 130, F_KVLEN},
};
const int tparity_n_fcases = (int)(sizeof tparity_fcases / sizeof tparity_fcases[0]);

const fcase tparity_bcases[] = {
    {"b_basic", 1, 2, 2, 65, 63, 64, 64, F_ALLDT},
    {"b_len1", 2, 2, 1, 1, 7, 32, 32, 0},
    {"b_causal_gqa", 2, 4, 2, 65, 130, 64, 48, F_CAUSAL | F_BR},
    {"b_len257_d128", 1, 1, 1, 257, 257, 128, 128, F_CAUSAL},
    {"b_d256", 1, 1, 1, 63, 65, 256, 256, 0},
    {"b_window", 1, 2, 2, 100, 100, 64, 64, F_WIN2},
    {"b_softcap_bias_mask", 2, 2, 2, 65, 65, 64, 64, F_CAP | F_BIAS | F_MASK | F_BCAST},
    {"b_mask_sparse", 2, 2, 2, 63, 65, 64, 64, F_MASK | F_SPARSE},
    {"b_kvlen", 3, 2, 2, 40, 90, 64, 64, F_KVLEN | F_CAUSAL | F_BR},
    {"b_rms_gains", 1, 4, 2, 65, 65, 64, 64, F_RMS | F_GAINS | F_CAUSAL},
    {"b_layer_gains", 1, 2, 2, 33, 40, 64, 64, F_LAYER | F_GAINS},
    {"b_cosine_temp", 1, 4, 2, 65, 65, 64, 64, F_L2T | F_GAINS},
    {"b_temp_only", 1, 2, 2, 63, 65, 64, 64, F_TEMP},
    {"b_everything", 2, 4, 2, 50, 70, 64, 32,
     F_CAP | F_BIAS | F_MASK | F_KVLEN | F_RMS | F_GAINS | F_CAUSAL | F_BR},
    {"b_f16", 1, 2, 2, 65, 65, 64, 64, F_F16 | F_CAUSAL},
    {"b_bf16_gqa", 1, 4, 2, 63, 65, 64, 64, F_BF16},
    {"b_bshd_explicit", 2, 2, 2, 30, 80, 64, 64, F_BSHD | F_EXPL | F_WIN},
    {"b_bshd_dv", 1, 4, 2, 65, 63, 128, 64, F_BSHD | F_CAUSAL},
    {"b_explicit_empty", 1, 2, 2, 40, 60, 32, 32, F_EXPL | F_WIN},
    {"b_decode", 1, 8, 2, 1, 1000, 128, 128, 0},
    {"b_len1000", 1, 1, 1, 1000, 1000, 32, 32, F_CAUSAL},
};
const int tparity_n_bcases = (int)(sizeof tparity_bcases / sizeof tparity_bcases[0]);

const fcase *tparity_fcase(const char *name)
{
    return fcase_find(tparity_fcases, tparity_n_fcases, name);
}

const fcase *tparity_bcase(const char *name)
{
    return fcase_find(tparity_bcases, tparity_n_bcases, name);
}
