/*
 * test_faults.c — fault-injection walk (built only with -Dfault_injection=true).
 *
 * For every backend that starts here (reference, cpu, and opencl / vulkan when
 * compiled in and they have a device) the walk arms fault N = 1, 2, ... and
 * runs one complete job: context create, plan create (with the backward),
 * forward, backward, finish. The N-th fault site reached (a backend call
 * through src/core/dispatch.c, sdpa__malloc / sdpa__calloc, a host buffer
 * allocation) pretends to fail. For each N the test asserts:
 *   - the failing call returned an error status (never OK with wrong data):
 *     OUT_OF_MEMORY for allocation sites; for dispatch sites the context's
 *     last_error message names the site ("injected fault at forward");
 *   - or, when every call succeeded although a fault fired (a failure the
 *     library absorbs: none are expected on an explicit backend), that the
 *     results are still correct — such sites are counted and printed;
 *   - the context (and the plan, when it was created) stays usable: after
 *     disarming, the same plan and a fresh plan on the same context give the
 *     reference answer;
 *   - nothing leaks: scripts/hardening.sh runs this suite under ASan/LSan
 *     with CK_FORK=no, so a leak fails the process.
 * The walk ends at the first N that no site reaches; the number of fault
 * points per backend is printed ("fault walk <backend>: ..."). A second test
 * checks AUTO's CPU fallback when a device backend's plan_create fails.
 *
 * Run time: under 1 s for reference + cpu (ASan build); ~70 s each for
 * OpenCL (PoCL) and Vulkan (lavapipe) without sanitizers, 50 fault points each.
 */
#include "testutil.h"

#include "internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_WALK 4000

static const sdpa_backend_kind k_kinds[] = {SDPA_BACKEND_REFERENCE, SDPA_BACKEND_CPU,
                                            SDPA_BACKEND_OPENCL, SDPA_BACKEND_VULKAN};
#define N_KINDS ((int)(sizeof k_kinds / sizeof k_kinds[0]))

/* Log capture: context creation failures are reported only through the log
 * (there is no context to ask), so the walk records the last ERROR line. */
static char g_log[1024];
static void capture_log(void *user, sdpa_log_level level, const char *msg)
{
    (void)user;
    if (level == SDPA_LOG_ERROR) snprintf(g_log, sizeof g_log, "%s", msg);
}

static sdpa_status make_context(sdpa_backend_kind kind, const char *device, sdpa_context **ctx)
{
    sdpa_context_options o;
    sdpa_context_options_init(&o);
    o.backend = kind;
    o.device = device;
    o.threads = 2;
    o.log_level = SDPA_LOG_ERROR;
    o.log_fn = capture_log;
    return sdpa_context_create(&o, ctx);
}

static void small_case(tcase *c)
{
    /* Ragged sizes, GQA, bias and mask so staging and every optional input
     * path are exercised, yet small enough for thousands of runs. */
    tcase_init(c, "fault", 2, 2, 1, 7, 9, 32, 16);
    c->bias = true;
    c->mask = true;
    c->mask_broadcast = true;
    c->lse = true;
    c->seed = 42;
}

/* Expected outputs of the small case, computed once on a clean reference. */
typedef struct expected {
    tproblem p;
} expected;

static void compute_expected(expected *e)
{
    tcase c;
    small_case(&c);
    tproblem_make(&e->p, &c);
    sdpa__fault_arm(0);
    sdpa_context *ref = tcontext(SDPA_BACKEND_REFERENCE, NULL);
    ck_assert_ptr_nonnull(ref);
    sdpa_plan_options o;
    sdpa_plan_options_init(&o);
    o.flags = SDPA_PLAN_BACKWARD;
    sdpa_plan *plan = NULL;
    ck_assert_int_eq(sdpa_plan_create(ref, &e->p.desc, &o, &plan), SDPA_OK);
    ck_assert_int_eq(sdpa_plan_forward(plan, &e->p.desc.tensors), SDPA_OK);
    ck_assert_int_eq(sdpa_plan_backward(plan, &e->p.desc.tensors, &e->p.bwd), SDPA_OK);
    sdpa_plan_destroy(plan);
    sdpa_context_destroy(ref);
}

static void expect_matches(const expected *e, const tproblem *got, const char *what,
                           sdpa_backend_kind kind, int64_t n)
{
    double b = 1e-3;
    struct { const char *name; const void *g, *w; size_t n; } outs[] = {
        {"out", got->out, e->p.out, got->n_out},
        {"lse", got->lse, e->p.lse, (size_t)(got->c.B * got->c.Hq * got->c.Sq)},
        {"dq", got->dq, e->p.dq, got->n_q},
        {"dk", got->dk, e->p.dk, got->n_k},
        {"dv", got->dv, e->p.dv, got->n_v},
    };
    for (size_t i = 0; i < sizeof outs / sizeof outs[0]; i++) {
        tcompare r = tcompare_arrays(outs[i].g, SDPA_DTYPE_F32, outs[i].w, SDPA_DTYPE_F32,
                                     outs[i].n);
        ck_assert_msg(r.bad_nonfinite == 0 && r.max_abs <= b,
                      "%s, fault %lld: %s after %s differs from the reference (max_abs %.3g, "
                      "%zu non-finite)", sdpa_backend_name(kind), (long long)n, outs[i].name,
                      what, r.max_abs, r.bad_nonfinite);
    }
}

/* Runs plan forward + backward (+ finish) with poisoned outputs; status of the
 * first failing call. */
static sdpa_status run_plan(sdpa_context *ctx, sdpa_plan *plan, tproblem *p, int *step)
{
    sdpa_status st;
    tproblem_poison(p);
    *step = 2;
    if ((st = sdpa_plan_forward(plan, &p->desc.tensors)) != SDPA_OK) return st;
    *step = 3;
    if ((st = sdpa_plan_backward(plan, &p->desc.tensors, &p->bwd)) != SDPA_OK) return st;
    *step = 4;
    return sdpa_context_finish(ctx);
}

static const char *const k_steps[] = {"context create", "plan create", "forward", "backward",
                                      "finish"};

static bool is_alloc_site(const char *site)
{
    return !strcmp(site, "malloc") || !strcmp(site, "calloc") || !strcmp(site, "aligned_alloc") ||
           !strcmp(site, "buffer_alloc");
}

typedef struct walk_stats {
    int64_t points, failed, absorbed, max_seen;
    char absorbed_sites[512];
    int per_step[5];
} walk_stats;

/* One iteration of the walk. Returns false when no fault fired (walk done). */
static bool walk_once(sdpa_backend_kind kind, const char *device, const expected *e,
                      int64_t n, walk_stats *ws)
{
    tcase c;
    small_case(&c);
    tproblem p;
    tproblem_make(&p, &c);
    sdpa_plan_options po;
    sdpa_plan_options_init(&po);
    po.flags = SDPA_PLAN_BACKWARD;

    g_log[0] = '\0';
    sdpa_context *ctx = NULL;
    sdpa_plan *plan = NULL;
    int step = 0;
    sdpa__fault_arm(n);
    sdpa_status st = make_context(kind, device, &ctx);
    if (st == SDPA_OK) {
        step = 1;
        st = sdpa_plan_create(ctx, &p.desc, &po, &plan);
        if (st == SDPA_OK) st = run_plan(ctx, plan, &p, &step);
    }
    int64_t seen = sdpa__fault_count();
    char site[64];
    snprintf(site, sizeof site, "%s", sdpa__fault_last_site());
    sdpa__fault_arm(0);
    if (seen > ws->max_seen) ws->max_seen = seen;
    bool hit = site[0] != '\0';

    if (hit) {
        ws->points++;
        if (st == SDPA_OK) {
            /* Absorbed: the job must still be right. */
            ws->absorbed++;
            if (!strstr(ws->absorbed_sites, site) &&
                strlen(ws->absorbed_sites) + strlen(site) + 2 < sizeof ws->absorbed_sites) {
                strcat(ws->absorbed_sites, " ");
                strcat(ws->absorbed_sites, site);
            }
            expect_matches(e, &p, "an absorbed fault", kind, n);
        } else {
            ws->failed++;
            ws->per_step[step]++;
            const char *msg = g_log;
            sdpa_error_info info;
            if (ctx) {
                ck_assert_int_eq(sdpa_context_last_error(ctx, &info), SDPA_OK);
                ck_assert_int_eq(info.status, st);
                msg = info.message;
            }
            /* A failed allocation of the context itself has no sink to log
             * through: then the status alone must say it. */
            bool silent_ok = !ctx && is_alloc_site(site) && !msg[0];
            ck_assert_msg(silent_ok || (msg && msg[0]),
                          "%s, fault %lld at %s (%s): status %s without a message",
                          sdpa_backend_name(kind), (long long)n, site, k_steps[step],
                          sdpa_status_name(st));
            if (is_alloc_site(site)) {
                ck_assert_msg(st == SDPA_ERR_OUT_OF_MEMORY,
                              "%s, fault %lld: allocation failure at %s (%s) came back as %s (%s)",
                              sdpa_backend_name(kind), (long long)n, site, k_steps[step],
                              sdpa_status_name(st), msg);
            }
            if (!silent_ok && strcmp(site, "malloc") && strcmp(site, "calloc") &&
                strcmp(site, "aligned_alloc")) {
                ck_assert_msg(strstr(msg, site) != NULL,
                              "%s, fault %lld at %s (%s): message does not name the site: %s",
                              sdpa_backend_name(kind), (long long)n, site, k_steps[step], msg);
            }
        }
    } else {
        ck_assert_msg(st == SDPA_OK, "%s: clean run (N=%lld) failed at %s: %s (%s)",
                      sdpa_backend_name(kind), (long long)n, k_steps[step], sdpa_status_name(st),
                      g_log);
        expect_matches(e, &p, "a clean run", kind, n);
    }

    /* Usability after the failure: the same plan again, then a fresh plan. */
    if (plan && st != SDPA_OK) {
        int s2;
        sdpa_status again = run_plan(ctx, plan, &p, &s2);
        ck_assert_msg(again == SDPA_OK, "%s, fault %lld at %s: plan unusable afterwards: %s",
                      sdpa_backend_name(kind), (long long)n, site, sdpa_status_name(again));
        expect_matches(e, &p, "re-running the plan", kind, n);
    }
    sdpa_plan_destroy(plan);
    if (ctx && hit) {
        sdpa_plan *fresh = NULL;
        ck_assert_int_eq(sdpa_plan_create(ctx, &p.desc, &po, &fresh), SDPA_OK);
        int s2;
        sdpa_status again = run_plan(ctx, fresh, &p, &s2);
        ck_assert_msg(again == SDPA_OK, "%s, fault %lld at %s: context unusable afterwards: %s",
                      sdpa_backend_name(kind), (long long)n, site, sdpa_status_name(again));
        expect_matches(e, &p, "a fresh plan", kind, n);
        sdpa_plan_destroy(fresh);
    }
    sdpa_context_destroy(ctx);
    tproblem_free(&p);
    return hit;
}

START_TEST(fault_walk)
{
    sdpa_backend_kind kind = k_kinds[_i];
    sdpa__fault_arm(0);
    sdpa_context *probe = NULL;
    sdpa_status st = make_context(kind, NULL, &probe);
    if (st != SDPA_OK) {
        printf("fault walk %s: skipped (backend %s: %s)\n", sdpa_backend_name(kind),
               sdpa_backend_compiled(kind) ? "compiled but no context" : "not compiled",
               sdpa_status_name(st));
        ck_assert(kind == SDPA_BACKEND_OPENCL || kind == SDPA_BACKEND_VULKAN);
        return;
    }
    sdpa_context_destroy(probe);

    expected e;
    compute_expected(&e);
    walk_stats ws;
    memset(&ws, 0, sizeof ws);
    int64_t n = 1;
    while (walk_once(kind, NULL, &e, n, &ws)) {
        n++;
        ck_assert_msg(n < MAX_WALK, "%s: more than %d fault points", sdpa_backend_name(kind),
                      MAX_WALK);
    }
    printf("fault walk %s: %lld fault points (%lld sites in a clean job); %lld failed cleanly "
           "(context %d, plan %d, forward %d, backward %d, finish %d); %lld absorbed%s%s\n",
           sdpa_backend_name(kind), (long long)ws.points, (long long)ws.max_seen,
           (long long)ws.failed, ws.per_step[0], ws.per_step[1], ws.per_step[2],
           ws.per_step[3], ws.per_step[4], (long long)ws.absorbed,
           ws.absorbed ? " at:" : "", ws.absorbed_sites);
    fflush(stdout);
    /* Every job reaches at least context_init, plan_create, forward, backward. */
    ck_assert_int_ge(ws.points, 4);
    /* An explicit backend has no fallback: every fault must surface. */
    ck_assert_msg(ws.absorbed == 0, "%s absorbed %lld faults at:%s", sdpa_backend_name(kind),
                  (long long)ws.absorbed, ws.absorbed_sites);
    tproblem_free(&e.p);
}
END_TEST

/* AUTO on a device backend: a device that cannot build the plan hands it to
 * the CPU (DESIGN section 9). Needs an OpenCL or Vulkan device selected by name. */
START_TEST(fault_auto_fallback)
{
    sdpa_backend_kind kind = _i == 0 ? SDPA_BACKEND_OPENCL : SDPA_BACKEND_VULKAN;
    sdpa__fault_arm(0);
    int count = 0;
    sdpa_device_info info;
    memset(&info, 0, sizeof info);
    info.struct_size = sizeof info;
    if (!sdpa_backend_compiled(kind) || sdpa_device_count(kind, &count) != SDPA_OK ||
        count == 0 || sdpa_device_get_info(kind, 0, &info) != SDPA_OK) {
        printf("fault auto fallback %s: skipped (no device)\n", sdpa_backend_name(kind));
        return;
    }
    sdpa_context *ctx = NULL;
    if (make_context(SDPA_BACKEND_AUTO, info.name, &ctx) != SDPA_OK ||
        sdpa_context_backend(ctx) != kind) {
        printf("fault auto fallback %s: skipped (AUTO did not pick it)\n",
               sdpa_backend_name(kind));
        sdpa_context_destroy(ctx);
        return;
    }
    expected e;
    compute_expected(&e);
    tproblem p;
    tproblem_make(&p, &e.p.c);
    sdpa_plan_options po;
    sdpa_plan_options_init(&po);
    po.flags = SDPA_PLAN_BACKWARD;
    int tested = 0;
    for (int64_t n = 1; n < 200; n++) {
        sdpa_plan *plan = NULL;
        sdpa__fault_arm(n);
        sdpa_status st = sdpa_plan_create(ctx, &p.desc, &po, &plan);
        char site[64];
        snprintf(site, sizeof site, "%s", sdpa__fault_last_site());
        sdpa__fault_arm(0);
        if (!site[0]) {
            sdpa_plan_destroy(plan);
            break;
        }
        if (!strcmp(site, "plan_create") && !tested) {
            /* The first plan_create reached is the device's: AUTO must fall back. */
            ck_assert_msg(st == SDPA_OK, "AUTO on %s: plan_create fault not absorbed: %s",
                          sdpa_backend_name(kind), sdpa_status_name(st));
            sdpa_plan_info pi;
            memset(&pi, 0, sizeof pi);
            pi.struct_size = sizeof pi;
            ck_assert_int_eq(sdpa_plan_get_info(plan, &pi), SDPA_OK);
            ck_assert_int_eq(pi.backend, SDPA_BACKEND_CPU);
            int s;
            ck_assert_int_eq(run_plan(ctx, plan, &p, &s), SDPA_OK);
            expect_matches(&e, &p, "AUTO fallback", kind, n);
            tested = 1;
        }
        sdpa_plan_destroy(plan);
    }
    ck_assert_msg(tested, "AUTO on %s: plan_create site never reached", sdpa_backend_name(kind));
    printf("fault auto fallback %s: plan_create fault fell back to the CPU\n",
           sdpa_backend_name(kind));
    sdpa_context_destroy(ctx);
    tproblem_free(&p);
    tproblem_free(&e.p);
}
END_TEST

/* The hooks themselves: arming counts and fires exactly once. */
START_TEST(fault_hooks)
{
    sdpa__fault_arm(2);
    void *a = sdpa__malloc(16);
    void *b = sdpa__malloc(16);
    void *c = sdpa__malloc(16);
    ck_assert_ptr_nonnull(a);
    ck_assert_ptr_null(b);
    ck_assert_ptr_nonnull(c);
    ck_assert_int_eq(sdpa__fault_count(), 3);
    ck_assert_str_eq(sdpa__fault_last_site(), "malloc");
    sdpa__fault_arm(0);
    ck_assert_str_eq(sdpa__fault_last_site(), "");
    free(a);
    free(c);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("faults");
    TCase *t = tcase_create("walk");
    tcase_set_timeout(t, 1800);
    tcase_add_test(t, fault_hooks);
    tcase_add_loop_test(t, fault_walk, 0, N_KINDS);
    tcase_add_loop_test(t, fault_auto_fallback, 0, 2);
    suite_add_tcase(s, t);
    return trun_suite(s);
}
