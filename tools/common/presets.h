/*
 * presets.h — the problem shapes sdpa-bench and sdpa-tune share: the
 * `--shape` parser, the named presets (ONE table, so the shapes that
 * `sdpa-tune --preset X` tunes are exactly the ones `sdpa-bench --preset X`
 * measures, and every bench row falls in a profile bucket the tuner wrote),
 * their --help listing, and the memory a shape needs, which the tools check
 * against the machine before allocating anything.
 */
#ifndef SDPA_TOOLS_PRESETS_H
#define SDPA_TOOLS_PRESETS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "sdpa.h"

/* One problem. Preset rows that are causal have Sq == Skv, so the causal
 * diagonal (top-left in sdpa-tune, bottom-right by default in sdpa-bench)
 * does not change what they compute. */
typedef struct tps_shape {
    int64_t B, Hq, Hkv, Sq, Skv, D, Dv;
    int causal;       /* 1 = causal (window -1, 0), 0 = no mask */
    sdpa_dtype dtype; /* storage of q, k, v, out; SDPA_DTYPE_NONE = the tool's --dtype */
} tps_shape;

/* The rows `name` stands for: one preset's, or every preset's for "all",
 * in --help order. Stores up to max of them in out and returns how many
 * there are (more than max when they did not all fit), -1 for an unknown
 * name. */
int tps_rows(const char *name, tps_shape *out, int max);

/* "llm-prefill, llm-decode, vit, mobile, all": the names, for messages. */
const char *tps_names(void);

/* "B1 H8/2 S1024 D128 causal f32": heads as Hq/Hkv when they differ, Sq and
 * Skv apart when they differ, Dv when it differs from D; dtype unless NONE. */
void tps_describe(const tps_shape *s, char *buf, size_t cap);

/* The --help lines of the presets: each name with its rows, every line
 * indented by `indent` spaces; then "all" when with_all. */
void tps_print_help(FILE *f, int indent, int with_all);

/* "B,Hq,Hkv,Sq,Skv,D[,Dv]" (each in [1, 2^31], Hq a multiple of Hkv) into *s
 * (causal 0, dtype NONE). Returns 1, or 0 with the reason in err. */
int tps_parse_shape(const char *val, tps_shape *s, char *err, size_t cap);

/* Bytes of the tensors one run of s in dtype dt uses: q, k, v (inputs_only)
 * or q, k, v, out plus, with backward, lse (f32), dout, dq, dk, dv; plus
 * the per-head statistics with stats. A double: a --shape can exceed 2^64. */
double tps_bytes(const tps_shape *s, sdpa_dtype dt, int backward, int stats, int inputs_only);

/* Physical memory of the machine in bytes (sysconf), 0 when unknown. */
double tps_physical_memory(void);

/* The memory a tool needs for shape s against what the machine has: 1 when
 * need <= have (or have is 0, unknown); else 0 with a message naming the
 * shape (s NULL: "the shapes together", for a sum over several), both sizes
 * in GiB and `where` ("memory", "device memory of X"). */
int tps_fits(const tps_shape *s, double need, double have, const char *where, char *msg,
             size_t cap);

/* The sdpa_device_info of ctx's device (matched by name among its backend's
 * devices). Returns 1, or 0 when no listed device has that name. */
int tps_context_device(sdpa_context *ctx, sdpa_device_info *info);

/* Memory check of one shape before a tool allocates: `host` bytes of host
 * arrays plus `per_context` bytes of buffers in each of the n contexts
 * (NULL entries skipped). Buffers on a GPU with a known memory size count
 * against that device; all else against physical memory. s NULL: the bytes
 * are a sum over several shapes (named so in the message). Returns 1, or 0
 * with the message in msg. */
int tps_check_memory(const tps_shape *s, double host, double per_context,
                     sdpa_context *const *ctx, int n, char *msg, size_t cap);

#endif /* SDPA_TOOLS_PRESETS_H */
