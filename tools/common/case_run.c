/*
 * case_run.c — runs a loaded sdpa-case/1 case through the public API and
 * compares its outputs (see case.h), and finds case folders on disk.
 *
 * sc_run maps the case's tensors to the library's 4-D conventions (lse
 * (B,Hq,Sq,1), stats (B,Hq,1,11), kv_len (B,1,1,1), gains (1,1,1,D),
 * temperature (1,Hq,1,1); mask/bias keep their 1-extent broadcast axes),
 * poisons every output with NaN, creates a plan (SDPA_PLAN_BACKWARD for
 * backward cases), runs forward then backward, and compares each expected
 * output: max_abs and rel_l2 over finite expected entries, and an exact match
 * of every non-finite expected entry. SDPA_ERR_UNSUPPORTED from the library
 * makes the case UNSUPPORTED; any other error is a FAIL naming the call.
 * Called by sdpa-check and tests/test_conformance.c.
 */
#include "case.h"
#include "util.h"

#include <dirent.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* ---- comparison ----------------------------------------------------------------- */

void sc_compare_values(const double *got, const double *want, size_t n,
                       double tol_max_abs, double tol_rel_l2, sc_compare *out)
{
    double max_abs = 0, d2 = 0, w2 = 0;
    size_t bad = 0, worst = 0, first_bad = 0;
    for (size_t i = 0; i < n; i++) {
        double w = want[i], g = got[i];
        if (!isfinite(w)) {
            int match = isnan(w) ? isnan(g) : g == w;
            if (!match && bad++ == 0)
                first_bad = i;
            continue;
        }
        double d = isfinite(g) ? fabs(g - w) : INFINITY;
        if (d > max_abs) {
            max_abs = d;
            worst = i;
        }
        d2 += d * d;
        w2 += w * w;
    }
    if (bad)
        worst = first_bad;
    out->max_abs = max_abs;
    out->rel_l2 = w2 > 0 ? sqrt(d2) / sqrt(w2) : sqrt(d2);
    out->bad_nonfinite = bad;
    out->worst = worst;
    out->ok = bad == 0 && max_abs <= tol_max_abs && out->rel_l2 <= tol_rel_l2;
}

/* ---- running ---------------------------------------------------------------------- */

typedef struct outbuf {
    sdpa_dtype dtype;
    size_t count;
    void *data;
} outbuf;

static void rfail(sc_result *r, sc_verdict v, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    r->verdict = v;
    vsnprintf(r->reason, sizeof r->reason, fmt, ap);
    va_end(ap);
}

static int out_alloc(outbuf *o, sdpa_dtype dtype, int64_t a, int64_t b, int64_t c,
                     int64_t d)
{
    size_t n = 1, bytes;
    const int64_t ext[4] = {a, b, c, d};
    for (int i = 0; i < 4; i++)
        if (!tu_mul_size(n, (size_t)ext[i], &n))
            return 0;
    if (!tu_mul_size(n, sdpa_dtype_size(dtype), &bytes) || bytes > SC_MAX_FILE_BYTES)
        return 0;
    o->data = malloc(bytes ? bytes : 1);
    if (!o->data)
        return 0;
    o->dtype = dtype;
    o->count = n;
    for (size_t i = 0; i < n; i++)
        tu_store(o->data, dtype, i, NAN); /* poison */
    return 1;
}

static void call_failed(sdpa_context *ctx, sc_result *r, const char *call, sdpa_status st)
{
    sdpa_error_info info;
    memset(&info, 0, sizeof info);
    const char *msg = "";
    if (sdpa_context_last_error(ctx, &info) == SDPA_OK && info.message)
        msg = info.message;
    rfail(r, st == SDPA_ERR_UNSUPPORTED ? SC_UNSUPPORTED : SC_FAIL, "%s: %s%s%s", call,
          sdpa_status_name(st), *msg ? ": " : "", msg);
}

static sdpa_tensor host4(void *p, sdpa_dtype dt, int64_t a, int64_t b, int64_t c, int64_t d)
{
    return sdpa_tensor_host(p, dt, a, b, c, d);
}

/* The slot of key w (sc_key_info): its tensor inside t or bt, its
 * description in *info and its group in *group; NULL for no such key. */
static sdpa_tensor *slot_of(int w, sdpa_forward_tensors *t, sdpa_backward_tensors *bt,
                            sdpa_slot_info *info, sdpa_slot_group *group)
{
    if (!sc_key_info(w, info, group))
        return NULL;
    const int nf = sdpa_slot_count(SDPA_SLOT_FORWARD);
    return *group == SDPA_SLOT_FORWARD ? sdpa_forward_tensors_get_slot(t, w)
                                       : sdpa_backward_tensors_get_slot(bt, w - nf);
}

/* Case input w as a host tensor: rank-4 files as given (mask and bias keep
 * their broadcast axes), lower ranks in the slot's library shape. */
static sdpa_tensor input_tensor(const sc_case *c, int w)
{
    const sc_tensor *t = &c->in[w];
    int64_t s[4], file[4];
    if (t->rank == 4)
        memcpy(s, t->shape, sizeof s);
    else
        sc_slot_shape(c, sc_key_name(w), s, file);
    return host4(t->data, t->dtype, s[0], s[1], s[2], s[3]);
}

void sc_case_inputs(const sc_case *c, sdpa_forward_tensors *t, sdpa_backward_tensors *bt)
{
    sdpa_backward_tensors none;
    memset(t, 0, sizeof *t);
    if (bt)
        memset(bt, 0, sizeof *bt);
    for (int w = 0; w < sc_key_count(); w++) {
        sdpa_slot_info info;
        sdpa_slot_group group;
        sdpa_tensor *x = slot_of(w, t, bt ? bt : &none, &info, &group);
        if (c->in[w].present && x && (bt || group == SDPA_SLOT_FORWARD))
            *x = input_tensor(c, w);
    }
}

/* Compares output `w` (got in library layout) with the expected tensor. */
static int compare_output(const sc_case *c, int w, const outbuf *o, sc_compare *cmp)
{
    const sc_tensor *t = &c->want[w];
    double *g = malloc(t->count * sizeof *g), *e = malloc(t->count * sizeof *e);
    if (!g || !e) {
        free(g);
        free(e);
        return 0;
    }
    for (size_t i = 0; i < t->count; i++)
        e[i] = tu_load(t->data, t->dtype, i);
    if (c->stats_cols && w == sc_key_find("stats")) { /* named columns */
        size_t cols = (size_t)c->stats_cols, rows = t->count / cols;
        for (size_t r = 0; r < rows; r++)
            for (size_t col = 0; col < cols; col++)
                g[r * cols + col] =
                    tu_load(o->data, o->dtype, r * SDPA_STAT_COUNT + (size_t)c->stats_map[col]);
    } else {
        for (size_t i = 0; i < t->count; i++)
            g[i] = tu_load(o->data, o->dtype, i);
    }
    sc_compare_values(g, e, t->count, c->tol_max_abs, c->tol_rel_l2, cmp);
    cmp->which = w;
    free(g);
    free(e);
    return 1;
}

/* "[b,h,i,j]" for a flat index into the expected tensor. */
static void index_str(const sc_tensor *t, size_t flat, char *buf, size_t cap)
{
    int64_t idx[4] = {0};
    for (int a = t->rank - 1; a >= 0; a--) {
        idx[a] = (int64_t)(flat % (size_t)t->shape[a]);
        flat /= (size_t)t->shape[a];
    }
    size_t n = (size_t)snprintf(buf, cap, "[");
    for (int a = 0; a < t->rank && n < cap; a++)
        n += (size_t)snprintf(buf + n, cap - n, "%s%lld", a ? "," : "", (long long)idx[a]);
    if (n < cap)
        snprintf(buf + n, cap - n, "]");
}

void sc_run(sdpa_context *ctx, const sc_case *c, sc_result *r)
{
    sc_run_tile(ctx, c, NULL, r);
}

void sc_run_tile(sdpa_context *ctx, const sc_case *c, const sdpa_tile_config *tile,
                 sc_result *r)
{
    outbuf o[SC_MAX_KEYS];
    sdpa_plan *plan = NULL;
    sdpa_status st;
    memset(o, 0, sizeof o);
    memset(r, 0, sizeof *r);
    snprintf(r->name, sizeof r->name, "%s", c->name);
    r->tol_max_abs = c->tol_max_abs;
    r->tol_rel_l2 = c->tol_rel_l2;
    double t0 = tu_now();

    /* Every case key is a slot name: inputs go to their slot as they are;
     * outputs get a NaN-poisoned host tensor of the slot's dtype and shape
     * when expected, required (out), or read by the backward (lse) or
     * required of it (dq, dk, dv) in a backward case. */
    sdpa_attention_desc desc = c->attrs;
    sdpa_forward_tensors *t = &desc.tensors;
    sdpa_backward_tensors bt;
    sc_case_inputs(c, t, &bt);
    for (int w = 0; w < sc_key_count(); w++) {
        sdpa_slot_info info;
        sdpa_slot_group group;
        sdpa_tensor *x = slot_of(w, t, &bt, &info, &group);
        if (!x || !info.output)
            continue;
        int fwd = group == SDPA_SLOT_FORWARD;
        int need = c->want[w].present || (fwd && info.required) ||
                   (c->backward && (info.saved || (!fwd && info.required)));
        if (!need)
            continue;
        int64_t s[4], file[4];
        sc_slot_shape(c, sc_key_name(w), s, file);
        sdpa_dtype dt = info.dtype != SDPA_DTYPE_NONE ? info.dtype : info.kv ? c->kv_dtype
                                                                              : c->dtype;
        if (!out_alloc(&o[w], dt, s[0], s[1], s[2], s[3])) {
            rfail(r, SC_FAIL, "output %s: too large or out of memory", sc_key_name(w));
            goto done;
        }
        *x = host4(o[w].data, dt, s[0], s[1], s[2], s[3]);
    }

    sdpa_plan_options po;
    sdpa_plan_options_init(&po);
    po.tile = tile;
    if (c->backward)
        po.flags |= SDPA_PLAN_BACKWARD;
    st = sdpa_plan_create(ctx, &desc, &po, &plan);
    if (st != SDPA_OK) {
        call_failed(ctx, r, "sdpa_plan_create", st);
        goto done;
    }
    st = sdpa_plan_forward(plan, t);
    if (st != SDPA_OK) {
        call_failed(ctx, r, "sdpa_plan_forward", st);
        goto done;
    }
    if (c->backward) {
        st = sdpa_plan_backward(plan, t, &bt);
        if (st != SDPA_OK) {
            call_failed(ctx, r, "sdpa_plan_backward", st);
            goto done;
        }
    }
    st = sdpa_context_finish(ctx);
    if (st != SDPA_OK) {
        call_failed(ctx, r, "sdpa_context_finish", st);
        goto done;
    }
    r->seconds = tu_now() - t0;

    r->verdict = SC_PASS;
    size_t n = 0;
    for (int w = 0; w < sc_key_count(); w++) {
        if (!c->want[w].present)
            continue;
        sc_compare *cmp = &r->cmp[r->ncmp];
        if (!compare_output(c, w, &o[w], cmp)) {
            rfail(r, SC_FAIL, "out of memory while comparing %s", sc_key_name(w));
            goto done;
        }
        r->ncmp++;
        if (cmp->ok)
            continue;
        r->verdict = SC_FAIL;
        char where[96];
        index_str(&c->want[w], cmp->worst, where, sizeof where);
        if (n < sizeof r->reason) {
            if (cmp->bad_nonfinite)
                n += (size_t)snprintf(r->reason + n, sizeof r->reason - n,
                                      "%s%s: %zu non-finite expected entries not matched (first %s)",
                                      n ? "; " : "", sc_key_name(w), cmp->bad_nonfinite, where);
            else
                n += (size_t)snprintf(r->reason + n, sizeof r->reason - n,
                                      "%s%s: max_abs %.3g (tol %.3g) at %s, rel_l2 %.3g (tol %.3g)",
                                      n ? "; " : "", sc_key_name(w), cmp->max_abs,
                                      c->tol_max_abs, where, cmp->rel_l2, c->tol_rel_l2);
        }
    }
done:
    if (r->seconds == 0)
        r->seconds = tu_now() - t0;
    sdpa_plan_destroy(plan);
    for (int w = 0; w < SC_MAX_KEYS; w++)
        free(o[w].data);
}

void sc_check_dir(sdpa_context *ctx, const char *dir, sc_result *r)
{
    sc_check_dir_tile(ctx, dir, NULL, r);
}

void sc_check_dir_tile(sdpa_context *ctx, const char *dir, const sdpa_tile_config *tile,
                       sc_result *r)
{
    sc_case *c = malloc(sizeof *c);
    memset(r, 0, sizeof *r);
    if (!c) {
        snprintf(r->name, sizeof r->name, "%s", dir);
        rfail(r, SC_FAIL, "out of memory");
        return;
    }
    char err[512];
    if (!sc_load(dir, c, err, sizeof err)) {
        snprintf(r->name, sizeof r->name, "%s", c->name);
        rfail(r, SC_FAIL, "%s", err);
    } else {
        sc_run_tile(ctx, c, tile, r);
    }
    sc_free(c);
    free(c);
}

/* ---- finding cases ------------------------------------------------------------------ */

static int list_add(sc_list *l, const char *path)
{
    if (l->n == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 16;
        char **p = realloc(l->paths, cap * sizeof *p);
        if (!p)
            return 0;
        l->paths = p;
        l->cap = cap;
    }
    l->paths[l->n] = strdup(path);
    if (!l->paths[l->n])
        return 0;
    l->n++;
    return 1;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The folders on the way down from PATH, by device and inode: a folder met
 * again below itself (a bind mount, a loop) is not entered. */
typedef struct walk {
    dev_t dev[SC_MAX_DEPTH + 1];
    ino_t ino[SC_MAX_DEPTH + 1];
} walk;

static int find_rec(const char *path, int depth, walk *w, sc_list *l, char *err, size_t errcap)
{
    char p[4352];
    struct stat st;
    if (!tu_path_join(p, sizeof p, path, "case.json")) {
        snprintf(err, errcap, "%s: path too long", path);
        return 0;
    }
    if (tu_is_file(p))
        return list_add(l, path) ? 1 : (snprintf(err, errcap, "out of memory"), 0);
    if (depth >= SC_MAX_DEPTH)
        return 1;
    if (stat(path, &st) != 0)
        st.st_dev = 0, st.st_ino = 0;
    for (int a = 0; a < depth; a++)
        if (w->dev[a] == st.st_dev && w->ino[a] == st.st_ino)
            return 1;
    w->dev[depth] = st.st_dev;
    w->ino[depth] = st.st_ino;
    DIR *d = opendir(path);
    if (!d && depth > 0)
        return 1; /* an unreadable folder below PATH holds no case we can run */
    if (!d) {
        snprintf(err, errcap, "%s: cannot open (no case.json and not a readable folder)", path);
        return 0;
    }
    sc_list sub = {0};
    struct dirent *e;
    int ok = 1;
    while (ok && (e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        /* lstat: a symlink below PATH is not followed (self-links would
         * otherwise repeat every case below them) */
        if (!tu_path_join(p, sizeof p, path, e->d_name) || lstat(p, &st) != 0 ||
            !S_ISDIR(st.st_mode))
            continue;
        ok = list_add(&sub, p);
    }
    closedir(d);
    if (!ok) {
        sc_list_free(&sub);
        snprintf(err, errcap, "out of memory");
        return 0;
    }
    if (sub.n)
        qsort(sub.paths, sub.n, sizeof *sub.paths, cmp_str);
    for (size_t i = 0; ok && i < sub.n; i++)
        ok = find_rec(sub.paths[i], depth + 1, w, l, err, errcap);
    sc_list_free(&sub);
    return ok;
}

int sc_find(const char *path, sc_list *list, char *err, size_t errcap)
{
    walk w;
    if (errcap)
        err[0] = '\0';
    if (!tu_is_dir(path)) {
        snprintf(err, errcap, "%s: not a folder", path);
        return 0;
    }
    if (!find_rec(path, 0, &w, list, err, errcap)) {
        sc_list_free(list); /* nothing half-found survives a failure */
        return 0;
    }
    return 1;
}

void sc_list_free(sc_list *list)
{
    for (size_t i = 0; i < list->n; i++)
        free(list->paths[i]);
    free(list->paths);
    memset(list, 0, sizeof *list);
}
