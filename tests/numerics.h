/*
 * numerics.h — what the numerics suite's files share: the backends it loops
 * over, the float64 reference context of the running test (set by the
 * fixture in test_numerics.c), a context for loop index i, and one
 * forward (+ backward) run. Each extra file adds its tests to a TCase of
 * its own (named in test_numerics.c's main, with the same fixture) through
 * its numerics_add_* function.
 */
#ifndef SDPA_TEST_NUMERICS_H
#define SDPA_TEST_NUMERICS_H

#include "testutil.h"

#define N_KINDS 4
extern const sdpa_backend_kind k_kinds[N_KINDS];
extern sdpa_context *g_ref;

/* The context of backend k_kinds[i], or NULL (with a note) when it does not
 * start here (only OpenCL / Vulkan may be missing). */
sdpa_context *backend_ctx(int i, const char *test);
/* Plan, poison the outputs, forward (and backward), finish. */
void run(sdpa_context *ctx, tproblem *p, bool backward);

/* numerics_saturation.c: statistics of saturated rows against the reference. */
void numerics_add_saturation(TCase *t);
/* numerics_grad_nonfinite.c: NaN/Inf placements in the backward. */
void numerics_add_grad_nonfinite(TCase *t);

#endif
