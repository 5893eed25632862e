/*
 * lab_train.c — `sdpa-lab train`: the associative-recall task of lab_task.c
 * run for every (d, scale) pair, with the attention forward and backward on
 * the chosen backend. Prints a line per epoch (loss, accuracy, entropy,
 * Jacobian norm, max logit) for each run and a summary table; --plot draws
 * accuracy against epoch. Beside the means it reports how the rows are
 * distributed (median row ||J||_F, saturated_frac) and the weight-gradient
 * norm, because unscaled attention at large d starts with most rows
 * saturated while a few near-tied rows still carry large gradients: the mean
 * alone hides both. Every sentence under the table is computed from the runs
 * above it and printed only when their numbers support it.
 */
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "lab_cmds.h"
#include "lab_svg.h"
#include "lab_task.h"

#define MAX_DIMS 8
#define MAX_SCALES 4

static void help(void)
{
    printf("usage: sdpa-lab train [--dims 16,64,256,1024] [--scales 1,rsqrt,inv]\n"
           "                      [--epochs N] [--steps N] [--batch N] [--lr X]\n"
           "                      [--optim adam|sgd] [--pairs N] [--quick] [--quiet]\n"
           "\n"
           "Associative recall with one attention layer: each sequence holds key/value\n"
           "token pairs, each query is one of its keys and must retrieve that key's\n"
           "value. Fixed random token embeddings; learned query and key projections\n"
           "Wq, Wk (d_model x d); one-hot values; cross-entropy on beta * output.\n"
           "Attention forward and backward run in libsdpa on the chosen backend; the\n"
           "tool applies the chain rule to Wq, Wk and takes Adam or SGD steps.\n"
           "Accuracy, loss and the attention statistics are measured on held-out\n"
           "sequences after every epoch (epoch 0 = before training).\n"
           "\n"
           "  --dims LIST     head sizes d (default 16,64,256,1024)\n"
           "  --scales LIST   1 | rsqrt (1/sqrt(d)) | inv (1/d) | a number\n"
           "                  (default 1,rsqrt,inv)\n"
           "  --epochs N      epochs (default 15)\n"
           "  --steps N       optimizer steps per epoch (default 10)\n"
           "  --batch N       sequences per step (default 32)\n"
           "  --lr X          learning rate (default 0.01 for adam, 0.5 for sgd)\n"
           "  --optim NAME    adam (default) or sgd\n"
           "  --pairs N       key/value pairs per sequence (default 8)\n"
           "  --quick         small settings for tests: dims 64,1024, scales 1,rsqrt,\n"
           "                  5 epochs of 10 steps (explicit flags still win)\n"
           "  --quiet         summary only, no per-epoch lines\n"
           "  --seeds N       run every configuration with seeds seed .. seed+N-1 and show\n"
           "                  mean+-sd over them (default 1; per-epoch lines: first seed)\n"
           "\n%s", lab_global_help);
}

int lab_task_flag(ta_args *a, lab_task_opts *o)
{
    const char *v;
    lab_task_cfg *c = &o->cfg;
    if (ta_value(a, "--epochs", &v)) {
        if (v && !ta_parse_int(v, 1, 10000, &c->epochs))
            ta_fail(a, "--epochs wants an integer in [1, 10000], not '%s'", v);
        o->epochs_set = 1;
    } else if (ta_value(a, "--steps", &v)) {
        if (v && !ta_parse_int(v, 1, 100000, &c->steps))
            ta_fail(a, "--steps wants an integer in [1, 100000], not '%s'", v);
        o->steps_set = 1;
    } else if (ta_value(a, "--batch", &v)) {
        if (v && !ta_parse_int(v, 1, 4096, &c->batch))
            ta_fail(a, "--batch wants an integer in [1, 4096], not '%s'", v);
    } else if (ta_value(a, "--lr", &v)) {
        if (v && (!ta_parse_double(v, &c->lr) || !(c->lr > 0)))
            ta_fail(a, "--lr wants a positive number, not '%s'", v);
        o->lr_set = 1;
    } else if (ta_value(a, "--optim", &v)) {
        if (v && strcmp(v, "adam") == 0)
            c->adam = 1;
        else if (v && strcmp(v, "sgd") == 0)
            c->adam = 0;
        else if (v)
            ta_fail(a, "--optim wants adam or sgd, not '%s'", v);
    } else if (ta_value(a, "--pairs", &v)) {
        if (v && !ta_parse_int(v, 2, c->vocab < c->values ? c->vocab : c->values,
                               &c->pairs))
            ta_fail(a, "--pairs wants an integer in [2, %d], not '%s'",
                    c->vocab < c->values ? c->vocab : c->values, v);
    } else if (ta_flag(a, "--quiet")) {
        o->quiet = 1;
    } else if (ta_value(a, "--seeds", &v)) {
        if (v && !ta_parse_int(v, 1, LAB_MAX_SEEDS, &o->seeds))
            ta_fail(a, "--seeds wants an integer in [1, %d], not '%s'", LAB_MAX_SEEDS, v);
    } else {
        return 0;
    }
    return 1;
}

int lab_task_parse_one_d(lab_env *env, int argc, char **argv, void (*help)(void),
                         lab_task_opts *o, int with_scale, int *quick, int *rc)
{
    ta_args a;
    *rc = LAB_EXIT_OK;
    ta_init(&a, argc, argv);
    while (ta_next(&a) && !a.error) {
        const char *v;
        int g = lab_global_flag(env, &a);
        if (g == LAB_FLAG_HELP) {
            help();
            return 0;
        }
        if (g == LAB_FLAG_DONE || lab_task_flag(&a, o))
            continue;
        if (ta_value(&a, "--d", &v)) {
            if (v && !ta_parse_int(v, 1, 4096, &o->cfg.d))
                ta_fail(&a, "--d wants an integer in [1, 4096], not '%s'", v);
        } else if (with_scale && ta_value(&a, "--scale", &v)) {
            if (v && !lab_scale_parse(v, &o->cfg.scale))
                ta_fail(&a, "--scale wants 1, rsqrt, inv or a positive number, not '%s'", v);
        } else if (quick && ta_flag(&a, "--quick")) {
            *quick = 1;
        } else {
            lab_unknown_arg(&a);
        }
    }
    if (a.error) {
        *rc = lab_usage_error(env, "%s", a.message);
        return 0;
    }
    if (lab_task_elems(&o->cfg, o->cfg.d) > LAB_TASK_MAX_ELEMS) {
        *rc = lab_usage_error(env, "batch x pairs x d = %lld elements is too large (limit "
                                   "2^26)", (long long)lab_task_elems(&o->cfg, o->cfg.d));
        return 0;
    }
    return 1;
}

void lab_print_epoch_head(void)
{
    printf("  %5s %8s %7s %8s %10s %10s %6s %10s %9s %9s\n", "epoch", "loss", "acc",
           "entropy", "||J||_F", "med ||J||", "sat", "logit_max", "|W|", "|grad|");
}

void lab_print_epoch(int e, const lab_epoch *x)
{
    char c[9][32];
    printf("  %5d %8s %7s %8s %10s %10s %6s %10s %9s %9s\n", e,
           lab_fmt(c[0], 32, x->loss, 4), lab_fmt(c[1], 32, x->acc, 3),
           lab_fmt(c[2], 32, x->entropy, 4), lab_fmt(c[3], 32, x->jacobian, 4),
           lab_fmt(c[4], 32, x->jac_median, 4), lab_fmt(c[5], 32, x->sat_frac, 2),
           lab_fmt(c[6], 32, x->logit_max, 2), lab_fmt(c[7], 32, x->wnorm, 3),
           e ? lab_fmt(c[8], 32, x->grad_norm, 3) : "-");
}

void lab_json_epochs(const lab_epoch *ep, int epochs)
{
    printf("\"epochs\":[");
    for (int e = 0; e <= epochs; e++) {
        const lab_epoch *x = &ep[e];
        const char *names[] = {"loss", "acc", "entropy", "jacobian_fro",
                               "jacobian_fro_median", "jacobian_fro_q10", "pmax",
                               "saturated_frac", "logit_max", "wnorm", "grad_norm",
                               "update_rel"};
        double vals[] = {x->loss, x->acc, x->entropy, x->jacobian, x->jac_median,
                         x->jac_q10, x->pmax, x->sat_frac, x->logit_max, x->wnorm,
                         e ? x->grad_norm : NAN, e ? x->update_rel : NAN};
        printf("%s{\"epoch\":%d,\"nonfinite_rows\":%d", e ? "," : "", e, x->nonfinite);
        for (int c = 0; c < 12; c++) {
            printf(",\"%s\":", names[c]);
            lab_json_num(stdout, vals[c]);
        }
        printf("}");
    }
    printf("]");
}

void lab_gather(const lab_epoch *ep, int nruns, int epochs, int nseeds, int r, int e,
                size_t field, double *out)
{
    for (int k = 0; k < nseeds; k++) {
        const lab_epoch *x = ep + ((size_t)k * nruns + r) * (epochs + 1) + e;
        memcpy(&out[k], (const char *)x + field, sizeof(double));
    }
}

const char *lab_seeds_note(char *buf, size_t cap, int nseeds)
{
    if (nseeds > 1)
        snprintf(buf, cap, " .. +%d (%d seeds)", nseeds - 1, nseeds);
    else
        buf[0] = '\0';
    return buf;
}

void lab_mean_sd(const double *v, int n, double *mean, double *sd)
{
    double m = 0, s2 = 0;
    for (int i = 0; i < n; i++)
        m += v[i] / n;
    for (int i = 0; i < n; i++)
        s2 += (v[i] - m) * (v[i] - m);
    *mean = m;
    *sd = n > 1 ? sqrt(s2 / (n - 1)) : 0;
}

const char *lab_fmt_seeds(char *buf, size_t cap, const double *v, int n, int prec)
{
    double m, sd;
    char a[32], b[32];
    lab_mean_sd(v, n, &m, &sd);
    if (n <= 1 || !isfinite(m))
        return lab_fmt(buf, cap, m, prec);
    snprintf(buf, cap, "%s+-%s", lab_fmt(a, 32, m, prec), lab_fmt(b, 32, sd, prec));
    return buf;
}

/* First epoch whose accuracy reaches `level`, or -1. */
static int epochs_to(const lab_epoch *ep, int epochs, double level)
{
    for (int e = 0; e <= epochs; e++)
        if (ep[e].acc >= level)
            return e;
    return -1;
}

/* First epoch with non-finite statistics or loss, or -1. */
int lab_diverged(const lab_epoch *ep, int epochs)
{
    for (int e = 0; e <= epochs; e++)
        if (ep[e].nonfinite || !isfinite(ep[e].loss) || !isfinite(ep[e].grad_norm))
            return e;
    return -1;
}

/* The sentences under the summary, each printed only when the runs' numbers
 * show it: divergence, saturated starts (with the per-row figures and the
 * gradient norm against the 1/sqrt(d) run of the same d, whichever way that
 * comparison goes), and what "> E" in the last column means. With several
 * seeds every sentence says in how many of them it holds. */
static void train_footer(const lab_epoch *ep, int E, int S, const int *ok,
                         const int64_t *dims, int ndims, const double *scales, int nsc,
                         int pairs)
{
    char sb[32], a[32], b[32], g[32], h[32], of[48];
    int open = 0, late = 0, nruns = ndims * nsc;
    double v[LAB_MAX_SEEDS], w[LAB_MAX_SEEDS], m, sd;
    printf("\nmax entropy is log(%d) = %.3f nats; sat = fraction of rows with p_max > 0.99;\n"
           "med / q10 ||J|| = median / 10%% quantile over rows of the softmax-Jacobian norm;\n"
           "p_max = mean largest probability; |grad| ep1 = mean ||dL/d(Wq,Wk)|| over the\n"
           "first epoch's steps.%s\n", pairs, log((double)pairs),
           S > 1 ? "\nCells are mean+-sd over the seeds." : "");
    for (int i = 0; i < ndims; i++)
        for (int s = 0; s < nsc; s++) {
            int r = i * nsc + s, ndiv = 0, nsat = 0, first_div = -1;
            if (!ok[r])
                continue;
            for (int k = 0; k < S; k++) {
                const lab_epoch *x = ep + ((size_t)k * nruns + r) * (E + 1);
                int dv = lab_diverged(x, E);
                late |= epochs_to(x, E, 0.9) < 0;
                ndiv += dv >= 0;
                if (dv >= 0 && (first_div < 0 || dv < first_div))
                    first_div = dv;
                nsat += dv < 0 && x[0].sat_frac >= 0.5;
            }
            const char *sn = lab_scale_name(scales[s], 0, sb, 32);
            if (S > 1)
                snprintf(of, sizeof of, " in %d of %d seeds", ndiv, S);
            else
                of[0] = '\0';
            if (ndiv) {
                printf("%sd=%d, scale %s diverged%s at epoch %d%s: non-finite values, "
                       "shown as nan.\n", open++ ? "" : "\n", (int)dims[i], sn, of,
                       first_div, S > 1 ? " or later" : "");
                continue;
            }
            if (nsat == 0)
                continue;
            lab_gather(ep, nruns, E, S, r, 0, offsetof(lab_epoch, sat_frac), v);
            lab_mean_sd(v, S, &m, &sd);
            if (S > 1)
                snprintf(of, sizeof of, " in %d of %d seeds", nsat, S);
            printf("%sd=%d, scale %s starts saturated%s: %.0f%% of rows have p_max > 0.99%s,\n",
                   open++ ? "" : "\n", (int)dims[i], sn, of, 100 * m, S > 1 ? " (mean)" : "");
            lab_gather(ep, nruns, E, S, r, 0, offsetof(lab_epoch, jac_median), v);
            lab_gather(ep, nruns, E, S, r, 0, offsetof(lab_epoch, jacobian), w);
            printf("  median row ||J|| %s (mean %s).\n", lab_fmt_seeds(a, 32, v, S, 3),
                   lab_fmt_seeds(b, 32, w, S, 3));
            for (int t = 0; t < nsc; t++) {
                int q = i * nsc + t, larger = 0;
                if (scales[t] != SDPA_SCALE_DEFAULT || t == s || !ok[q])
                    continue;
                lab_gather(ep, nruns, E, S, r, 1, offsetof(lab_epoch, grad_norm), v);
                lab_gather(ep, nruns, E, S, q, 1, offsetof(lab_epoch, grad_norm), w);
                for (int k = 0; k < S; k++)
                    larger += v[k] > w[k];
                lab_fmt_seeds(g, 32, v, S, 3);
                lab_fmt_seeds(h, 32, w, S, 3);
                if (S > 1 && larger > 0 && larger < S)
                    printf("  Its weight gradient is larger than at 1/sqrt(d) in %d of %d "
                           "seeds (%s vs %s).\n", larger, S, g, h);
                else if (larger == S)
                    printf("  Its weight gradient is still larger than at 1/sqrt(d)%s (%s vs "
                           "%s):\n  only the rows that are not saturated can carry it.\n",
                           S > 1 ? " in every seed" : "", g, h);
                else
                    printf("  Its weight gradient is smaller than at 1/sqrt(d)%s (%s vs %s).\n",
                           S > 1 ? " in every seed" : "", g, h);
            }
        }
    if (late)
        printf("\n'> %d': 90%% accuracy not reached within the %d epochs run%s (a longer "
               "--epochs may reach it).\n", E, E, S > 1 ? " in some seed" : "");
}

int lab_cmd_train(lab_env *env, int argc, char **argv)
{
    int64_t dims[MAX_DIMS] = {16, 64, 256, 1024};
    double scales[MAX_SCALES] = {1.0, SDPA_SCALE_DEFAULT, SDPA_SCALE_MUP};
    int ndims = 4, nsc = 3, quick = 0, dims_set = 0, scales_set = 0;
    lab_task_opts o;
    memset(&o, 0, sizeof o);
    lab_task_cfg_init(&o.cfg);
    o.cfg.epochs = 15;
    o.seeds = 1;

    ta_args a;
    ta_init(&a, argc, argv);
    while (ta_next(&a) && !a.error) {
        const char *v;
        int g = lab_global_flag(env, &a);
        if (g == LAB_FLAG_HELP) {
            help();
            return LAB_EXIT_OK;
        }
        if (g == LAB_FLAG_DONE || lab_task_flag(&a, &o))
            continue;
        if (ta_value(&a, "--dims", &v)) {
            if (v && !ta_parse_i64_list(v, 1, 4096, 1, MAX_DIMS, dims, &ndims))
                ta_fail(&a, "--dims wants up to %d integers in [1, 4096], not '%s'",
                        MAX_DIMS, v);
            dims_set = 1;
        } else if (ta_value(&a, "--scales", &v)) {
            char buf[256];
            nsc = 0;
            if (v && strlen(v) < sizeof buf) {
                strcpy(buf, v);
                for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
                    if (nsc >= MAX_SCALES || !lab_scale_parse(tok, &scales[nsc])) {
                        nsc = 0;
                        break;
                    }
                    nsc++;
                }
            }
            if (v && nsc == 0)
                ta_fail(&a, "--scales wants up to %d of 1, rsqrt, inv or positive "
                            "numbers, not '%s'", MAX_SCALES, v);
            scales_set = 1;
        } else if (ta_flag(&a, "--quick")) {
            quick = 1;
        } else {
            lab_unknown_arg(&a);
        }
    }
    if (a.error)
        return lab_usage_error(env, "%s", a.message);
    if (quick) {
        if (!dims_set)
            dims[0] = 64, dims[1] = 1024, ndims = 2;
        if (!scales_set)
            scales[0] = 1.0, scales[1] = SDPA_SCALE_DEFAULT, nsc = 2;
        if (!o.epochs_set)
            o.cfg.epochs = 5;
    }
    for (int i = 0; i < ndims; i++)
        if (lab_task_elems(&o.cfg, (int)dims[i]) > LAB_TASK_MAX_ELEMS)
            return lab_usage_error(env, "batch x pairs x d = %lld elements is too large "
                                        "(limit 2^26)",
                                   (long long)lab_task_elems(&o.cfg, (int)dims[i]));
    if (!o.lr_set)
        o.cfg.lr = o.cfg.adam ? 0.01 : 0.5;
    o.cfg.seed = env->seed;
    if (lab_open(env))
        return LAB_EXIT_FAIL;

    int nruns = ndims * nsc, E = o.cfg.epochs, S = o.seeds;
    lab_epoch *ep = calloc((size_t)S * nruns * (E + 1), sizeof *ep);
    int ok[MAX_DIMS * MAX_SCALES], nok = 0; /* run supported by the backend */
    if (!ep) {
        fprintf(stderr, "sdpa-lab train: out of memory\n");
        return LAB_EXIT_FAIL;
    }
    const lab_task_cfg *c = &o.cfg;
    char seeds_note[48];
    if (!env->json)
        printf("associative recall: %d pairs/sequence, vocab %d, d_model %d, batch %d, "
               "%s lr %g, %d epochs x %d steps, seed %llu%s (%s backend)\n",
               c->pairs, c->vocab, c->d_model, c->batch, c->adam ? "adam" : "sgd", c->lr,
               E, c->steps, (unsigned long long)env->seed,
               lab_seeds_note(seeds_note, sizeof seeds_note, S),
               sdpa_backend_name(sdpa_context_backend(env->ctx)));
    double t0 = tu_now();
    for (int i = 0; i < ndims; i++)
        for (int s = 0; s < nsc; s++) {
            int r = i * nsc + s, st = 0;
            lab_task_cfg rc = o.cfg;
            rc.d = (int)dims[i];
            rc.scale = scales[s];
            char sb[32];
            for (int k = 0; k < S && st == 0; k++) {
                rc.seed = env->seed + (uint64_t)k;
                st = lab_task_run(env, &rc, ep + ((size_t)k * nruns + r) * (E + 1));
            }
            ok[r] = st == 0;
            nok += ok[r];
            if (st == LAB_TASK_UNSUPPORTED) {
                fprintf(stderr, "sdpa-lab train: d = %d, scale %s skipped: the %s backend "
                                "does not run it\n", rc.d, lab_scale_name(rc.scale, 0, sb, 32),
                        sdpa_backend_name(sdpa_context_backend(env->ctx)));
                continue;
            }
            if (st != 0) {
                free(ep);
                return LAB_EXIT_FAIL;
            }
            if (!env->json && !o.quiet) {
                printf("\nd = %d, scale %s%s\n", rc.d, lab_scale_name(rc.scale, 0, sb, 32),
                       S > 1 ? " (first seed)" : "");
                lab_print_epoch_head();
                for (int e = 0; e <= E; e++)
                    lab_print_epoch(e, ep + (size_t)r * (E + 1) + e);
            }
        }
    double secs = tu_now() - t0;
    if (nok == 0) {
        fprintf(stderr, "sdpa-lab train: the %s backend runs none of the head sizes\n",
                sdpa_backend_name(sdpa_context_backend(env->ctx)));
        free(ep);
        return LAB_EXIT_FAIL;
    }

    if (env->json) {
        printf("{\"command\":\"train\",\"epochs\":%d,\"seeds\":%d,", E, S);
        lab_json_env(stdout, env);
        printf(",\"optim\":\"%s\",\"lr\":", c->adam ? "adam" : "sgd");
        lab_json_num(stdout, c->lr);
        printf(",\"pairs\":%d,\"batch\":%d,\"steps\":%d,\"seconds\":", c->pairs, c->batch,
               c->steps);
        lab_json_num(stdout, secs);
        printf(",\"runs\":[");
        for (int r = 0; r < nruns; r++) {
            const lab_epoch *x = ep + (size_t)r * (E + 1);
            char sb[32];
            printf("%s\n{\"d\":%d,\"scale\":\"%s\",\"supported\":%s", r ? "," : "",
                   (int)dims[r / nsc], lab_scale_name(scales[r % nsc], 1, sb, 32),
                   ok[r] ? "true" : "false");
            if (!ok[r]) {
                printf("}");
                continue;
            }
            printf(",\"initial_entropy\":");
            lab_json_num(stdout, x[0].entropy);
            printf(",\"final_acc\":");
            lab_json_num(stdout, x[E].acc);
            printf(",\"final_loss\":");
            lab_json_num(stdout, x[E].loss);
            printf(",\"grad_norm_epoch1\":");
            lab_json_num(stdout, x[1].grad_norm);
            printf(",\"diverged\":%s", lab_diverged(x, E) >= 0 ? "true" : "false");
            /* -1: not reached within the epochs run (not "never") */
            printf(",\"epochs_to_90\":%d,", epochs_to(x, E, 0.9));
            lab_json_epochs(x, E);
            /* over all seeds: mean and sd of the summary figures, and each seed's */
            const struct { const char *key; int e; size_t off; } agg[] = {
                {"final_acc", E, offsetof(lab_epoch, acc)},
                {"final_loss", E, offsetof(lab_epoch, loss)},
                {"grad_norm_epoch1", 1, offsetof(lab_epoch, grad_norm)},
                {"saturated_frac_epoch0", 0, offsetof(lab_epoch, sat_frac)},
                {"jacobian_fro_median_epoch0", 0, offsetof(lab_epoch, jac_median)},
            };
            for (size_t j = 0; j < sizeof agg / sizeof agg[0]; j++) {
                double v[LAB_MAX_SEEDS], m, sd;
                lab_gather(ep, nruns, E, S, r, agg[j].e, agg[j].off, v);
                lab_mean_sd(v, S, &m, &sd);
                printf(",\"%s_mean\":", agg[j].key);
                lab_json_num(stdout, m);
                printf(",\"%s_sd\":", agg[j].key);
                lab_json_num(stdout, sd);
                printf(",\"%s_per_seed\":[", agg[j].key);
                for (int k = 0; k < S; k++) {
                    printf("%s", k ? "," : "");
                    lab_json_num(stdout, v[k]);
                }
                printf("]");
            }
            printf("}");
        }
        printf("]}\n");
    } else {
        printf("\nsummary (%d runs, %.1f s; chance accuracy about %.2f)\n\n", nruns, secs,
               1.0 / c->pairs);
        const char *head[] = {"d", "scale", "entropy@0", "||J||@0", "med ||J||@0",
                              "q10 ||J||@0", "p_max@0", "sat@0", "|grad| ep1", "final acc",
                              "final loss", "epochs to 90%"};
        const int right[] = {1, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1};
        tu_table t;
        tu_table_init(&t, 12, head, right);
        for (int r = 0; r < nruns; r++) {
            char cl[12][32];
            char sb[32];
            snprintf(cl[0], 32, "%d", (int)dims[r / nsc]);
            snprintf(cl[1], 32, "%s", lab_scale_name(scales[r % nsc], 0, sb, 32));
            const struct { int e; size_t off; int prec; } col[9] = {
                {0, offsetof(lab_epoch, entropy), 3}, {0, offsetof(lab_epoch, jacobian), 3},
                {0, offsetof(lab_epoch, jac_median), 3}, {0, offsetof(lab_epoch, jac_q10), 3},
                {0, offsetof(lab_epoch, pmax), 3}, {0, offsetof(lab_epoch, sat_frac), 2},
                {1, offsetof(lab_epoch, grad_norm), 3}, {E, offsetof(lab_epoch, acc), 3},
                {E, offsetof(lab_epoch, loss), 3},
            };
            for (int j = 0; j < 9; j++) {
                double v[LAB_MAX_SEEDS];
                lab_gather(ep, nruns, E, S, r, col[j].e, col[j].off, v);
                lab_fmt_seeds(cl[2 + j], 32, v, S, col[j].prec);
            }
            int reached = 0, e90[LAB_MAX_SEEDS];
            for (int k = 0; k < S; k++) {
                e90[k] = epochs_to(ep + ((size_t)k * nruns + r) * (E + 1), E, 0.9);
                reached += e90[k] >= 0;
            }
            if (S == 1)
                snprintf(cl[11], 32, e90[0] < 0 ? "> %d" : "%d", e90[0] < 0 ? E : e90[0]);
            else { /* the slowest seed, and how many reached it */
                int worst = 0;
                for (int k = 0; k < S; k++)
                    worst = e90[k] > worst ? e90[k] : worst;
                if (reached == S)
                    snprintf(cl[11], 32, "<= %d (all %d)", worst, S);
                else
                    snprintf(cl[11], 32, "> %d in %d/%d", E, S - reached, S);
            }
            for (int j = 2; j < 12 && !ok[r]; j++)
                snprintf(cl[j], 32, "%s", j == 2 ? "unsupported" : "-");
            const char *cells[12];
            for (int j = 0; j < 12; j++)
                cells[j] = cl[j];
            tu_table_add(&t, cells);
        }
        tu_table_print(&t, stdout);
        tu_table_free(&t);
        train_footer(ep, E, S, ok, dims, ndims, scales, nsc, c->pairs);
    }

    int rc = LAB_EXIT_OK;
    if (env->plot) {
        double *x = malloc((size_t)(E + 1) * sizeof *x);
        double *y = malloc((size_t)nruns * (E + 1) * sizeof *y);
        char (*names)[48] = malloc((size_t)nruns * sizeof *names);
        if (!x || !y || !names) {
            rc = LAB_EXIT_FAIL;
        } else {
            char title[96];
            snprintf(title, sizeof title, "train: held-out accuracy, %d runs%s (%s backend)",
                     nruns, S > 1 ? ", mean over seeds" : "",
                     sdpa_backend_name(sdpa_context_backend(env->ctx)));
            lab_chart ch = {.title = title, .xlabel = "epoch", .ylabel = "accuracy",
                            .xint = 1};
            for (int e = 0; e <= E; e++)
                x[e] = e;
            for (int r = 0; r < nruns; r++) { /* colour by d, line style by scale */
                char sb[32];
                for (int e = 0; e <= E; e++) { /* mean over the seeds */
                    double v[LAB_MAX_SEEDS], sd;
                    lab_gather(ep, nruns, E, S, r, e, offsetof(lab_epoch, acc), v);
                    lab_mean_sd(v, S, &y[(size_t)r * (E + 1) + e], &sd);
                }
                snprintf(names[r], 48, "d=%d, %s%s", (int)dims[r / nsc],
                         lab_scale_name(scales[r % nsc], 0, sb, 32),
                         ok[r] ? "" : " (unsupported)");
                lab_chart_add(&ch, names[r], ok[r] ? E + 1 : 0, x, y + (size_t)r * (E + 1),
                              r / nsc, r % nsc);
            }
            if (lab_svg_write(env->plot, &ch) != 0) {
                perror(env->plot);
                rc = LAB_EXIT_FAIL;
            } else if (!env->json) {
                printf("plot written to %s\n", env->plot);
            }
        }
        free(x), free(y), free(names);
    }
    free(ep);
    return rc;
}
