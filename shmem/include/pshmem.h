/*
 * pshmem.h: the OpenSHMEM profiling interface of rgex-shmem.
 *
 * Every routine of shmem.h is exported a second time, as pshmem_ + its
 * name after "shmem_": pshmem_putmem is shmem_putmem. A profiling library
 * defines the shmem_ routines it measures and calls the pshmem_ ones to
 * do the work; linked (or LD_PRELOADed) before librgex_shmem.so, its
 * shmem_ routines are the program's. Interposition is through the shared
 * library: rgex-shmem's static archive exports both names too, so a
 * profiler cannot be linked statically with it.
 *
 * Each pshmem_ routine has the type of its shmem_ routine (__typeof__,
 * as GCC and Clang give it); shmem.h's inline routines have inline
 * pshmem_ forms here. pshmem_sync picks its form by its count of
 * arguments, as shmem_sync does.
 */
#ifndef RGEX_PSHMEM_H
#define RGEX_PSHMEM_H

#include <shmem.h>

#ifdef __cplusplus
extern "C" {
#endif

/* pshmem_##NAME, of shmem_##NAME's type. */
#define RGEX_PSHMEM(NAME) extern __typeof__(shmem_##NAME) pshmem_##NAME;

/* ---- Teams, setup, memory ------------------------------------------- */

RGEX_PSHMEM(team_my_pe)
RGEX_PSHMEM(team_n_pes)
RGEX_PSHMEM(team_translate_pe)
RGEX_PSHMEM(team_get_config)
RGEX_PSHMEM(team_split_strided)
RGEX_PSHMEM(team_split_2d)
RGEX_PSHMEM(team_destroy)
RGEX_PSHMEM(team_ptr)

RGEX_PSHMEM(init)
RGEX_PSHMEM(init_thread)
RGEX_PSHMEM(query_thread)
RGEX_PSHMEM(finalize)
RGEX_PSHMEM(global_exit)
RGEX_PSHMEM(my_pe)
RGEX_PSHMEM(n_pes)
RGEX_PSHMEM(pe_accessible)
RGEX_PSHMEM(addr_accessible)
RGEX_PSHMEM(ptr)
RGEX_PSHMEM(info_get_version)
RGEX_PSHMEM(info_get_name)

RGEX_PSHMEM(malloc)
RGEX_PSHMEM(malloc_with_hints)
RGEX_PSHMEM(calloc)
RGEX_PSHMEM(align)
RGEX_PSHMEM(realloc)
RGEX_PSHMEM(free)

/* ---- RMA and put-with-signal ---------------------------------------- */

#define RGEX_PSHMEM_RMA(T, N)                                               \
    RGEX_PSHMEM(N##_put) RGEX_PSHMEM(N##_get) RGEX_PSHMEM(N##_iput)        \
    RGEX_PSHMEM(N##_iget) RGEX_PSHMEM(N##_put_nbi)                         \
    RGEX_PSHMEM(N##_get_nbi) RGEX_PSHMEM(N##_put_signal)                   \
    RGEX_PSHMEM(N##_put_signal_nbi)
RGEX_SHMEM_RMA_TYPES(RGEX_PSHMEM_RMA)

#define RGEX_PSHMEM_PG(T, N) RGEX_PSHMEM(N##_p) RGEX_PSHMEM(N##_g)
RGEX_SHMEM_PG_TYPES(RGEX_PSHMEM_PG)

static inline void pshmem_longdouble_p(long double *dest, long double value,
                                       int pe) {
    pshmem_longdouble_put(dest, &value, 1, pe);
}
static inline long double pshmem_longdouble_g(const long double *source,
                                              int pe) {
    long double value;
    pshmem_longdouble_get(&value, source, 1, pe);
    return value;
}

#define RGEX_PSHMEM_SIZED(S)                                                \
    RGEX_PSHMEM(put##S) RGEX_PSHMEM(get##S) RGEX_PSHMEM(iput##S)           \
    RGEX_PSHMEM(iget##S) RGEX_PSHMEM(put##S##_nbi)                         \
    RGEX_PSHMEM(get##S##_nbi) RGEX_PSHMEM(put##S##_signal)                 \
    RGEX_PSHMEM(put##S##_signal_nbi)
RGEX_PSHMEM_SIZED(8)
RGEX_PSHMEM_SIZED(16)
RGEX_PSHMEM_SIZED(32)
RGEX_PSHMEM_SIZED(64)
RGEX_PSHMEM_SIZED(128)
RGEX_PSHMEM(putmem)
RGEX_PSHMEM(getmem)
RGEX_PSHMEM(putmem_nbi)
RGEX_PSHMEM(getmem_nbi)
RGEX_PSHMEM(putmem_signal)
RGEX_PSHMEM(putmem_signal_nbi)

RGEX_PSHMEM(signal_fetch)
RGEX_PSHMEM(signal_wait_until)

/* ---- AMOs ----------------------------------------------------------- */

#define RGEX_PSHMEM_AMO_EXT(T, N)                                           \
    RGEX_PSHMEM(N##_atomic_fetch) RGEX_PSHMEM(N##_atomic_fetch_nbi)        \
    RGEX_PSHMEM(N##_atomic_set) RGEX_PSHMEM(N##_atomic_swap)               \
    RGEX_PSHMEM(N##_atomic_swap_nbi)
RGEX_SHMEM_AMO_EXT_TYPES(RGEX_PSHMEM_AMO_EXT)

#define RGEX_PSHMEM_AMO_STD(T, N)                                           \
    RGEX_PSHMEM(N##_atomic_compare_swap)                                   \
    RGEX_PSHMEM(N##_atomic_compare_swap_nbi)                               \
    RGEX_PSHMEM(N##_atomic_fetch_inc) RGEX_PSHMEM(N##_atomic_fetch_inc_nbi) \
    RGEX_PSHMEM(N##_atomic_inc) RGEX_PSHMEM(N##_atomic_fetch_add)          \
    RGEX_PSHMEM(N##_atomic_fetch_add_nbi) RGEX_PSHMEM(N##_atomic_add)
RGEX_SHMEM_AMO_STD_TYPES(RGEX_PSHMEM_AMO_STD)

#define RGEX_PSHMEM_AMO_BIT1(N, OP)                                         \
    RGEX_PSHMEM(N##_atomic_fetch_##OP)                                     \
    RGEX_PSHMEM(N##_atomic_fetch_##OP##_nbi) RGEX_PSHMEM(N##_atomic_##OP)
#define RGEX_PSHMEM_AMO_BIT(T, N)                                           \
    RGEX_PSHMEM_AMO_BIT1(N, and) RGEX_PSHMEM_AMO_BIT1(N, or)               \
    RGEX_PSHMEM_AMO_BIT1(N, xor)
RGEX_SHMEM_AMO_BIT_TYPES(RGEX_PSHMEM_AMO_BIT)

/* ---- Contexts ------------------------------------------------------- */

RGEX_PSHMEM(ctx_create)
RGEX_PSHMEM(team_create_ctx)
RGEX_PSHMEM(ctx_destroy)
RGEX_PSHMEM(ctx_get_team)
RGEX_PSHMEM(ctx_fence)
RGEX_PSHMEM(ctx_quiet)

#define RGEX_PSHMEM_CTX_RMA(T, N) RGEX_PSHMEM_RMA(T, ctx_##N)
RGEX_SHMEM_RMA_TYPES(RGEX_PSHMEM_CTX_RMA)
#define RGEX_PSHMEM_CTX_PG(T, N) RGEX_PSHMEM_PG(T, ctx_##N)
RGEX_SHMEM_PG_TYPES(RGEX_PSHMEM_CTX_PG)

static inline void pshmem_ctx_longdouble_p(shmem_ctx_t ctx, long double *dest,
                                           long double value, int pe) {
    pshmem_ctx_longdouble_put(ctx, dest, &value, 1, pe);
}
static inline long double pshmem_ctx_longdouble_g(shmem_ctx_t ctx,
                                                  const long double *source,
                                                  int pe) {
    long double value;
    pshmem_ctx_longdouble_get(ctx, &value, source, 1, pe);
    return value;
}

#define RGEX_PSHMEM_CTX_SIZED(S)                                            \
    RGEX_PSHMEM(ctx_put##S) RGEX_PSHMEM(ctx_get##S)                        \
    RGEX_PSHMEM(ctx_iput##S) RGEX_PSHMEM(ctx_iget##S)                      \
    RGEX_PSHMEM(ctx_put##S##_nbi) RGEX_PSHMEM(ctx_get##S##_nbi)            \
    RGEX_PSHMEM(ctx_put##S##_signal) RGEX_PSHMEM(ctx_put##S##_signal_nbi)
RGEX_PSHMEM_CTX_SIZED(8)
RGEX_PSHMEM_CTX_SIZED(16)
RGEX_PSHMEM_CTX_SIZED(32)
RGEX_PSHMEM_CTX_SIZED(64)
RGEX_PSHMEM_CTX_SIZED(128)
RGEX_PSHMEM(ctx_putmem)
RGEX_PSHMEM(ctx_getmem)
RGEX_PSHMEM(ctx_putmem_nbi)
RGEX_PSHMEM(ctx_getmem_nbi)
RGEX_PSHMEM(ctx_putmem_signal)
RGEX_PSHMEM(ctx_putmem_signal_nbi)

#define RGEX_PSHMEM_CTX_AMO_EXT(T, N) RGEX_PSHMEM_AMO_EXT(T, ctx_##N)
RGEX_SHMEM_AMO_EXT_TYPES(RGEX_PSHMEM_CTX_AMO_EXT)
#define RGEX_PSHMEM_CTX_AMO_STD(T, N) RGEX_PSHMEM_AMO_STD(T, ctx_##N)
RGEX_SHMEM_AMO_STD_TYPES(RGEX_PSHMEM_CTX_AMO_STD)
#define RGEX_PSHMEM_CTX_AMO_BIT(T, N) RGEX_PSHMEM_AMO_BIT(T, ctx_##N)
RGEX_SHMEM_AMO_BIT_TYPES(RGEX_PSHMEM_CTX_AMO_BIT)

/* ---- Point-to-point synchronisation --------------------------------- */

#define RGEX_PSHMEM_SYNC(T, N)                                              \
    RGEX_PSHMEM(N##_wait_until) RGEX_PSHMEM(N##_wait_until_all)            \
    RGEX_PSHMEM(N##_wait_until_any) RGEX_PSHMEM(N##_wait_until_some)       \
    RGEX_PSHMEM(N##_wait_until_all_vector)                                 \
    RGEX_PSHMEM(N##_wait_until_any_vector)                                 \
    RGEX_PSHMEM(N##_wait_until_some_vector) RGEX_PSHMEM(N##_test)          \
    RGEX_PSHMEM(N##_test_all) RGEX_PSHMEM(N##_test_any)                    \
    RGEX_PSHMEM(N##_test_some) RGEX_PSHMEM(N##_test_all_vector)            \
    RGEX_PSHMEM(N##_test_any_vector) RGEX_PSHMEM(N##_test_some_vector)
RGEX_SHMEM_SYNC_TYPES(RGEX_PSHMEM_SYNC)

/* ---- Collectives ---------------------------------------------------- */

RGEX_PSHMEM(team_sync)
RGEX_PSHMEM(barrier)
RGEX_PSHMEM(sync)

#define RGEX_PSHMEM_COLL(T, N)                                              \
    RGEX_PSHMEM(N##_broadcast) RGEX_PSHMEM(N##_collect)                    \
    RGEX_PSHMEM(N##_fcollect) RGEX_PSHMEM(N##_alltoall)                    \
    RGEX_PSHMEM(N##_alltoalls)
RGEX_SHMEM_RMA_TYPES(RGEX_PSHMEM_COLL)
RGEX_PSHMEM(broadcastmem)
RGEX_PSHMEM(collectmem)
RGEX_PSHMEM(fcollectmem)
RGEX_PSHMEM(alltoallmem)
RGEX_PSHMEM(alltoallsmem)

#define RGEX_PSHMEM_BIT(T, N)                                               \
    RGEX_PSHMEM(N##_and_reduce) RGEX_PSHMEM(N##_or_reduce)                 \
    RGEX_PSHMEM(N##_xor_reduce)
#define RGEX_PSHMEM_ORDER(T, N)                                             \
    RGEX_PSHMEM(N##_max_reduce) RGEX_PSHMEM(N##_min_reduce)
#define RGEX_PSHMEM_ARITH(T, N)                                             \
    RGEX_PSHMEM(N##_sum_reduce) RGEX_PSHMEM(N##_prod_reduce)
RGEX_SHMEM_REDUCE_BIT_TYPES(RGEX_PSHMEM_BIT)
RGEX_SHMEM_REDUCE_ORDER_TYPES(RGEX_PSHMEM_ORDER)
RGEX_SHMEM_REDUCE_ARITH_TYPES(RGEX_PSHMEM_ARITH)

#define RGEX_PSHMEM_ACTIVE_SET(S)                                           \
    RGEX_PSHMEM(broadcast##S) RGEX_PSHMEM(collect##S)                      \
    RGEX_PSHMEM(fcollect##S) RGEX_PSHMEM(alltoall##S)                      \
    RGEX_PSHMEM(alltoalls##S)
RGEX_PSHMEM_ACTIVE_SET(32)
RGEX_PSHMEM_ACTIVE_SET(64)

#define RGEX_PSHMEM_TO_ALL_BIT(T, N)                                        \
    RGEX_PSHMEM(N##_and_to_all) RGEX_PSHMEM(N##_or_to_all)                 \
    RGEX_PSHMEM(N##_xor_to_all)
#define RGEX_PSHMEM_TO_ALL_ORDER(T, N)                                      \
    RGEX_PSHMEM(N##_max_to_all) RGEX_PSHMEM(N##_min_to_all)
#define RGEX_PSHMEM_TO_ALL_ARITH(T, N)                                      \
    RGEX_PSHMEM(N##_sum_to_all) RGEX_PSHMEM(N##_prod_to_all)
RGEX_SHMEM_TO_ALL_BIT(RGEX_PSHMEM_TO_ALL_BIT)
RGEX_SHMEM_TO_ALL_ORDER(RGEX_PSHMEM_TO_ALL_ORDER)
RGEX_SHMEM_TO_ALL_ARITH(RGEX_PSHMEM_TO_ALL_ARITH)

/* The long double reductions are inline in shmem.h, over librgex_shmem's
 * rgex_shmem_reduce_with and rgex_shmem_to_all_with: their pshmem_ forms
 * are the same calls (the combiners are shmem.h's). */
#define RGEX_PSHMEM_LD(OP)                                                  \
    static inline int pshmem_longdouble_##OP##_reduce(                      \
        shmem_team_t team, long double *dest, const long double *source,    \
        size_t nreduce) {                                                   \
        return rgex_shmem_reduce_with(team, dest, source, nreduce,          \
                                      sizeof(long double),                  \
                                      rgex_shmem_ld_##OP);                  \
    }                                                                       \
    static inline void pshmem_longdouble_##OP##_to_all(                     \
        long double *dest, const long double *source, int nreduce,          \
        int PE_start, int logPE_stride, int PE_size, long double *pWrk,     \
        long *pSync) {                                                      \
        (void)pWrk;                                                         \
        rgex_shmem_to_all_with(dest, source,                                \
                               nreduce < 0 ? (size_t)-1 : (size_t)nreduce,  \
                               sizeof(long double), PE_start, logPE_stride, \
                               PE_size, pSync, rgex_shmem_ld_##OP);         \
    }
RGEX_PSHMEM_LD(max)
RGEX_PSHMEM_LD(min)
RGEX_PSHMEM_LD(sum)
RGEX_PSHMEM_LD(prod)

/* ---- Locks, profiling control, ordering ----------------------------- */

RGEX_PSHMEM(set_lock)
RGEX_PSHMEM(clear_lock)
RGEX_PSHMEM(test_lock)
RGEX_PSHMEM(pcontrol)
RGEX_PSHMEM(fence)
RGEX_PSHMEM(quiet)
RGEX_PSHMEM(barrier_all)
RGEX_PSHMEM(sync_all)

#ifdef __cplusplus
}
#endif

/* pshmem_sync(team) and the deprecated pshmem_sync(PE_start,
 * logPE_stride, PE_size, pSync), as shmem_sync. */
#define pshmem_sync(...)                                                    \
    RGEX_SHMEM_PICK4(__VA_ARGS__, pshmem_sync, rgex_shmem_bad_sync,         \
                     rgex_shmem_bad_sync, pshmem_team_sync)(__VA_ARGS__)

#endif /* RGEX_PSHMEM_H */
