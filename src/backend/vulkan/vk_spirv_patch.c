/*
 * vk_spirv_patch.c — adds float-control execution modes to a SPIR-V module
 * before vkCreateShaderModule, for what the device offers (vk_device.c
 * probes it and enables VK_KHR_shader_float_controls):
 *  - SignedZeroInfNanPreserve 32 (shaderSignedZeroInfNanPreserveFloat32):
 *    the shaders use -inf for dropped keys and empty rows (NEG_INF in
 *    common.glsl) and let NaN inputs propagate, and without this mode SPIR-V
 *    lets a driver assume neither occurs;
 *  - DenormPreserve 16 (shaderDenormPreserveFloat16), with 64 and 32 where
 *    the device's denormBehaviorIndependence ties them to 16: f16 inputs are
 *    used as stored (DESIGN section 3), so a subnormal f16 value must not
 *    become 0 in a conversion (f16 storage loads and stores, unpackHalf2x16,
 *    fwd_fa2h's f16 q registers). Without the mode a driver may flush 16-bit
 *    denormals; vk_plan.c runs fwd_fa2h only where this is requested.
 * glslang has no GLSL spelling for these that builds for Vulkan 1.1 targets
 * and suits every device (which widths go together is the device's), so
 * the host adds OpCapability SignedZeroInfNanPreserve / DenormPreserve,
 * OpExtension "SPV_KHR_float_controls" and one OpExecutionMode <entry>
 * <mode> <width> per request, each in its section of the module's layout.
 * Devices without them run the module unchanged (docs/vulkan.md, "Float
 * controls"). Called by vk_pipeline.c (sdpa__vk_compute_pipeline).
 */
#include "vk_internal.h"

#include <stdlib.h>

enum {
    OP_EXTENSION = 10, OP_EXT_INST_IMPORT = 11, OP_MEMORY_MODEL = 14, OP_ENTRY_POINT = 15,
    OP_EXECUTION_MODE = 16, OP_CAPABILITY = 17,
    CAP_DENORM_PRESERVE = 4464, CAP_SIGNED_ZERO_INF_NAN_PRESERVE = 4466,
    MODE_DENORM_PRESERVE = 4459, MODE_SIGNED_ZERO_INF_NAN_PRESERVE = 4461,
};

/* "SPV_KHR_float_controls" as a nul-padded literal string: 6 words. */
#define EXT_WORDS 6
static const char ext_name[EXT_WORDS * 4] = "SPV_KHR_float_controls";

/* The requests of `modes`: execution mode and width, the capability each needs. */
static const struct { unsigned bit; uint32_t mode, width, cap; } requests[] = {
    {SDPA__VK_INF_NAN_32, MODE_SIGNED_ZERO_INF_NAN_PRESERVE, 32, CAP_SIGNED_ZERO_INF_NAN_PRESERVE},
    {SDPA__VK_DENORM_16, MODE_DENORM_PRESERVE, 16, CAP_DENORM_PRESERVE},
    {SDPA__VK_DENORM_32, MODE_DENORM_PRESERVE, 32, CAP_DENORM_PRESERVE},
    {SDPA__VK_DENORM_64, MODE_DENORM_PRESERVE, 64, CAP_DENORM_PRESERVE},
};
#define NREQ (sizeof requests / sizeof requests[0])

/* Whether one of the requests of `modes` needs capability cap. */
static bool wants_cap(unsigned modes, uint32_t cap)
{
    for (size_t r = 0; r < NREQ; r++)
        if ((modes & requests[r].bit) && requests[r].cap == cap) return true;
    return false;
}

int sdpa__vk_spirv_float_controls(const uint32_t *code, size_t size, unsigned modes,
                                  uint32_t **patched, size_t *out_size)
{
    *patched = NULL;
    size_t n = size / 4, caps_end = 0, modes_at = 0, i = 5;
    uint32_t entry = 0;
    if (!modes || size % 4 != 0 || n < 5 || code[0] != 0x07230203u) return 0;
    while (i < n) {
        uint32_t op = code[i] & 0xffffu, len = code[i] >> 16;
        if (len == 0 || i + len > n) return 0;
        if (op == OP_CAPABILITY && len == 2 && wants_cap(modes, code[i + 1]))
            return 0; /* already there */
        if (op == OP_CAPABILITY) caps_end = i + len;
        if (op == OP_ENTRY_POINT && len >= 3 && !entry) {
            entry = code[i + 2];
            modes_at = i + len;
        }
        if (op != OP_CAPABILITY && op != OP_EXTENSION && op != OP_EXT_INST_IMPORT &&
            op != OP_MEMORY_MODEL && op != OP_ENTRY_POINT && op != OP_EXECUTION_MODE)
            break; /* past the sections we touch */
        if (op == OP_ENTRY_POINT && entry) modes_at = i + len;
        i += len;
    }
    if (!caps_end || !entry) return 0;
    uint32_t caps[2];
    size_t ncaps = 0, nmodes = 0;
    if (wants_cap(modes, CAP_SIGNED_ZERO_INF_NAN_PRESERVE))
        caps[ncaps++] = CAP_SIGNED_ZERO_INF_NAN_PRESERVE;
    if (wants_cap(modes, CAP_DENORM_PRESERVE)) caps[ncaps++] = CAP_DENORM_PRESERVE;
    for (size_t r = 0; r < NREQ; r++) nmodes += (modes & requests[r].bit) != 0;
    const size_t extra = 2 * ncaps + 1 + EXT_WORDS + 4 * nmodes;
    uint32_t *out = sdpa__malloc((n + extra) * 4);
    if (!out) return -1;
    size_t o = 0;
    memcpy(out, code, caps_end * 4);
    o = caps_end;
    for (size_t c = 0; c < ncaps; c++) {
        out[o++] = (2u << 16) | OP_CAPABILITY;
        out[o++] = caps[c];
    }
    out[o++] = ((uint32_t)(1 + EXT_WORDS) << 16) | OP_EXTENSION;
    memcpy(&out[o], ext_name, sizeof ext_name);
    o += EXT_WORDS;
    memcpy(&out[o], code + caps_end, (modes_at - caps_end) * 4);
    o += modes_at - caps_end;
    for (size_t r = 0; r < NREQ; r++) {
        if (!(modes & requests[r].bit)) continue;
        out[o++] = (4u << 16) | OP_EXECUTION_MODE;
        out[o++] = entry;
        out[o++] = requests[r].mode;
        out[o++] = requests[r].width;
    }
    memcpy(&out[o], code + modes_at, (n - modes_at) * 4);
    o += n - modes_at;
    *out_size = o * 4;
    *patched = out;
    return 1;
}
