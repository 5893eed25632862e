/*
 * featparity.h — parity of the issue-19 features (ALiBi, sinks and dsinks,
 * a K/V dtype other than q's, q8_0 / q4_0 and paged K/V) between a backend
 * and the float64 reference backend, which implements every feature (its
 * own tests check it against closed forms and tests/gen_wave2.c's oracle).
 * Both run the same descriptor on the same host inputs (random, no zeros;
 * quantized blocks with random scales and integers; pages in a shuffled
 * pool with a few unused ones); the outputs start as NaN (poisoned). Used by
 * tests/test_opencl.c (the CPU-style and, under SDPA_TEST_PERSONA, the
 * GPU-class kernels); any device suite may run its rows.
 */
#ifndef TEST_FEATPARITY_H
#define TEST_FEATPARITY_H

#include "testutil.h"

typedef struct fpcase {
    const char *name;
    sdpa_dtype qdt, kvdt;  /* q / out storage; K/V storage (f32, f16, bf16, q8_0, q4_0) */
    bool alibi, sinks;     /* sinks: head 1 has -inf (no sink) */
    int page;              /* > 0: paged K/V, pages of this many keys */
    bool causal;           /* bottom-right causal band */
    bool kv_len;           /* random kv_len per batch (always with pages) */
    bool stats;            /* statistics output */
    int64_t B, Hq, Hkv, D, Dv;
} fpcase;

/* Runs c with Sq queries over Skv keys (paged: Skv rounded up to whole
 * pages) forward (and, with `backward`, backward with dsinks when c has
 * sinks) on ctx and on ref, plan options `po` (NULL = defaults) on ctx,
 * and asserts out, lse, stats, dq, dk, dv and dsinks agree within the
 * storage dtypes' bounds, non-finite values exactly. When `info` is not
 * NULL it receives ctx's plan info. */
void fp_check(sdpa_context *ctx, sdpa_context *ref, const fpcase *c, int64_t Sq, int64_t Skv,
              bool backward, uint64_t seed, const sdpa_plan_options *po, sdpa_plan_info *info);

/* Plans d on ctx (options po, NULL = defaults; `backward` adds
 * SDPA_PLAN_BACKWARD and runs the backward with g), runs it and finishes,
 * asserting each call succeeds; info (if not NULL) gets the plan's info. */
void fp_run(sdpa_context *ctx, sdpa_attention_desc *d, sdpa_backward_tensors *g,
            bool backward, const sdpa_plan_options *po, sdpa_plan_info *info, const char *name);

#endif
