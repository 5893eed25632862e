/*
 * lab_common.h — what the sdpa-lab subcommands share: the run environment
 * (backend, seed, output mode, plot path, the library context), the global
 * flags every subcommand accepts, strict parsing of number lists, error
 * reporting for library statuses, and small JSON-writing helpers.
 *
 * sdpa-lab uses the public API only (sdpa.h); flag walking, random numbers and
 * tables come from tools/common. Exit codes are every tool's (args.h): 0
 * success, 1 a library or I/O failure (no context included), 2 a usage error
 * (message on stderr).
 */
#ifndef SDPA_LAB_COMMON_H
#define SDPA_LAB_COMMON_H

#include <stdint.h>
#include <stdio.h>

#include "args.h"
#include "sdpa.h"
#include "util.h"

#define LAB_EXIT_OK TA_EXIT_OK
#define LAB_EXIT_FAIL TA_EXIT_FAIL
#define LAB_EXIT_USAGE TA_EXIT_USAGE

/* Status returned by lab_global_flag / the option loops: the flag was not a
 * global one, was handled, or asked for help. */
enum { LAB_FLAG_NO = 0, LAB_FLAG_DONE = 1, LAB_FLAG_HELP = 2 };

typedef struct lab_env {
    const char *prog;          /* "sdpa-lab" */
    const char *cmd;           /* subcommand name, NULL before it is known */
    sdpa_backend_kind backend; /* --backend; SDPA_BACKEND_DEFAULT when unset */
    int backend_set;           /* 1 when --backend was given */
    uint64_t seed;             /* --seed, default 1 */
    const char *plot;          /* --plot FILE.svg, NULL = none */
    int json;                  /* --json: machine-readable output on stdout */
    sdpa_context *ctx;         /* opened by lab_open */
} lab_env;

/* Handles the flags every subcommand accepts (--backend, --seed, --plot,
 * --json, --help) at the current argument. Returns LAB_FLAG_NO when the
 * argument is something else; on a bad value it sets a->error. */
int lab_global_flag(lab_env *env, ta_args *a);

/* Prints "sdpa-lab CMD: message" and a hint to stderr; returns
 * LAB_EXIT_USAGE so callers can `return lab_usage_error(...)`. */
int lab_usage_error(const lab_env *env, const char *fmt, ...);

/* Common tail of every subcommand's option loop: unknown flag or unexpected
 * positional argument. Sets a->error. */
void lab_unknown_arg(ta_args *a);

/* Creates env->ctx on the chosen backend. Without --backend: the SDPA_BACKEND
 * environment variable when set, else cpu when compiled in, else reference.
 * Prints the library's message and returns LAB_EXIT_FAIL on failure. */
int lab_open(lab_env *env);
void lab_close(lab_env *env);

/* Reports a failed library call ("sdpa-lab CMD: WHAT: status: message") and
 * returns 1; returns 0 for SDPA_OK. */
int lab_failed(const lab_env *env, sdpa_status st, const char *what);

/* "a,b,c" of finite doubles in [lo, hi], between 1 and max_n values. */
int lab_parse_double_list(const char *s, double lo, double hi, int max_n,
                          double *out, int *n);

/* JSON helpers: a number (null when not finite) and a string with escapes. */
void lab_json_num(FILE *f, double v);
void lab_json_str(FILE *f, const char *s);
/* Writes `"backend":"cpu","device":"...","seed":N` (no braces). */
void lab_json_env(FILE *f, const lab_env *env);

/* Formats v with `prec` digits after the point into buf, switching to
 * exponent notation for 0 < |v| < 1e-3 and |v| >= 1e6. Returns buf. */
const char *lab_fmt(char *buf, size_t cap, double v, int prec);

/* One forward call through sdpa_attention_forward on host f32 tensors:
 * q (B,H,Sq,D), k (B,H,Skv,D), v (B,H,Skv,Dv) -> out (B,H,Sq,Dv) and stats
 * (B,H,SDPA_STAT_COUNT). `scale` as in sdpa_attention_desc. Returns the
 * library's status without printing; SDPA_ERR_UNSUPPORTED lets a caller skip
 * a shape the backend does not run (e.g. a head size above its limit). */
sdpa_status lab_forward_stats(lab_env *env, float *q, float *k, float *v, int64_t B,
                      int64_t H, int64_t Sq, int64_t Skv, int64_t D, int64_t Dv,
                      double scale, float *out, float *stats);

/* An integer option of a subcommand: --name N with N in [lo, hi]. */
typedef struct lab_int_opt {
    const char *name;
    int lo, hi;
    int *value;
} lab_int_opt;

/* The option loop of a subcommand whose options are integers only (the
 * init, heads, causal and online subcommands): global flags, the `n`
 * options and --help (which calls help()). Returns 1 when the subcommand
 * should run; 0 when it should stop with exit code *rc (0 after help,
 * LAB_EXIT_USAGE after printing the error). */
int lab_parse_int_opts(lab_env *env, int argc, char **argv, void (*help)(void),
                       const lab_int_opt *opts, int n, int *rc);

/* Fills n floats with N(0, sigma^2) values. */
void lab_fill_normal(tu_rng *r, float *x, size_t n, double sigma);

/* Mean over an array of n doubles (0 for n = 0). */
double lab_mean(const double *x, int n);

#endif /* SDPA_LAB_COMMON_H */
