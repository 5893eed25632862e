/*
 * lab_cmds.h — the sdpa-lab subcommands. Each takes the environment with the
 * global flags seen before the subcommand name, and argv starting at the
 * subcommand name; it parses its own options (plus the global ones), opens
 * the context, runs, prints, and returns the process exit code.
 */
#ifndef SDPA_LAB_CMDS_H
#define SDPA_LAB_CMDS_H

#include "lab_common.h"

int lab_cmd_variance(lab_env *env, int argc, char **argv);
int lab_cmd_saturation(lab_env *env, int argc, char **argv);
int lab_cmd_train(lab_env *env, int argc, char **argv);
int lab_cmd_qknorm(lab_env *env, int argc, char **argv);
int lab_cmd_inspect(lab_env *env, int argc, char **argv);
int lab_cmd_causal(lab_env *env, int argc, char **argv);
int lab_cmd_online(lab_env *env, int argc, char **argv);
int lab_cmd_init(lab_env *env, int argc, char **argv);
int lab_cmd_heads(lab_env *env, int argc, char **argv);

/* The text printed for `sdpa-lab --help` after the subcommand list. */
extern const char lab_global_help[];

#endif /* SDPA_LAB_CMDS_H */
