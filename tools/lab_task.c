/*
 * lab_task.c — associative recall trained through libsdpa (see lab_task.h).
 * Called by lab_train.c and lab_qknorm.c, once per (d, scale, qk_norm) run.
 *
 * One plan per run (forward + SDPA_PLAN_BACKWARD, host f32 tensors, lse and
 * stats requested) serves every step. Shapes: batch b = one sequence, one
 * head, Sq = queries, Skv = pairs, D = d, Dv = values. A second, forward-only
 * plan evaluates the held-out batches over the same memory viewed as
 * Hq = queries heads of one query each sharing one KV head (Hkv = 1), so its
 * per-head statistics are per-row values. Everything the tool computes itself (projections, readout,
 * chain rule, optimizer) is in float64; the attention is the library's.
 *
 * Determinism: embeddings, training batches and evaluation batches depend
 * only on cfg->seed, the initial Wq/Wk only on (seed, d), so runs that differ
 * in scale or QK-norm see identical data and start from identical weights.
 */
#include "lab_task.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void lab_task_cfg_init(lab_task_cfg *c)
{
    memset(c, 0, sizeof *c);
    c->d = 64;
    c->scale = SDPA_SCALE_DEFAULT;
    c->qk_norm = SDPA_QK_NORM_NONE;
    c->d_model = 16;
    c->vocab = 16;
    c->values = 16;
    c->pairs = 8;
    c->queries = 4;
    c->batch = 32;
    c->steps = 10;
    c->epochs = 10;
    c->eval_batches = 4;
    c->adam = 1;
    c->lr = 0.01;
    c->beta = 8.0;
    c->init_std = 1.0;
    c->init_gain = 1.0;
    c->seed = 1;
}

int64_t lab_task_elems(const lab_task_cfg *c, int d)
{
    int64_t rows = c->pairs > c->queries ? c->pairs : c->queries;
    return (int64_t)c->batch * rows * (d > c->values ? d : c->values);
}

const char *lab_scale_name(double scale, int key, char *buf, size_t cap)
{
    if (scale == SDPA_SCALE_DEFAULT)
        return key ? "rsqrt" : "1/sqrt(d)";
    if (scale == SDPA_SCALE_MUP)
        return key ? "inv" : "1/d";
    snprintf(buf, cap, "%g", scale);
    return buf;
}

int lab_scale_parse(const char *s, double *out)
{
    if (strcmp(s, "rsqrt") == 0 || strcmp(s, "1/sqrt(d)") == 0 || strcmp(s, "sqrt") == 0)
        *out = SDPA_SCALE_DEFAULT;
    else if (strcmp(s, "inv") == 0 || strcmp(s, "1/d") == 0 || strcmp(s, "mup") == 0)
        *out = SDPA_SCALE_MUP;
    else if (!ta_parse_double(s, out) || !(*out > 0))
        return 0;
    return 1;
}

/* One batch of sequences: tokens only. */
typedef struct batch {
    int *key, *val;     /* B x pairs */
    int *qpos;          /* B x queries: index of the queried pair */
} batch;

static void sample_batch(tu_rng *r, const lab_task_cfg *c, batch *b)
{
    int perm_k[1024], perm_v[1024];
    for (int s = 0; s < c->batch; s++) {
        for (int i = 0; i < c->vocab; i++)
            perm_k[i] = i;
        for (int i = 0; i < c->values; i++)
            perm_v[i] = i;
        for (int i = 0; i < c->pairs; i++) { /* partial Fisher-Yates */
            int j = i + (int)(tu_rng_uniform(r) * (c->vocab - i));
            int t = perm_k[i];
            perm_k[i] = perm_k[j], perm_k[j] = t;
            j = i + (int)(tu_rng_uniform(r) * (c->values - i));
            t = perm_v[i];
            perm_v[i] = perm_v[j], perm_v[j] = t;
            b->key[s * c->pairs + i] = perm_k[i];
            b->val[s * c->pairs + i] = perm_v[i];
        }
        for (int i = 0; i < c->queries; i++)
            b->qpos[s * c->queries + i] = (int)(tu_rng_uniform(r) * c->pairs);
    }
}

/* Everything one run owns. */
typedef struct run {
    const lab_task_cfg *c;
    int B, Sq, P, D, Dv, M, V; /* batch, queries, pairs, d, values, d_model, vocab */
    double *E, *Wq, *Wk, *PQ, *PK, *gQ, *gK, *gWq, *gWk, *mq, *vq, *mk, *vk;
    float *q, *k, *v, *o, *lse, *stats, *rstats, *dout, *dq, *dk, *dv;
    double *rows;       /* per-row ||J||_F of one evaluation */
    batch tr, ev;
    sdpa_plan *plan, *eplan;
    sdpa_forward_tensors ft, eft;
    sdpa_backward_tensors bt;
} run;

static void run_free(run *r)
{
    void *p[] = {r->E, r->Wq, r->Wk, r->PQ, r->PK, r->gQ, r->gK, r->gWq, r->gWk,
                 r->mq, r->vq, r->mk, r->vk, r->q, r->k, r->v, r->o, r->lse,
                 r->stats, r->rstats, r->rows, r->dout, r->dq, r->dk, r->dv,
                 r->tr.key, r->tr.val,
                 r->tr.qpos, r->ev.key, r->ev.val, r->ev.qpos};
    for (size_t i = 0; i < sizeof p / sizeof p[0]; i++)
        free(p[i]);
    sdpa_plan_destroy(r->plan);
    sdpa_plan_destroy(r->eplan);
}

static int run_alloc(run *r)
{
    size_t B = (size_t)r->B, D = (size_t)r->D, Sq = (size_t)r->Sq, P = (size_t)r->P;
    size_t Dv = (size_t)r->Dv, M = (size_t)r->M, V = (size_t)r->V;
    double **dd[] = {&r->Wq, &r->Wk, &r->gWq, &r->gWk, &r->mq, &r->vq, &r->mk, &r->vk};
    for (size_t i = 0; i < sizeof dd / sizeof dd[0]; i++)
        if (!(*dd[i] = calloc(M * D, sizeof(double))))
            return 0;
    double **dv[] = {&r->PQ, &r->PK, &r->gQ, &r->gK};
    for (size_t i = 0; i < sizeof dv / sizeof dv[0]; i++)
        if (!(*dv[i] = calloc(V * D, sizeof(double))))
            return 0;
    r->E = calloc(V * M, sizeof(double));
    r->q = malloc(B * Sq * D * sizeof(float));
    r->dq = malloc(B * Sq * D * sizeof(float));
    r->k = malloc(B * P * D * sizeof(float));
    r->dk = malloc(B * P * D * sizeof(float));
    r->v = malloc(B * P * Dv * sizeof(float));
    r->dv = malloc(B * P * Dv * sizeof(float));
    r->o = malloc(B * Sq * Dv * sizeof(float));
    r->dout = malloc(B * Sq * Dv * sizeof(float));
    r->lse = malloc(B * Sq * sizeof(float));
    r->stats = malloc(B * SDPA_STAT_COUNT * sizeof(float));
    r->rstats = malloc(B * Sq * SDPA_STAT_COUNT * sizeof(float));
    r->tr.key = malloc(B * P * sizeof(int));
    r->tr.val = malloc(B * P * sizeof(int));
    r->tr.qpos = malloc(B * Sq * sizeof(int));
    size_t EB = B * (size_t)r->c->eval_batches;
    r->ev.key = malloc(EB * P * sizeof(int));
    r->ev.val = malloc(EB * P * sizeof(int));
    r->ev.qpos = malloc(EB * Sq * sizeof(int));
    r->rows = malloc(EB * Sq * sizeof(double));
    return r->rows && r->rstats && r->E && r->q && r->dq && r->k && r->dk && r->v &&
           r->dv && r->o && r->dout &&
           r->lse && r->stats && r->tr.key && r->tr.val && r->tr.qpos && r->ev.key &&
           r->ev.val && r->ev.qpos;
}

/* PX = E W for X in {Q, K}: (V x M)(M x D). */
static void project(const run *r, const double *W, double *PX)
{
    for (int t = 0; t < r->V; t++) {
        double *row = PX + (size_t)t * r->D;
        memset(row, 0, (size_t)r->D * sizeof *row);
        for (int m = 0; m < r->M; m++) {
            double e = r->E[(size_t)t * r->M + m];
            const double *w = W + (size_t)m * r->D;
            for (int j = 0; j < r->D; j++)
                row[j] += e * w[j];
        }
    }
}

/* Fills q, k, v for the sequences b0 .. b0+B-1 of `bt`. */
static void fill_inputs(run *r, const batch *bt, int b0)
{
    for (int s = 0; s < r->B; s++) {
        const int *key = bt->key + (size_t)(b0 + s) * r->P;
        const int *val = bt->val + (size_t)(b0 + s) * r->P;
        const int *qp = bt->qpos + (size_t)(b0 + s) * r->Sq;
        for (int i = 0; i < r->Sq; i++) {
            const double *src = r->PQ + (size_t)key[qp[i]] * r->D;
            float *dst = r->q + ((size_t)s * r->Sq + i) * r->D;
            for (int j = 0; j < r->D; j++)
                dst[j] = (float)src[j];
        }
        for (int i = 0; i < r->P; i++) {
            const double *src = r->PK + (size_t)key[i] * r->D;
            float *dst = r->k + ((size_t)s * r->P + i) * r->D;
            for (int j = 0; j < r->D; j++)
                dst[j] = (float)src[j];
            float *vd = r->v + ((size_t)s * r->P + i) * r->Dv;
            for (int j = 0; j < r->Dv; j++)
                vd[j] = j == val[i] ? 1.0f : 0.0f;
        }
    }
}

/* Readout loss over the B x Sq outputs; writes dout (mean-loss gradient) when
 * `grad`, counts correct answers. */
static double readout(run *r, const batch *bt, int b0, int grad, int *correct)
{
    double loss = 0, z[1024];
    const double n = (double)r->B * r->Sq, beta = r->c->beta;
    for (int s = 0; s < r->B; s++)
        for (int i = 0; i < r->Sq; i++) {
            const float *o = r->o + ((size_t)s * r->Sq + i) * r->Dv;
            int pos = bt->qpos[(size_t)(b0 + s) * r->Sq + i];
            int target = bt->val[(size_t)(b0 + s) * r->P + pos];
            double m = -INFINITY, l = 0;
            int best = 0;
            for (int c = 0; c < r->Dv; c++) {
                z[c] = beta * o[c];
                if (z[c] > m)
                    m = z[c], best = c;
            }
            for (int c = 0; c < r->Dv; c++)
                l += (z[c] = exp(z[c] - m));
            loss += -log(z[target] / l);
            *correct += best == target;
            if (grad) {
                float *g = r->dout + ((size_t)s * r->Sq + i) * r->Dv;
                for (int c = 0; c < r->Dv; c++)
                    g[c] = (float)(beta * (z[c] / l - (c == target)) / n);
            }
        }
    return loss;
}

static int plan_create(lab_env *env, run *r)
{
    sdpa_attention_desc d;
    sdpa_attention_desc_init(&d);
    d.scale = r->c->scale;
    d.qk_norm = r->c->qk_norm;
    sdpa_forward_tensors *t = &r->ft;
    t->q = sdpa_tensor_host(r->q, SDPA_DTYPE_F32, r->B, 1, r->Sq, r->D);
    t->k = sdpa_tensor_host(r->k, SDPA_DTYPE_F32, r->B, 1, r->P, r->D);
    t->v = sdpa_tensor_host(r->v, SDPA_DTYPE_F32, r->B, 1, r->P, r->Dv);
    t->out = sdpa_tensor_host(r->o, SDPA_DTYPE_F32, r->B, 1, r->Sq, r->Dv);
    t->lse = sdpa_tensor_host(r->lse, SDPA_DTYPE_F32, r->B, 1, r->Sq, 1);
    t->stats = sdpa_tensor_host(r->stats, SDPA_DTYPE_F32, r->B, 1, 1, SDPA_STAT_COUNT);
    d.tensors = *t;
    r->bt.dout = sdpa_tensor_host(r->dout, SDPA_DTYPE_F32, r->B, 1, r->Sq, r->Dv);
    r->bt.dq = sdpa_tensor_host(r->dq, SDPA_DTYPE_F32, r->B, 1, r->Sq, r->D);
    r->bt.dk = sdpa_tensor_host(r->dk, SDPA_DTYPE_F32, r->B, 1, r->P, r->D);
    r->bt.dv = sdpa_tensor_host(r->dv, SDPA_DTYPE_F32, r->B, 1, r->P, r->Dv);
    sdpa_plan_options po;
    sdpa_plan_options_init(&po);
    po.flags = SDPA_PLAN_BACKWARD;
    sdpa_status st = sdpa_plan_create(env->ctx, &d, &po, &r->plan);
    if (st == SDPA_ERR_UNSUPPORTED)
        return LAB_TASK_UNSUPPORTED;
    if (lab_failed(env, st, "plan_create"))
        return 1;
    /* evaluation: the same memory, one query per head, one shared KV head */
    sdpa_forward_tensors *e = &r->eft;
    memset(e, 0, sizeof *e);
    e->q = sdpa_tensor_host(r->q, SDPA_DTYPE_F32, r->B, r->Sq, 1, r->D);
    e->k = t->k;
    e->v = t->v;
    e->out = sdpa_tensor_host(r->o, SDPA_DTYPE_F32, r->B, r->Sq, 1, r->Dv);
    e->stats = sdpa_tensor_host(r->rstats, SDPA_DTYPE_F32, r->B, r->Sq, 1,
                                SDPA_STAT_COUNT);
    d.tensors = *e;
    st = sdpa_plan_create(env->ctx, &d, NULL, &r->eplan);
    if (st == SDPA_ERR_UNSUPPORTED)
        return LAB_TASK_UNSUPPORTED;
    return lab_failed(env, st, "plan_create (evaluation)");
}

static int all_finite(const float *x, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!isfinite(x[i]))
            return 0;
    return 1;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double lab_quantile(double *x, int n, double u)
{
    if (n <= 0)
        return NAN;
    qsort(x, (size_t)n, sizeof *x, cmp_double);
    double pos = u * (n - 1);
    int i = (int)floor(pos);
    if (i >= n - 1)
        return x[n - 1];
    return x[i] + (pos - i) * (x[i + 1] - x[i]);
}

/* Evaluates the held-out batches into *e, with per-row statistics from the
 * evaluation plan. A row is counted as non-finite when its query, its
 * sequence's keys or its output are not finite, or when the library reports
 * it empty (there is no mask, so only non-finite scores make a row empty). */
static int evaluate(lab_env *env, run *r, lab_epoch *e)
{
    int correct = 0, nb = r->c->eval_batches, nrow = 0, bad = 0;
    double loss = 0, ent = 0, jac = 0, pmax = 0, sat = 0, lmax = -INFINITY;
    project(r, r->Wq, r->PQ);
    project(r, r->Wk, r->PK);
    for (int b = 0; b < nb; b++) {
        fill_inputs(r, &r->ev, b * r->B);
        if (lab_failed(env, sdpa_plan_forward(r->eplan, &r->eft), "forward"))
            return 1;
        loss += readout(r, &r->ev, b * r->B, 0, &correct);
        for (int s = 0; s < r->B; s++) {
            int keys_ok = all_finite(r->k + (size_t)s * r->P * r->D, (size_t)r->P * r->D);
            for (int i = 0; i < r->Sq; i++) {
                size_t row = (size_t)s * r->Sq + i;
                const float *st = r->rstats + row * SDPA_STAT_COUNT;
                if (!keys_ok || !all_finite(r->q + row * r->D, (size_t)r->D) ||
                    !all_finite(r->o + row * r->Dv, (size_t)r->Dv) ||
                    !all_finite(st, SDPA_STAT_COUNT) || st[SDPA_STAT_EMPTY_ROWS] != 0) {
                    bad++;
                    continue;
                }
                ent += st[SDPA_STAT_ENTROPY_MEAN];
                jac += st[SDPA_STAT_JACOBIAN_FRO_MEAN];
                pmax += st[SDPA_STAT_PMAX_MEAN];
                sat += st[SDPA_STAT_SATURATED_FRAC];
                lmax = fmax(lmax, st[SDPA_STAT_LOGIT_MAX]);
                r->rows[nrow++] = st[SDPA_STAT_JACOBIAN_FRO_MEAN];
            }
        }
    }
    double nq = (double)nb * r->B * r->Sq, w = 0;
    for (size_t i = 0; i < (size_t)r->M * r->D; i++)
        w += r->Wq[i] * r->Wq[i] + r->Wk[i] * r->Wk[i];
    e->loss = loss / nq;
    e->acc = correct / nq;
    e->nonfinite = bad;
    e->wnorm = sqrt(w);
    if (bad || nrow == 0) {
        e->entropy = e->jacobian = e->jac_median = e->jac_q10 = NAN;
        e->pmax = e->sat_frac = e->logit_max = NAN;
        if (bad)
            e->loss = e->acc = NAN;
        return 0;
    }
    e->entropy = ent / nrow;
    e->jacobian = jac / nrow;
    e->pmax = pmax / nrow;
    e->sat_frac = sat / nrow;
    e->logit_max = lmax;
    e->jac_median = lab_quantile(r->rows, nrow, 0.5);
    e->jac_q10 = lab_quantile(r->rows, nrow, 0.1);
    return 0;
}

/* gW = E^T gX where gX[token] accumulated dq/dk rows: (M x V)(V x D). */
static void chain(const run *r, const double *gX, double *gW)
{
    memset(gW, 0, (size_t)r->M * r->D * sizeof *gW);
    for (int t = 0; t < r->V; t++)
        for (int m = 0; m < r->M; m++) {
            double e = r->E[(size_t)t * r->M + m];
            const double *g = gX + (size_t)t * r->D;
            double *w = gW + (size_t)m * r->D;
            for (int j = 0; j < r->D; j++)
                w[j] += e * g[j];
        }
}

/* One optimizer step on W; returns the squared norm of the step. */
static double update(const lab_task_cfg *c, double *W, const double *g, double *m,
                     double *v, size_t n, long step)
{
    double s2 = 0;
    if (!c->adam) {
        for (size_t i = 0; i < n; i++) {
            W[i] -= c->lr * g[i];
            s2 += (c->lr * g[i]) * (c->lr * g[i]);
        }
        return s2;
    }
    const double b1 = 0.9, b2 = 0.999, eps = 1e-8;
    double c1 = 1 - pow(b1, (double)step), c2 = 1 - pow(b2, (double)step);
    for (size_t i = 0; i < n; i++) {
        m[i] = b1 * m[i] + (1 - b1) * g[i];
        v[i] = b2 * v[i] + (1 - b2) * g[i] * g[i];
        double dw = c->lr * (m[i] / c1) / (sqrt(v[i] / c2) + eps);
        W[i] -= dw;
        s2 += dw * dw;
    }
    return s2;
}

/* One optimizer step on a fresh training batch; gives the gradient norm and
 * the step's size relative to the weights. */
static int train_step(lab_env *env, run *r, tu_rng *data, long step, double *gnorm,
                      double *rel)
{
    int correct = 0;
    sample_batch(data, r->c, &r->tr);
    project(r, r->Wq, r->PQ);
    project(r, r->Wk, r->PK);
    fill_inputs(r, &r->tr, 0);
    if (lab_failed(env, sdpa_plan_forward(r->plan, &r->ft), "forward"))
        return 1;
    readout(r, &r->tr, 0, 1, &correct);
    if (lab_failed(env, sdpa_plan_backward(r->plan, &r->ft, &r->bt), "backward"))
        return 1;
    memset(r->gQ, 0, (size_t)r->V * r->D * sizeof(double));
    memset(r->gK, 0, (size_t)r->V * r->D * sizeof(double));
    for (int s = 0; s < r->B; s++) {
        const int *key = r->tr.key + (size_t)s * r->P;
        const int *qp = r->tr.qpos + (size_t)s * r->Sq;
        for (int i = 0; i < r->Sq; i++) {
            const float *g = r->dq + ((size_t)s * r->Sq + i) * r->D;
            double *acc = r->gQ + (size_t)key[qp[i]] * r->D;
            for (int j = 0; j < r->D; j++)
                acc[j] += g[j];
        }
        for (int i = 0; i < r->P; i++) {
            const float *g = r->dk + ((size_t)s * r->P + i) * r->D;
            double *acc = r->gK + (size_t)key[i] * r->D;
            for (int j = 0; j < r->D; j++)
                acc[j] += g[j];
        }
    }
    chain(r, r->gQ, r->gWq);
    chain(r, r->gK, r->gWk);
    size_t n = (size_t)r->M * r->D;
    double g2 = 0;
    for (size_t i = 0; i < n; i++)
        g2 += r->gWq[i] * r->gWq[i] + r->gWk[i] * r->gWk[i];
    *gnorm = sqrt(g2);
    double w2 = 0;
    for (size_t i = 0; i < n; i++)
        w2 += r->Wq[i] * r->Wq[i] + r->Wk[i] * r->Wk[i];
    double s2 = update(r->c, r->Wq, r->gWq, r->mq, r->vq, n, step) +
                update(r->c, r->Wk, r->gWk, r->mk, r->vk, n, step);
    *rel = sqrt(s2 / w2);
    return 0;
}

int lab_task_run(lab_env *env, const lab_task_cfg *c, lab_epoch *out)
{
    run r;
    memset(&r, 0, sizeof r);
    r.c = c;
    r.B = c->batch, r.Sq = c->queries, r.P = c->pairs, r.D = c->d, r.Dv = c->values;
    r.M = c->d_model, r.V = c->vocab;
    int rc = 1;
    if (!run_alloc(&r)) {
        fprintf(stderr, "%s %s: out of memory\n", env->prog, env->cmd);
        goto done;
    }
    tu_rng rng;
    tu_rng_seed(&rng, c->seed);
    for (size_t i = 0; i < (size_t)r.V * r.M; i++)
        r.E[i] = tu_rng_normal(&rng);
    tu_rng_seed(&rng, c->seed * 1000003u + (uint64_t)c->d);
    double w0 = c->init_std * c->init_gain / sqrt((double)r.M);
    for (size_t i = 0; i < (size_t)r.M * r.D; i++) {
        r.Wq[i] = w0 * tu_rng_normal(&rng);
        r.Wk[i] = w0 * tu_rng_normal(&rng);
    }
    tu_rng ev_rng, data;
    tu_rng_seed(&ev_rng, c->seed ^ 0x5eed5eedull);
    batch one = r.tr;
    for (int b = 0; b < c->eval_batches; b++) {
        sample_batch(&ev_rng, c, &one);
        memcpy(r.ev.key + (size_t)b * r.B * r.P, one.key, (size_t)r.B * r.P * sizeof(int));
        memcpy(r.ev.val + (size_t)b * r.B * r.P, one.val, (size_t)r.B * r.P * sizeof(int));
        memcpy(r.ev.qpos + (size_t)b * r.B * r.Sq, one.qpos,
               (size_t)r.B * r.Sq * sizeof(int));
    }
    tu_rng_seed(&data, c->seed + 17);
    rc = plan_create(env, &r);
    if (rc != 0)
        goto done;
    rc = 1;
    if (evaluate(env, &r, &out[0]))
        goto done;
    out[0].grad_norm = out[0].update_rel = out[0].update_rel_first = 0;
    long step = 0;
    for (int e = 1; e <= c->epochs; e++) {
        double gsum = 0, usum = 0, g, u;
        for (int s = 0; s < c->steps; s++) {
            if (train_step(env, &r, &data, ++step, &g, &u))
                goto done;
            gsum += g;
            usum += u;
            if (s == 0)
                out[e].update_rel_first = u;
        }
        if (evaluate(env, &r, &out[e]))
            goto done;
        out[e].grad_norm = gsum / c->steps;
        out[e].update_rel = usum / c->steps;
    }
    rc = 0;
done:
    run_free(&r);
    return rc;
}
