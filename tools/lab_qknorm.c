/*
 * lab_qknorm.c — `sdpa-lab qknorm`: the associative-recall task of
 * lab_task.c at a large learning rate, once without QK-norm and once with
 * RMS QK-norm (computed, and differentiated, inside the library). Without
 * it, the query/key weights grow, the scores (logit_max) grow with them and
 * the attention entropy collapses; with it, |q.k| <= d after normalisation,
 * so the scores stay bounded by scale * d whatever the weights do.
 */
#include <math.h>
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
           "  --batch, --optim, --pairs, --quiet   as for train\n"
           "\n%s", lab_global_help);
}

/* Sentences under the summary, each printed only when the two runs show
 * it: the logit bound when the normed run stayed inside it, the entropy
 * collapse when the run without the norm went lower, divergence, and a
 * warning that accuracy cannot show diffuse attention when a run is accurate
 * with a high entropy. Loss and accuracy are printed, not interpreted: they
 * depend on seed and backend (docs/lab.md). */
static void qknorm_footer(const lab_epoch *ep, int E, const double *peak,
                          const double *emin, double bound, int pairs)
{
    const lab_epoch *none = ep, *rms = ep + (E + 1);
    char a[32], b[32];
    printf("\n");
    for (int m = 0; m < 2; m++) {
        int dv = lab_diverged(ep + (size_t)m * (E + 1), E);
        if (dv >= 0)
            printf("qk_norm %s diverged at epoch %d: non-finite values, shown as nan.\n",
                   m ? "rms" : "none", dv);
    }
    if (isfinite(peak[1]) && peak[1] <= bound * (1 + 1e-5))
        printf("With RMS QK-norm every score stayed within scale * d = %.3g (peak %s),\n"
               "however large the weights grew.\n", bound, lab_fmt(a, 32, peak[1], 3));
    if (isfinite(peak[0]) && peak[0] > bound)
        printf("Without the norm the scores reached %s, past that bound.\n",
               lab_fmt(a, 32, peak[0], 3));
    if (isfinite(emin[0]) && isfinite(emin[1]) && emin[0] < 0.5 * emin[1])
        printf("The attention entropy fell to %s nats without the norm, %s with it\n"
               "(uniform attention: log(%d) = %.3f).\n", lab_fmt(a, 32, emin[0], 3),
               lab_fmt(b, 32, emin[1], 3), pairs, log((double)pairs));
    for (int m = 0; m < 2; m++) {
        const lab_epoch *x = m ? rms : none;
        if (x[E].acc >= 0.9 && x[E].entropy > 0.5 * log((double)pairs))
            printf("qk_norm %s: accuracy %.3f with entropy %.2f nats and loss %.3f: the\n"
                   "argmax is right while the attention stays diffuse.\n",
                   m ? "rms" : "none", x[E].acc, x[E].entropy, x[E].loss);
    }
}

int lab_cmd_qknorm(lab_env *env, int argc, char **argv)
{
    lab_task_opts o;
    memset(&o, 0, sizeof o);
    lab_task_cfg_init(&o.cfg);
    o.cfg.epochs = 10;
    int quick = 0;
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
        if (ta_value(&a, "--d", &v)) {
            if (v && !ta_parse_int(v, 1, 4096, &o.cfg.d))
                ta_fail(&a, "--d wants an integer in [1, 4096], not '%s'", v);
        } else if (ta_value(&a, "--scale", &v)) {
            if (v && !lab_scale_parse(v, &o.cfg.scale))
                ta_fail(&a, "--scale wants 1, rsqrt, inv or a positive number, not '%s'", v);
        } else if (ta_flag(&a, "--quick")) {
            quick = 1;
        } else {
            lab_unknown_arg(&a);
        }
    }
    if (a.error)
        return lab_usage_error(env, "%s", a.message);
    if (quick) {
        if (!o.epochs_set)
            o.cfg.epochs = 5;
    }
    if (lab_task_elems(&o.cfg, o.cfg.d) > LAB_TASK_MAX_ELEMS)
        return lab_usage_error(env, "batch x pairs x d = %lld elements is too large "
                                    "(limit 2^26)", (long long)lab_task_elems(&o.cfg, o.cfg.d));
    if (!o.lr_set)
        o.cfg.lr = o.cfg.adam ? 0.2 : 50.0;
    o.cfg.seed = env->seed;
    if (lab_open(env))
        return LAB_EXIT_FAIL;

    const int E = o.cfg.epochs;
    lab_epoch *ep = calloc(2 * (size_t)(E + 1), sizeof *ep);
    if (!ep) {
        fprintf(stderr, "sdpa-lab qknorm: out of memory\n");
        return LAB_EXIT_FAIL;
    }
    const sdpa_qk_norm modes[2] = {SDPA_QK_NORM_NONE, SDPA_QK_NORM_RMS};
    const char *mname[2] = {"none", "rms"};
    char sb[32];
    if (!env->json)
        printf("associative recall at a large learning rate: d %d, scale %s, %s lr %g, "
               "%d epochs x %d steps, seed %llu (%s backend)\n",
               o.cfg.d, lab_scale_name(o.cfg.scale, 0, sb, 32), o.cfg.adam ? "adam" : "sgd",
               o.cfg.lr, E, o.cfg.steps, (unsigned long long)env->seed,
               sdpa_backend_name(sdpa_context_backend(env->ctx)));
    for (int m = 0; m < 2; m++) {
        lab_task_cfg c = o.cfg;
        c.qk_norm = modes[m];
        int st = lab_task_run(env, &c, ep + (size_t)m * (E + 1));
        if (st == LAB_TASK_UNSUPPORTED)
            fprintf(stderr, "sdpa-lab qknorm: the %s backend does not run d = %d with "
                            "qk_norm %s\n", sdpa_backend_name(sdpa_context_backend(env->ctx)),
                    c.d, mname[m]);
        if (st != 0) {
            free(ep);
            return LAB_EXIT_FAIL;
        }
        if (!env->json && !o.quiet) {
            printf("\nqk_norm %s\n", mname[m]);
            lab_print_epoch_head();
            for (int e = 0; e <= E; e++)
                lab_print_epoch(e, ep + (size_t)m * (E + 1) + e);
        }
    }

    double bound = (o.cfg.scale == SDPA_SCALE_DEFAULT ? 1 / sqrt((double)o.cfg.d)
                    : o.cfg.scale == SDPA_SCALE_MUP ? 1.0 / o.cfg.d : o.cfg.scale) * o.cfg.d;
    double peak[2], emin[2];
    for (int m = 0; m < 2; m++) {
        peak[m] = -INFINITY, emin[m] = INFINITY;
        for (int e = 0; e <= E; e++) {
            peak[m] = fmax(peak[m], ep[(size_t)m * (E + 1) + e].logit_max);
            emin[m] = fmin(emin[m], ep[(size_t)m * (E + 1) + e].entropy);
        }
    }
    if (env->json) {
        printf("{\"command\":\"qknorm\",");
        lab_json_env(stdout, env);
        printf(",\"d\":%d,\"scale\":\"%s\",\"optim\":\"%s\",\"lr\":", o.cfg.d,
               lab_scale_name(o.cfg.scale, 1, sb, 32), o.cfg.adam ? "adam" : "sgd");
        lab_json_num(stdout, o.cfg.lr);
        printf(",\"logit_bound\":");
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
            const lab_epoch *x = ep + (size_t)m * (E + 1);
            char c[8][32];
            snprintf(c[0], 32, "%s", mname[m]);
            lab_fmt(c[1], 32, peak[m], 2);
            lab_fmt(c[2], 32, emin[m], 4);
            lab_fmt(c[3], 32, x[E].entropy, 4);
            lab_fmt(c[4], 32, x[E].sat_frac, 2);
            lab_fmt(c[5], 32, x[E].acc, 3);
            lab_fmt(c[6], 32, x[E].loss, 3);
            lab_fmt(c[7], 32, x[E].wnorm, 2);
            const char *cells[8] = {c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]};
            tu_table_add(&t, cells);
        }
        tu_table_print(&t, stdout);
        tu_table_free(&t);
        qknorm_footer(ep, E, peak, emin, bound, o.cfg.pairs);
    }

    int rc = LAB_EXIT_OK;
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
        lab_chart ch = {.title = "qknorm: large learning rate with and without RMS QK-norm",
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
