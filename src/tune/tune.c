/*
 * tune.c — sdpa_tune: measures the candidate configurations of one shape
 * bucket on the context's device and records the winner in the profile.
 *
 * Steps: validate the description; build the candidate space (search.c;
 * candidate 0 = the backend's default); compute the float64 reference once
 * on a small ragged instance with the same features; then, in search order
 * and within the budget, for each candidate: check it against the reference
 * (a wrong or failing candidate is rejected and listed in the record), build
 * a plan for the full-size instance in device buffers, warm up, time the
 * median of repeats; at the end the two best and the default are
 * re-measured interleaved so noise hits them alike. The winner must beat
 * the default's re-measured time, else the default is kept.
 *
 * With options.verify_exhaustive the run goes on after the winner is chosen:
 * every candidate the budget left out is measured, then the winner, the
 * sweep's fastest and the default are timed interleaved (the tuning target
 * of issue 17: within 5 % of the sweep's best, never slower than the default
 * beyond noise; sdpa-tune --verify-exhaustive reports it).
 *
 * Invariants: tuning runs only when called; a plan that falls back to another
 * backend is never measured; the budget bounds the measuring loop (one
 * candidate may overrun it by its own cost, the default is always measured).
 * Called by applications and tools/sdpa-tune.c.
 */
#include "measure.h"
#include "search.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

void sdpa_tune_options_init(sdpa_tune_options *o)
{
    if (!o) return;
    memset(o, 0, sizeof *o);
    o->struct_size = sizeof *o;
    o->budget_s = 60.0;
    o->repeats = 5;
    o->warmup = 1;
    o->write_profile = 1;
    o->seed = 1;
}

/* State of one tuning run. */
typedef struct tuner {
    sdpa_context *ctx;
    const sdpa__backend *be;
    const sdpa_tune_options *o;
    const sdpa_attention_desc *desc; /* template of the instances */
    unsigned flags;
    sdpa__problem p;
    sdpa_tile_config *cand;
    int n;
    double *ms;          /* per candidate; INFINITY = unmeasured or rejected */
    sdpa_plan **plans;   /* kept for the best two and the default only */
    sdpa__tune_instance check, timing;
    sdpa__tune_outputs want;
    double t0;
    int done, measured, rejected, fault;
    sdpa__profile_record rec;
    bool *tried;         /* checked (and measured when correct) */
    int keep;            /* a candidate whose plan prune_plans keeps (-1: none) */
    bool unbounded;      /* the verification sweep: full repeats, no budget */
} tuner;

static double elapsed(const tuner *t) { return sdpa__now() - t->t0; }

static void progress(tuner *t, int total, double best_ms, const char *current)
{
    if (!t->o->progress) return;
    sdpa_tune_progress pr = {.done = t->done, .total = total, .best_ms = best_ms,
                             .elapsed_s = elapsed(t), .budget_s = t->o->budget_s,
                             .current = current};
    t->o->progress(t->o->progress_user, &pr);
}

static void reject(tuner *t, int i, const char *why)
{
    char desc[256];
    sdpa__tile_describe(&t->cand[i], desc, sizeof desc);
    sdpa__log(t->ctx, SDPA_LOG_WARN, "tune: %s candidate %d (%s) rejected: %s", t->be->name, i,
              desc, why);
    t->rejected++;
    if (t->rec.n_rejected < SDPA__PROFILE_MAX_REJECTED) {
        sdpa__rejected *r = &t->rec.rejected[t->rec.n_rejected++];
        r->tile = t->cand[i];
        sdpa__strlcpy(r->reason, why, sizeof r->reason);
    }
}

/* Index of the best and second best measured candidates. */
static void top2(const tuner *t, int *b1, int *b2)
{
    *b1 = *b2 = -1;
    for (int i = 0; i < t->n; i++) {
        if (!isfinite(t->ms[i])) continue;
        if (*b1 < 0 || t->ms[i] < t->ms[*b1]) {
            *b2 = *b1;
            *b1 = i;
        } else if (*b2 < 0 || t->ms[i] < t->ms[*b2]) {
            *b2 = i;
        }
    }
}

/* Keeps plans of the default and the best two only. */
static void prune_plans(tuner *t)
{
    int b1, b2;
    top2(t, &b1, &b2);
    for (int i = 1; i < t->n; i++)
        if (t->plans[i] && i != b1 && i != b2 && i != t->keep) {
            sdpa_plan_destroy(t->plans[i]);
            t->plans[i] = NULL;
        }
}

/* Check one candidate on the small instance: SDPA_OK when it passes, else
 * the run's failure or SDPA_ERR_CORRUPT for wrong results (rejected). */
static sdpa_status check(tuner *t, int i)
{
    sdpa__tune_outputs got;
    sdpa_status st = sdpa__tune_run_host(t->ctx, &t->check, t->flags, &t->cand[i], &got);
    char why[160];
    if (st != SDPA_OK) {
        sdpa_error_info e;
        sdpa_context_last_error(t->ctx, &e);
        snprintf(why, sizeof why, "failed on the check input: %s (%s)", sdpa_status_name(st),
                 e.message ? e.message : "");
        reject(t, i, why);
        return st;
    }
    if (i == t->fault && got.n[SDPA__T_OUT] > 0) got.v[SDPA__T_OUT][0] += 1.0; /* test hook */
    bool ok = sdpa__tune_compare(&got, &t->want, t->p.dtype, why, sizeof why);
    sdpa__tune_outputs_free(&got);
    if (!ok) reject(t, i, why);
    return ok ? SDPA_OK : SDPA_ERR_CORRUPT;
}

/* Times candidate i (plan kept in t->plans[i]). A failure rejects the
 * candidate; the status is returned so the default's failure can end the run. */
static sdpa_status measure(tuner *t, int i, int left)
{
    sdpa_plan *plan = NULL;
    sdpa_status st = sdpa__tune_plan(t->ctx, t->be, &t->timing, t->flags, &t->cand[i], &plan);
    double first = 0;
    for (int w = 0; st == SDPA_OK && w < (t->o->warmup > 0 ? t->o->warmup : 1); w++)
        st = sdpa__tune_time(t->ctx, plan, &t->timing, &first);
    if (st != SDPA_OK) {
        char why[160];
        sdpa_error_info e;
        sdpa_context_last_error(t->ctx, &e);
        snprintf(why, sizeof why, "failed at full size: %s (%s)", sdpa_status_name(st),
                 e.message ? e.message : "");
        reject(t, i, why);
        sdpa_plan_destroy(plan);
        return st;
    }
    /* Repeats within this candidate's share of the remaining budget. */
    double share = (t->o->budget_s - elapsed(t)) / (left > 0 ? left : 1);
    int reps = t->o->repeats;
    if (!t->unbounded && first > 0 && share * 1e3 / first < reps)
        reps = (int)(share * 1e3 / first);
    if (reps < 1) reps = 1;
    double samples[64];
    if (reps > 64) reps = 64;
    int n = 0;
    if (t->o->warmup <= 0) samples[n++] = first; /* the one untimed run was timed */
    for (; st == SDPA_OK && n < reps; n++) st = sdpa__tune_time(t->ctx, plan, &t->timing, &samples[n]);
    if (st != SDPA_OK) {
        reject(t, i, "failed while timing");
        sdpa_plan_destroy(plan);
        return st;
    }
    t->ms[i] = sdpa__median(samples, n);
    t->plans[i] = plan;
    t->measured++;
    return SDPA_OK;
}

/* Two candidates that set a process-wide parameter of the backend to
 * different values (the CLBlast parameter set of unfused OpenCL plans is
 * process-wide per device: alternating would rebuild CLBlast's kernel on
 * every call and time the rebuilds, docs/opencl.md). */
static bool process_wide_conflict(const sdpa__backend *be, const sdpa_tile_config *a,
                                  const sdpa_tile_config *b)
{
    for (int i = 0; i < be->n_tile_params; i++) {
        if (!be->tile_params[i].process_wide) continue;
        int x = sdpa_tile_config_get(a, be->tile_params[i].param);
        int y = sdpa_tile_config_get(b, be->tile_params[i].param);
        if (x != SDPA_AUTO && y != SDPA_AUTO && x != y) return true;
    }
    return false;
}

/* Re-measures the best two and the default interleaved; updates ms[]
 * (the second best is left out when it conflicts with the best, above). */
static void remeasure(tuner *t)
{
    int b1, b2;
    top2(t, &b1, &b2);
    int ids[3], k = 0;
    if (t->plans[0] && isfinite(t->ms[0])) ids[k++] = 0;
    if (b1 > 0 && t->plans[b1]) ids[k++] = b1;
    if (b2 > 0 && t->plans[b2] && !process_wide_conflict(t->be, &t->cand[b2], &t->cand[b1]))
        ids[k++] = b2;
    if (k < 2) return;
    double cost = 0;
    for (int j = 0; j < k; j++) cost += t->ms[ids[j]] * 1e-3;
    double left = t->o->budget_s - elapsed(t);
    int reps = t->o->repeats;
    if (cost > 0 && left / cost < reps) reps = (int)(left / cost);
    if (reps < 1) return; /* no time left: keep the first measurements */
    if (reps > 64) reps = 64;
    double s[3][64];
    int n = 0;
    for (; n < reps; n++)
        for (int j = 0; j < k; j++)
            if (sdpa__tune_time(t->ctx, t->plans[ids[j]], &t->timing, &s[j][n]) != SDPA_OK)
                return;
    for (int j = 0; j < k; j++) t->ms[ids[j]] = sdpa__median(s[j], n);
}

static int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* (q3 - q1) / median of n samples (sorted in place). */
static double spread(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, by_value);
    double med = sdpa__median(v, n);
    return med > 0 ? (v[(3 * (n - 1)) / 4] - v[(n - 1) / 4]) / med : 0;
}

/* options.verify_exhaustive: after the budgeted search chose `tuned`,
 * checks and measures every candidate it left out (full repeats, beyond the
 * budget), then times the tuned winner, the sweep's fastest and the default
 * interleaved (in turn when two of them set a process-wide parameter
 * differently) into res->verify_*. */
static void verify(tuner *t, int tuned, sdpa_tune_result *res)
{
    t->keep = tuned;
    t->unbounded = true;
    for (int i = 0; i < t->n; i++) {
        if (t->tried[i]) continue;
        t->tried[i] = true;
        char desc[256];
        sdpa__tile_describe(&t->cand[i], desc, sizeof desc);
        if (check(t, i) == SDPA_OK) measure(t, i, 1);
        t->done++;
        int b1, b2;
        top2(t, &b1, &b2);
        progress(t, t->n, b1 >= 0 ? t->ms[b1] : INFINITY, desc);
        prune_plans(t);
    }
    int sweep, b2;
    top2(t, &sweep, &b2);
    int want[3] = {tuned, sweep, 0}, ids[3], k = 0, slot[3];
    for (int j = 0; j < 3; j++) {
        /* a plan pruned during the search is built again */
        if (want[j] >= 0 && !t->plans[want[j]] && isfinite(t->ms[want[j]])) {
            int measured = t->measured; /* measured before: not counted twice */
            measure(t, want[j], 1);
            t->measured = measured;
        }
        if (want[j] < 0 || !t->plans[want[j]]) return; /* nothing correct to compare */
        slot[j] = -1;
        for (int x = 0; x < k; x++)
            if (ids[x] == want[j]) slot[j] = x; /* the same candidate: the same samples */
        if (slot[j] < 0) {
            slot[j] = k;
            ids[k++] = want[j];
        }
    }
    bool blocks = false;
    for (int a = 0; a < k; a++)
        for (int b = a + 1; b < k; b++)
            blocks |= process_wide_conflict(t->be, &t->cand[ids[a]], &t->cand[ids[b]]);
    /* at least 7 rounds and about half a second of samples, at most 64 */
    double round_ms = 0;
    for (int x = 0; x < k; x++) round_ms += t->ms[ids[x]];
    int reps = t->o->repeats < 7 ? 7 : t->o->repeats;
    if (round_ms > 0 && 500.0 / round_ms > reps) reps = (int)(500.0 / round_ms);
    if (reps > 64) reps = 64;
    double v[3][64];
    for (int a = 0; a < k * reps; a++) {
        int j = blocks ? a / reps : a % k, r = blocks ? a % reps : a / k;
        if (sdpa__tune_time(t->ctx, t->plans[ids[j]], &t->timing, &v[j][r]) != SDPA_OK) return;
    }
    double med[3], noise = 0;
    for (int x = 0; x < k; x++) {
        med[x] = sdpa__median(v[x], reps);
        double sp = spread(v[x], reps);
        if (sp > noise) noise = sp;
    }
    double ms[3] = {med[slot[0]], med[slot[1]], med[slot[2]]};
    res->verified = 1;
    res->sweep_best = t->cand[sweep];
    sdpa__tile_describe(&res->sweep_best, res->sweep_desc, sizeof res->sweep_desc);
    res->verify_tuned_ms = ms[0];
    res->verify_sweep_ms = ms[1];
    res->verify_default_ms = ms[2];
    res->verify_noise = noise;
    sdpa__log(t->ctx, SDPA_LOG_INFO, "tune: verify %s: tuned %.3f ms, sweep best %.3f ms, "
              "default %.3f ms (noise %.1f %%)", res->bucket, ms[0], ms[1], ms[2], 100 * noise);
}

static void dims_for_check(const tuner *t, sdpa__tune_dims *d)
{
    const sdpa__problem *p = &t->p;
    int maxq = 16, maxk = 16, maxsplit = 1;
    for (int i = 0; i < t->n; i++) {
        int q = sdpa_tile_config_get(&t->cand[i], SDPA_TILE_Q_TILE);
        int k = sdpa_tile_config_get(&t->cand[i], SDPA_TILE_K_TILE);
        int split = sdpa_tile_config_get(&t->cand[i], SDPA_TILE_SPLIT_KV);
        if (q > maxq) maxq = q;
        if (k > maxk) maxk = k;
        if (split > maxsplit) maxsplit = split;
    }
    if (maxq < 64) maxq = 64; /* AUTO tiles are typically 32..64 */
    if (maxk < 64) maxk = 64;
    if (maxq > 128) maxq = 128;
    if (maxk > 256) maxk = 256;
    d->B = p->B < 2 ? p->B : 2;
    d->Hkv = 1;
    d->Hq = p->Hq / p->Hkv; /* one KV head with its whole query group */
    int64_t sq = 2 * maxq + 7, skv = 2 * maxk + 13;
    if (p->Sq <= 16) sq = p->Sq;
    if (p->Sq <= 16 && p->Skv >= 1024) skv = 1031 > (int64_t)maxsplit * 37 ? 1031 : maxsplit * 37;
    d->Sq = p->Sq < sq ? p->Sq : sq;
    d->Skv = p->Skv < skv ? p->Skv : skv;
}

static void fill_record(tuner *t, int best)
{
    sdpa__profile_record *r = &t->rec;
    r->format = SDPA__PROFILE_FORMAT;
    sdpa__device_key_of(t->ctx, t->be, &r->dev);
    sdpa__bucket_of(&t->p, t->flags, &r->bucket);
    r->tile = t->cand[best];
    r->best_ms = t->ms[best];
    r->default_ms = isfinite(t->ms[0]) ? t->ms[0] : 0.0;
    time_t now = time(NULL);
    struct tm tm;
    if (gmtime_r(&now, &tm)) strftime(r->tuned_at, sizeof r->tuned_at, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

static sdpa_status run(tuner *t, sdpa_tune_result *res)
{
    sdpa_context *ctx = t->ctx;
    /* The reference, once, on the small ragged check instance. */
    sdpa__tune_dims cd;
    dims_for_check(t, &cd);
    sdpa_context_options co;
    sdpa_context_options_init(&co);
    co.backend = SDPA_BACKEND_REFERENCE;
    co.log_level = -2; /* silent: failures come back as statuses */
    co.profile_dir = "";
    sdpa_context *ref = NULL;
    sdpa_status st = sdpa_context_create(&co, &ref);
    if (st != SDPA_OK) return SDPA__FAIL(ctx, st, "tune: cannot start the reference backend");
    bool bwd = (t->flags & SDPA_PLAN_BACKWARD) != 0;
    st = sdpa__tune_instance_make(ctx, NULL, t->desc, &t->p, &cd, bwd, true, t->o->seed,
                                  &t->check);
    if (st == SDPA_OK) {
        sdpa_tile_config any;
        sdpa_tile_config_init(&any);
        st = sdpa__tune_run_host(ref, &t->check, t->flags, &any, &t->want);
        if (st != SDPA_OK) {
            sdpa_error_info e;
            sdpa_context_last_error(ref, &e);
            st = SDPA__FAIL(ctx, st, "tune: reference run failed: %s", e.message ? e.message : "");
        }
    }
    sdpa_context_destroy(ref);
    SDPA__TRY(st);
    sdpa__log(ctx, SDPA_LOG_DEBUG, "tune: reference on B%lld H%lld/%lld S%lld/%lld done at %.2f s",
              (long long)cd.B, (long long)cd.Hq, (long long)cd.Hkv, (long long)cd.Sq,
              (long long)cd.Skv, elapsed(t));
    sdpa__tune_dims td = {t->p.B, t->p.Hq, t->p.Hkv, t->p.Sq, t->p.Skv};
    SDPA__TRY(sdpa__tune_instance_make(ctx, ctx, t->desc, &t->p, &td, bwd, false,
                                       t->o->seed + 1, &t->timing));

    sdpa__search s;
    SDPA__CHECK(ctx, sdpa__search_init(&s, t->cand, t->n, t->o->seed), SDPA_ERR_OUT_OF_MEMORY,
                "tune: out of memory");
    double per_cand = 0; /* average seconds one candidate costs */
    int best = -1, b2;
    bool exhausted = false;
    for (;;) {
        top2(t, &best, &b2);
        /* Stop when the next candidate would not fit (the default always runs). */
        double left = t->o->budget_s - elapsed(t);
        double final_cost = best >= 0 ? 3.0 * t->o->repeats * t->ms[best] * 1e-3 : 0;
        if (t->done > 0 && left < per_cand + final_cost) {
            exhausted = s.visited_count < s.n;
            break;
        }
        int i = sdpa__search_next(&s, t->ms, best, elapsed(t) / t->o->budget_s);
        if (i < 0) break;
        t->tried[i] = true;
        double c0 = sdpa__now();
        int remaining = s.n - s.visited_count + 1;
        if (per_cand > 0 && left / per_cand < remaining) remaining = (int)(left / per_cand) + 1;
        char desc[256];
        sdpa__tile_describe(&t->cand[i], desc, sizeof desc);
        sdpa_status cs = check(t, i);
        sdpa__log(ctx, SDPA_LOG_DEBUG, "tune: candidate %d (%s) checked at %.2f s", i, desc,
                  elapsed(t));
        if (i == 0 && cs == SDPA_ERR_UNSUPPORTED) {
            sdpa__search_free(&s);
            return cs; /* the backend cannot run this problem at all */
        }
        if (cs == SDPA_OK) {
            sdpa_status ms = measure(t, i, remaining);
            if (i == 0 && ms == SDPA_ERR_UNSUPPORTED) {
                /* the device cannot run the problem at all (message recorded) */
                sdpa__search_free(&s);
                return ms;
            }
        }
        sdpa__log(ctx, SDPA_LOG_DEBUG, "tune: candidate %d measured at %.2f s: %.3f ms", i,
                  elapsed(t), t->ms[i]);
        t->done++;
        per_cand += ((sdpa__now() - c0) - per_cand) / t->done;
        top2(t, &best, &b2);
        int est_total = t->done + (s.n - s.visited_count);
        double rest = t->o->budget_s - elapsed(t);
        if (per_cand > 0 && rest / per_cand < s.n - s.visited_count)
            est_total = t->done + (rest > 0 ? (int)(rest / per_cand) : 0);
        progress(t, est_total, best >= 0 ? t->ms[best] : INFINITY, desc);
        prune_plans(t);
    }
    sdpa__search_free(&s);
    remeasure(t);
    top2(t, &best, &b2);
    res->measured = t->measured;
    res->rejected = t->rejected;
    res->budget_exhausted = exhausted;
    if (best < 0)
        return SDPA__FAIL(ctx, t->rejected ? SDPA_ERR_DEVICE : SDPA_ERR_BUDGET,
                          "tune: no candidate %s", t->rejected ? "computed correct results"
                                                                : "could be measured in the budget");
    res->best = t->cand[best];
    res->best_ms = t->ms[best];
    res->default_ms = isfinite(t->ms[0]) ? t->ms[0] : INFINITY;
    sdpa__tile_describe(&res->best, res->best_desc, sizeof res->best_desc);
    sdpa__log(ctx, SDPA_LOG_INFO, "tune: %s %s: best %s %.3f ms, default %.3f ms (%d measured, %d rejected)",
              t->be->name, res->bucket, res->best_desc, res->best_ms, res->default_ms,
              t->measured, t->rejected);
    fill_record(t, best);
    if (t->o->verify_exhaustive) {
        verify(t, best, res);
        res->measured = t->measured;
        res->rejected = t->rejected;
    }
    if (t->o->write_profile) {
        char path[4096];
        SDPA__CHECK(ctx, sdpa__profile_path_for(ctx, t->be, path, sizeof path), SDPA_ERR_IO,
                    "tune: no profile directory (set SDPA_PROFILE_DIR or HOME)");
        SDPA__TRY(sdpa__profile_store(ctx, path, &t->rec));
        sdpa__log(ctx, SDPA_LOG_INFO, "tune: wrote %s", path);
    }
    return SDPA_OK;
}

/* sdpa_tune on whole structs (the public wrapper below versions them). */
static sdpa_status tune_run(sdpa_context *ctx, const sdpa_attention_desc *desc,
                            const sdpa_tune_options *options, sdpa_tune_result *result)
{
    SDPA__CHECK(ctx, (options->plan_flags & ~(SDPA_PLAN_BACKWARD | SDPA_PLAN_NONDETERMINISTIC)) == 0,
                SDPA_ERR_INVALID_ARG, "tune options plan_flags 0x%x has unknown bits",
                options->plan_flags);
    SDPA__CHECK(ctx, isfinite(options->budget_s) && options->budget_s > 0, SDPA_ERR_INVALID_ARG,
                "tune options budget_s must be a positive number of seconds");
    SDPA__CHECK(ctx, options->repeats >= 1 && options->repeats <= 64, SDPA_ERR_INVALID_ARG,
                "tune options repeats %d is outside 1..64", options->repeats);
    SDPA__CHECK(ctx, options->warmup >= 0 && options->warmup <= 100, SDPA_ERR_INVALID_ARG,
                "tune options warmup %d is outside 0..100", options->warmup);
    memset(result, 0, sizeof *result);
    result->struct_size = sizeof *result;

    tuner t;
    memset(&t, 0, sizeof t);
    t.ctx = ctx;
    t.o = options;
    t.flags = options->plan_flags;
    t.t0 = sdpa__now();
    t.fault = sdpa__tune_fault_candidate();
    SDPA__TRY(sdpa__query_problem(ctx, desc, &t.p));
    t.desc = desc;
    t.be = sdpa__query_backend(ctx);

    sdpa__bucket b;
    sdpa__bucket_of(&t.p, t.flags, &b);
    sdpa__bucket_string(&b, result->bucket, sizeof result->bucket);
    sdpa_tile_config def;
    if (sdpa__query_default_tile(ctx, &t.p, t.flags, &def) != SDPA_OK || !sdpa__tile_valid(&def))
        sdpa_tile_config_init(&def); /* the backend decides at plan time (and says why not) */
    result->fallback = def;
    result->best = def;
    sdpa__tile_describe(&def, result->default_desc, sizeof result->default_desc);
    sdpa__strlcpy(result->best_desc, result->default_desc, sizeof result->best_desc);
    result->best_ms = result->default_ms = INFINITY;
    t.n = sdpa__tune_candidates(ctx, t.be, &t.p, t.flags, &def, &t.cand);
    SDPA__CHECK(ctx, t.n > 0, SDPA_ERR_OUT_OF_MEMORY, "tune: out of memory");
    result->candidates = t.n;
    if (t.n == 1)
        sdpa__log(ctx, SDPA_LOG_INFO, "tune: %s exposes no tile candidates; only its default "
                  "is measured", t.be->name);

    sdpa_status st = SDPA_OK;
    if (options->dry_run) {
        for (int i = 0; i < t.n; i++) {
            char d[256];
            sdpa__tile_describe(&t.cand[i], d, sizeof d);
            t.done = i + 1;
            progress(&t, t.n, INFINITY, d);
        }
        free(t.cand);
        return SDPA_OK;
    }
    t.ms = malloc((size_t)t.n * sizeof *t.ms);
    t.plans = calloc((size_t)t.n, sizeof *t.plans);
    t.tried = calloc((size_t)t.n, sizeof *t.tried);
    t.keep = -1;
    if (!t.ms || !t.plans || !t.tried) {
        st = SDPA__FAIL(ctx, SDPA_ERR_OUT_OF_MEMORY, "tune: out of memory");
    } else {
        for (int i = 0; i < t.n; i++) t.ms[i] = INFINITY;
        st = run(&t, result);
    }
    for (int i = 0; t.plans && i < t.n; i++) sdpa_plan_destroy(t.plans[i]);
    sdpa__tune_instance_free(&t.check);
    sdpa__tune_instance_free(&t.timing);
    sdpa__tune_outputs_free(&t.want);
    free(t.plans);
    free(t.tried);
    free(t.ms);
    free(t.cand);
    return st;
}

sdpa_status sdpa_tune(sdpa_context *ctx, const sdpa_attention_desc *desc,
                      const sdpa_tune_options *options, sdpa_tune_result *result)
{
    if (!ctx) return SDPA_ERR_NULL;
    SDPA__CHECK_ARG(ctx, desc, "sdpa_tune", "desc");
    SDPA__CHECK_ARG(ctx, result, "sdpa_tune", "result");
    sdpa_tune_options o; /* fields past an older caller's size: defaults */
    sdpa_tune_options_init(&o);
    SDPA__TRY(sdpa__struct_take(ctx, &o, sizeof o, options, SDPA_TUNE_OPTIONS_SIZE_V1,
                                "tune options", "call sdpa_tune_options_init first"));
    SDPA__CHECK_STRUCT(ctx, result, SDPA_TUNE_RESULT_SIZE_V1, "tune result",
                       "set it to sizeof(sdpa_tune_result) before the call");
    sdpa_tune_result full;
    memset(&full, 0, sizeof full);
    full.struct_size = sizeof full;
    sdpa_status st = tune_run(ctx, desc, &o, &full);
    sdpa__struct_out(result, &full, sizeof full);
    return st;
}
