/*
 * shmemx.h: rgex-shmem's extensions beyond OpenSHMEM 1.5.
 */
#ifndef RGEX_SHMEMX_H
#define RGEX_SHMEMX_H

#include <shmem.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The rgex conduit carrying the job: "smp", "ofi", "ibv" or "scc"
 * (after shmem_init). */
const char *shmemx_conduit_name(void);

#ifdef __cplusplus
}
#endif

#endif /* RGEX_SHMEMX_H */
