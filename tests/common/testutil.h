/*
 * testutil.h — shared helpers for the Check suites: deterministic random
 * inputs, a "problem case" that owns every tensor of one attention call, and
 * the parity harness that runs a backend against the float64 reference with
 * poisoned outputs.
 *
 * A tcase describes one problem (shapes + features). tproblem_make() allocates
 * and fills host tensors (normal random values, never zeros; masks random with
 * a given keep rate; kv_len random in [0, Skv]); tparity_forward() and
 * tparity_backward() run it on a backend and on the reference and compare
 * every output with a per-dtype bound, reporting the worst element. Small
 * helpers shared by suites: log capture (tlog_capture) and scratch folders
 * (tmkdtemp).
 */
#ifndef SDPA_TESTUTIL_H
#define SDPA_TESTUTIL_H

#ifndef SDPA_EXPERIMENTAL
#define SDPA_EXPERIMENTAL
#endif
#include "sdpa.h"

#include <check.h>
#include <stdbool.h>
#include <stdint.h>

/* Windows (MinGW) has no setenv/unsetenv: the suites' calls go through
 * platform.h there (docs/windows.md). */
#ifdef _WIN32
#include <stdlib.h>
int sdpa__os_setenv(const char *name, const char *value);
static inline int tu_setenv(const char *name, const char *value, int overwrite)
{
    return !overwrite && getenv(name) ? 0 : sdpa__os_setenv(name, value);
}
#define setenv(name, value, overwrite) tu_setenv((name), (value), (overwrite))
#define unsetenv(name) sdpa__os_setenv((name), NULL)
#endif

/* ---- random numbers (xorshift64*, deterministic per seed) ---------------- */
typedef struct trng { uint64_t s; } trng;
void trng_seed(trng *r, uint64_t seed);
uint64_t trng_next(trng *r);
double trng_uniform(trng *r);     /* [0, 1) */
double trng_normal(trng *r);      /* N(0, 1) */

/* ---- one problem ----------------------------------------------------------- */
typedef struct tcase {
    const char *name;       /* for messages */
    int64_t B, Hq, Hkv, Sq, Skv, D, Dv;
    sdpa_dtype dtype;       /* f32 / f16 / bf16 storage */
    double scale;           /* SDPA_SCALE_DEFAULT etc. */
    sdpa_diagonal diagonal;
    int64_t diagonal_offset;
    int64_t window_left, window_right;
    double softcap;
    sdpa_qk_norm qk_norm;
    bool mask;              /* random bool mask */
    bool mask_broadcast;    /* mask shape (1,1,Sq,Skv) */
    double mask_keep;       /* keep probability (default 0.8 when 0) */
    bool bias;              /* random bias (some -inf entries) */
    bool bias_broadcast;    /* bias shape (B,1,Sq,Skv) */
    bool kv_len;            /* random kv_len per batch */
    bool gains;             /* q_gain and k_gain */
    bool temperature;       /* per-head temperature */
    bool lse, stats;        /* request these outputs */
    bool bshd;              /* q/out laid out as (B,S,H,D) through strides */
    double input_scale;     /* multiplies q and k (default 1) */
    uint64_t seed;
} tcase;

/* Fills defaults (everything off, window -1/-1, scale default, f32). */
void tcase_init(tcase *c, const char *name, int64_t B, int64_t Hq, int64_t Hkv,
                int64_t Sq, int64_t Skv, int64_t D, int64_t Dv);

/* All host memory for one problem. */
typedef struct tproblem {
    tcase c;
    sdpa_attention_desc desc;      /* tensors point at the arrays below */
    sdpa_backward_tensors bwd;
    void *q, *k, *v, *out, *dout, *dq, *dk, *dv;
    uint8_t *mask;
    float *bias, *q_gain, *k_gain, *temperature, *lse, *stats;
    float *dq_gain, *dk_gain, *dtemperature;
    int32_t *kv_len;
    size_t n_q, n_k, n_v, n_out, n_mask, n_bias; /* element counts (storage) */
} tproblem;

/* Allocates and fills the inputs; outputs are allocated and poisoned (NaN). */
void tproblem_make(tproblem *p, const tcase *c);
void tproblem_free(tproblem *p);
/* The plan ctx makes for c (no tile forced): its sdpa_plan_info, asserted
 * to be created and described. tplan_info_of: the same for a problem made
 * already, with plan options o (NULL: none); run: the plan's forward also
 * runs on p's tensors (asserted SDPA_OK), so the caller can check p's out. */
sdpa_plan_info tplan_info(sdpa_context *ctx, const tcase *c);
sdpa_plan_info tplan_info_of(sdpa_context *ctx, tproblem *p, const sdpa_plan_options *o,
                             bool run);
/* SDPA_TEST_MAX_LEN (0 when unset): the longest query length the slow
 * instrumented runs (.ci/run's sanitizer, qemu and Wine steps) ask suites to
 * run; suites say on stderr what they leave out. */
int64_t tmax_len(void);
/* Check tag (tcase_set_tags) of the device suites' numeric parity cases:
 * the OpenCL and Vulkan kernels against the float64 reference over the
 * parity table and the issue-19 features. .ci/run's sanitizer step sets
 * CK_EXCLUDE_TAGS to it: AddressSanitizer cannot see into PoCL's or
 * lavapipe's generated code, the plain test step runs these cases, and the
 * device suites' host-side cases (errors, caches, interop, refusals, the
 * short features set) still run there. */
#define TTAG_DEVICE_PARITY "device-parity"

/* Whether backend `kind` has a device, asked in a throwaway child process
 * (POSIX only; elsewhere asked in this process): suites whose parent must not
 * load a platform library (PoCL's threads do not survive Check's fork, and
 * the OpenCL suite's no_platform test needs a fresh ICD loader) ask this
 * before building their suite. */
bool tdevice_present(sdpa_backend_kind kind);
/* Fills every output (out, lse, stats, dq, dk, dv, gain grads) with NaN. */
void tproblem_poison(tproblem *p);

/* Element e of a storage-dtype array as double. */
double tload(const void *base, sdpa_dtype dtype, size_t e);
/* Stores v as element e of a storage-dtype array (round to nearest even). */
void tstore(void *base, sdpa_dtype dtype, size_t e, double v);

/* ---- comparison --------------------------------------------------------------- */
typedef struct tcompare {
    double max_abs;      /* worst |got - want| over finite wants */
    double rel_l2;       /* ||got - want|| / ||want|| */
    size_t worst;        /* index of the worst element */
    size_t bad_nonfinite;/* non-finite mismatches (inf vs inf must match) */
    size_t n;
} tcompare;
tcompare tcompare_arrays(const void *got, sdpa_dtype got_dtype, const void *want,
                         sdpa_dtype want_dtype, size_t n);

/* Asserts got agrees with want (n elements of dt): non-finite wants exactly,
 * the rest within bound * max(1, max |want|); the message names name and what. */
void texpect_close(const char *name, const char *what, const void *got, const void *want,
                   sdpa_dtype dt, size_t n, double bound);

/* Absolute error bound for a storage dtype (outputs are O(1)). */
double tbound(sdpa_dtype dtype);

/* ---- log capture and scratch folders ------------------------------------------- */

/* What tlog_capture saw: WARN and ERROR lines counted, the last one kept. */
typedef struct tlogcap {
    int warns, errors;
    char last[1024];
} tlogcap;
/* An sdpa_log_fn for sdpa_context_options.log_fn; user is a tlogcap. */
void tlog_capture(void *user, sdpa_log_level level, const char *msg);
/* A fresh folder <temp>/<prefix>-XXXXXX ($TMPDIR or /tmp; the Windows temp
 * folder; malloc'd path; the caller frees). */
char *tmkdtemp(const char *prefix);

/* ---- contexts and parity ------------------------------------------------------- */

/* A context on `kind` with logs silenced below ERROR. Returns NULL (and the
 * status in *status) when the backend is not available. */
sdpa_context *tcontext(sdpa_backend_kind kind, sdpa_status *status);

/* The backends a suite loops over (tcase_add_loop_test(t, fn, 0, TKINDS)):
 * reference, cpu, opencl, vulkan. tbackend_ctx(i, test) is a context on
 * tkinds(i), or NULL with a "skipped" note when that backend does not start
 * (only opencl / vulkan may be missing; anything else fails the test). */
#define TKINDS (SDPA_BACKEND_COUNT - SDPA_BACKEND_REFERENCE)
#define tkinds(i) ((sdpa_backend_kind)(SDPA_BACKEND_REFERENCE + (i)))
sdpa_context *tbackend_ctx(int i, const char *test);

/* A context on `kind` whose WARN and ERROR lines go to *cap (tlog_capture),
 * with cache_dir as its cache folder; asserts that it starts. */
sdpa_context *tcontext_cache(sdpa_backend_kind kind, const char *cache_dir, tlogcap *cap);

/* Runs case c forward on ctx and on a reference context, with poisoned
 * outputs, and asserts (ck_assert) out, lse and stats agree within bounds.
 * `plan_opts` may be NULL. Returns the comparison of `out`. */
tcompare tparity_forward(sdpa_context *ctx, sdpa_context *ref, const tcase *c,
                         const sdpa_plan_options *plan_opts);
/* Same for forward + backward (dq, dk, dv and the gain/temperature grads). */
tcompare tparity_backward(sdpa_context *ctx, sdpa_context *ref, const tcase *c,
                          const sdpa_plan_options *plan_opts);

/* The two halves of the parity check, for callers that change a problem
 * after tproblem_make: runs p forward (and backward) on ctx with poisoned
 * outputs, asserting every call succeeds; then asserts that got's outputs
 * agree with want's (the reference's) within the bounds above. */
void trun_problem(sdpa_context *ctx, tproblem *p, bool backward,
                  const sdpa_plan_options *plan_opts);
void texpect_parity(const tproblem *got, const tproblem *want, bool backward);

/* Runs a Check suite and returns the process exit status. */
int trun_suite(Suite *s);

/* Shorthand: value of tile parameter SDPA_TILE_<P> of configuration *t. */
#define TGET(t, P) sdpa_tile_config_get((t), SDPA_TILE_##P)

#endif /* SDPA_TESTUTIL_H */
