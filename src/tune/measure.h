/*
 * measure.h — problem instances for tuning (inputs with the features of the
 * description being tuned, at a chosen size), the correctness check of one
 * candidate against the float64 reference, and timing. Used by search.c and
 * tune.c only.
 */
#ifndef SDPA_TUNE_MEASURE_H
#define SDPA_TUNE_MEASURE_H

#include "tune.h"

/* An instance holds every forward slot, then every backward slot (the slot
 * table, src/core/slots.h); the optional gradients stay absent. */
#define SDPA__TI_FWD SDPA__T_COUNT
#define SDPA__TI_ALL (SDPA__T_COUNT + SDPA__G_COUNT)

typedef struct sdpa__tune_dims {
    int64_t B, Hq, Hkv, Sq, Skv;
} sdpa__tune_dims;

/* One attention call's tensors, filled with random normal inputs. With a
 * context they live in device buffers (sdpa_buffer_create), else in host
 * memory. Tensors present in the template are present here, with the same
 * dtypes and broadcast axes; lse is added when `backward`. */
typedef struct sdpa__tune_instance {
    sdpa_attention_desc desc;
    sdpa_backward_tensors bwd;
    bool backward;
    void *host[SDPA__TI_ALL];
    sdpa_buffer *buf[SDPA__TI_ALL];
    size_t count[SDPA__TI_ALL];   /* elements */
    sdpa_dtype dtype[SDPA__TI_ALL];
} sdpa__tune_instance;

/* `dev` NULL = host tensors. `ragged` = random valid-key counts (<= Skv). */
sdpa_status sdpa__tune_instance_make(sdpa_context *ctx, sdpa_context *dev,
                                     const sdpa_attention_desc *tmpl, const sdpa__problem *p,
                                     const sdpa__tune_dims *d, bool backward, bool ragged,
                                     uint64_t seed, sdpa__tune_instance *ti);
void sdpa__tune_instance_free(sdpa__tune_instance *ti);

/* Outputs of a host instance as doubles, by instance slot: the ones the check
 * compares are the forward's saved outputs (out, lse) and the backward's
 * required gradients (dq, dk, dv); the others and absent ones have n = 0. */
typedef struct sdpa__tune_outputs {
    double *v[SDPA__TI_ALL];
    size_t n[SDPA__TI_ALL];
} sdpa__tune_outputs;
void sdpa__tune_outputs_free(sdpa__tune_outputs *o);

/* Runs the instance on ctx with plan options (tile forced or NULL) and
 * collects the outputs. Outputs are poisoned with NaN first. */
sdpa_status sdpa__tune_run_host(sdpa_context *ctx, sdpa__tune_instance *ti, unsigned flags,
                                const sdpa_tile_config *tile, sdpa__tune_outputs *out);

/* Compares a candidate's outputs with the reference's. Returns true when
 * every element is within the dtype's bound; otherwise writes why. */
bool sdpa__tune_compare(const sdpa__tune_outputs *got, const sdpa__tune_outputs *want,
                        sdpa_dtype dtype, char *why, size_t why_size);

/* Creates a plan for the timing instance with the forced tile, runs warm-up
 * then `repeats` timed calls (forward, + backward when the plan has it, then
 * sdpa_context_finish) and returns each call's time in ms in samples[]. The
 * plan is kept in *plan for re-measurement (caller destroys). */
sdpa_status sdpa__tune_plan(sdpa_context *ctx, const sdpa__backend *be,
                            sdpa__tune_instance *ti, unsigned flags,
                            const sdpa_tile_config *tile, sdpa_plan **plan);
sdpa_status sdpa__tune_time(sdpa_context *ctx, sdpa_plan *plan, sdpa__tune_instance *ti,
                            double *ms);

#endif /* SDPA_TUNE_MEASURE_H */
