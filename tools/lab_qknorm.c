/*
 * lab_qknorm.c — `sdpa-lab qknorm`: the associative-recall task of
 * lab_task.c at a large learning rate, once without QK-norm and once with
 * RMS QK-norm (computed, and differentiated, inside the library). Without
 * it, the query/key weights grow, the scores (logit_max) grow with them and
 * the attention entropy collapses; with it, |q.k| <= d after normalisation,
 * so the scores stay bounded by scale * d whatever the weights do.
 */
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "lab_cmds.h"
#include "lab_svg.h"
#include "lab_task.h"

static void help(void)
{
    printf("usage: sdpa-lab qknorm [--d 64] [--scale rsqrt] [--lr X] [--epochs N]\n"
           "                       [--steps N] [--batch N] [--optim adam|sgd]\n"
           "                       [--pairs N] [--quick] [--quiet]\n"
           "\n"
           "The train task (see `sdpa-lab train --help`) at a large learning rate,\n"
           "without and with RMS QK-norm (q and k each divided by their RMS over the\n"
           "head dimension inside the library, before the scale). Prints loss,\n"
           "accuracy, entropy, logit_max and the weight norm per epoch.\n"
           "\n"
           "  --d N           head size (default 64)\n"
           "  --scale S       1 | rsqrt | inv | a number (default rsqrt)\n"
           "  --lr X          learning rate (default 0.2 for adam, 50 for sgd)\n"
           "  --epochs N      epochs (default 10); --steps N steps per epoch (10)\n"
           "  --quick         5 epochs (explicit flags still win)\n"
           "  --batch, --optim, --pairs, --quiet, --seeds N   as for train\n"
           "\n%s", lab_global_help);
}

/* Sentences under the summary, each printed only when the runs show it: the
 * logit bound when every normed run stayed inside it, the entropy collapse
 * when the runs without the norm went lower, divergence, and a warning that
 * accuracy cannot show diffuse attention when a run is accurate with a high
 * entropy. With several seeds each says in how many it holds. Loss and
 * accuracy are printed, not interpreted: they depend on seed and backend
 * (docs/lab.md). Layout of ep, peak, emin: [seed][mode]. */
static void qknorm_footer(const lab_epoch *ep, int E, int S, const double *peak,
                          const double *emin, double bound, int pairs)
{
    char a[32], b[32], of[40];
    int ndiv[2] = {0, 0}, inside = 0, past = 0, collapse = 0, diffuse[2] = {0, 0};
    double top = -INFINITY, npeak = INFINITY, emax_none = -INFINITY, emin_rms = INFINITY;
    for (int k = 0; k < S; k++) {
        for (int m = 0; m < 2; m++) {
            const lab_epoch *x = ep + ((size_t)k * 2 + m) * (E + 1);
            ndiv[m] += lab_diverged(x, E) >= 0;
            diffuse[m] += x[E].acc >= 0.9 && x[E].entropy > 0.5 * log((double)pairs);
        }
        const double *pk = peak + 2 * k, *em = emin + 2 * k;
        inside += isfinite(pk[1]) && pk[1] <= bound * (1 + 1e-5);
        top = fmax(top, pk[1]);
        past += isfinite(pk[0]) && pk[0] > bound;
        npeak = fmin(npeak, pk[0]);
        if (isfinite(em[0]) && isfinite(em[1]) && em[0] < 0.5 * em[1]) {
            collapse++;
            emax_none = fmax(emax_none, em[0]);
            emin_rms = fmin(emin_rms, em[1]);
        }
    }
#define OF(cnt) (S > 1 ? (snprintf(of, sizeof of, " in %d of %d seeds", (cnt), S), of) : "")
    printf("\n");
    for (int m = 0; m < 2; m++)
        if (ndiv[m])
            printf("qk_norm %s diverged%s: non-finite values, shown as nan.\n",
                   m ? "rms" : "none", OF(ndiv[m]));
    if (inside == S)
        printf("With RMS QK-norm every score stayed within scale * d = %.3g%s (peak %s),\n"
               "however large the weights grew.\n", bound, S > 1 ? " in every seed" : "",
               lab_fmt(a, 32, top, 3));
    if (past)
        printf("Without the norm the scores went past that bound%s (%s%s).\n", OF(past),
               S > 1 ? "lowest peak " : "", lab_fmt(a, 32, npeak, 3));
    if (collapse)
        printf("The attention entropy fell below half the normed run's%s (at most %s nats\n"
               "without the norm, at least %s with it; uniform: log(%d) = %.3f).\n",
               OF(collapse), lab_fmt(a, 32, emax_none, 3), lab_fmt(b, 32, emin_rms, 3), pairs,
               log((double)pairs));
    for (int m = 0; m < 2; m++)
        if (diffuse[m])
            printf("qk_norm %s: accuracy >= 0.9 with entropy above log(%d)/2%s: the argmax\n"
                   "is right while the attention stays diffuse (see the loss).\n",
                   m ? "rms" : "none", pairs, OF(diffuse[m]));
#undef OF
}

int lab_cmd_qknorm(lab_env *env, int argc, char **argv)
{
    lab_task_opts o;
    memset(&o, 0, sizeof o);
    lab_task_cfg_init(&o.cfg);
    o.cfg.epochs = 10;
    o.seeds = 1;
    int quick = 0, rc;
    if (!lab_task_parse_one_d(env, argc, argv, help, &o, 1, &quick, &rc))
        return rc;
    if (quick && !o.epochs_set)
        o.cfg.epochs = 5;
    if (!o.lr_set)
        o.cfg.lr = o.cfg.adam ? 0.2 : 50.0;
    o.cfg.seed = env->seed;
    if (lab_open(env))
        return LAB_EXIT_FAIL;

    const int E = o.cfg.epochs, S = o.seeds;
    lab_epoch *ep = calloc(2 * (size_t)S * (E + 1), sizeof *ep);
    if (!ep) {
        fprintf(stderr, "sdpa-lab qknorm: out of memory\n");
        return LAB_EXIT_FAIL;
    }
    const sdpa_qk_norm modes[2] = {SDPA_QK_NORM_NONE, SDPA_QK_NORM_RMS};
    const char *mname[2] = {"none", "rms"};
    char sb[32];
    char seeds_note[48];
    if (!env->json)
        printf("associative recall at a large learning rate: d %d, scale %s, %s lr %g, "
               "%d epochs x %d steps, seed %llu%s (%s backend)\n",
               o.cfg.d, lab_scale_name(o.cfg.scale, 0, sb, 32), o.cfg.adam ? "adam" : "sgd",
               o.cfg.lr, E, o.cfg.steps, (unsigned long long)env->seed,
               lab_seeds_note(seeds_note, sizeof seeds_note, S),
               sdpa_backend_name(sdpa_context_backend(env->ctx)));
    for (int m = 0; m < 2; m++) {
        lab_task_cfg c = o.cfg;
        c.qk_norm = modes[m];
        int st = 0;
        for (int k = 0; k < S && st == 0; k++) {
            c.seed = env->seed + (uint64_t)k;
            st = lab_task_run(env, &c, ep + ((size_t)k * 2 + m) * (E + 1));
        }
        if (st == LAB_TASK_UNSUPPORTED)
            fprintf(stderr, "sdpa-lab qknorm: the %s backend does not run d = %d with "
                            "qk_norm %s\n", sdpa_backend_name(sdpa_context_backend(env->ctx)),
                    c.d, mname[m]);
        if (st != 0) {
            free(ep);
            return LAB_EXIT_FAIL;
        }
        if (!env->json && !o.quiet) {
            printf("\nqk_norm %s%s\n", mname[m], S > 1 ? " (first seed)" : "");
            lab_print_epoch_head();
            for (int e = 0; e <= E; e++)
                lab_print_epoch(e, ep + (size_t)m * (E + 1) + e);
        }
    }

    double bound = (o.cfg.scale == SDPA_SCALE_DEFAULT ? 1 / sqrt((double)o.cfg.d)
                    : o.cfg.scale == SDPA_SCALE_MUP ? 1.0 / o.cfg.d : o.cfg.scale) * o.cfg.d;
    double peak[2 * LAB_MAX_SEEDS], emin[2 * LAB_MAX_SEEDS]; /* [seed][mode] */
    for (int r = 0; r < 2 * S; r++) {
        peak[r] = -INFINITY, emin[r] = INFINITY;
        for (int e = 0; e <= E; e++) { /* NaN propagates: a diverged run reads nan */
            double l = ep[(size_t)r * (E + 1) + e].logit_max;
            double h = ep[(size_t)r * (E + 1) + e].entropy;
            peak[r] = isnan(l) || isnan(peak[r]) ? NAN : fmax(peak[r], l);
            emin[r] = isnan(h) || isnan(emin[r]) ? NAN : fmin(emin[r], h);
        }
    }
    if (env->json) {
        printf("{\"command\":\"qknorm\",");
        lab_json_env(stdout, env);
        printf(",\"d\":%d,\"scale\":\"%s\",\"optim\":\"%s\",\"lr\":", o.cfg.d,
               lab_scale_name(o.cfg.scale, 1, sb, 32), o.cfg.adam ? "adam" : "sgd");
        lab_json_num(stdout, o.cfg.lr);
        printf(",\"seeds\":%d,\"logit_bound\":", S);
        lab_json_num(stdout, bound);
        printf(",\"runs\":[");
        for (int m = 0; m < 2; m++) {
            const lab_epoch *x = ep + (size_t)m * (E + 1);
            printf("%s\n{\"qk_norm\":\"%s\",\"peak_logit_max\":", m ? "," : "", mname[m]);
            lab_json_num(stdout, peak[m]);
            printf(",\"min_entropy\":");
            lab_json_num(stdout, emin[m]);
            printf(",\"final_acc\":");
            lab_json_num(stdout, x[E].acc);
            printf(",\"final_loss\":");
            lab_json_num(stdout, x[E].loss);
            printf(",\"diverged\":%s,", lab_diverged(x, E) >= 0 ? "true" : "false");
            lab_json_epochs(x, E);
            const char *keys[4] = {"peak_logit_max", "min_entropy", "final_acc", "final_loss"};
            for (int j = 0; j < 4; j++) {
                printf(",\"%s_per_seed\":[", keys[j]);
                for (int k = 0; k < S; k++) {
                    const lab_epoch *y = ep + ((size_t)k * 2 + m) * (E + 1);
                    double v = j == 0 ? peak[2 * k + m] : j == 1 ? emin[2 * k + m]
                               : j == 2 ? y[E].acc : y[E].loss;
                    printf("%s", k ? "," : "");
                    lab_json_num(stdout, v);
                }
                printf("]");
            }
            printf("}");
        }
        printf("]}\n");
    } else {
        printf("\nsummary\n\n");
        const char *head[] = {"qk_norm", "peak logit_max", "min entropy", "final entropy",
                              "final sat", "final acc", "final loss", "final |W|"};
        const int right[] = {0, 1, 1, 1, 1, 1, 1, 1};
        tu_table t;
        tu_table_init(&t, 8, head, right);
        for (int m = 0; m < 2; m++) {
            char c[8][32];
            double v[LAB_MAX_SEEDS];
            snprintf(c[0], 32, "%s", mname[m]);
            for (int k = 0; k < S; k++)
                v[k] = peak[2 * k + m];
            lab_fmt_seeds(c[1], 32, v, S, 2);
            for (int k = 0; k < S; k++)
                v[k] = emin[2 * k + m];
            lab_fmt_seeds(c[2], 32, v, S, 4);
            const struct { size_t off; int prec; } col[5] = {
                {offsetof(lab_epoch, entropy), 4}, {offsetof(lab_epoch, sat_frac), 2},
                {offsetof(lab_epoch, acc), 3}, {offsetof(lab_epoch, loss), 3},
                {offsetof(lab_epoch, wnorm), 2}};
            for (int j = 0; j < 5; j++) {
                lab_gather(ep, 2, E, S, m, E, col[j].off, v);
                lab_fmt_seeds(c[3 + j], 32, v, S, col[j].prec);
            }
            const char *cells[8] = {c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]};
            tu_table_add(&t, cells);
        }
        tu_table_print(&t, stdout);
        tu_table_free(&t);
        qknorm_footer(ep, E, S, peak, emin, bound, o.cfg.pairs);
    }

    rc = LAB_EXIT_OK;
    if (env->plot) {
        double x[1024 + 1], y[4][1024 + 1];
        int n = E + 1 > 1025 ? 1025 : E + 1;
        for (int e = 0; e < n; e++) {
            x[e] = e;
            for (int m = 0; m < 2; m++) {
                y[m][e] = ep[(size_t)m * (E + 1) + e].logit_max;
                y[2 + m][e] = ep[(size_t)m * (E + 1) + e].entropy;
            }
        }
        lab_chart ch = {.title = S > 1 ? "qknorm: with and without RMS QK-norm (first seed)"
                                       : "qknorm: large learning rate with and without RMS QK-norm",
                        .xlabel = "epoch", .ylabel = "logit_max / entropy (nats)",
                        .logy = 1, .xint = 1};
        lab_chart_add(&ch, "logit_max, no norm", n, x, y[0], 1, 0);
        lab_chart_add(&ch, "logit_max, rms norm", n, x, y[1], 0, 0);
        lab_chart_add(&ch, "entropy, no norm", n, x, y[2], 1, 1);
        lab_chart_add(&ch, "entropy, rms norm", n, x, y[3], 0, 1);
        if (lab_svg_write(env->plot, &ch) != 0) {
            perror(env->plot);
            rc = LAB_EXIT_FAIL;
        } else if (!env->json) {
            printf("plot written to %s\n", env->plot);
        }
    }
    free(ep);
    return rc;
}
