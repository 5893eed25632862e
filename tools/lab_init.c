/*
 * lab_init.c — `sdpa-lab init`: moving the 1/sqrt(d) from the attention
 * scale into the initialisation. Shrinking W_Q and W_K by d^(-1/4) each
 * multiplies every score q.k by d^(-1/2): with scale 1 the scores at
 * initialisation are those of the usual scale 1/sqrt(d) with unshrunk
 * weights. Training is another matter: Adam's step is about lr per entry
 * whatever the weights' size, so relative to the shrunk weights each step is
 * d^(1/4) times larger, and the scores (which are not divided by sqrt(d) any
 * more) move faster.
 *
 * Runs the associative-recall task of lab_task.c twice from the same random
 * draws: (a) scale 1/sqrt(d), weights as usual; (b) scale 1, weights times
 * d^(-1/4). Prints the epoch-0 statistics of both (equal) and the training
 * curves and relative update sizes (different); the footer says which of
 * those the numbers show.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "lab_cmds.h"
#include "lab_task.h"

static void help(void)
{
    printf("usage: sdpa-lab init [--d 256] [--epochs N] [--steps N] [--lr X]\n"
           "                     [--optim adam|sgd] [--batch N] [--pairs N] [--quiet]\n"
           "\n"
           "The train task (see `sdpa-lab train --help`) twice from the same random\n"
           "draws: scale 1/sqrt(d) with the usual weights, and scale 1 with W_Q, W_K\n"
           "shrunk by d^(-1/4). The scores at initialisation are the same; the runs\n"
           "then differ, because an Adam step is about lr per entry whatever the\n"
           "weights' size (its size relative to the weights is printed).\n"
           "\n"
           "  --d N           head size (default 256)\n"
           "  --epochs N      epochs (default 10); --steps N steps per epoch (10)\n"
           "  --lr, --optim, --batch, --pairs, --quiet   as for train\n"
           "\n%s", lab_global_help);
}

int lab_cmd_init(lab_env *env, int argc, char **argv)
{
    lab_task_opts o;
    memset(&o, 0, sizeof o);
    lab_task_cfg_init(&o.cfg);
    o.cfg.d = 256;
    int rc;
    if (!lab_task_parse_one_d(env, argc, argv, help, &o, 0, NULL, &rc))
        return rc;
    if (o.seeds > 1) /* its claims are exact per seed; one seed at a time */
        return lab_usage_error(env, "init runs one seed: use --seed N, not --seeds");
    if (!o.lr_set)
        o.cfg.lr = o.cfg.adam ? 0.01 : 0.5;
    o.cfg.seed = env->seed;
    if (lab_open(env))
        return LAB_EXIT_FAIL;

    const int E = o.cfg.epochs, d = o.cfg.d;
    const double gain = pow((double)d, -0.25);
    lab_epoch *ep = calloc(2 * (size_t)(E + 1), sizeof *ep);
    if (!ep) {
        fprintf(stderr, "sdpa-lab init: out of memory\n");
        return LAB_EXIT_FAIL;
    }
    const char *name[2] = {"scale 1/sqrt(d), W as usual", "scale 1, W x d^(-1/4)"};
    const char *key[2] = {"scale", "init"};
    if (!env->json)
        printf("associative recall: d %d, %s lr %g, %d epochs x %d steps, seed %llu "
               "(%s backend)\n", d, o.cfg.adam ? "adam" : "sgd", o.cfg.lr, E, o.cfg.steps,
               (unsigned long long)env->seed,
               sdpa_backend_name(sdpa_context_backend(env->ctx)));
    for (int m = 0; m < 2; m++) {
        lab_task_cfg c = o.cfg;
        c.scale = m ? 1.0 : SDPA_SCALE_DEFAULT;
        c.init_gain = m ? gain : 1.0;
        int st = lab_task_run(env, &c, ep + (size_t)m * (E + 1));
        if (st == LAB_TASK_UNSUPPORTED)
            fprintf(stderr, "sdpa-lab init: the %s backend does not run d = %d\n",
                    sdpa_backend_name(sdpa_context_backend(env->ctx)), d);
        if (st != 0) {
            free(ep);
            return LAB_EXIT_FAIL;
        }
        if (!env->json && !o.quiet) {
            printf("\n%s\n", name[m]);
            lab_print_epoch_head();
            for (int e = 0; e <= E; e++)
                lab_print_epoch(e, ep + (size_t)m * (E + 1) + e);
        }
    }
    const lab_epoch *A = ep, *B = ep + (E + 1);
    double d0 = fmax(fabs(A[0].entropy - B[0].entropy),
                     fmax(fabs(A[0].logit_max - B[0].logit_max) / fmax(A[0].logit_max, 1e-30),
                          fabs(A[0].loss - B[0].loss)));
    double ratio = B[1].update_rel_first / A[1].update_rel_first;

    if (env->json) {
        printf("{\"command\":\"init\",");
        lab_json_env(stdout, env);
        printf(",\"d\":%d,\"gain\":", d);
        lab_json_num(stdout, gain);
        printf(",\"optim\":\"%s\",\"lr\":", o.cfg.adam ? "adam" : "sgd");
        lab_json_num(stdout, o.cfg.lr);
        printf(",\"epoch0_max_diff\":");
        lab_json_num(stdout, d0);
        printf(",\"update_rel_ratio\":");
        lab_json_num(stdout, ratio);
        printf(",\"runs\":[");
        for (int m = 0; m < 2; m++) {
            const lab_epoch *x = ep + (size_t)m * (E + 1);
            printf("%s\n{\"run\":\"%s\",\"update_rel_first\":", m ? "," : "", key[m]);
            lab_json_num(stdout, x[1].update_rel_first);
            printf(",\"update_rel_epoch1\":");
            lab_json_num(stdout, x[1].update_rel);
            printf(",\"final_acc\":");
            lab_json_num(stdout, x[E].acc);
            printf(",\"final_loss\":");
            lab_json_num(stdout, x[E].loss);
            printf(",");
            lab_json_epochs(x, E);
            printf("}");
        }
        printf("]}\n");
        free(ep);
        return LAB_EXIT_OK;
    }
    printf("\nsummary\n\n");
    const char *head[] = {"run", "entropy@0", "logit_max@0", "loss@0", "|dW|/|W| step 1",
                          "|dW|/|W| ep1", "final acc", "final loss", "final logit_max"};
    const int right[] = {0, 1, 1, 1, 1, 1, 1, 1, 1};
    tu_table t;
    tu_table_init(&t, 9, head, right);
    for (int m = 0; m < 2; m++) {
        const lab_epoch *x = ep + (size_t)m * (E + 1);
        char c[9][32];
        snprintf(c[0], 32, "%s", name[m]);
        lab_fmt(c[1], 32, x[0].entropy, 4);
        lab_fmt(c[2], 32, x[0].logit_max, 4);
        lab_fmt(c[3], 32, x[0].loss, 4);
        lab_fmt(c[4], 32, x[1].update_rel_first, 4);
        lab_fmt(c[5], 32, x[1].update_rel, 4);
        lab_fmt(c[6], 32, x[E].acc, 3);
        lab_fmt(c[7], 32, x[E].loss, 3);
        lab_fmt(c[8], 32, x[E].logit_max, 2);
        const char *cells[9] = {c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7], c[8]};
        tu_table_add(&t, cells);
    }
    tu_table_print(&t, stdout);
    tu_table_free(&t);
    printf("\n");
    if (d0 < 1e-4)
        printf("At initialisation the two are the same attention (largest difference %.1e\n"
               "in entropy, relative logit_max, loss).\n", d0);
    else
        printf("At initialisation the two differ by %.2g: not the same scores here.\n", d0);
    if (isfinite(ratio) && ratio > 1.2) {
        printf("The first %s step moves the shrunk weights %.2fx more relative to their\n"
               "size than the usual ones", o.cfg.adam ? "Adam" : "SGD", ratio);
        if (o.cfg.adam) /* Adam's first step is +-lr per entry in both runs */
            printf(" (Adam's first step is lr per entry, so d^(1/4) = %.2f)", 1 / gain);
        printf(".\n");
    } else if (isfinite(ratio)) {
        printf("The first steps are alike relative to the weights (ratio %.2f).\n", ratio);
    }
    double la = A[E].logit_max, lb = B[E].logit_max;
    if (isfinite(la) && isfinite(lb) && fabs(la - lb) > 0.2 * fmax(la, lb))
        printf("After %d epochs they differ: logit_max %.2f vs %.2f, loss %.3f vs %.3f.\n", E,
               la, lb, A[E].loss, B[E].loss);
    else if (isfinite(la) && isfinite(lb))
        printf("After %d epochs they are close: logit_max %.2f vs %.2f, loss %.3f vs %.3f.\n",
               E, la, lb, A[E].loss, B[E].loss);
    free(ep);
    return LAB_EXIT_OK;
}
