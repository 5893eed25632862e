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
 * fault_tune_walk (below) walks a tiny sdpa_tune run the same way.
 *
 * Run time: under 1 s for reference + cpu + the tuning walk (ASan build); ~70 s each for
 * OpenCL (PoCL) and Vulkan (lavapipe) without sanitizers, 50 fault points each.
 */
#include "testutil.h"

#include "internal.h"
#include "../src/tune/search.h"

#include <dirent.h>
#include <unistd.h>

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
    /* An explicit backend has no fallback: every fault must surface, but for
     * an OpenCL launch refused for resources, which is retried once on a
     * smaller configuration by design (docs/opencl.md; results checked above). */
    ck_assert_msg(ws.absorbed == 0 || strcmp(ws.absorbed_sites, " clEnqueueNDRangeKernel") == 0,
                  "%s absorbed %lld faults at:%s", sdpa_backend_name(kind),
                  (long long)ws.absorbed, ws.absorbed_sites);
    tproblem_free(&e.p);
}
END_TEST

/* AUTO on a device backend: a device that cannot build the plan hands it to
 * the CPU (docs/reliability.md). Needs an OpenCL or Vulkan device selected by name. */
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

/* ---- tuning walk ----------------------------------------------------------
 * A tiny sdpa_tune run on the cpu backend (all its candidates, budget 1 s,
 * repeats 1, warmup 0, write_profile 1, a fresh profile directory per N),
 * walked over N = 1, 2, ... until a run reaches no armed site. For each N:
 *   - a failing run returns a non-OK status and the context's last error
 *     (same status) carries a message;
 *   - SDPA_OK despite a fault only where src/tune absorbs it by design: a
 *     fault inside a candidate's check or measurement rejects that candidate
 *     (result.rejected > 0, the fault fired before the last candidate's
 *     progress call), or a fault in the final interleaved re-measurement,
 *     which keeps the first measurements (fired after the last progress call,
 *     nothing rejected);
 *   - the profile file is absent, or every line parses as a record (the store
 *     writes a temp file and renames it: no torn write, no temp file left);
 *     after an OK run it exists and holds the tuned bucket;
 *   - the context stays usable: a clean forward afterwards matches the
 *     reference; nothing leaks (ASan/LSan in scripts/hardening.sh). */
static void tune_case(tcase *c)
{
    tcase_init(c, "tune", 1, 2, 1, 5, 9, 16, 16);
    c->seed = 7;
}

static int64_t g_tune_progress_seen; /* sdpa__fault_count() at the last progress call */
static void tune_progress(void *user, const sdpa_tune_progress *pr)
{
    (void)user;
    (void)pr;
    g_tune_progress_seen = sdpa__fault_count();
}

/* Checks the directory: no temp file left; the profile absent or every line a
 * valid record. Returns the number of records; removes everything. */
static int check_and_clear_profile_dir(const char *dir, const char *profile, int64_t n)
{
    int records = 0;
    FILE *f = fopen(profile, "rb");
    if (f) {
        char line[16384];
        int lineno = 0;
        while (fgets(line, sizeof line, f)) {
            lineno++;
            size_t len = strlen(line);
            ck_assert_msg(len > 0 && line[len - 1] == '\n',
                          "tune fault %lld: profile line %d is torn or too long", (long long)n,
                          lineno);
            line[--len] = '\0';
            if (!len) continue;
            sdpa__profile_record r;
            const char *why = NULL;
            ck_assert_msg(sdpa__profile_record_parse(line, len, &r, &why),
                          "tune fault %lld: profile line %d does not parse (%s): %s",
                          (long long)n, lineno, why ? why : "?", line);
            records++;
        }
        fclose(f);
    }
    DIR *d = opendir(dir);
    ck_assert_ptr_nonnull(d);
    struct dirent *de;
    while ((de = readdir(d))) {
        if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..")) continue;
        ck_assert_msg(!strstr(de->d_name, ".tmp."), "tune fault %lld: temp file %s left behind",
                      (long long)n, de->d_name);
        char path[4200];
        snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
        unlink(path);
    }
    closedir(d);
    return records;
}

typedef struct tune_stats {
    int64_t points, failed, rejected_ok, remeasure_ok;
    int candidates;
} tune_stats;

static bool tune_walk_once(const tproblem *want, int64_t n, tune_stats *ts)
{
    char tmpl[] = "/tmp/sdpa-test-faults-tune-XXXXXX";
    char *dir = mkdtemp(tmpl);
    ck_assert_ptr_nonnull(dir);
    sdpa__fault_arm(0);
    sdpa_context_options co;
    sdpa_context_options_init(&co);
    co.backend = SDPA_BACKEND_CPU;
    co.threads = 2;
    co.log_level = SDPA_LOG_ERROR;
    co.log_fn = capture_log;
    co.profile_dir = dir;
    sdpa_context *ctx = NULL;
    ck_assert_int_eq(sdpa_context_create(&co, &ctx), SDPA_OK);
    char profile[4096];
    snprintf(profile, sizeof profile, "%s", sdpa_context_profile_path(ctx));
    ck_assert_msg(profile[0] && !strncmp(profile, dir, strlen(dir)),
                  "profile path %s is not under %s", profile, dir);

    tcase c;
    tune_case(&c);
    tproblem p;
    tproblem_make(&p, &c);
    sdpa_tune_options o;
    sdpa_tune_options_init(&o);
    o.budget_s = 1.0;
    o.repeats = 1;
    o.warmup = 0;
    o.write_profile = 1;
    o.progress = tune_progress;
    sdpa_tune_result res = {.struct_size = sizeof res};
    g_tune_progress_seen = 0;
    sdpa__fault_arm(n);
    sdpa_status st = sdpa_tune(ctx, &p.desc, &o, &res);
    char site[64];
    snprintf(site, sizeof site, "%s", sdpa__fault_last_site());
    int64_t at_last_progress = g_tune_progress_seen;
    sdpa__fault_arm(0);
    bool hit = site[0] != '\0';
    if (res.candidates > ts->candidates) ts->candidates = res.candidates;

    if (st != SDPA_OK) {
        ck_assert_msg(hit, "tune without a fault (N=%lld) failed: %s", (long long)n,
                      sdpa_status_name(st));
        ts->failed++;
        sdpa_error_info info;
        ck_assert_int_eq(sdpa_context_last_error(ctx, &info), SDPA_OK);
        ck_assert_msg(info.status == st && info.message && info.message[0],
                      "tune fault %lld at %s: status %s, last error %s without a message",
                      (long long)n, site, sdpa_status_name(st), sdpa_status_name(info.status));
        if (is_alloc_site(site) && n > at_last_progress)
            ck_assert_msg(st == SDPA_ERR_OUT_OF_MEMORY || st == SDPA_ERR_IO,
                          "tune fault %lld: allocation failure at %s came back as %s (%s)",
                          (long long)n, site, sdpa_status_name(st), info.message);
    } else if (hit) {
        if (n <= at_last_progress) {
            /* Inside the candidate loop: the candidate must have been rejected. */
            ck_assert_msg(res.rejected > 0,
                          "tune fault %lld at %s in the candidate loop absorbed without a "
                          "rejection", (long long)n, site);
            ts->rejected_ok++;
        } else {
            /* After the loop: only the interleaved re-measurement may absorb. */
            ck_assert_msg(res.rejected == 0 && strcmp(site, "malloc") && strcmp(site, "calloc"),
                          "tune fault %lld at %s after the candidate loop absorbed (%d rejected)",
                          (long long)n, site, res.rejected);
            ts->remeasure_ok++;
        }
        ck_assert(isfinite(res.best_ms));
    }
    if (hit) ts->points++;

    int records = check_and_clear_profile_dir(dir, profile, n);
    if (st == SDPA_OK)
        ck_assert_msg(records == 1, "tune fault %lld: OK run left %d profile records",
                      (long long)n, records);

    /* The context stays usable. */
    tproblem_poison(&p);
    sdpa_plan *plan = NULL;
    ck_assert_int_eq(sdpa_plan_create(ctx, &p.desc, NULL, &plan), SDPA_OK);
    ck_assert_int_eq(sdpa_plan_forward(plan, &p.desc.tensors), SDPA_OK);
    ck_assert_int_eq(sdpa_context_finish(ctx), SDPA_OK);
    sdpa_plan_destroy(plan);
    tcompare r = tcompare_arrays(p.out, SDPA_DTYPE_F32, want->out, SDPA_DTYPE_F32, p.n_out);
    ck_assert_msg(r.bad_nonfinite == 0 && r.max_abs <= 1e-3,
                  "tune fault %lld at %s: forward afterwards differs (max_abs %.3g)",
                  (long long)n, site, r.max_abs);
    sdpa_context_destroy(ctx);
    tproblem_free(&p);
    ck_assert_int_eq(rmdir(dir), 0);
    return hit;
}

START_TEST(fault_tune_walk)
{
    sdpa__fault_arm(0);
    tcase c;
    tune_case(&c);
    tproblem want;
    tproblem_make(&want, &c);
    sdpa_context *ref = tcontext(SDPA_BACKEND_REFERENCE, NULL);
    ck_assert_ptr_nonnull(ref);
    sdpa_plan *plan = NULL;
    ck_assert_int_eq(sdpa_plan_create(ref, &want.desc, NULL, &plan), SDPA_OK);
    ck_assert_int_eq(sdpa_plan_forward(plan, &want.desc.tensors), SDPA_OK);
    sdpa_plan_destroy(plan);
    sdpa_context_destroy(ref);

    tune_stats ts;
    memset(&ts, 0, sizeof ts);
    double t0 = sdpa__now();
    int64_t n = 1;
    while (tune_walk_once(&want, n, &ts)) {
        n++;
        ck_assert_msg(n < MAX_WALK, "tune: more than %d fault points", MAX_WALK);
    }
    printf("fault walk tune: %lld fault points (cpu, %d candidates); %lld failed cleanly; "
           "%lld absorbed by a rejected candidate; %lld absorbed by the re-measurement; %.1f s\n",
           (long long)ts.points, ts.candidates, (long long)ts.failed, (long long)ts.rejected_ok,
           (long long)ts.remeasure_ok, sdpa__now() - t0);
    fflush(stdout);
    ck_assert_int_ge(ts.points, 1);
    tproblem_free(&want);
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
    tcase_add_test(t, fault_tune_walk);
    suite_add_tcase(s, t);
    return trun_suite(s);
}
