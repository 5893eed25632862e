/*
 * sdpa_shared.h — constants shared by the host code and the kernels.
 *
 * This file is included by C (src/backend/...), by OpenCL C (prepended to the
 * program sources) and by GLSL (#include in shaders/vulkan), so it holds
 * only comments and #defines of integer literals: no types, no casts, no
 * suffixes. A value that host and kernel must agree on is defined here once.
 */
#ifndef SDPA_SHARED_H
#define SDPA_SHARED_H

/* Largest head dimension (D and Dv) the GPU kernels are built for. */
#define SDPA_MAX_HEAD_DIM 256

/* Per-row statistics record in a plan's workspace: the forward writes one
 * per query row, the stats reduction turns them into the stats output. */
#define SDPA_RS_N 0     /* kept keys (0: empty row) */
#define SDPA_RS_MEAN 1  /* running mean of the kept logits */
#define SDPA_RS_M2 2    /* running sum of squared deviations */
#define SDPA_RS_MIN 3
#define SDPA_RS_MAX 4
#define SDPA_RS_ENT 5   /* entropy of the row's distribution */
#define SDPA_RS_PMAX 6  /* largest probability */
#define SDPA_RS_JFRO 7  /* Frobenius norm of the softmax Jacobian */
#define SDPA_RS_SINK 8  /* probability of key 0 */
#define SDPA_RS_VALID 9 /* 1 for a non-empty row */
#define SDPA_RS_SIZE 10 /* floats per record */

/* Split-KV partial record: these floats, then the Dv accumulator values. */
#define SDPA_PT_M 0
#define SDPA_PT_L 1
#define SDPA_PT_A 2
#define SDPA_PT_L2 3
#define SDPA_PT_L3 4
#define SDPA_PT_N 5
#define SDPA_PT_MEAN 6
#define SDPA_PT_M2 7
#define SDPA_PT_MIN 8
#define SDPA_PT_MAX 9
#define SDPA_PT_S0 10
#define SDPA_PT_L1 11
#define SDPA_PT_SIZE 12

/* ---- OpenCL (shaders/opencl, src/backend/opencl) ---- */

/* Per-row statistics record of the OpenCL kernels (fwd.cl and unfused.cl
 * write one per query row, stats.cl reduces them): plain sums rather than
 * the running mean/M2 of the SDPA_RS_ record above. */
#define SDPA_CLRS_VALID 0 /* 1 for a non-empty row (empty rows are all zeros) */
#define SDPA_CLRS_N 1     /* kept keys */
#define SDPA_CLRS_SUM 2   /* sum of the kept logits */
#define SDPA_CLRS_SQ 3    /* sum of their squares */
#define SDPA_CLRS_MIN 4
#define SDPA_CLRS_MAX 5
#define SDPA_CLRS_ENT 6   /* entropy of the row's distribution */
#define SDPA_CLRS_PMAX 7  /* largest probability */
#define SDPA_CLRS_JFRO 8  /* Frobenius norm of the softmax Jacobian */
#define SDPA_CLRS_SINK 9  /* probability of key 0 */
#define SDPA_CLRS_SIZE 10 /* floats per record */

/* ---- Vulkan (src/backend/vulkan, shaders/vulkan/common.glsl) ---------------
 * Tensor slots: the index into the parameter block's toff/tstride and, in the
 * wide descriptor layout, the storage-buffer binding of the tensor. */
#define SDPA_VK_T_Q 0
#define SDPA_VK_T_K 1
#define SDPA_VK_T_V 2
#define SDPA_VK_T_OUT 3
#define SDPA_VK_T_MASK 4
#define SDPA_VK_T_BIAS 5
#define SDPA_VK_T_KVLEN 6
#define SDPA_VK_T_QGAIN 7
#define SDPA_VK_T_KGAIN 8
#define SDPA_VK_T_TEMP 9
#define SDPA_VK_T_LSE 10
#define SDPA_VK_T_STATS 11
#define SDPA_VK_T_DOUT 12
#define SDPA_VK_T_DQ 13
#define SDPA_VK_T_DK 14
#define SDPA_VK_T_DV 15
#define SDPA_VK_T_DQG 16
#define SDPA_VK_T_DKG 17
#define SDPA_VK_T_DT 18
#define SDPA_VK_T_ALIBI 19  /* alibi_slopes */
#define SDPA_VK_T_SINKS 20  /* sinks */
#define SDPA_VK_T_BTAB 21   /* block_table (k, v are then k_pages, v_pages) */
#define SDPA_VK_T_DSINKS 22 /* dsinks */
#define SDPA_VK_T_COUNT 23

/* Wide layout (devices with >= 24 storage buffers per stage): one binding
 * per tensor slot, then the workspace and the uniform parameter block. */
#define SDPA_VK_B_WS 23
#define SDPA_VK_B_PARAMS 24
#define SDPA_VK_B_COUNT 25
/* Packed layout (fewer storage buffers; shaders built with SDPA_PACKED):
 * every tensor of a call in one buffer with typed views aliasing it, the
 * workspace, the parameter block: 2 storage buffers. */
#define SDPA_VK_PK_B_PACK 0
#define SDPA_VK_PK_B_WS 1
#define SDPA_VK_PK_B_PARAMS 2
#define SDPA_VK_PK_B_COUNT 3

/* Feature bits: specialization constant 4 (FLAGS) and the parameter block. */
#define SDPA_VK_F_MASK 1
#define SDPA_VK_F_BIAS 2
#define SDPA_VK_F_KVLEN 4
#define SDPA_VK_F_QGAIN 8
#define SDPA_VK_F_KGAIN 16
#define SDPA_VK_F_TEMP 32
#define SDPA_VK_F_LSE 64
#define SDPA_VK_F_STATS 128
#define SDPA_VK_F_SOFTCAP 256
#define SDPA_VK_F_SPLIT 512   /* forward writes split partials */
#define SDPA_VK_F_NORMED 1024 /* q/k read from workspace copies */
#define SDPA_VK_F_ALIBI 2048   /* ALiBi slopes */
#define SDPA_VK_F_SINKS 4096   /* attention sinks */
#define SDPA_VK_F_PAGED 8192   /* K/V through the block table */

/* K/V storage (specialization constant 10, KV_TYPE; shaders/vulkan/kv.glsl):
 * 0 = q's storage type (the tensors' typed views), else K/V read as 32-bit
 * words and converted in registers. Block types index K/V in bytes. */
#define SDPA_VK_KV_SAME 0
#define SDPA_VK_KV_F32 1
#define SDPA_VK_KV_F16 2
#define SDPA_VK_KV_BF16 3
#define SDPA_VK_KV_Q8_0 4
#define SDPA_VK_KV_Q4_0 5
/* ---- end Vulkan ---- */

#endif /* SDPA_SHARED_H */
