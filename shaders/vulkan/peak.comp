/*
 * peak.comp — fp32 FMA micro-benchmark for the device peak
 * (sdpa_context_peak). Each invocation runs 8 independent vec4 FMA chains,
 * 4 steps per loop iteration, for `iters` iterations: x = fma(x, a, b) with
 * 0 < a < 1, so values converge and stay finite. The loop count is a push
 * constant (llvmpipe allows 65535 iterations per invocation; vk_peak.c keeps
 * below that and scales the dispatch instead). Each invocation stores its
 * lane sum at (global index % out_len), so the work cannot be dropped.
 * Flops per invocation: iters * 4 * 8 chains * 4 lanes * 2.
 * Specialization constant 0: work-group size. Built by glslc (meson) into
 * its own embedded table, outside the attention shaders' source hash;
 * dispatched and timed by src/backend/vulkan/vk_peak.c.
 */
#version 450

layout(local_size_x_id = 0) in;

layout(std430, binding = 0) writeonly buffer Out { float data[]; } result;

layout(push_constant) uniform Push {
    uint iters;
    uint out_len;
    float a;
    float b;
} pc;

void main()
{
    float s0 = float(gl_LocalInvocationIndex & 255u) * 1e-3;
    vec4 x0 = vec4(s0), x1 = vec4(s0 + 0.1), x2 = vec4(s0 + 0.2), x3 = vec4(s0 + 0.3);
    vec4 x4 = vec4(s0 + 0.4), x5 = vec4(s0 + 0.5), x6 = vec4(s0 + 0.6), x7 = vec4(s0 + 0.7);
    vec4 va = vec4(pc.a), vb = vec4(pc.b);
#define STEP()                  \
    x0 = fma(x0, va, vb);       \
    x1 = fma(x1, va, vb);       \
    x2 = fma(x2, va, vb);       \
    x3 = fma(x3, va, vb);       \
    x4 = fma(x4, va, vb);       \
    x5 = fma(x5, va, vb);       \
    x6 = fma(x6, va, vb);       \
    x7 = fma(x7, va, vb);
    /* unrolled by hand: llvmpipe counts every loop iteration, inner ones too */
    for (uint i = 0u; i < pc.iters; i++) {
        STEP()
        STEP()
        STEP()
        STEP()
    }
    vec4 s = ((x0 + x1) + (x2 + x3)) + ((x4 + x5) + (x6 + x7));
    result.data[gl_GlobalInvocationID.x % pc.out_len] = s.x + s.y + s.z + s.w;
}
