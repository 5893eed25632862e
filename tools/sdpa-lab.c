/*
 * sdpa-lab.c — main() of sdpa-lab, the tool that makes the reasoning behind
 * the 1/sqrt(d) attention scale executable with libsdpa's own forward,
 * backward and in-kernel statistics:
 *
 *   variance    spread of q.k against d, unscaled and scaled (logit_std)
 *   saturation  p_max and softmax-Jacobian norm against temperature
 *   train       associative recall learned through sdpa_plan_backward with
 *               scale 1, 1/sqrt(d) and 1/d
 *   qknorm      the same task at a large learning rate, with and without
 *               RMS QK-norm
 *   inspect     per-head statistics of one call, with warnings
 *   init        d^(-1/4) weights instead of the scale: same at init, not after
 *   heads       one head stays in the convex hull of V; h heads leave it
 *   causal      no leakage through the backward; top-left vs bottom-right
 *   online      streaming softmax = full softmax; merged blocks = whole
 *
 * This file only reads the global flags that come before the subcommand and
 * dispatches; each subcommand lives in its own lab_<name>.c. Uses sdpa.h only.
 */
#include <stdio.h>
#include <string.h>

#include "lab_cmds.h"

const char lab_global_help[] =
    "Global options (before or after the subcommand):\n"
    "  --backend NAME   reference | cpu | opencl | vulkan | auto (default: the\n"
    "                   SDPA_BACKEND variable if set, else cpu, else reference)\n"
    "  --seed N         random seed; runs are deterministic per seed (default 1)\n"
    "  --plot FILE.svg  also write an SVG chart (variance, saturation, train, qknorm;\n"
    "                   FILE must end in .svg; inspect refuses it)\n"
    "  --json           print one JSON document instead of tables\n"
    "  --help           help for the tool or the subcommand\n";

static void usage(FILE *f)
{
    fprintf(f,
            "usage: sdpa-lab [global options] SUBCOMMAND [options]\n"
            "\n"
            "Why attention is scaled by 1/sqrt(d), shown with libsdpa's own forward,\n"
            "backward and in-kernel statistics.\n"
            "\n"
            "Subcommands:\n"
            "  variance     std of q.k against d, unscaled and scaled by 1/sqrt(d)\n"
            "  saturation   max probability and softmax Jacobian norm against scale\n"
            "  train        learn associative recall with scale 1, 1/sqrt(d), 1/d\n"
            "  qknorm       large learning rate with and without RMS QK-norm\n"
            "  inspect      per-head statistics of one call (CASE_DIR or --random)\n"
            "  init         W_Q, W_K shrunk by d^(-1/4) instead of the scale, under Adam\n"
            "  heads        one head vs h heads: the convex hull of the values\n"
            "  causal       no leakage, through the backward; diagonal alignment\n"
            "  online       streaming softmax, sdpa_merge of key blocks, memory\n"
            "\n%s"
            "\nExit status: 0 success, 1 library or I/O failure, 2 usage error.\n",
            lab_global_help);
}

int main(int argc, char **argv)
{
    lab_env env;
    memset(&env, 0, sizeof env);
    env.prog = "sdpa-lab";
    env.backend = SDPA_BACKEND_DEFAULT;
    env.seed = 1;

    ta_args a;
    ta_init(&a, argc, argv);
    while (ta_next(&a)) {
        if (a.positional)
            break;
        int r = lab_global_flag(&env, &a);
        if (r == LAB_FLAG_HELP) {
            usage(stdout);
            return LAB_EXIT_OK;
        }
        if (r == LAB_FLAG_NO)
            lab_unknown_arg(&a);
        if (a.error)
            return lab_usage_error(&env, "%s", a.message);
    }
    if (a.i >= argc)
        return lab_usage_error(&env, "missing subcommand (variance, saturation, train, "
                                     "qknorm, inspect, init, heads, causal, online)");

    static const struct {
        const char *name;
        int (*fn)(lab_env *, int, char **);
    } cmds[] = {
        {"variance", lab_cmd_variance}, {"saturation", lab_cmd_saturation},
        {"train", lab_cmd_train},       {"qknorm", lab_cmd_qknorm},
        {"inspect", lab_cmd_inspect},   {"causal", lab_cmd_causal},
        {"online", lab_cmd_online},     {"heads", lab_cmd_heads},
        {"init", lab_cmd_init},
    };
    const char *name = argv[a.i];
    for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++)
        if (strcmp(name, cmds[i].name) == 0) {
            env.cmd = cmds[i].name;
            int rc = cmds[i].fn(&env, argc - a.i, argv + a.i);
            lab_close(&env);
            return rc;
        }
    return lab_usage_error(&env, "unknown subcommand '%s' (variance, saturation, train, "
                                 "qknorm, inspect, init, heads, causal, online)", name);
}
