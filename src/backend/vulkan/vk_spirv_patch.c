/*
 * vk_spirv_patch.c — asks the driver to preserve signed zeros, infinities
 * and NaNs in 32-bit float arithmetic: the shaders use -inf for dropped keys
 * and empty rows (NEG_INF in common.glsl) and let NaN inputs propagate, and
 * without this execution mode SPIR-V lets a driver assume neither occurs.
 * glslang has no GLSL spelling for it that builds for Vulkan 1.1 targets, so
 * the host adds it to each module when the device offers it
 * (shaderSignedZeroInfNanPreserveFloat32 of VK_KHR_shader_float_controls,
 * which vk_device.c then enables): OpCapability SignedZeroInfNanPreserve,
 * OpExtension "SPV_KHR_float_controls" and OpExecutionMode <entry>
 * SignedZeroInfNanPreserve 32, each in its section of the module's layout.
 * Devices without it run the module unchanged (docs/vulkan.md, "Float
 * controls"). Called by vk_pipeline.c (sdpa__vk_compute_pipeline).
 */
#include "vk_internal.h"

#include <stdlib.h>

enum {
    OP_EXTENSION = 10, OP_EXT_INST_IMPORT = 11, OP_MEMORY_MODEL = 14, OP_ENTRY_POINT = 15,
    OP_EXECUTION_MODE = 16, OP_CAPABILITY = 17,
    CAP_SIGNED_ZERO_INF_NAN_PRESERVE = 4466, MODE_SIGNED_ZERO_INF_NAN_PRESERVE = 4461,
};

/* "SPV_KHR_float_controls" as a nul-padded literal string: 6 words. */
#define EXT_WORDS 6
static const char ext_name[EXT_WORDS * 4] = "SPV_KHR_float_controls";

int sdpa__vk_spirv_preserve_inf_nan(const uint32_t *code, size_t size, uint32_t **patched,
                                    size_t *out_size)
{
    *patched = NULL;
    size_t n = size / 4, caps_end = 0, modes_at = 0, i = 5;
    uint32_t entry = 0;
    if (size % 4 != 0 || n < 5 || code[0] != 0x07230203u) return 0;
    while (i < n) {
        uint32_t op = code[i] & 0xffffu, len = code[i] >> 16;
        if (len == 0 || i + len > n) return 0;
        if (op == OP_CAPABILITY && len == 2 && code[i + 1] == CAP_SIGNED_ZERO_INF_NAN_PRESERVE)
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
    const size_t extra = 2 + 1 + EXT_WORDS + 4;
    uint32_t *out = sdpa__malloc((n + extra) * 4);
    if (!out) return -1;
    size_t o = 0;
    memcpy(out, code, caps_end * 4);
    o = caps_end;
    out[o++] = (2u << 16) | OP_CAPABILITY;
    out[o++] = CAP_SIGNED_ZERO_INF_NAN_PRESERVE;
    out[o++] = ((uint32_t)(1 + EXT_WORDS) << 16) | OP_EXTENSION;
    memcpy(&out[o], ext_name, sizeof ext_name);
    o += EXT_WORDS;
    memcpy(&out[o], code + caps_end, (modes_at - caps_end) * 4);
    o += modes_at - caps_end;
    out[o++] = (4u << 16) | OP_EXECUTION_MODE;
    out[o++] = entry;
    out[o++] = MODE_SIGNED_ZERO_INF_NAN_PRESERVE;
    out[o++] = 32;
    memcpy(&out[o], code + modes_at, (n - modes_at) * 4);
    o += n - modes_at;
    *out_size = o * 4;
    *patched = out;
    return 1;
}
