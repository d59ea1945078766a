/*
 * shmem.h: OpenSHMEM 1.5 for C, on rgex (librgex_shmem).
 *
 * Written for rgex-shmem from the OpenSHMEM 1.5 specification's routine
 * signatures and type tables. What is declared here is exported by
 * librgex_shmem.so; shmem/README.md lists what is not there yet (teams,
 * contexts, collectives other than the barriers, locks, symmetric static
 * data).
 */
#ifndef RGEX_SHMEM_H
#define RGEX_SHMEM_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Constants (section 6) ------------------------------------------ */

#define SHMEM_MAJOR_VERSION 1
#define SHMEM_MINOR_VERSION 5
#define _SHMEM_MAJOR_VERSION SHMEM_MAJOR_VERSION
#define _SHMEM_MINOR_VERSION SHMEM_MINOR_VERSION
#define SHMEM_MAX_NAME_LEN 256
#define _SHMEM_MAX_NAME_LEN SHMEM_MAX_NAME_LEN
#define SHMEM_VENDOR_STRING "rgex-shmem"
#define _SHMEM_VENDOR_STRING SHMEM_VENDOR_STRING

#define SHMEM_THREAD_SINGLE 0
#define SHMEM_THREAD_FUNNELED 1
#define SHMEM_THREAD_SERIALIZED 2
#define SHMEM_THREAD_MULTIPLE 3

#define SHMEM_CMP_EQ 0
#define SHMEM_CMP_NE 1
#define SHMEM_CMP_GT 2
#define SHMEM_CMP_GE 3
#define SHMEM_CMP_LT 4
#define SHMEM_CMP_LE 5
#define _SHMEM_CMP_EQ SHMEM_CMP_EQ
#define _SHMEM_CMP_NE SHMEM_CMP_NE
#define _SHMEM_CMP_GT SHMEM_CMP_GT
#define _SHMEM_CMP_GE SHMEM_CMP_GE
#define _SHMEM_CMP_LT SHMEM_CMP_LT
#define _SHMEM_CMP_LE SHMEM_CMP_LE

#define SHMEM_SIGNAL_SET 0
#define SHMEM_SIGNAL_ADD 1

#define SHMEM_MALLOC_ATOMICS_REMOTE 1L
#define SHMEM_MALLOC_SIGNAL_REMOTE 2L

/* The deprecated active-set routines' pSync sizes (longs) and value. */
#define SHMEM_SYNC_VALUE 0L
#define SHMEM_BARRIER_SYNC_SIZE 4
#define SHMEM_BCAST_SYNC_SIZE 4
#define SHMEM_REDUCE_SYNC_SIZE 4
#define SHMEM_COLLECT_SYNC_SIZE 4
#define SHMEM_ALLTOALL_SYNC_SIZE 4
#define SHMEM_ALLTOALLS_SYNC_SIZE 4
#define SHMEM_SYNC_SIZE 4
#define SHMEM_REDUCE_MIN_WRKDATA_SIZE 1
#define _SHMEM_SYNC_VALUE SHMEM_SYNC_VALUE
#define _SHMEM_BARRIER_SYNC_SIZE SHMEM_BARRIER_SYNC_SIZE
#define _SHMEM_BCAST_SYNC_SIZE SHMEM_BCAST_SYNC_SIZE
#define _SHMEM_REDUCE_SYNC_SIZE SHMEM_REDUCE_SYNC_SIZE
#define _SHMEM_COLLECT_SYNC_SIZE SHMEM_COLLECT_SYNC_SIZE
#define _SHMEM_ALLTOALL_SYNC_SIZE SHMEM_ALLTOALL_SYNC_SIZE
#define _SHMEM_ALLTOALLS_SYNC_SIZE SHMEM_ALLTOALLS_SYNC_SIZE
#define _SHMEM_SYNC_SIZE SHMEM_SYNC_SIZE
#define _SHMEM_REDUCE_MIN_WRKDATA_SIZE SHMEM_REDUCE_MIN_WRKDATA_SIZE

/* ---- Teams (section 9.4) ---------------------------------------------- */

typedef struct rgex_shmem_team *shmem_team_t;
typedef struct {
    int num_contexts;
} shmem_team_config_t;
extern const struct rgex_shmem_team rgex_shmem_team_world;
extern const struct rgex_shmem_team rgex_shmem_team_shared;
#define SHMEM_TEAM_WORLD ((shmem_team_t)&rgex_shmem_team_world)
#define SHMEM_TEAM_SHARED ((shmem_team_t)&rgex_shmem_team_shared)
#define SHMEM_TEAM_INVALID ((shmem_team_t)0)
#define SHMEM_TEAM_NUM_CONTEXTS 1L

int shmem_team_my_pe(shmem_team_t team);
int shmem_team_n_pes(shmem_team_t team);
int shmem_team_translate_pe(shmem_team_t src_team, int src_pe,
                            shmem_team_t dest_team);
int shmem_team_get_config(shmem_team_t team, long config_mask,
                          shmem_team_config_t *config);
int shmem_team_split_strided(shmem_team_t parent_team, int start, int stride,
                             int size, const shmem_team_config_t *config,
                             long config_mask, shmem_team_t *new_team);
int shmem_team_split_2d(shmem_team_t parent_team, int xrange,
                        const shmem_team_config_t *xaxis_config,
                        long xaxis_mask, shmem_team_t *xaxis_team,
                        const shmem_team_config_t *yaxis_config,
                        long yaxis_mask, shmem_team_t *yaxis_team);
void shmem_team_destroy(shmem_team_t team);
void *shmem_team_ptr(shmem_team_t team, const void *dest, int pe);

/* ---- Setup, exit and query (section 9.1) ---------------------------- */

void shmem_init(void);
int shmem_init_thread(int requested, int *provided);
void shmem_query_thread(int *provided);
void shmem_finalize(void);
void shmem_global_exit(int status);
int shmem_my_pe(void);
int shmem_n_pes(void);
int shmem_pe_accessible(int pe);
int shmem_addr_accessible(const void *addr, int pe);
void *shmem_ptr(const void *dest, int pe);
void shmem_info_get_version(int *major, int *minor);
void shmem_info_get_name(char *name);

/* ---- Memory management (section 9.3) -------------------------------- */

void *shmem_malloc(size_t size);
void *shmem_malloc_with_hints(size_t size, long hints);
void *shmem_calloc(size_t count, size_t size);
void *shmem_align(size_t alignment, size_t size);
void *shmem_realloc(void *ptr, size_t size);
void shmem_free(void *ptr);

/* ---- Type tables ------------------------------------------------------
 * Each list applies X(TYPE, TYPENAME) to the types of one table of the
 * specification.
 */

/* Table 5: the standard RMA types. */
#define RGEX_SHMEM_RMA_TYPES(X)                                             \
    X(float, float) X(double, double) X(long double, longdouble)           \
    X(char, char) X(signed char, schar) X(short, short) X(int, int)        \
    X(long, long) X(long long, longlong) X(unsigned char, uchar)           \
    X(unsigned short, ushort) X(unsigned int, uint)                        \
    X(unsigned long, ulong) X(unsigned long long, ulonglong)               \
    X(int8_t, int8) X(int16_t, int16) X(int32_t, int32) X(int64_t, int64)  \
    X(uint8_t, uint8) X(uint16_t, uint16) X(uint32_t, uint32)              \
    X(uint64_t, uint64) X(size_t, size) X(ptrdiff_t, ptrdiff)

/* Table 5 less long double (its p and g are inline, below). */
#define RGEX_SHMEM_PG_TYPES(X)                                              \
    X(float, float) X(double, double)                                      \
    X(char, char) X(signed char, schar) X(short, short) X(int, int)        \
    X(long, long) X(long long, longlong) X(unsigned char, uchar)           \
    X(unsigned short, ushort) X(unsigned int, uint)                        \
    X(unsigned long, ulong) X(unsigned long long, ulonglong)               \
    X(int8_t, int8) X(int16_t, int16) X(int32_t, int32) X(int64_t, int64)  \
    X(uint8_t, uint8) X(uint16_t, uint16) X(uint32_t, uint32)              \
    X(uint64_t, uint64) X(size_t, size) X(ptrdiff_t, ptrdiff)

/* Table 6: the standard AMO types. */
#define RGEX_SHMEM_AMO_STD_TYPES(X)                                         \
    X(int, int) X(long, long) X(long long, longlong)                       \
    X(unsigned int, uint) X(unsigned long, ulong)                          \
    X(unsigned long long, ulonglong) X(int32_t, int32) X(int64_t, int64)   \
    X(uint32_t, uint32) X(uint64_t, uint64) X(size_t, size)                \
    X(ptrdiff_t, ptrdiff)

/* Table 7: the extended AMO types. */
#define RGEX_SHMEM_AMO_EXT_TYPES(X)                                         \
    X(float, float) X(double, double) RGEX_SHMEM_AMO_STD_TYPES(X)

/* Table 8: the bitwise AMO types. */
#define RGEX_SHMEM_AMO_BIT_TYPES(X)                                         \
    X(unsigned int, uint) X(unsigned long, ulong)                          \
    X(unsigned long long, ulonglong) X(int32_t, int32) X(int64_t, int64)   \
    X(uint32_t, uint32) X(uint64_t, uint64)

/* Table 10: the point-to-point synchronisation types. */
#define RGEX_SHMEM_SYNC_TYPES(X)                                            \
    X(short, short) X(int, int) X(long, long) X(long long, longlong)       \
    X(unsigned short, ushort) X(unsigned int, uint)                        \
    X(unsigned long, ulong) X(unsigned long long, ulonglong)               \
    X(int32_t, int32) X(int64_t, int64) X(uint32_t, uint32)                \
    X(uint64_t, uint64) X(size_t, size) X(ptrdiff_t, ptrdiff)

/* ---- RMA (section 9.5) and put-with-signal (section 9.9) ------------- */

#define RGEX_SHMEM_DECLARE_RMA(T, N)                                        \
    void shmem_##N##_put(T *dest, const T *source, size_t nelems, int pe);  \
    void shmem_##N##_get(T *dest, const T *source, size_t nelems, int pe);  \
    void shmem_##N##_iput(T *dest, const T *source, ptrdiff_t dst,         \
                          ptrdiff_t sst, size_t nelems, int pe);            \
    void shmem_##N##_iget(T *dest, const T *source, ptrdiff_t dst,         \
                          ptrdiff_t sst, size_t nelems, int pe);            \
    void shmem_##N##_put_nbi(T *dest, const T *source, size_t nelems,       \
                             int pe);                                       \
    void shmem_##N##_get_nbi(T *dest, const T *source, size_t nelems,       \
                             int pe);                                       \
    void shmem_##N##_put_signal(T *dest, const T *source, size_t nelems,    \
                                uint64_t *sig_addr, uint64_t signal,        \
                                int sig_op, int pe);                        \
    void shmem_##N##_put_signal_nbi(T *dest, const T *source,               \
                                    size_t nelems, uint64_t *sig_addr,      \
                                    uint64_t signal, int sig_op, int pe);
RGEX_SHMEM_RMA_TYPES(RGEX_SHMEM_DECLARE_RMA)

#define RGEX_SHMEM_DECLARE_PG(T, N)                                         \
    void shmem_##N##_p(T *dest, T value, int pe);                           \
    T shmem_##N##_g(const T *source, int pe);
RGEX_SHMEM_PG_TYPES(RGEX_SHMEM_DECLARE_PG)

/* long double cannot cross into Rust by value: p and g are inline here. */
static inline void shmem_longdouble_p(long double *dest, long double value,
                                      int pe) {
    shmem_longdouble_put(dest, &value, 1, pe);
}
static inline long double shmem_longdouble_g(const long double *source,
                                             int pe) {
    long double value;
    shmem_longdouble_get(&value, source, 1, pe);
    return value;
}

#define RGEX_SHMEM_DECLARE_SIZED(S)                                         \
    void shmem_put##S(void *dest, const void *source, size_t nelems,        \
                      int pe);                                              \
    void shmem_get##S(void *dest, const void *source, size_t nelems,        \
                      int pe);                                              \
    void shmem_iput##S(void *dest, const void *source, ptrdiff_t dst,       \
                       ptrdiff_t sst, size_t nelems, int pe);               \
    void shmem_iget##S(void *dest, const void *source, ptrdiff_t dst,       \
                       ptrdiff_t sst, size_t nelems, int pe);               \
    void shmem_put##S##_nbi(void *dest, const void *source, size_t nelems,  \
                            int pe);                                        \
    void shmem_get##S##_nbi(void *dest, const void *source, size_t nelems,  \
                            int pe);                                        \
    void shmem_put##S##_signal(void *dest, const void *source,              \
                               size_t nelems, uint64_t *sig_addr,           \
                               uint64_t signal, int sig_op, int pe);        \
    void shmem_put##S##_signal_nbi(void *dest, const void *source,          \
                                   size_t nelems, uint64_t *sig_addr,       \
                                   uint64_t signal, int sig_op, int pe);
RGEX_SHMEM_DECLARE_SIZED(8)
RGEX_SHMEM_DECLARE_SIZED(16)
RGEX_SHMEM_DECLARE_SIZED(32)
RGEX_SHMEM_DECLARE_SIZED(64)
RGEX_SHMEM_DECLARE_SIZED(128)

void shmem_putmem(void *dest, const void *source, size_t nelems, int pe);
void shmem_getmem(void *dest, const void *source, size_t nelems, int pe);
void shmem_putmem_nbi(void *dest, const void *source, size_t nelems, int pe);
void shmem_getmem_nbi(void *dest, const void *source, size_t nelems, int pe);
void shmem_putmem_signal(void *dest, const void *source, size_t nelems,
                         uint64_t *sig_addr, uint64_t signal, int sig_op,
                         int pe);
void shmem_putmem_signal_nbi(void *dest, const void *source, size_t nelems,
                             uint64_t *sig_addr, uint64_t signal, int sig_op,
                             int pe);

uint64_t shmem_signal_fetch(const uint64_t *sig_addr);
uint64_t shmem_signal_wait_until(uint64_t *sig_addr, int cmp,
                                 uint64_t cmp_value);

/* ---- AMOs (section 9.7) ----------------------------------------------- */

#define RGEX_SHMEM_DECLARE_AMO_EXT(T, N)                                    \
    T shmem_##N##_atomic_fetch(const T *source, int pe);                    \
    void shmem_##N##_atomic_fetch_nbi(T *fetch, const T *source, int pe);   \
    void shmem_##N##_atomic_set(T *dest, T value, int pe);                  \
    T shmem_##N##_atomic_swap(T *dest, T value, int pe);                    \
    void shmem_##N##_atomic_swap_nbi(T *fetch, T *dest, T value, int pe);
RGEX_SHMEM_AMO_EXT_TYPES(RGEX_SHMEM_DECLARE_AMO_EXT)

#define RGEX_SHMEM_DECLARE_AMO_STD(T, N)                                    \
    T shmem_##N##_atomic_compare_swap(T *dest, T cond, T value, int pe);    \
    void shmem_##N##_atomic_compare_swap_nbi(T *fetch, T *dest, T cond,     \
                                             T value, int pe);              \
    T shmem_##N##_atomic_fetch_inc(T *dest, int pe);                        \
    void shmem_##N##_atomic_fetch_inc_nbi(T *fetch, T *dest, int pe);       \
    void shmem_##N##_atomic_inc(T *dest, int pe);                           \
    T shmem_##N##_atomic_fetch_add(T *dest, T value, int pe);               \
    void shmem_##N##_atomic_fetch_add_nbi(T *fetch, T *dest, T value,       \
                                          int pe);                          \
    void shmem_##N##_atomic_add(T *dest, T value, int pe);
RGEX_SHMEM_AMO_STD_TYPES(RGEX_SHMEM_DECLARE_AMO_STD)

#define RGEX_SHMEM_DECLARE_AMO_BIT(T, N)                                    \
    T shmem_##N##_atomic_fetch_and(T *dest, T value, int pe);               \
    void shmem_##N##_atomic_fetch_and_nbi(T *fetch, T *dest, T value,       \
                                          int pe);                          \
    void shmem_##N##_atomic_and(T *dest, T value, int pe);                  \
    T shmem_##N##_atomic_fetch_or(T *dest, T value, int pe);                \
    void shmem_##N##_atomic_fetch_or_nbi(T *fetch, T *dest, T value,        \
                                         int pe);                           \
    void shmem_##N##_atomic_or(T *dest, T value, int pe);                   \
    T shmem_##N##_atomic_fetch_xor(T *dest, T value, int pe);               \
    void shmem_##N##_atomic_fetch_xor_nbi(T *fetch, T *dest, T value,       \
                                          int pe);                          \
    void shmem_##N##_atomic_xor(T *dest, T value, int pe);
RGEX_SHMEM_AMO_BIT_TYPES(RGEX_SHMEM_DECLARE_AMO_BIT)

/* ---- Communication contexts (section 9.6) ---------------------------- */

typedef struct rgex_shmem_ctx *shmem_ctx_t;
extern const struct rgex_shmem_ctx rgex_shmem_ctx_default;
#define SHMEM_CTX_DEFAULT ((shmem_ctx_t)&rgex_shmem_ctx_default)
#define SHMEM_CTX_INVALID ((shmem_ctx_t)0)
#define SHMEM_CTX_SERIALIZED 1L
#define SHMEM_CTX_PRIVATE 2L
#define SHMEM_CTX_NOSTORE 4L

int shmem_ctx_create(long options, shmem_ctx_t *ctx);
int shmem_team_create_ctx(shmem_team_t team, long options, shmem_ctx_t *ctx);
void shmem_ctx_destroy(shmem_ctx_t ctx);
int shmem_ctx_get_team(shmem_ctx_t ctx, shmem_team_t *team);
void shmem_ctx_fence(shmem_ctx_t ctx);
void shmem_ctx_quiet(shmem_ctx_t ctx);

#define RGEX_SHMEM_DECLARE_CTX_RMA(T, N)                                    \
    void shmem_ctx_##N##_put(shmem_ctx_t ctx, T *dest, const T *source,     \
                             size_t nelems, int pe);                        \
    void shmem_ctx_##N##_get(shmem_ctx_t ctx, T *dest, const T *source,     \
                             size_t nelems, int pe);                        \
    void shmem_ctx_##N##_iput(shmem_ctx_t ctx, T *dest, const T *source,    \
                              ptrdiff_t dst, ptrdiff_t sst, size_t nelems,  \
                              int pe);                                      \
    void shmem_ctx_##N##_iget(shmem_ctx_t ctx, T *dest, const T *source,    \
                              ptrdiff_t dst, ptrdiff_t sst, size_t nelems,  \
                              int pe);                                      \
    void shmem_ctx_##N##_put_nbi(shmem_ctx_t ctx, T *dest, const T *source, \
                                 size_t nelems, int pe);                    \
    void shmem_ctx_##N##_get_nbi(shmem_ctx_t ctx, T *dest, const T *source, \
                                 size_t nelems, int pe);                    \
    void shmem_ctx_##N##_put_signal(shmem_ctx_t ctx, T *dest,               \
                                    const T *source, size_t nelems,         \
                                    uint64_t *sig_addr, uint64_t signal,    \
                                    int sig_op, int pe);                    \
    void shmem_ctx_##N##_put_signal_nbi(shmem_ctx_t ctx, T *dest,           \
                                        const T *source, size_t nelems,     \
                                        uint64_t *sig_addr,                 \
                                        uint64_t signal, int sig_op,        \
                                        int pe);
RGEX_SHMEM_RMA_TYPES(RGEX_SHMEM_DECLARE_CTX_RMA)

#define RGEX_SHMEM_DECLARE_CTX_PG(T, N)                                     \
    void shmem_ctx_##N##_p(shmem_ctx_t ctx, T *dest, T value, int pe);      \
    T shmem_ctx_##N##_g(shmem_ctx_t ctx, const T *source, int pe);
RGEX_SHMEM_PG_TYPES(RGEX_SHMEM_DECLARE_CTX_PG)
static inline void shmem_ctx_longdouble_p(shmem_ctx_t ctx, long double *dest,
                                          long double value, int pe) {
    shmem_ctx_longdouble_put(ctx, dest, &value, 1, pe);
}
static inline long double shmem_ctx_longdouble_g(shmem_ctx_t ctx,
                                                 const long double *source,
                                                 int pe) {
    long double value;
    shmem_ctx_longdouble_get(ctx, &value, source, 1, pe);
    return value;
}

#define RGEX_SHMEM_DECLARE_CTX_SIZED(S)                                     \
    void shmem_ctx_put##S(shmem_ctx_t ctx, void *dest, const void *source,  \
                          size_t nelems, int pe);                           \
    void shmem_ctx_get##S(shmem_ctx_t ctx, void *dest, const void *source,  \
                          size_t nelems, int pe);                           \
    void shmem_ctx_iput##S(shmem_ctx_t ctx, void *dest, const void *source, \
                           ptrdiff_t dst, ptrdiff_t sst, size_t nelems,     \
                           int pe);                                         \
    void shmem_ctx_iget##S(shmem_ctx_t ctx, void *dest, const void *source, \
                           ptrdiff_t dst, ptrdiff_t sst, size_t nelems,     \
                           int pe);                                         \
    void shmem_ctx_put##S##_nbi(shmem_ctx_t ctx, void *dest,                \
                                const void *source, size_t nelems, int pe); \
    void shmem_ctx_get##S##_nbi(shmem_ctx_t ctx, void *dest,                \
                                const void *source, size_t nelems, int pe); \
    void shmem_ctx_put##S##_signal(shmem_ctx_t ctx, void *dest,             \
                                   const void *source, size_t nelems,       \
                                   uint64_t *sig_addr, uint64_t signal,     \
                                   int sig_op, int pe);                     \
    void shmem_ctx_put##S##_signal_nbi(shmem_ctx_t ctx, void *dest,         \
                                       const void *source, size_t nelems,   \
                                       uint64_t *sig_addr, uint64_t signal, \
                                       int sig_op, int pe);
RGEX_SHMEM_DECLARE_CTX_SIZED(8)
RGEX_SHMEM_DECLARE_CTX_SIZED(16)
RGEX_SHMEM_DECLARE_CTX_SIZED(32)
RGEX_SHMEM_DECLARE_CTX_SIZED(64)
RGEX_SHMEM_DECLARE_CTX_SIZED(128)
void shmem_ctx_putmem(shmem_ctx_t ctx, void *dest, const void *source,
                      size_t nelems, int pe);
void shmem_ctx_getmem(shmem_ctx_t ctx, void *dest, const void *source,
                      size_t nelems, int pe);
void shmem_ctx_putmem_nbi(shmem_ctx_t ctx, void *dest, const void *source,
                          size_t nelems, int pe);
void shmem_ctx_getmem_nbi(shmem_ctx_t ctx, void *dest, const void *source,
                          size_t nelems, int pe);
void shmem_ctx_putmem_signal(shmem_ctx_t ctx, void *dest, const void *source,
                             size_t nelems, uint64_t *sig_addr,
                             uint64_t signal, int sig_op, int pe);
void shmem_ctx_putmem_signal_nbi(shmem_ctx_t ctx, void *dest,
                                 const void *source, size_t nelems,
                                 uint64_t *sig_addr, uint64_t signal,
                                 int sig_op, int pe);

#define RGEX_SHMEM_DECLARE_CTX_AMO_EXT(T, N)                                \
    T shmem_ctx_##N##_atomic_fetch(shmem_ctx_t ctx, const T *source,        \
                                   int pe);                                 \
    void shmem_ctx_##N##_atomic_fetch_nbi(shmem_ctx_t ctx, T *fetch,        \
                                          const T *source, int pe);         \
    void shmem_ctx_##N##_atomic_set(shmem_ctx_t ctx, T *dest, T value,      \
                                    int pe);                                \
    T shmem_ctx_##N##_atomic_swap(shmem_ctx_t ctx, T *dest, T value,        \
                                  int pe);                                  \
    void shmem_ctx_##N##_atomic_swap_nbi(shmem_ctx_t ctx, T *fetch,         \
                                         T *dest, T value, int pe);
RGEX_SHMEM_AMO_EXT_TYPES(RGEX_SHMEM_DECLARE_CTX_AMO_EXT)

#define RGEX_SHMEM_DECLARE_CTX_AMO_STD(T, N)                                \
    T shmem_ctx_##N##_atomic_compare_swap(shmem_ctx_t ctx, T *dest, T cond, \
                                          T value, int pe);                 \
    void shmem_ctx_##N##_atomic_compare_swap_nbi(                           \
        shmem_ctx_t ctx, T *fetch, T *dest, T cond, T value, int pe);       \
    T shmem_ctx_##N##_atomic_fetch_inc(shmem_ctx_t ctx, T *dest, int pe);   \
    void shmem_ctx_##N##_atomic_fetch_inc_nbi(shmem_ctx_t ctx, T *fetch,    \
                                              T *dest, int pe);             \
    void shmem_ctx_##N##_atomic_inc(shmem_ctx_t ctx, T *dest, int pe);      \
    T shmem_ctx_##N##_atomic_fetch_add(shmem_ctx_t ctx, T *dest, T value,   \
                                       int pe);                             \
    void shmem_ctx_##N##_atomic_fetch_add_nbi(shmem_ctx_t ctx, T *fetch,    \
                                              T *dest, T value, int pe);    \
    void shmem_ctx_##N##_atomic_add(shmem_ctx_t ctx, T *dest, T value,      \
                                    int pe);
RGEX_SHMEM_AMO_STD_TYPES(RGEX_SHMEM_DECLARE_CTX_AMO_STD)

#define RGEX_SHMEM_DECLARE_CTX_AMO_BIT1(T, N, OP)                           \
    T shmem_ctx_##N##_atomic_fetch_##OP(shmem_ctx_t ctx, T *dest, T value,  \
                                        int pe);                            \
    void shmem_ctx_##N##_atomic_fetch_##OP##_nbi(shmem_ctx_t ctx, T *fetch, \
                                                 T *dest, T value, int pe); \
    void shmem_ctx_##N##_atomic_##OP(shmem_ctx_t ctx, T *dest, T value,     \
                                     int pe);
#define RGEX_SHMEM_DECLARE_CTX_AMO_BIT(T, N)                                \
    RGEX_SHMEM_DECLARE_CTX_AMO_BIT1(T, N, and)                             \
    RGEX_SHMEM_DECLARE_CTX_AMO_BIT1(T, N, or)                              \
    RGEX_SHMEM_DECLARE_CTX_AMO_BIT1(T, N, xor)
RGEX_SHMEM_AMO_BIT_TYPES(RGEX_SHMEM_DECLARE_CTX_AMO_BIT)

/* ---- Point-to-point synchronisation (section 9.10) ------------------- */

#define RGEX_SHMEM_DECLARE_SYNC(T, N)                                       \
    void shmem_##N##_wait_until(T *ivar, int cmp, T cmp_value);             \
    void shmem_##N##_wait_until_all(T *ivars, size_t nelems,                \
                                    const int *status, int cmp,             \
                                    T cmp_value);                           \
    size_t shmem_##N##_wait_until_any(T *ivars, size_t nelems,              \
                                      const int *status, int cmp,           \
                                      T cmp_value);                         \
    size_t shmem_##N##_wait_until_some(T *ivars, size_t nelems,             \
                                       size_t *indices, const int *status,  \
                                       int cmp, T cmp_value);               \
    void shmem_##N##_wait_until_all_vector(T *ivars, size_t nelems,         \
                                           const int *status, int cmp,      \
                                           T *cmp_values);                  \
    size_t shmem_##N##_wait_until_any_vector(T *ivars, size_t nelems,       \
                                             const int *status, int cmp,    \
                                             T *cmp_values);                \
    size_t shmem_##N##_wait_until_some_vector(T *ivars, size_t nelems,      \
                                              size_t *indices,              \
                                              const int *status, int cmp,   \
                                              T *cmp_values);               \
    int shmem_##N##_test(T *ivar, int cmp, T cmp_value);                    \
    int shmem_##N##_test_all(T *ivars, size_t nelems, const int *status,    \
                             int cmp, T cmp_value);                         \
    size_t shmem_##N##_test_any(T *ivars, size_t nelems,                    \
                                const int *status, int cmp, T cmp_value);   \
    size_t shmem_##N##_test_some(T *ivars, size_t nelems, size_t *indices,  \
                                 const int *status, int cmp, T cmp_value);  \
    int shmem_##N##_test_all_vector(T *ivars, size_t nelems,                \
                                    const int *status, int cmp,             \
                                    T *cmp_values);                         \
    size_t shmem_##N##_test_any_vector(T *ivars, size_t nelems,             \
                                       const int *status, int cmp,          \
                                       T *cmp_values);                      \
    size_t shmem_##N##_test_some_vector(T *ivars, size_t nelems,            \
                                        size_t *indices, const int *status, \
                                        int cmp, T *cmp_values);
RGEX_SHMEM_SYNC_TYPES(RGEX_SHMEM_DECLARE_SYNC)

/* ---- Collectives (section 9.9) --------------------------------------- */

int shmem_team_sync(shmem_team_t team);
void shmem_barrier(int PE_start, int logPE_stride, int PE_size, long *pSync);
void shmem_sync(int PE_start, int logPE_stride, int PE_size, long *pSync);

#define RGEX_SHMEM_DECLARE_COLL(T, N)                                       \
    int shmem_##N##_broadcast(shmem_team_t team, T *dest, const T *source,  \
                              size_t nelems, int PE_root);                  \
    int shmem_##N##_collect(shmem_team_t team, T *dest, const T *source,    \
                            size_t nelems);                                 \
    int shmem_##N##_fcollect(shmem_team_t team, T *dest, const T *source,   \
                             size_t nelems);                                \
    int shmem_##N##_alltoall(shmem_team_t team, T *dest, const T *source,   \
                             size_t nelems);                                \
    int shmem_##N##_alltoalls(shmem_team_t team, T *dest, const T *source,  \
                              ptrdiff_t dst, ptrdiff_t sst, size_t nelems);
RGEX_SHMEM_RMA_TYPES(RGEX_SHMEM_DECLARE_COLL)
int shmem_broadcastmem(shmem_team_t team, void *dest, const void *source,
                       size_t nelems, int PE_root);
int shmem_collectmem(shmem_team_t team, void *dest, const void *source,
                     size_t nelems);
int shmem_fcollectmem(shmem_team_t team, void *dest, const void *source,
                      size_t nelems);
int shmem_alltoallmem(shmem_team_t team, void *dest, const void *source,
                      size_t nelems);
int shmem_alltoallsmem(shmem_team_t team, void *dest, const void *source,
                       ptrdiff_t dst, ptrdiff_t sst, size_t nelems);

/* Table 12: the reduction types, by operator group. */
#define RGEX_SHMEM_REDUCE_BIT_TYPES(X)                                      \
    X(unsigned char, uchar) X(unsigned short, ushort)                      \
    X(unsigned int, uint) X(unsigned long, ulong)                          \
    X(unsigned long long, ulonglong) X(int8_t, int8) X(int16_t, int16)     \
    X(int32_t, int32) X(int64_t, int64) X(uint8_t, uint8)                  \
    X(uint16_t, uint16) X(uint32_t, uint32) X(uint64_t, uint64)            \
    X(size_t, size)
#define RGEX_SHMEM_REDUCE_ORDER_TYPES(X)                                    \
    X(char, char) X(signed char, schar) X(short, short) X(int, int)        \
    X(long, long) X(long long, longlong) X(ptrdiff_t, ptrdiff)             \
    RGEX_SHMEM_REDUCE_BIT_TYPES(X) X(float, float) X(double, double)
#define RGEX_SHMEM_REDUCE_ARITH_TYPES(X)                                    \
    RGEX_SHMEM_REDUCE_ORDER_TYPES(X) X(float _Complex, complexf)           \
    X(double _Complex, complexd)

#define RGEX_SHMEM_DECLARE_REDUCE_ONE(T, N, OP)                             \
    int shmem_##N##_##OP##_reduce(shmem_team_t team, T *dest,              \
                                  const T *source, size_t nreduce);
#define RGEX_SHMEM_DECLARE_BIT(T, N)                                        \
    RGEX_SHMEM_DECLARE_REDUCE_ONE(T, N, and)                               \
    RGEX_SHMEM_DECLARE_REDUCE_ONE(T, N, or)                                \
    RGEX_SHMEM_DECLARE_REDUCE_ONE(T, N, xor)
#define RGEX_SHMEM_DECLARE_ORDER(T, N)                                      \
    RGEX_SHMEM_DECLARE_REDUCE_ONE(T, N, max)                               \
    RGEX_SHMEM_DECLARE_REDUCE_ONE(T, N, min)
#define RGEX_SHMEM_DECLARE_ARITH(T, N)                                      \
    RGEX_SHMEM_DECLARE_REDUCE_ONE(T, N, sum)                               \
    RGEX_SHMEM_DECLARE_REDUCE_ONE(T, N, prod)
RGEX_SHMEM_REDUCE_BIT_TYPES(RGEX_SHMEM_DECLARE_BIT)
RGEX_SHMEM_REDUCE_ORDER_TYPES(RGEX_SHMEM_DECLARE_ORDER)
RGEX_SHMEM_REDUCE_ARITH_TYPES(RGEX_SHMEM_DECLARE_ARITH)

/* The deprecated active-set forms. */
#define RGEX_SHMEM_DECLARE_ACTIVE_SET(S)                                    \
    void shmem_broadcast##S(void *dest, const void *source, size_t nelems,  \
                            int PE_root, int PE_start, int logPE_stride,    \
                            int PE_size, long *pSync);                      \
    void shmem_collect##S(void *dest, const void *source, size_t nelems,    \
                          int PE_start, int logPE_stride, int PE_size,      \
                          long *pSync);                                     \
    void shmem_fcollect##S(void *dest, const void *source, size_t nelems,   \
                           int PE_start, int logPE_stride, int PE_size,     \
                           long *pSync);                                    \
    void shmem_alltoall##S(void *dest, const void *source, size_t nelems,   \
                           int PE_start, int logPE_stride, int PE_size,     \
                           long *pSync);                                    \
    void shmem_alltoalls##S(void *dest, const void *source, ptrdiff_t dst,  \
                            ptrdiff_t sst, size_t nelems, int PE_start,     \
                            int logPE_stride, int PE_size, long *pSync);
RGEX_SHMEM_DECLARE_ACTIVE_SET(32)
RGEX_SHMEM_DECLARE_ACTIVE_SET(64)

#define RGEX_SHMEM_DECLARE_TO_ALL_ONE(T, N, OP)                             \
    void shmem_##N##_##OP##_to_all(T *dest, const T *source, int nreduce,   \
                                   int PE_start, int logPE_stride,          \
                                   int PE_size, T *pWrk, long *pSync);
#define RGEX_SHMEM_TO_ALL_BIT(X)                                            \
    X(short, short) X(int, int) X(long, long) X(long long, longlong)
#define RGEX_SHMEM_TO_ALL_ORDER(X)                                          \
    RGEX_SHMEM_TO_ALL_BIT(X) X(float, float) X(double, double)
#define RGEX_SHMEM_TO_ALL_ARITH(X)                                          \
    RGEX_SHMEM_TO_ALL_ORDER(X) X(float _Complex, complexf)                 \
    X(double _Complex, complexd)
#define RGEX_SHMEM_DECLARE_TO_ALL_BIT(T, N)                                 \
    RGEX_SHMEM_DECLARE_TO_ALL_ONE(T, N, and)                               \
    RGEX_SHMEM_DECLARE_TO_ALL_ONE(T, N, or)                                \
    RGEX_SHMEM_DECLARE_TO_ALL_ONE(T, N, xor)
#define RGEX_SHMEM_DECLARE_TO_ALL_ORDER(T, N)                               \
    RGEX_SHMEM_DECLARE_TO_ALL_ONE(T, N, max)                               \
    RGEX_SHMEM_DECLARE_TO_ALL_ONE(T, N, min)
#define RGEX_SHMEM_DECLARE_TO_ALL_ARITH(T, N)                               \
    RGEX_SHMEM_DECLARE_TO_ALL_ONE(T, N, sum)                               \
    RGEX_SHMEM_DECLARE_TO_ALL_ONE(T, N, prod)
RGEX_SHMEM_TO_ALL_BIT(RGEX_SHMEM_DECLARE_TO_ALL_BIT)
RGEX_SHMEM_TO_ALL_ORDER(RGEX_SHMEM_DECLARE_TO_ALL_ORDER)
RGEX_SHMEM_TO_ALL_ARITH(RGEX_SHMEM_DECLARE_TO_ALL_ARITH)

/* long double reductions are combined here, in C (Rust has no long
 * double), through these two entry points of librgex_shmem. */
typedef void (*rgex_shmem_combine_t)(void *acc, const void *x, size_t n);
int rgex_shmem_reduce_with(shmem_team_t team, void *dest, const void *source,
                           size_t nreduce, size_t size,
                           rgex_shmem_combine_t combine);
void rgex_shmem_to_all_with(void *dest, const void *source, size_t nreduce,
                            size_t size, int PE_start, int logPE_stride,
                            int PE_size, long *pSync,
                            rgex_shmem_combine_t combine);
#define RGEX_SHMEM_LD(OP, EXPR)                                             \
    static inline void rgex_shmem_ld_##OP(void *acc, const void *x,        \
                                          size_t n) {                       \
        long double *a = (long double *)acc;                                \
        const long double *b = (const long double *)x;                      \
        for (size_t i = 0; i < n; i++) {                                    \
            long double p = a[i], q = b[i];                                 \
            a[i] = (EXPR);                                                  \
        }                                                                   \
    }                                                                       \
    static inline int shmem_longdouble_##OP##_reduce(                       \
        shmem_team_t team, long double *dest, const long double *source,    \
        size_t nreduce) {                                                   \
        return rgex_shmem_reduce_with(team, dest, source, nreduce,          \
                                      sizeof(long double),                  \
                                      rgex_shmem_ld_##OP);                  \
    }                                                                       \
    static inline void shmem_longdouble_##OP##_to_all(                      \
        long double *dest, const long double *source, int nreduce,          \
        int PE_start, int logPE_stride, int PE_size, long double *pWrk,     \
        long *pSync) {                                                      \
        (void)pWrk;                                                         \
        rgex_shmem_to_all_with(dest, source,                                \
                               nreduce < 0 ? (size_t)-1 : (size_t)nreduce,  \
                               sizeof(long double), PE_start, logPE_stride, \
                               PE_size, pSync, rgex_shmem_ld_##OP);         \
    }
RGEX_SHMEM_LD(max, p > q ? p : q)
RGEX_SHMEM_LD(min, p < q ? p : q)
RGEX_SHMEM_LD(sum, p + q)
RGEX_SHMEM_LD(prod, p * q)

/* ---- Distributed locks (section 9.12) -------------------------------- */

void shmem_set_lock(long *lock);
void shmem_clear_lock(long *lock);
int shmem_test_lock(long *lock);

/* ---- Profiling interface --------------------------------------------- */

/* Levels: 0 profiling off, 1 on (the default), 2 flush. A profiling
 * library (pshmem.h: every routine is also exported as pshmem_...)
 * defines its own shmem_pcontrol to see them; rgex-shmem's records the
 * level, and the call has no other effect, as the spec allows. */
void shmem_pcontrol(const int level, ...);

/* ---- Ordering and barriers (sections 9.8, 9.11) ---------------------- */

void shmem_fence(void);
void shmem_quiet(void);
void shmem_barrier_all(void);
void shmem_sync_all(void);

#ifdef __cplusplus
}
#endif

/* shmem_sync(team) (1.5) and shmem_sync(PE_start, logPE_stride, PE_size,
 * pSync) (deprecated) share a name: the count of arguments picks. */
#define RGEX_SHMEM_PICK4(_1, _2, _3, _4, NAME, ...) NAME
#define shmem_sync(...)                                                     \
    RGEX_SHMEM_PICK4(__VA_ARGS__, shmem_sync, rgex_shmem_bad_sync,          \
                     rgex_shmem_bad_sync, shmem_team_sync)(__VA_ARGS__)

/* ---- C11 generic interfaces ------------------------------------------ */

#if defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L &&           \
    !defined(__cplusplus)

#define RGEX_SHMEM_G_PUT(T, N) T * : shmem_##N##_put,
#define RGEX_SHMEM_G_GET(T, N) T * : shmem_##N##_get,
#define RGEX_SHMEM_G_P(T, N) T * : shmem_##N##_p,
#define RGEX_SHMEM_G_G(T, N) const T * : shmem_##N##_g, T * : shmem_##N##_g,
#define RGEX_SHMEM_G_IPUT(T, N) T * : shmem_##N##_iput,
#define RGEX_SHMEM_G_IGET(T, N) T * : shmem_##N##_iget,
#define RGEX_SHMEM_G_PUT_NBI(T, N) T * : shmem_##N##_put_nbi,
#define RGEX_SHMEM_G_GET_NBI(T, N) T * : shmem_##N##_get_nbi,
#define RGEX_SHMEM_G_PUT_SIGNAL(T, N) T * : shmem_##N##_put_signal,
#define RGEX_SHMEM_G_PUT_SIGNAL_NBI(T, N) T * : shmem_##N##_put_signal_nbi,

/* C's distinct types only: int8_t..uint64_t, size_t and ptrdiff_t are
 * typedefs of the types before them, which name them already. */
#define RGEX_SHMEM_G_TYPES(X)                                               \
    X(float, float) X(double, double) X(long double, longdouble)           \
    X(char, char) X(signed char, schar) X(short, short) X(int, int)        \
    X(long, long) X(long long, longlong) X(unsigned char, uchar)           \
    X(unsigned short, ushort) X(unsigned int, uint)                        \
    X(unsigned long, ulong) X(unsigned long long, ulonglong)
#define RGEX_SHMEM_G_AMO_EXT(X)                                             \
    X(float, float) X(double, double) X(int, int) X(long, long)            \
    X(long long, longlong) X(unsigned int, uint) X(unsigned long, ulong)   \
    X(unsigned long long, ulonglong)
#define RGEX_SHMEM_G_AMO_STD(X)                                             \
    X(int, int) X(long, long) X(long long, longlong) X(unsigned int, uint) \
    X(unsigned long, ulong) X(unsigned long long, ulonglong)
#define RGEX_SHMEM_G_AMO_BIT(X)                                             \
    X(unsigned int, uint) X(unsigned long, ulong)                          \
    X(unsigned long long, ulonglong)
#define RGEX_SHMEM_G_SYNC(X)                                                \
    X(short, short) X(int, int) X(long, long) X(long long, longlong)       \
    X(unsigned short, ushort) X(unsigned int, uint)                        \
    X(unsigned long, ulong) X(unsigned long long, ulonglong)

#define RGEX_SHMEM_FIRST(a, ...) a
#define RGEX_SHMEM_GC_PUT(T, N) T * : shmem_ctx_##N##_put,
#define RGEX_SHMEM_GC_GET(T, N) T * : shmem_ctx_##N##_get,
#define RGEX_SHMEM_GC_P(T, N) T * : shmem_ctx_##N##_p,
#define RGEX_SHMEM_GC_G(T, N) const T * : shmem_ctx_##N##_g, T * : shmem_ctx_##N##_g,
#define RGEX_SHMEM_GC_IPUT(T, N) T * : shmem_ctx_##N##_iput,
#define RGEX_SHMEM_GC_IGET(T, N) T * : shmem_ctx_##N##_iget,
#define RGEX_SHMEM_GC_PUT_NBI(T, N) T * : shmem_ctx_##N##_put_nbi,
#define RGEX_SHMEM_GC_GET_NBI(T, N) T * : shmem_ctx_##N##_get_nbi,
#define RGEX_SHMEM_GC_PUT_SIGNAL(T, N) T * : shmem_ctx_##N##_put_signal,
#define RGEX_SHMEM_GC_PUT_SIGNAL_NBI(T, N) T * : shmem_ctx_##N##_put_signal_nbi,
#define RGEX_SHMEM_GC_FETCH(T, N) const T * : shmem_ctx_##N##_atomic_fetch, T * : shmem_ctx_##N##_atomic_fetch,
#define RGEX_SHMEM_GC_SET(T, N) T * : shmem_ctx_##N##_atomic_set,
#define RGEX_SHMEM_GC_SWAP(T, N) T * : shmem_ctx_##N##_atomic_swap,
#define RGEX_SHMEM_GC_CSWAP(T, N) T * : shmem_ctx_##N##_atomic_compare_swap,
#define RGEX_SHMEM_GC_FINC(T, N) T * : shmem_ctx_##N##_atomic_fetch_inc,
#define RGEX_SHMEM_GC_INC(T, N) T * : shmem_ctx_##N##_atomic_inc,
#define RGEX_SHMEM_GC_FADD(T, N) T * : shmem_ctx_##N##_atomic_fetch_add,
#define RGEX_SHMEM_GC_ADD(T, N) T * : shmem_ctx_##N##_atomic_add,
#define RGEX_SHMEM_GC_FAND(T, N) T * : shmem_ctx_##N##_atomic_fetch_and,
#define RGEX_SHMEM_GC_AND(T, N) T * : shmem_ctx_##N##_atomic_and,
#define RGEX_SHMEM_GC_FOR(T, N) T * : shmem_ctx_##N##_atomic_fetch_or,
#define RGEX_SHMEM_GC_OR(T, N) T * : shmem_ctx_##N##_atomic_or,
#define RGEX_SHMEM_GC_FXOR(T, N) T * : shmem_ctx_##N##_atomic_fetch_xor,
#define RGEX_SHMEM_GC_XOR(T, N) T * : shmem_ctx_##N##_atomic_xor,

#define shmem_put(first, ...)                                              \
    _Generic((first), shmem_ctx_t                                          \
             : _Generic((RGEX_SHMEM_FIRST(__VA_ARGS__, 0)),                 \
                        RGEX_SHMEM_G_TYPES(RGEX_SHMEM_GC_PUT) default           \
                        : shmem_ctx_putmem),                                       \
             RGEX_SHMEM_G_TYPES(RGEX_SHMEM_G_PUT) default                                \
             : shmem_putmem)(first, __VA_ARGS__)
#define shmem_get(first, ...)                                              \
    _Generic((first), shmem_ctx_t                                          \
             : _Generic((RGEX_SHMEM_FIRST(__VA_ARGS__, 0)),                 \
                        RGEX_SHMEM_G_TYPES(RGEX_SHMEM_GC_GET) default           \
                        : shmem_ctx_getmem),                                       \
             RGEX_SHMEM_G_TYPES(RGEX_SHMEM_G_GET) default                                \
             : shmem_getmem)(first, __VA_ARGS__)
#define shmem_put_nbi(first, ...)                                              \
    _Generic((first), shmem_ctx_t                                          \
             : _Generic((RGEX_SHMEM_FIRST(__VA_ARGS__, 0)),                 \
                        RGEX_SHMEM_G_TYPES(RGEX_SHMEM_GC_PUT_NBI) default           \
                        : shmem_ctx_putmem_nbi),                                       \
             RGEX_SHMEM_G_TYPES(RGEX_SHMEM_G_PUT_NBI) default                                \
             : shmem_putmem_nbi)(first, __VA_ARGS__)
#define shmem_get_nbi(first, ...)                                              \
    _Generic((first), shmem_ctx_t                                          \
             : _Generic((RGEX_SHMEM_FIRST(__VA_ARGS__, 0)),                 \
                        RGEX_SHMEM_G_TYPES(RGEX_SHMEM_GC_GET_NBI) default           \
                        : shmem_ctx_getmem_nbi),                                       \
             RGEX_SHMEM_G_TYPES(RGEX_SHMEM_G_GET_NBI) default                                \
             : shmem_getmem_nbi)(first, __VA_ARGS__)
#define shmem_iput(first, ...)                                              \
    _Generic((first), shmem_ctx_t                                          \
             : _Generic((RGEX_SHMEM_FIRST(__VA_ARGS__, 0)),                 \
                        RGEX_SHMEM_G_TYPES(RGEX_SHMEM_GC_IPUT) default           \
                        : shmem_ctx_iput8),                                       \
             RGEX_SHMEM_G_TYPES(RGEX_SHMEM_G_IPUT) default                                \
             : shmem_iput8)(first, __VA_ARGS__)
#define shmem_iget(first, ...)                                              \
    _Generic((first), shmem_ctx_t                                          \
             : _Generic((RGEX_SHMEM_FIRST(__VA_ARGS__, 0)),                 \
                        RGEX_SHMEM_G_TYPES(RGEX_SHMEM_GC_IGET) default           \
                        : shmem_ctx_iget8),                                       \
             RGEX_SHMEM_G_TYPES(RGEX_SHMEM_G_IGET) default                                \
             : shmem_iget8)(first, __VA_ARGS__)
#define shmem_put_signal(first, ...)                                              \
    _Generic((first), shmem_ctx_t                                          \
             : _Generic((RGEX_SHMEM_FIRST(__VA_ARGS__, 0)),                 \
                        RGEX_SHMEM_G_TYPES(RGEX_SHMEM_GC_PUT_SIGNAL) default           \
                        : shmem_ctx_putmem_signal),                                       \
             RGEX_SHMEM_G_TYPES(RGEX_SHMEM_G_PUT_SIGNAL) default                                \
             : shmem_putmem_signal)(first, __VA_ARGS__)
#define shmem_put_signal_nbi(first, ...)                                              \
    _Generic((first), shmem_ctx_t                                          \
             : _Generic((RGEX_SHMEM_FIRST(__VA_ARGS__, 0)),                 \
                        RGEX_SHMEM_G_TYPES(RGEX_SHMEM_GC_PUT_SIGNAL_NBI) default           \
                        : shmem_ctx_putmem_signal_nbi),                                       \
             RGEX_SHMEM_G_TYPES(RGEX_SHMEM_G_PUT_SIGNAL_NBI) default                                \
             : shmem_putmem_signal_nbi)(first, __VA_ARGS__)
#define shmem_p(first, ...)                                              \
    _Generic((first), shmem_ctx_t                                          \
             : _Generic((RGEX_SHMEM_FIRST(__VA_ARGS__, 0)),                 \
                        RGEX_SHMEM_G_TYPES(RGEX_SHMEM_GC_P) default           \
                        : shmem_ctx_int_p),                                       \
             RGEX_SHMEM_G_TYPES(RGEX_SHMEM_G_P) default                                \
             : shmem_int_p)(first, __VA_ARGS__)
#define shmem_g(first, ...)                                              \
    _Generic((first), shmem_ctx_t                                          \
             : _Generic((RGEX_SHMEM_FIRST(__VA_ARGS__, 0)),                 \
                        RGEX_SHMEM_G_TYPES(RGEX_SHMEM_GC_G) default           \
                        : shmem_ctx_int_g),                                       \
             RGEX_SHMEM_G_TYPES(RGEX_SHMEM_G_G) default                                \
             : shmem_int_g)(first, __VA_ARGS__)

#define RGEX_SHMEM_G_FETCH(T, N) const T * : shmem_##N##_atomic_fetch, T * : shmem_##N##_atomic_fetch,
#define RGEX_SHMEM_G_SET(T, N) T * : shmem_##N##_atomic_set,
#define RGEX_SHMEM_G_SWAP(T, N) T * : shmem_##N##_atomic_swap,
#define RGEX_SHMEM_G_CSWAP(T, N) T * : shmem_##N##_atomic_compare_swap,
#define RGEX_SHMEM_G_FINC(T, N) T * : shmem_##N##_atomic_fetch_inc,
#define RGEX_SHMEM_G_INC(T, N) T * : shmem_##N##_atomic_inc,
#define RGEX_SHMEM_G_FADD(T, N) T * : shmem_##N##_atomic_fetch_add,
#define RGEX_SHMEM_G_ADD(T, N) T * : shmem_##N##_atomic_add,
#define RGEX_SHMEM_G_FAND(T, N) T * : shmem_##N##_atomic_fetch_and,
#define RGEX_SHMEM_G_AND(T, N) T * : shmem_##N##_atomic_and,
#define RGEX_SHMEM_G_FOR(T, N) T * : shmem_##N##_atomic_fetch_or,
#define RGEX_SHMEM_G_OR(T, N) T * : shmem_##N##_atomic_or,
#define RGEX_SHMEM_G_FXOR(T, N) T * : shmem_##N##_atomic_fetch_xor,
#define RGEX_SHMEM_G_XOR(T, N) T * : shmem_##N##_atomic_xor,
#define RGEX_SHMEM_G_WAIT(T, N) T * : shmem_##N##_wait_until,
#define RGEX_SHMEM_G_TEST(T, N) T * : shmem_##N##_test,

#define shmem_atomic_fetch(first, ...)                                              \
    _Generic((first), shmem_ctx_t                                          \
             : _Generic((RGEX_SHMEM_FIRST(__VA_ARGS__, 0)),                 \
                        RGEX_SHMEM_G_AMO_EXT(RGEX_SHMEM_GC_FETCH) default           \
                        : shmem_ctx_int_atomic_fetch),                                       \
             RGEX_SHMEM_G_AMO_EXT(RGEX_SHMEM_G_FETCH) default                                \
             : shmem_int_atomic_fetch)(first, __VA_ARGS__)
#define shmem_atomic_set(first, ...)                                              \
    _Generic((first), shmem_ctx_t                                          \
             : _Generic((RGEX_SHMEM_FIRST(__VA_ARGS__, 0)),                 \
                        RGEX_SHMEM_G_AMO_EXT(RGEX_SHMEM_GC_SET) default           \
                        : shmem_ctx_int_atomic_set),                                       \
             RGEX_SHMEM_G_AMO_EXT(RGEX_SHMEM_G_SET) default                                \
             : shmem_int_atomic_set)(first, __VA_ARGS__)
#define shmem_atomic_swap(first, ...)                                              \
    _Generic((first), shmem_ctx_t                                          \
             : _Generic((RGEX_SHMEM_FIRST(__VA_ARGS__, 0)),                 \
                        RGEX_SHMEM_G_AMO_EXT(RGEX_SHMEM_GC_SWAP) default           \
                        : shmem_ctx_int_atomic_swap),                                       \
             RGEX_SHMEM_G_AMO_EXT(RGEX_SHMEM_G_SWAP) default                                \
             : shmem_int_atomic_swap)(first, __VA_ARGS__)
#define shmem_atomic_compare_swap(first, ...)                                              \
    _Generic((first), shmem_ctx_t                                          \
             : _Generic((RGEX_SHMEM_FIRST(__VA_ARGS__, 0)),                 \
                        RGEX_SHMEM_G_AMO_STD(RGEX_SHMEM_GC_CSWAP) default           \
                        : shmem_ctx_int_atomic_compare_swap),                                       \
             RGEX_SHMEM_G_AMO_STD(RGEX_SHMEM_G_CSWAP) default                                \
             : shmem_int_atomic_compare_swap)(first, __VA_ARGS__)
#define shmem_atomic_fetch_inc(first, ...)                                              \
    _Generic((first), shmem_ctx_t                                          \
             : _Generic((RGEX_SHMEM_FIRST(__VA_ARGS__, 0)),                 \
                        RGEX_SHMEM_G_AMO_STD(RGEX_SHMEM_GC_FINC) default           \
                        : shmem_ctx_int_atomic_fetch_inc),                                       \
             RGEX_SHMEM_G_AMO_STD(RGEX_SHMEM_G_FINC) default                                \
             : shmem_int_atomic_fetch_inc)(first, __VA_ARGS__)
#define shmem_atomic_inc(first, ...)                                              \
    _Generic((first), shmem_ctx_t                                          \
             : _Generic((RGEX_SHMEM_FIRST(__VA_ARGS__, 0)),                 \
                        RGEX_SHMEM_G_AMO_STD(RGEX_SHMEM_GC_INC) default           \
                        : shmem_ctx_int_atomic_inc),                                       \
             RGEX_SHMEM_G_AMO_STD(RGEX_SHMEM_G_INC) default                                \
             : shmem_int_atomic_inc)(first, __VA_ARGS__)
#define shmem_atomic_fetch_add(first, ...)                                              \
    _Generic((first), shmem_ctx_t                                          \
             : _Generic((RGEX_SHMEM_FIRST(__VA_ARGS__, 0)),                 \
                        RGEX_SHMEM_G_AMO_STD(RGEX_SHMEM_GC_FADD) default           \
                        : shmem_ctx_int_atomic_fetch_add),                                       \
             RGEX_SHMEM_G_AMO_STD(RGEX_SHMEM_G_FADD) default                                \
             : shmem_int_atomic_fetch_add)(first, __VA_ARGS__)
#define shmem_atomic_add(first, ...)                                              \
    _Generic((first), shmem_ctx_t                                          \
             : _Generic((RGEX_SHMEM_FIRST(__VA_ARGS__, 0)),                 \
                        RGEX_SHMEM_G_AMO_STD(RGEX_SHMEM_GC_ADD) default           \
                        : shmem_ctx_int_atomic_add),                                       \
             RGEX_SHMEM_G_AMO_STD(RGEX_SHMEM_G_ADD) default                                \
             : shmem_int_atomic_add)(first, __VA_ARGS__)
#define shmem_atomic_fetch_and(first, ...)                                              \
    _Generic((first), shmem_ctx_t                                          \
             : _Generic((RGEX_SHMEM_FIRST(__VA_ARGS__, 0)),                 \
                        RGEX_SHMEM_G_AMO_BIT(RGEX_SHMEM_GC_FAND) default           \
                        : shmem_ctx_uint_atomic_fetch_and),                                       \
             RGEX_SHMEM_G_AMO_BIT(RGEX_SHMEM_G_FAND) default                                \
             : shmem_uint_atomic_fetch_and)(first, __VA_ARGS__)
#define shmem_atomic_and(first, ...)                                              \
    _Generic((first), shmem_ctx_t                                          \
             : _Generic((RGEX_SHMEM_FIRST(__VA_ARGS__, 0)),                 \
                        RGEX_SHMEM_G_AMO_BIT(RGEX_SHMEM_GC_AND) default           \
                        : shmem_ctx_uint_atomic_and),                                       \
             RGEX_SHMEM_G_AMO_BIT(RGEX_SHMEM_G_AND) default                                \
             : shmem_uint_atomic_and)(first, __VA_ARGS__)
#define shmem_atomic_fetch_or(first, ...)                                              \
    _Generic((first), shmem_ctx_t                                          \
             : _Generic((RGEX_SHMEM_FIRST(__VA_ARGS__, 0)),                 \
                        RGEX_SHMEM_G_AMO_BIT(RGEX_SHMEM_GC_FOR) default           \
                        : shmem_ctx_uint_atomic_fetch_or),                                       \
             RGEX_SHMEM_G_AMO_BIT(RGEX_SHMEM_G_FOR) default                                \
             : shmem_uint_atomic_fetch_or)(first, __VA_ARGS__)
#define shmem_atomic_or(first, ...)                                              \
    _Generic((first), shmem_ctx_t                                          \
             : _Generic((RGEX_SHMEM_FIRST(__VA_ARGS__, 0)),                 \
                        RGEX_SHMEM_G_AMO_BIT(RGEX_SHMEM_GC_OR) default           \
                        : shmem_ctx_uint_atomic_or),                                       \
             RGEX_SHMEM_G_AMO_BIT(RGEX_SHMEM_G_OR) default                                \
             : shmem_uint_atomic_or)(first, __VA_ARGS__)
#define shmem_atomic_fetch_xor(first, ...)                                              \
    _Generic((first), shmem_ctx_t                                          \
             : _Generic((RGEX_SHMEM_FIRST(__VA_ARGS__, 0)),                 \
                        RGEX_SHMEM_G_AMO_BIT(RGEX_SHMEM_GC_FXOR) default           \
                        : shmem_ctx_uint_atomic_fetch_xor),                                       \
             RGEX_SHMEM_G_AMO_BIT(RGEX_SHMEM_G_FXOR) default                                \
             : shmem_uint_atomic_fetch_xor)(first, __VA_ARGS__)
#define shmem_atomic_xor(first, ...)                                              \
    _Generic((first), shmem_ctx_t                                          \
             : _Generic((RGEX_SHMEM_FIRST(__VA_ARGS__, 0)),                 \
                        RGEX_SHMEM_G_AMO_BIT(RGEX_SHMEM_GC_XOR) default           \
                        : shmem_ctx_uint_atomic_xor),                                       \
             RGEX_SHMEM_G_AMO_BIT(RGEX_SHMEM_G_XOR) default                                \
             : shmem_uint_atomic_xor)(first, __VA_ARGS__)
#define shmem_wait_until(ivar, ...)                                         \
    _Generic((ivar), RGEX_SHMEM_G_SYNC(RGEX_SHMEM_G_WAIT) default          \
             : shmem_int_wait_until)(ivar, __VA_ARGS__)
#define shmem_test(ivar, ...)                                               \
    _Generic((ivar), RGEX_SHMEM_G_SYNC(RGEX_SHMEM_G_TEST) default          \
             : shmem_int_test)(ivar, __VA_ARGS__)

/* The fetching _nbi AMOs, chosen by fetch's type. */
#define RGEX_SHMEM_G_FETCH_NBI(T, N) T * : shmem_##N##_atomic_fetch_nbi,
#define RGEX_SHMEM_GC_FETCH_NBI(T, N) T * : shmem_ctx_##N##_atomic_fetch_nbi,
#define shmem_atomic_fetch_nbi(first, ...)                                    \
    _Generic((first), shmem_ctx_t                                          \
             : _Generic((RGEX_SHMEM_FIRST(__VA_ARGS__, 0)),                 \
                        RGEX_SHMEM_G_AMO_EXT(RGEX_SHMEM_GC_FETCH_NBI) default \
                        : shmem_ctx_int_atomic_fetch_nbi),                     \
             RGEX_SHMEM_G_AMO_EXT(RGEX_SHMEM_G_FETCH_NBI) default          \
             : shmem_int_atomic_fetch_nbi)(first, __VA_ARGS__)
#define RGEX_SHMEM_G_SWAP_NBI(T, N) T * : shmem_##N##_atomic_swap_nbi,
#define RGEX_SHMEM_GC_SWAP_NBI(T, N) T * : shmem_ctx_##N##_atomic_swap_nbi,
#define shmem_atomic_swap_nbi(first, ...)                                    \
    _Generic((first), shmem_ctx_t                                          \
             : _Generic((RGEX_SHMEM_FIRST(__VA_ARGS__, 0)),                 \
                        RGEX_SHMEM_G_AMO_EXT(RGEX_SHMEM_GC_SWAP_NBI) default \
                        : shmem_ctx_int_atomic_swap_nbi),                     \
             RGEX_SHMEM_G_AMO_EXT(RGEX_SHMEM_G_SWAP_NBI) default          \
             : shmem_int_atomic_swap_nbi)(first, __VA_ARGS__)
#define RGEX_SHMEM_G_COMPARE_SWAP_NBI(T, N) T * : shmem_##N##_atomic_compare_swap_nbi,
#define RGEX_SHMEM_GC_COMPARE_SWAP_NBI(T, N) T * : shmem_ctx_##N##_atomic_compare_swap_nbi,
#define shmem_atomic_compare_swap_nbi(first, ...)                                    \
    _Generic((first), shmem_ctx_t                                          \
             : _Generic((RGEX_SHMEM_FIRST(__VA_ARGS__, 0)),                 \
                        RGEX_SHMEM_G_AMO_STD(RGEX_SHMEM_GC_COMPARE_SWAP_NBI) default \
                        : shmem_ctx_int_atomic_compare_swap_nbi),                     \
             RGEX_SHMEM_G_AMO_STD(RGEX_SHMEM_G_COMPARE_SWAP_NBI) default          \
             : shmem_int_atomic_compare_swap_nbi)(first, __VA_ARGS__)
#define RGEX_SHMEM_G_FETCH_INC_NBI(T, N) T * : shmem_##N##_atomic_fetch_inc_nbi,
#define RGEX_SHMEM_GC_FETCH_INC_NBI(T, N) T * : shmem_ctx_##N##_atomic_fetch_inc_nbi,
#define shmem_atomic_fetch_inc_nbi(first, ...)                                    \
    _Generic((first), shmem_ctx_t                                          \
             : _Generic((RGEX_SHMEM_FIRST(__VA_ARGS__, 0)),                 \
                        RGEX_SHMEM_G_AMO_STD(RGEX_SHMEM_GC_FETCH_INC_NBI) default \
                        : shmem_ctx_int_atomic_fetch_inc_nbi),                     \
             RGEX_SHMEM_G_AMO_STD(RGEX_SHMEM_G_FETCH_INC_NBI) default          \
             : shmem_int_atomic_fetch_inc_nbi)(first, __VA_ARGS__)
#define RGEX_SHMEM_G_FETCH_ADD_NBI(T, N) T * : shmem_##N##_atomic_fetch_add_nbi,
#define RGEX_SHMEM_GC_FETCH_ADD_NBI(T, N) T * : shmem_ctx_##N##_atomic_fetch_add_nbi,
#define shmem_atomic_fetch_add_nbi(first, ...)                                    \
    _Generic((first), shmem_ctx_t                                          \
             : _Generic((RGEX_SHMEM_FIRST(__VA_ARGS__, 0)),                 \
                        RGEX_SHMEM_G_AMO_STD(RGEX_SHMEM_GC_FETCH_ADD_NBI) default \
                        : shmem_ctx_int_atomic_fetch_add_nbi),                     \
             RGEX_SHMEM_G_AMO_STD(RGEX_SHMEM_G_FETCH_ADD_NBI) default          \
             : shmem_int_atomic_fetch_add_nbi)(first, __VA_ARGS__)
#define RGEX_SHMEM_G_FETCH_AND_NBI(T, N) T * : shmem_##N##_atomic_fetch_and_nbi,
#define RGEX_SHMEM_GC_FETCH_AND_NBI(T, N) T * : shmem_ctx_##N##_atomic_fetch_and_nbi,
#define shmem_atomic_fetch_and_nbi(first, ...)                                    \
    _Generic((first), shmem_ctx_t                                          \
             : _Generic((RGEX_SHMEM_FIRST(__VA_ARGS__, 0)),                 \
                        RGEX_SHMEM_G_AMO_BIT(RGEX_SHMEM_GC_FETCH_AND_NBI) default \
                        : shmem_ctx_uint_atomic_fetch_and_nbi),                     \
             RGEX_SHMEM_G_AMO_BIT(RGEX_SHMEM_G_FETCH_AND_NBI) default          \
             : shmem_uint_atomic_fetch_and_nbi)(first, __VA_ARGS__)
#define RGEX_SHMEM_G_FETCH_OR_NBI(T, N) T * : shmem_##N##_atomic_fetch_or_nbi,
#define RGEX_SHMEM_GC_FETCH_OR_NBI(T, N) T * : shmem_ctx_##N##_atomic_fetch_or_nbi,
#define shmem_atomic_fetch_or_nbi(first, ...)                                    \
    _Generic((first), shmem_ctx_t                                          \
             : _Generic((RGEX_SHMEM_FIRST(__VA_ARGS__, 0)),                 \
                        RGEX_SHMEM_G_AMO_BIT(RGEX_SHMEM_GC_FETCH_OR_NBI) default \
                        : shmem_ctx_uint_atomic_fetch_or_nbi),                     \
             RGEX_SHMEM_G_AMO_BIT(RGEX_SHMEM_G_FETCH_OR_NBI) default          \
             : shmem_uint_atomic_fetch_or_nbi)(first, __VA_ARGS__)
#define RGEX_SHMEM_G_FETCH_XOR_NBI(T, N) T * : shmem_##N##_atomic_fetch_xor_nbi,
#define RGEX_SHMEM_GC_FETCH_XOR_NBI(T, N) T * : shmem_ctx_##N##_atomic_fetch_xor_nbi,
#define shmem_atomic_fetch_xor_nbi(first, ...)                                    \
    _Generic((first), shmem_ctx_t                                          \
             : _Generic((RGEX_SHMEM_FIRST(__VA_ARGS__, 0)),                 \
                        RGEX_SHMEM_G_AMO_BIT(RGEX_SHMEM_GC_FETCH_XOR_NBI) default \
                        : shmem_ctx_uint_atomic_fetch_xor_nbi),                     \
             RGEX_SHMEM_G_AMO_BIT(RGEX_SHMEM_G_FETCH_XOR_NBI) default          \
             : shmem_uint_atomic_fetch_xor_nbi)(first, __VA_ARGS__)

/* The array forms of wait and test, chosen by ivars' type. */
#define RGEX_SHMEM_G_WAIT_UNTIL_ALL(T, N) T * : shmem_##N##_wait_until_all,
#define shmem_wait_until_all(ivars, ...)                                         \
    _Generic((ivars), RGEX_SHMEM_G_SYNC(RGEX_SHMEM_G_WAIT_UNTIL_ALL) default       \
             : shmem_int_wait_until_all)(ivars, __VA_ARGS__)
#define RGEX_SHMEM_G_WAIT_UNTIL_ALL_VECTOR(T, N) T * : shmem_##N##_wait_until_all_vector,
#define shmem_wait_until_all_vector(ivars, ...)                                         \
    _Generic((ivars), RGEX_SHMEM_G_SYNC(RGEX_SHMEM_G_WAIT_UNTIL_ALL_VECTOR) default       \
             : shmem_int_wait_until_all_vector)(ivars, __VA_ARGS__)
#define RGEX_SHMEM_G_WAIT_UNTIL_ANY(T, N) T * : shmem_##N##_wait_until_any,
#define shmem_wait_until_any(ivars, ...)                                         \
    _Generic((ivars), RGEX_SHMEM_G_SYNC(RGEX_SHMEM_G_WAIT_UNTIL_ANY) default       \
             : shmem_int_wait_until_any)(ivars, __VA_ARGS__)
#define RGEX_SHMEM_G_WAIT_UNTIL_ANY_VECTOR(T, N) T * : shmem_##N##_wait_until_any_vector,
#define shmem_wait_until_any_vector(ivars, ...)                                         \
    _Generic((ivars), RGEX_SHMEM_G_SYNC(RGEX_SHMEM_G_WAIT_UNTIL_ANY_VECTOR) default       \
             : shmem_int_wait_until_any_vector)(ivars, __VA_ARGS__)
#define RGEX_SHMEM_G_WAIT_UNTIL_SOME(T, N) T * : shmem_##N##_wait_until_some,
#define shmem_wait_until_some(ivars, ...)                                         \
    _Generic((ivars), RGEX_SHMEM_G_SYNC(RGEX_SHMEM_G_WAIT_UNTIL_SOME) default       \
             : shmem_int_wait_until_some)(ivars, __VA_ARGS__)
#define RGEX_SHMEM_G_WAIT_UNTIL_SOME_VECTOR(T, N) T * : shmem_##N##_wait_until_some_vector,
#define shmem_wait_until_some_vector(ivars, ...)                                         \
    _Generic((ivars), RGEX_SHMEM_G_SYNC(RGEX_SHMEM_G_WAIT_UNTIL_SOME_VECTOR) default       \
             : shmem_int_wait_until_some_vector)(ivars, __VA_ARGS__)
#define RGEX_SHMEM_G_TEST_ALL(T, N) T * : shmem_##N##_test_all,
#define shmem_test_all(ivars, ...)                                         \
    _Generic((ivars), RGEX_SHMEM_G_SYNC(RGEX_SHMEM_G_TEST_ALL) default       \
             : shmem_int_test_all)(ivars, __VA_ARGS__)
#define RGEX_SHMEM_G_TEST_ALL_VECTOR(T, N) T * : shmem_##N##_test_all_vector,
#define shmem_test_all_vector(ivars, ...)                                         \
    _Generic((ivars), RGEX_SHMEM_G_SYNC(RGEX_SHMEM_G_TEST_ALL_VECTOR) default       \
             : shmem_int_test_all_vector)(ivars, __VA_ARGS__)
#define RGEX_SHMEM_G_TEST_ANY(T, N) T * : shmem_##N##_test_any,
#define shmem_test_any(ivars, ...)                                         \
    _Generic((ivars), RGEX_SHMEM_G_SYNC(RGEX_SHMEM_G_TEST_ANY) default       \
             : shmem_int_test_any)(ivars, __VA_ARGS__)
#define RGEX_SHMEM_G_TEST_ANY_VECTOR(T, N) T * : shmem_##N##_test_any_vector,
#define shmem_test_any_vector(ivars, ...)                                         \
    _Generic((ivars), RGEX_SHMEM_G_SYNC(RGEX_SHMEM_G_TEST_ANY_VECTOR) default       \
             : shmem_int_test_any_vector)(ivars, __VA_ARGS__)
#define RGEX_SHMEM_G_TEST_SOME(T, N) T * : shmem_##N##_test_some,
#define shmem_test_some(ivars, ...)                                         \
    _Generic((ivars), RGEX_SHMEM_G_SYNC(RGEX_SHMEM_G_TEST_SOME) default       \
             : shmem_int_test_some)(ivars, __VA_ARGS__)
#define RGEX_SHMEM_G_TEST_SOME_VECTOR(T, N) T * : shmem_##N##_test_some_vector,
#define shmem_test_some_vector(ivars, ...)                                         \
    _Generic((ivars), RGEX_SHMEM_G_SYNC(RGEX_SHMEM_G_TEST_SOME_VECTOR) default       \
             : shmem_int_test_some_vector)(ivars, __VA_ARGS__)

/* Collectives and reductions, chosen by dest's type. */
#define RGEX_SHMEM_G_BCAST(T, N) T * : shmem_##N##_broadcast,
#define RGEX_SHMEM_G_COLLECT(T, N) T * : shmem_##N##_collect,
#define RGEX_SHMEM_G_FCOLLECT(T, N) T * : shmem_##N##_fcollect,
#define RGEX_SHMEM_G_ALLTOALL(T, N) T * : shmem_##N##_alltoall,
#define RGEX_SHMEM_G_ALLTOALLS(T, N) T * : shmem_##N##_alltoalls,
#define shmem_broadcast(team, dest, ...)                                    \
    _Generic((dest), RGEX_SHMEM_G_TYPES(RGEX_SHMEM_G_BCAST) default        \
             : shmem_broadcastmem)(team, dest, __VA_ARGS__)
#define shmem_collect(team, dest, ...)                                      \
    _Generic((dest), RGEX_SHMEM_G_TYPES(RGEX_SHMEM_G_COLLECT) default      \
             : shmem_collectmem)(team, dest, __VA_ARGS__)
#define shmem_fcollect(team, dest, ...)                                     \
    _Generic((dest), RGEX_SHMEM_G_TYPES(RGEX_SHMEM_G_FCOLLECT) default     \
             : shmem_fcollectmem)(team, dest, __VA_ARGS__)
#define shmem_alltoall(team, dest, ...)                                     \
    _Generic((dest), RGEX_SHMEM_G_TYPES(RGEX_SHMEM_G_ALLTOALL) default     \
             : shmem_alltoallmem)(team, dest, __VA_ARGS__)
#define shmem_alltoalls(team, dest, ...)                                    \
    _Generic((dest), RGEX_SHMEM_G_TYPES(RGEX_SHMEM_G_ALLTOALLS) default    \
             : shmem_alltoallsmem)(team, dest, __VA_ARGS__)

#define RGEX_SHMEM_G_RED_UBIT(X)                                            \
    X(unsigned char, uchar) X(unsigned short, ushort)                      \
    X(unsigned int, uint) X(unsigned long, ulong)                          \
    X(unsigned long long, ulonglong)
/* Bitwise reductions of signed types are table 12's int8..int64 (the
 * typedefs of signed char, short, int and long). */
#define RGEX_SHMEM_G_RED_BIT(X)                                             \
    RGEX_SHMEM_G_RED_UBIT(X) X(signed char, int8) X(short, int16)          \
    X(int, int32) X(long, int64)
#define RGEX_SHMEM_G_RED_ORDER(X)                                           \
    X(char, char) X(signed char, schar) X(short, short) X(int, int)        \
    X(long, long) X(long long, longlong) RGEX_SHMEM_G_RED_UBIT(X)          \
    X(float, float) X(double, double) X(long double, longdouble)
#define RGEX_SHMEM_G_RED_ARITH(X)                                           \
    RGEX_SHMEM_G_RED_ORDER(X) X(float _Complex, complexf)                  \
    X(double _Complex, complexd)
#define RGEX_SHMEM_G_RAND(T, N) T * : shmem_##N##_and_reduce,
#define RGEX_SHMEM_G_ROR(T, N) T * : shmem_##N##_or_reduce,
#define RGEX_SHMEM_G_RXOR(T, N) T * : shmem_##N##_xor_reduce,
#define RGEX_SHMEM_G_RMAX(T, N) T * : shmem_##N##_max_reduce,
#define RGEX_SHMEM_G_RMIN(T, N) T * : shmem_##N##_min_reduce,
#define RGEX_SHMEM_G_RSUM(T, N) T * : shmem_##N##_sum_reduce,
#define RGEX_SHMEM_G_RPROD(T, N) T * : shmem_##N##_prod_reduce,
#define shmem_and_reduce(team, dest, ...)                                   \
    _Generic((dest), RGEX_SHMEM_G_RED_BIT(RGEX_SHMEM_G_RAND) default        \
             : shmem_uint_and_reduce)(team, dest, __VA_ARGS__)
#define shmem_or_reduce(team, dest, ...)                                    \
    _Generic((dest), RGEX_SHMEM_G_RED_BIT(RGEX_SHMEM_G_ROR) default         \
             : shmem_uint_or_reduce)(team, dest, __VA_ARGS__)
#define shmem_xor_reduce(team, dest, ...)                                   \
    _Generic((dest), RGEX_SHMEM_G_RED_BIT(RGEX_SHMEM_G_RXOR) default        \
             : shmem_uint_xor_reduce)(team, dest, __VA_ARGS__)
#define shmem_max_reduce(team, dest, ...)                                   \
    _Generic((dest), RGEX_SHMEM_G_RED_ORDER(RGEX_SHMEM_G_RMAX) default      \
             : shmem_int_max_reduce)(team, dest, __VA_ARGS__)
#define shmem_min_reduce(team, dest, ...)                                   \
    _Generic((dest), RGEX_SHMEM_G_RED_ORDER(RGEX_SHMEM_G_RMIN) default      \
             : shmem_int_min_reduce)(team, dest, __VA_ARGS__)
#define shmem_sum_reduce(team, dest, ...)                                   \
    _Generic((dest), RGEX_SHMEM_G_RED_ARITH(RGEX_SHMEM_G_RSUM) default      \
             : shmem_int_sum_reduce)(team, dest, __VA_ARGS__)
#define shmem_prod_reduce(team, dest, ...)                                  \
    _Generic((dest), RGEX_SHMEM_G_RED_ARITH(RGEX_SHMEM_G_RPROD) default     \
             : shmem_int_prod_reduce)(team, dest, __VA_ARGS__)

#endif /* C11 */

#endif /* RGEX_SHMEM_H */
