/*
 * lab_task.h — the small learning task behind `sdpa-lab train` and
 * `sdpa-lab qknorm`: associative recall with one attention layer.
 *
 * A sequence holds `pairs` (key token, value token) pairs with distinct keys
 * and distinct values; each of its `queries` queries is one of its key
 * tokens and must retrieve that key's value. Key tokens have fixed random
 * embeddings E (vocab x d_model, unit-variance entries); the model learns
 * only the query and key projections Wq, Wk (d_model x d), so
 *   q = E[query] Wq,  k_j = E[key_j] Wk,  v_j = onehot(value_j),
 *   o = softmax(scale * q.k) V   (libsdpa forward, on the chosen backend),
 *   loss = cross-entropy of softmax(beta * o) against the right value.
 * The gradients dq, dk come from sdpa_plan_backward; the tool applies the
 * chain rule to Wq, Wk and takes an Adam or SGD step. The attention entropy,
 * Jacobian norm, p_max and logit_max of each epoch come from the library's
 * statistics output.
 */
#ifndef SDPA_LAB_TASK_H
#define SDPA_LAB_TASK_H

#include "lab_common.h"

typedef struct lab_task_cfg {
    int d;              /* head size of q and k */
    double scale;       /* 1.0, SDPA_SCALE_DEFAULT (1/sqrt d), SDPA_SCALE_MUP (1/d) */
    sdpa_qk_norm qk_norm;
    int d_model;        /* embedding width */
    int vocab;          /* key tokens */
    int values;         /* value tokens (= Dv); >= pairs */
    int pairs;          /* pairs per sequence; <= vocab */
    int queries;        /* queries per sequence */
    int batch;          /* sequences per step */
    int steps;          /* optimizer steps per epoch */
    int epochs;
    int eval_batches;   /* held-out batches evaluated after each epoch */
    int adam;           /* 1 = Adam (beta1 0.9, beta2 0.999, eps 1e-8), 0 = SGD */
    double lr;
    double beta;        /* readout sharpness: logits = beta * o */
    double init_std;    /* std of Wq, Wk entries, times 1/sqrt(d_model) */
    double init_gain;   /* extra factor on the initial Wq, Wk (1; `init` uses
                           d^(-1/4)); the random draws do not depend on it */
    uint64_t seed;      /* data and embeddings; Wq/Wk also depend on d */
} lab_task_cfg;

/* Defaults for the train subcommand (see lab_task.c). */
void lab_task_cfg_init(lab_task_cfg *cfg);

/* Elements of the largest attention tensor a run with head size d would
 * allocate; callers refuse runs above LAB_TASK_MAX_ELEMS. */
#define LAB_TASK_MAX_ELEMS ((int64_t)1 << 26)
int64_t lab_task_elems(const lab_task_cfg *cfg, int d);

/* Measurements after an epoch (epoch 0 = before training), on the held-out
 * batches. The attention statistics are per query row: the evaluation runs
 * every query of a sequence as its own head (Hq = queries, Hkv = 1), so the
 * library's per-head statistics are per-row values, and the tool reports
 * their mean and distribution. A row whose inputs or output are not finite
 * makes every attention statistic of the epoch NaN (divergence reads as
 * divergence, on every backend). */
typedef struct lab_epoch {
    double loss;        /* mean cross-entropy */
    double acc;         /* fraction of queries whose argmax o is the right value */
    double entropy;     /* mean attention entropy (nats), from entropy_mean */
    double jacobian;    /* mean softmax-Jacobian Frobenius norm over rows */
    double jac_median;  /* median row ||J||_F */
    double jac_q10;     /* 10 % quantile of row ||J||_F */
    double pmax;        /* mean max attention probability */
    double sat_frac;    /* fraction of rows with p_max > 0.99 (saturated_frac) */
    double logit_max;   /* largest score seen (logit_max) */
    double wnorm;       /* sqrt(||Wq||^2 + ||Wk||^2) */
    double grad_norm;   /* mean over the epoch's steps of ||dL/d(Wq,Wk)|| */
    double update_rel;  /* mean over the epoch's steps of ||dW|| / ||W|| */
    double update_rel_first; /* ||dW|| / ||W|| of the epoch's first step */
    int nonfinite;      /* rows with non-finite inputs or output */
} lab_epoch;

/* Runs the task: out[0..epochs] receives the measurements. Returns 0;
 * LAB_TASK_UNSUPPORTED (nothing printed) when the backend refuses the plan
 * with SDPA_ERR_UNSUPPORTED (e.g. a head size above its limit); or 1 after
 * printing the library's error. */
#define LAB_TASK_UNSUPPORTED 2
int lab_task_run(lab_env *env, const lab_task_cfg *cfg, lab_epoch *out);

/* Linear-interpolated quantile u in [0, 1] of x[0..n) (sorts x); NaN for
 * n = 0. */
double lab_quantile(double *x, int n, double u);

/* "1", "1/sqrt(d)", "1/d" or the number, for tables; "1", "rsqrt", "inv" or
 * the number for JSON (`key` = 1). */
const char *lab_scale_name(double scale, int key, char *buf, size_t cap);
/* Parses "1" | "rsqrt" | "1/sqrt(d)" | "inv" | "1/d" | a positive number. */
int lab_scale_parse(const char *s, double *out);

/* ---- shared by the train and qknorm subcommands (lab_train.c) ---------- */

#define LAB_MAX_SEEDS 32

typedef struct lab_task_opts {
    lab_task_cfg cfg;
    int epochs_set, steps_set, lr_set; /* given on the command line */
    int quiet;                         /* --quiet: no per-epoch lines */
    int seeds;                         /* --seeds N: seeds seed .. seed+N-1 (1) */
} lab_task_opts;

/* Handles --epochs, --steps, --batch, --lr, --optim, --pairs, --quiet,
 * --seeds at the current argument. Returns 0 when it is none of them;
 * errors go to a->error. */
int lab_task_flag(ta_args *a, lab_task_opts *o);

/* Runs over several seeds are stored [seed][run][epoch]: epoch e of run r
 * of seed k is ep[(k * nruns + r) * (epochs + 1) + e]. lab_gather copies
 * one field (offsetof(lab_epoch, field), a double) of epoch e of run r for
 * every seed into out[0..nseeds). */
void lab_gather(const lab_epoch *ep, int nruns, int epochs, int nseeds, int r, int e,
                size_t field, double *out);
/* The mean of v[0..n), followed by "+-" and the sample standard deviation
 * when n > 1; "nan" when any value is not finite. Returns buf. */
const char *lab_fmt_seeds(char *buf, size_t cap, const double *v, int n, int prec);
/* " .. +N-1 (N seeds)" after the first seed in a header line; "" for 1. */
const char *lab_seeds_note(char *buf, size_t cap, int nseeds);
/* Mean and sample standard deviation of v[0..n) (sd 0 for n = 1; NaN when a
 * value is not finite). */
void lab_mean_sd(const double *v, int n, double *mean, double *sd);

/* The option loop of a subcommand that runs the task at one head size
 * (qknorm, init): global flags, lab_task_flag's, --d N, --scale S when
 * `with_scale`, --quick when `quick` is not NULL; --help calls help(). Then
 * refuses a d whose tensors are too large. Returns 1 to run; 0 to stop with
 * exit code *rc (0 after help, LAB_EXIT_USAGE after the message). */
int lab_task_parse_one_d(lab_env *env, int argc, char **argv, void (*help)(void),
                         lab_task_opts *o, int with_scale, int *quick, int *rc);

/* One aligned line per epoch, under lab_print_epoch_head(). */
void lab_print_epoch_head(void);
void lab_print_epoch(int e, const lab_epoch *x);
/* First epoch whose loss, gradient or attention statistics are not finite
 * (a diverged run), or -1. */
int lab_diverged(const lab_epoch *ep, int epochs);
/* `"epochs":[{...}, ...]` for epochs 0..epochs. */
void lab_json_epochs(const lab_epoch *ep, int epochs);

#endif /* SDPA_LAB_TASK_H */
