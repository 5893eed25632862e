/*
 * tfeatures.h — parity of the issue-19 inputs (ALiBi, sinks and dsinks, a
 * K/V dtype other than q's, q8_0 / q4_0 K/V, paged K/V) between a backend
 * and the reference backend: a random problem with the case's features,
 * every output poisoned with NaN before each run, the same descriptor run on
 * both contexts, out / lse / stats (and dq / dk / dv / dsinks) compared.
 * The reference implements every feature (docs/semantics.md is its code), so
 * the comparison is with the library's own oracle; the independent float64
 * oracle is gen_wave2.c's (the conformance suite). Used by test_vulkan.c and
 * test_opencl.c (the CPU-style and, under SDPA_TEST_PERSONA, GPU-class kernels).
 */
#ifndef SDPA_TESTS_TFEATURES_H
#define SDPA_TESTS_TFEATURES_H

#include "testutil.h"

typedef struct tfcase {
    const char *name;
    sdpa_dtype qdt, kvdt;          /* q / out / dout / dq, and K / V / dK / dV */
    int64_t B, Hq, Hkv, D, Dv;     /* D, Dv multiples of 32 with a block type */
    sdpa_diagonal diagonal;        /* TOP_LEFT with wl = wr = -1: no band */
    int64_t offset, wl, wr;        /* EXPLICIT offset; window (-1 unbounded) */
    double softcap;
    bool alibi, sinks;             /* sinks: head 1 has -inf (no sink) */
    bool kv_len;                   /* random kv_len (always with pages) */
    bool stats;                    /* request the statistics output */
    int64_t page;                  /* > 0: paged K/V, this many slots per page */
} tfcase;

/* Runs case c at Sq queries x Skv keys (paged: Skv rounded up to whole
 * pages) on ctx with plan options opts (may be NULL; SDPA_PLAN_BACKWARD is
 * added when `backward`) and on ref, and asserts (ck_assert) that every
 * output agrees within the bounds of c's dtypes and was written. */
void tfeatures_parity(sdpa_context *ctx, sdpa_context *ref, const tfcase *c, int64_t Sq,
                      int64_t Skv, bool backward, const sdpa_plan_options *opts, uint64_t seed);
/* The same; `info` (if not NULL) receives ctx's plan info. */
void tfeatures_parity_info(sdpa_context *ctx, sdpa_context *ref, const tfcase *c, int64_t Sq,
                           int64_t Skv, bool backward, const sdpa_plan_options *opts,
                           uint64_t seed, sdpa_plan_info *info);

/* Plans d on ctx (options opts, NULL = defaults; `backward` adds
 * SDPA_PLAN_BACKWARD and runs the backward with g), runs it and finishes,
 * asserting each call succeeds (messages name `name` and the context's
 * last error); info (if not NULL) gets the plan's info. */
void tfeatures_run(sdpa_context *ctx, sdpa_attention_desc *d, sdpa_backward_tensors *g,
                   bool backward, const sdpa_plan_options *opts, sdpa_plan_info *info,
                   const char *name);

#endif /* SDPA_TESTS_TFEATURES_H */
