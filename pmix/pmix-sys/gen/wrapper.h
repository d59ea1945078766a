/*
 * What pmix-sys binds: the PMIx client API, plus one function-pointer
 * typedef per call the bootstrap makes (the library is opened with
 * dlopen, so these are resolved by name, not linked).
 */
#include <pmix.h>

typedef __typeof__(&PMIx_Get_version) PMIx_Get_version_fn;
typedef __typeof__(&PMIx_Init) PMIx_Init_fn;
typedef __typeof__(&PMIx_Finalize) PMIx_Finalize_fn;
typedef __typeof__(&PMIx_Put) PMIx_Put_fn;
typedef __typeof__(&PMIx_Commit) PMIx_Commit_fn;
typedef __typeof__(&PMIx_Fence) PMIx_Fence_fn;
typedef __typeof__(&PMIx_Get) PMIx_Get_fn;
typedef __typeof__(&PMIx_Error_string) PMIx_Error_string_fn;
typedef __typeof__(&PMIx_Value_load) PMIx_Value_load_fn;
typedef __typeof__(&PMIx_Value_destruct) PMIx_Value_destruct_fn;
