/*
 * sdpa-tune — tunes a device for a preset or given shapes within a time
 * budget and writes the winners into the device's profile.
 *
 *   sdpa-tune [--backend B] [--device SEL] [--preset llm-decode|llm-prefill|vit|mobile|all]
 *             [--shape B,Hq,Hkv,Sq,Skv,D[,Dv]]... [--causal] [--dtype f32|f16|bf16]
 *             [--kv-dtype T] [--page-size N] [--alibi] [--sinks]
 *             [--backward] [--budget SECONDS] [--repeats N] [--seed N]
 *             [--profile-dir DIR] [--json] [--dry-run] [--verify-exhaustive] [--help]
 *
 * Each shape (and, with --backward, its backward too) is one bucket; the
 * budget is split across the buckets still to run. The presets are
 * tools/common/presets.c's, shared with sdpa-bench, so `sdpa-bench --preset
 * X` runs what `sdpa-tune --preset X` tuned. Progress always goes to stderr
 * (stdout holds only the results, so --json stays one clean document): one
 * updating line on a terminal, else plain lines; then a table (or JSON) per
 * bucket: default ms, tuned ms, speedup, parameters. Shapes larger than the
 * machine's memory are refused before anything is allocated, and an
 * unwritable profile folder before tuning. Exit status: 0 ok, 1 a bucket
 * failed, the profile cannot be written or no context (e.g. no such device),
 * 2 usage or a shape too large. --verify-exhaustive checks the tuning target
 * instead of writing the profile: after each budgeted search every remaining
 * candidate is measured and the tuned winner, the sweep's fastest and the
 * default are timed interleaved (sdpa_tune_options.verify_exhaustive); a
 * bucket whose winner is more than 5 % slower than the sweep's best, or slower
 * than the default, beyond the measured noise misses it (exit 1). Thin program over sdpa.h
 * (SDPA_EXPERIMENTAL) and tools/common.
 */
#include <cJSON.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "args.h"
#include "presets.h"
#include "sdpa.h"
#include "util.h"

#define MAX_SHAPES 32

typedef tps_shape shape; /* dtype NONE = the --dtype (default f32) */

typedef struct options {
    sdpa_backend_kind backend;
    const char *device, *profile_dir;
    shape shapes[MAX_SHAPES];
    int nshapes;
    int causal, backward, json, dry_run, repeats, has_dtype, verify;
    sdpa_dtype dtype;
    sdpa_dtype kv_dtype;    /* --kv-dtype, NONE = the shape's dtype */
    int page, alibi, sinks; /* --page-size (0 = contiguous), --alibi, --sinks */
    double budget;
    uint64_t seed;
} options;

static void usage(FILE *f)
{
    fprintf(f,
            "usage: sdpa-tune [options]\n"
            "\n"
            "Measures the kernel configurations the backend offers for each shape bucket on\n"
            "one device, checks each against the float64 reference first, and records the\n"
            "fastest in the device's profile, which later plans read.\n"
            "\n"
            "  --backend B      auto|cpu|opencl|vulkan|reference (default: SDPA_BACKEND, else auto)\n"
            "  --device SEL     device index or name substring (default: SDPA_DEVICE, else the first)\n"
            "  --preset P       a named set of shapes, the same as sdpa-bench's (repeatable):\n");
    tps_print_help(f, 19, 1);
    fprintf(f,
            "                   (all is the default when no --shape is given)\n"
            "  --shape S        B,Hq,Hkv,Sq,Skv,D[,Dv] (repeatable)\n"
            "  --causal         make every shape causal (presets included)\n"
            "  --dtype T        f32|f16|bf16 for every shape (default: f32 for --shape, a\n"
            "                   preset's own dtype for its rows)\n"
            "  --kv-dtype T     K/V storage f32|f16|bf16|q8_0|q4_0 (default: --dtype); the\n"
            "                   bucket records it when it differs from q's (forward only\n"
            "                   for q8_0/q4_0)\n"
            "  --page-size N    paged K/V with pages of N keys (forward only; 0 =\n"
            "                   contiguous, the default)\n"
            "  --alibi          tune with ALiBi slopes\n"
            "  --sinks          tune with attention sinks\n"
            "  --backward       also tune the backward of every shape\n"
            "  --budget S       total seconds, split across buckets (default 60)\n"
            "  --repeats N      timed runs per candidate (default 5)\n"
            "  --seed N         sampling seed for large candidate spaces (default 1)\n"
            "  --profile-dir D  where the profile is written (default: SDPA_PROFILE_DIR,\n"
            "                   else $XDG_DATA_HOME/sdpa/profiles, else ~/.local/share/sdpa/profiles)\n"
            "  --json           print the results as JSON\n"
            "  --dry-run        list the candidates of each bucket; measure and write nothing\n"
            "  --verify-exhaustive  check the tuning target, write nothing: after each\n"
            "                   budgeted search, measure every remaining candidate and time\n"
            "                   the tuned winner, the sweep's best and the default interleaved;\n"
            "                   target met: the winner within 5 %% of the sweep's best and not\n"
            "                   slower than the default beyond the noise (2 x the largest\n"
            "                   interquartile spread / median, at least 2 %%); missed (exit 1):\n"
            "                   slower than either by more than its allowance plus the noise\n"
            "  --help           this text\n"
            "\n"
            "Progress goes to stderr: one updating line on a terminal, else one line per\n"
            "candidate. Shapes that do not fit in the machine's memory are refused; the\n"
            "profile folder is checked for writing first (not with --dry-run).\n"
            "Exit status: 0 every bucket tuned (or listed), 1 a bucket failed (or missed the\n"
            "target under --verify-exhaustive), the profile folder is not writable or no\n"
            "context (e.g. no such device), 2 usage error or a shape too large for the\n"
            "machine.\n");
}

static int add_shape(options *o, const shape *s)
{
    if (o->nshapes >= MAX_SHAPES) return 0;
    o->shapes[o->nshapes++] = *s;
    return 1;
}

/* 1 ok, 0 too many, -1 unknown. */
static int add_preset(options *o, const char *name)
{
    shape rows[MAX_SHAPES];
    int n = tps_rows(name, rows, MAX_SHAPES);
    for (int i = 0; i < n; i++)
        if (i == MAX_SHAPES || !add_shape(o, &rows[i])) return 0;
    return n < 0 ? -1 : 1;
}

/* 1 run, 0 exit with usage status, -1 exit 0 (help). */
static int parse(options *o, int argc, char **argv)
{
    memset(o, 0, sizeof *o);
    o->backend = SDPA_BACKEND_DEFAULT;
    o->dtype = SDPA_DTYPE_F32;
    o->budget = 60;
    o->repeats = 5;
    o->seed = 1;
    int help = 0;
    ta_args a;
    ta_init(&a, argc, argv);
    while (!a.error && ta_next(&a)) {
        const char *val;
        if (a.positional) {
            ta_fail(&a, "unexpected argument %s", a.arg);
        } else if (ta_flag(&a, "--help") || ta_flag(&a, "-h")) {
            help = 1;
        } else if (ta_value(&a, "--backend", &val)) {
            if (val && sdpa_backend_parse(val, &o->backend) != SDPA_OK)
                ta_fail(&a, "--backend: unknown backend \"%s\"", val);
        } else if (ta_value(&a, "--device", &val)) {
            o->device = val;
        } else if (ta_value(&a, "--preset", &val)) {
            if (!val) break;
            int r = add_preset(o, val);
            if (r < 0)
                ta_fail(&a, "--preset: unknown preset \"%s\" (%s)", val, tps_names());
            else if (r == 0)
                ta_fail(&a, "too many shapes (at most %d)", MAX_SHAPES);
        } else if (ta_value(&a, "--shape", &val)) {
            if (!val) break;
            shape t;
            char err[200];
            if (!tps_parse_shape(val, &t, err, sizeof err))
                ta_fail(&a, "%s", err);
            else if (!add_shape(o, &t))
                ta_fail(&a, "too many shapes (at most %d)", MAX_SHAPES);
        } else if (ta_flag(&a, "--causal")) {
            o->causal = 1;
        } else if (ta_kv_option(&a, &o->kv_dtype, &o->page, &o->alibi, &o->sinks)) {
            /* --kv-dtype, --page-size, --alibi, --sinks (tools/common/args.c) */
        } else if (ta_value(&a, "--dtype", &val)) {
            if (val && !ta_parse_float_dtype(val, &o->dtype))
                ta_fail(&a, "--dtype: expected f32, f16 or bf16, got \"%s\"", val);
            o->has_dtype = 1;
        } else if (ta_flag(&a, "--backward")) {
            o->backward = 1;
        } else if (ta_value(&a, "--budget", &val)) {
            if (val && (!ta_parse_double(val, &o->budget) || !(o->budget > 0) ||
                        o->budget > 1e6))
                ta_fail(&a, "--budget: expected a positive number of seconds, got \"%s\"", val);
        } else if (ta_value(&a, "--repeats", &val)) {
            if (val && !ta_parse_int(val, 1, 64, &o->repeats))
                ta_fail(&a, "--repeats: expected 1..64, got \"%s\"", val);
        } else if (ta_value(&a, "--seed", &val)) {
            int64_t s;
            if (val && !ta_parse_i64(val, 0, INT64_MAX, &s))
                ta_fail(&a, "--seed: expected a non-negative integer, got \"%s\"", val);
            else if (val)
                o->seed = (uint64_t)s;
        } else if (ta_value(&a, "--profile-dir", &val)) {
            o->profile_dir = val;
        } else if (ta_flag(&a, "--json")) {
            o->json = 1;
        } else if (ta_flag(&a, "--dry-run")) {
            o->dry_run = 1;
        } else if (ta_flag(&a, "--verify-exhaustive")) {
            o->verify = 1;
        } else {
            ta_fail(&a, "unknown option %s", a.arg);
        }
    }
    if (a.error) {
        fprintf(stderr, "sdpa-tune: %s\nTry 'sdpa-tune --help'.\n", a.message);
        return 0;
    }
    if (help) {
        usage(stdout);
        return -1;
    }
    if (o->nshapes == 0) add_preset(o, "all");
    for (int i = 0; i < o->nshapes; i++) {
        shape *s = &o->shapes[i];
        if (o->causal) s->causal = 1;
        if (o->has_dtype || s->dtype == SDPA_DTYPE_NONE) s->dtype = o->dtype;
    }
    return 1;
}

/* ---- progress ------------------------------------------------------------------ */

typedef struct progress_state {
    FILE *f;
    int tty;
    const char *bucket;
    int dry;
    cJSON *dry_list; /* --json --dry-run: candidate names */
    int printed;     /* a \r line is open */
} progress_state;

static void on_progress(void *user, const sdpa_tune_progress *p)
{
    progress_state *s = user;
    if (s->dry) {
        if (s->dry_list) cJSON_AddItemToArray(s->dry_list, cJSON_CreateString(p->current));
        else printf("  %3d  %s\n", p->done - 1, p->current);
        return;
    }
    if (!s->f) return;
    double left = p->budget_s - p->elapsed_s;
    if (left < 0) left = 0;
    char best[32];
    if (isfinite(p->best_ms)) snprintf(best, sizeof best, "%.3f ms", p->best_ms);
    else snprintf(best, sizeof best, "-");
    if (s->tty) {
        int width = 30, fill = p->total > 0 ? p->done * width / p->total : 0;
        char bar[64];
        for (int i = 0; i < width; i++) bar[i] = i < fill ? '#' : '.';
        bar[width] = '\0';
        fprintf(s->f, "\r\033[K%s [%s] %d/%d best %s, %.1f s left: %.40s", s->bucket, bar,
                p->done, p->total, best, left, p->current);
        s->printed = 1;
    } else {
        fprintf(s->f, "%s: %d/%d %s, best %s, %.1f s left\n", s->bucket, p->done, p->total,
                p->current, best, left);
    }
    fflush(s->f);
}

static void progress_end(progress_state *s)
{
    if (s->f && s->tty && s->printed) {
        fputc('\n', s->f);
        fflush(s->f);
    }
    s->printed = 0;
}

/* ---- one bucket ----------------------------------------------------------------- */

typedef struct row {
    char shape[128], bucket[160], best[256], def[256], error[256];
    double best_ms, default_ms;
    int candidates, measured, rejected, exhausted, backward;
    /* --verify-exhaustive */
    int verified, missed, noisy;
    double v_tuned, v_sweep, v_default, v_noise;
    char sweep[256];
    sdpa_status status;
    cJSON *dry_list;
} row;

static void make_desc(const options *o, const shape *s, sdpa_attention_desc *d)
{
    sdpa_attention_desc_init(d);
    if (s->causal) sdpa_attention_desc_set_causal(d, SDPA_DIAGONAL_TOP_LEFT);
    sdpa_forward_tensors *t = &d->tensors;
    /* Shapes only: the tuner makes its own inputs (data pointers unused). */
    static float dummy[1];
    t->q = sdpa_tensor_host(dummy, s->dtype, s->B, s->Hq, s->Sq, s->D);
    const sdpa_dtype kvd = o->kv_dtype != SDPA_DTYPE_NONE ? o->kv_dtype : s->dtype;
    if (o->page > 0) { /* a pool of B * max_pages pages */
        const int64_t maxp = (s->Skv + o->page - 1) / o->page;
        t->k_pages = sdpa_tensor_host(dummy, kvd, s->B * maxp, s->Hkv, o->page, s->D);
        t->v_pages = sdpa_tensor_host(dummy, kvd, s->B * maxp, s->Hkv, o->page, s->Dv);
        t->block_table = sdpa_tensor_host(dummy, SDPA_DTYPE_I32, s->B, 1, 1, maxp);
        t->kv_len = sdpa_tensor_host(dummy, SDPA_DTYPE_I32, s->B, 1, 1, 1);
    } else {
        t->k = sdpa_tensor_host(dummy, kvd, s->B, s->Hkv, s->Skv, s->D);
        t->v = sdpa_tensor_host(dummy, kvd, s->B, s->Hkv, s->Skv, s->Dv);
    }
    if (o->alibi) t->alibi_slopes = sdpa_tensor_host(dummy, SDPA_DTYPE_F32, 1, s->Hq, 1, 1);
    if (o->sinks) t->sinks = sdpa_tensor_host(dummy, SDPA_DTYPE_F32, 1, s->Hq, 1, 1);
    t->out = sdpa_tensor_host(dummy, s->dtype, s->B, s->Hq, s->Sq, s->Dv);
}

static void tune_one(sdpa_context *ctx, const options *o, const shape *s, int backward,
                     double budget, progress_state *ps, row *r)
{
    memset(r, 0, sizeof *r);
    r->backward = backward;
    tps_describe(s, r->shape, sizeof r->shape);
    float lse_dummy[1];
    sdpa_attention_desc d;
    make_desc(o, s, &d);
    if (backward)
        d.tensors.lse = sdpa_tensor_host(lse_dummy, SDPA_DTYPE_F32, s->B, s->Hq, s->Sq, 1);
    sdpa_tune_options to;
    sdpa_tune_options_init(&to);
    to.plan_flags = backward ? SDPA_PLAN_BACKWARD : 0;
    to.budget_s = budget;
    to.repeats = o->repeats;
    to.seed = o->seed;
    to.dry_run = o->dry_run;
    to.verify_exhaustive = o->verify;
    if (o->verify) to.write_profile = 0; /* a check, not a tuning */
    to.progress = on_progress;
    to.progress_user = ps;
    ps->bucket = r->shape;
    if (o->dry_run && o->json) ps->dry_list = r->dry_list = cJSON_CreateArray();
    sdpa_tune_result res = {.struct_size = sizeof res};
    r->status = sdpa_tune(ctx, &d, &to, &res);
    ps->dry_list = NULL;
    progress_end(ps);
    snprintf(r->bucket, sizeof r->bucket, "%s", res.bucket);
    snprintf(r->best, sizeof r->best, "%s", res.best_desc);
    snprintf(r->def, sizeof r->def, "%s", res.default_desc);
    r->best_ms = res.best_ms;
    r->default_ms = res.default_ms;
    r->candidates = res.candidates;
    r->measured = res.measured;
    r->rejected = res.rejected;
    r->exhausted = res.budget_exhausted;
    r->verified = res.verified;
    r->v_tuned = res.verify_tuned_ms;
    r->v_sweep = res.verify_sweep_ms;
    r->v_default = res.verify_default_ms;
    r->v_noise = res.verify_noise;
    snprintf(r->sweep, sizeof r->sweep, "%s", res.sweep_desc);
    if (o->verify && r->status == SDPA_OK) {
        /* met: within 5 % of the sweep's best and not slower than the default
         * beyond the noise; missed: beyond both allowances plus the noise;
         * between: the noise is too large to tell */
        double noise = 2 * r->v_noise > 0.02 ? 2 * r->v_noise : 0.02;
        bool met = r->verified && r->v_tuned <= 1.05 * r->v_sweep &&
                   r->v_tuned <= (1 + noise) * r->v_default;
        r->missed = !r->verified || r->v_tuned > (1.05 + noise) * r->v_sweep ||
                    r->v_tuned > (1 + noise) * r->v_default;
        r->noisy = !met && !r->missed;
    }
    if (r->status != SDPA_OK) {
        sdpa_error_info e;
        sdpa_context_last_error(ctx, &e);
        snprintf(r->error, sizeof r->error, "%s: %s", sdpa_status_name(r->status),
                 e.message ? e.message : "");
    }
}

static void fmt_ms(char *b, size_t n, double ms)
{
    if (isfinite(ms) && ms > 0) snprintf(b, n, "%.3f", ms);
    else snprintf(b, n, "-");
}

static void print_table(const row *rows, int n)
{
    static const char *const head[] = {"bucket", "shape", "default ms", "tuned ms", "speedup",
                                       "tuned parameters", "cand", "meas", "rej"};
    static const int right[] = {0, 0, 1, 1, 1, 0, 1, 1, 1};
    tu_table t;
    tu_table_init(&t, 9, head, right);
    for (int i = 0; i < n; i++) {
        const row *r = &rows[i];
        char dm[32], bm[32], sp[32], c[16], m[16], j[16], params[300];
        fmt_ms(dm, sizeof dm, r->default_ms);
        fmt_ms(bm, sizeof bm, r->best_ms);
        if (isfinite(r->default_ms) && isfinite(r->best_ms) && r->best_ms > 0)
            snprintf(sp, sizeof sp, "%.2fx", r->default_ms / r->best_ms);
        else
            snprintf(sp, sizeof sp, "-");
        snprintf(c, sizeof c, "%d", r->candidates);
        snprintf(m, sizeof m, "%d", r->measured);
        snprintf(j, sizeof j, "%d", r->rejected);
        if (r->status != SDPA_OK) snprintf(params, sizeof params, "FAILED %s", r->error);
        else snprintf(params, sizeof params, "%s%s", r->best, r->exhausted ? " (budget)" : "");
        const char *cells[] = {r->bucket, r->shape, dm, bm, sp, params, c, m, j};
        tu_table_add(&t, cells);
    }
    tu_table_print(&t, stdout);
    tu_table_free(&t);
}

/* --verify-exhaustive: the target per bucket. */
static void print_verify(const row *rows, int n)
{
    static const char *const head[] = {"bucket", "tuned ms", "sweep best ms", "default ms",
                                       "tuned/best", "tuned/default", "noise", "target",
                                       "sweep best parameters"};
    static const int right[] = {0, 1, 1, 1, 1, 1, 1, 0, 0};
    tu_table t;
    tu_table_init(&t, 9, head, right);
    for (int i = 0; i < n; i++) {
        const row *r = &rows[i];
        char tm[32], sm[32], dm[32], tb[32], td[32], no[32];
        fmt_ms(tm, sizeof tm, r->v_tuned);
        fmt_ms(sm, sizeof sm, r->v_sweep);
        fmt_ms(dm, sizeof dm, r->v_default);
        snprintf(tb, sizeof tb, "%.3f", r->v_sweep > 0 ? r->v_tuned / r->v_sweep : NAN);
        snprintf(td, sizeof td, "%.3f", r->v_default > 0 ? r->v_tuned / r->v_default : NAN);
        snprintf(no, sizeof no, "%.1f %%", 100 * r->v_noise);
        const char *verdict = r->status != SDPA_OK ? "failed"
                              : !r->verified       ? "not verified"
                              : r->missed          ? "MISSED"
                              : r->noisy           ? "within noise"
                                                   : "met";
        const char *cells[] = {r->bucket, tm, sm, dm, tb, td, no, verdict, r->sweep};
        tu_table_add(&t, cells);
    }
    tu_table_print(&t, stdout);
    tu_table_free(&t);
}

static cJSON *num_or_null(double v)
{
    return isfinite(v) ? cJSON_CreateNumber(v) : cJSON_CreateNull();
}

static void print_json(sdpa_context *ctx, const options *o, row *rows, int n)
{
    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "backend", sdpa_backend_name(sdpa_context_backend(ctx)));
    cJSON_AddStringToObject(root, "device", sdpa_context_device_name(ctx));
    cJSON_AddStringToObject(root, "profile", sdpa_context_profile_path(ctx));
    cJSON_AddBoolToObject(root, "dry_run", o->dry_run);
    cJSON_AddBoolToObject(root, "verify_exhaustive", o->verify);
    cJSON_AddNumberToObject(root, "budget_s", o->budget);
    cJSON *arr = cJSON_AddArrayToObject(root, "buckets");
    for (int i = 0; i < n; i++) {
        row *r = &rows[i];
        cJSON *b = cJSON_CreateObject();
        cJSON_AddStringToObject(b, "bucket", r->bucket);
        cJSON_AddStringToObject(b, "shape", r->shape);
        cJSON_AddStringToObject(b, "status", sdpa_status_name(r->status));
        if (r->status != SDPA_OK) cJSON_AddStringToObject(b, "error", r->error);
        cJSON_AddStringToObject(b, "default", r->def);
        cJSON_AddStringToObject(b, "tuned", r->best);
        cJSON_AddItemToObject(b, "default_ms", num_or_null(r->default_ms));
        cJSON_AddItemToObject(b, "tuned_ms", num_or_null(r->best_ms));
        double sp = r->best_ms > 0 ? r->default_ms / r->best_ms : NAN;
        cJSON_AddItemToObject(b, "speedup", num_or_null(sp));
        cJSON_AddNumberToObject(b, "candidates", r->candidates);
        cJSON_AddNumberToObject(b, "measured", r->measured);
        cJSON_AddNumberToObject(b, "rejected", r->rejected);
        cJSON_AddBoolToObject(b, "budget_exhausted", r->exhausted);
        if (o->verify) {
            cJSON *v = cJSON_AddObjectToObject(b, "verify");
            cJSON_AddBoolToObject(v, "verified", r->verified);
            cJSON_AddItemToObject(v, "tuned_ms", num_or_null(r->v_tuned));
            cJSON_AddItemToObject(v, "sweep_best_ms", num_or_null(r->v_sweep));
            cJSON_AddStringToObject(v, "sweep_best", r->sweep);
            cJSON_AddItemToObject(v, "default_ms", num_or_null(r->v_default));
            cJSON_AddItemToObject(v, "noise", num_or_null(r->v_noise));
            cJSON_AddStringToObject(v, "target", r->status != SDPA_OK ? "failed"
                                                 : !r->verified      ? "not verified"
                                                 : r->missed         ? "missed"
                                                 : r->noisy          ? "within noise"
                                                                     : "met");
        }
        if (r->dry_list) {
            cJSON_AddItemToObject(b, "candidate_list", r->dry_list);
            r->dry_list = NULL;
        }
        cJSON_AddItemToArray(arr, b);
    }
    char *s = cJSON_Print(root);
    if (s) puts(s);
    free(s);
    cJSON_Delete(root);
}

int main(int argc, char **argv)
{
    options o;
    int pr = parse(&o, argc, argv);
    if (pr == 0) return TA_EXIT_USAGE;
    if (pr < 0) return TA_EXIT_OK;

    sdpa_context_options co;
    sdpa_context_options_init(&co);
    co.backend = o.backend;
    co.device = o.device;
    co.profile_dir = o.profile_dir;
    sdpa_context *ctx = NULL;
    sdpa_status st = sdpa_context_create(&co, &ctx);
    if (st != SDPA_OK) {
        fprintf(stderr, "sdpa-tune: cannot create a context: %s\n", sdpa_status_string(st));
        return TA_EXIT_FAIL;
    }
    /* The tuner keeps a host copy of every tensor of the full shape and a
     * device buffer of each: refuse what cannot fit before it allocates. */
    for (int i = 0; i < o.nshapes && !o.dry_run; i++) {
        const shape *s = &o.shapes[i];
        double need = tps_bytes(s, s->dtype, o.backward, 0, 0);
        char msg[512];
        if (!tps_check_memory(s, need, need, &ctx, 1, msg, sizeof msg)) {
            fprintf(stderr, "sdpa-tune: shape %d: %s; refused before allocating\n", i + 1, msg);
            sdpa_context_destroy(ctx);
            return TA_EXIT_USAGE;
        }
    }
    /* Before any budget is spent: a read-only profile folder would only
     * show after tuning every bucket. */
    if (!o.dry_run && !o.verify && sdpa_context_profile_writable(ctx) != SDPA_OK) {
        sdpa_error_info e;
        sdpa_context_last_error(ctx, &e);
        fprintf(stderr, "sdpa-tune: %s; nothing tuned (use --profile-dir or SDPA_PROFILE_DIR)\n",
                e.message);
        sdpa_context_destroy(ctx);
        return TA_EXIT_FAIL;
    }
    int nb = o.nshapes * (o.backward ? 2 : 1);
    row *rows = calloc((size_t)nb, sizeof *rows);
    if (!rows) {
        sdpa_context_destroy(ctx);
        return TA_EXIT_FAIL;
    }
    if (!o.json)
        printf("sdpa-tune: %s on %s, %d bucket(s), budget %.1f s%s\nprofile: %s\n",
               sdpa_backend_name(sdpa_context_backend(ctx)), sdpa_context_device_name(ctx), nb,
               o.budget, o.dry_run ? " (dry run)" : "", sdpa_context_profile_path(ctx));
    progress_state ps = {0};
    ps.dry = o.dry_run;
    ps.f = stderr; /* stdout holds the results only */
    ps.tty = isatty(fileno(stderr));
    double t0 = tu_now();
    int failed = 0, k = 0;
    for (int i = 0; i < o.nshapes; i++) {
        for (int bwd = 0; bwd <= o.backward; bwd++, k++) {
            double left = o.budget - (tu_now() - t0);
            double share = left / (nb - k);
            if (share < 0.05) share = 0.05; /* the default is always measured */
            if (o.dry_run && !o.json) printf("%s%s:\n", "candidates", bwd ? " (backward)" : "");
            tune_one(ctx, &o, &o.shapes[i], bwd, share, &ps, &rows[k]);
            if (rows[k].status != SDPA_OK || rows[k].missed) failed++;
        }
    }
    if (o.json) {
        print_json(ctx, &o, rows, nb);
    } else {
        print_table(rows, nb);
        if (o.verify) print_verify(rows, nb);
        int single = 0;
        for (int i = 0; i < nb; i++) single += rows[i].status == SDPA_OK && rows[i].candidates == 1;
        if (single)
            printf("note: %s offers no tile candidates for %d bucket(s); only its default was "
                   "measured there\n", sdpa_backend_name(sdpa_context_backend(ctx)), single);
        printf("%s in %.1f s%s\n", o.dry_run ? "listed" : o.verify ? "verified" : "tuned",
               tu_now() - t0, o.dry_run || o.verify ? " (nothing written)" : "");
    }
    for (int i = 0; i < nb; i++) cJSON_Delete(rows[i].dry_list);
    free(rows);
    sdpa_context_destroy(ctx);
    return failed ? TA_EXIT_FAIL : TA_EXIT_OK;
}
