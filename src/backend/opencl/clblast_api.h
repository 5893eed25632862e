/*
 * clblast_api.h — the CLBlast entry points of the unfused path (cl_gemm.c,
 * cl_unfused.c) as a table of function pointers (sdpa__clblast_api) filled
 * at run time from libclblast.so.1 by cl_api.c, the same way as the OpenCL
 * table (cl_api.h, which explains the X-list and the redirects). Only in
 * builds with CLBlast headers (SDPA_HAVE_CLBLAST); without the library at
 * run time the unfused path is refused with SDPA_ERR_UNSUPPORTED and
 * sdpa__clblast_api_load's message.
 */
#ifndef SDPA_CLBLAST_API_H
#define SDPA_CLBLAST_API_H

#include <clblast_c.h>

#define SDPA__CLBLAST_API(X) \
    X(CLBlastOverrideParameters) \
    X(CLBlastSGemmTempBufferSize) \
    X(CLBlastSgemmWithTempBuffer)

typedef struct sdpa__clblast_api_table {
#define SDPA__CLBLAST_API_FIELD(name) __typeof__(name) *name;
    SDPA__CLBLAST_API(SDPA__CLBLAST_API_FIELD)
#undef SDPA__CLBLAST_API_FIELD
} sdpa__clblast_api_table;

extern sdpa__clblast_api_table sdpa__clblast_api;

/* Loads libclblast.so.1 (after the OpenCL table, which it needs) and fills
 * sdpa__clblast_api, once per process; NULL when ready, else the reason. */
const char *sdpa__clblast_api_load(void);

#ifndef SDPA__CL_API_NO_REDIRECT
#define CLBlastOverrideParameters  sdpa__clblast_api.CLBlastOverrideParameters
#define CLBlastSGemmTempBufferSize sdpa__clblast_api.CLBlastSGemmTempBufferSize
#define CLBlastSgemmWithTempBuffer sdpa__clblast_api.CLBlastSgemmWithTempBuffer
#endif

#endif
