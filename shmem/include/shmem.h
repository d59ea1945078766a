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

/* ---- Ordering and barriers (sections 9.8, 9.11) ---------------------- */

void shmem_fence(void);
void shmem_quiet(void);
void shmem_barrier_all(void);
void shmem_sync_all(void);

#ifdef __cplusplus
}
#endif

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

#define shmem_put(dest, ...)                                                \
    _Generic((dest), RGEX_SHMEM_G_TYPES(RGEX_SHMEM_G_PUT) default          \
             : shmem_putmem)(dest, __VA_ARGS__)
#define shmem_get(dest, ...)                                                \
    _Generic((dest), RGEX_SHMEM_G_TYPES(RGEX_SHMEM_G_GET) default          \
             : shmem_getmem)(dest, __VA_ARGS__)
#define shmem_put_nbi(dest, ...)                                            \
    _Generic((dest), RGEX_SHMEM_G_TYPES(RGEX_SHMEM_G_PUT_NBI) default      \
             : shmem_putmem_nbi)(dest, __VA_ARGS__)
#define shmem_get_nbi(dest, ...)                                            \
    _Generic((dest), RGEX_SHMEM_G_TYPES(RGEX_SHMEM_G_GET_NBI) default      \
             : shmem_getmem_nbi)(dest, __VA_ARGS__)
#define shmem_iput(dest, ...)                                               \
    _Generic((dest), RGEX_SHMEM_G_TYPES(RGEX_SHMEM_G_IPUT) default         \
             : shmem_iput8)(dest, __VA_ARGS__)
#define shmem_iget(dest, ...)                                               \
    _Generic((dest), RGEX_SHMEM_G_TYPES(RGEX_SHMEM_G_IGET) default         \
             : shmem_iget8)(dest, __VA_ARGS__)
#define shmem_put_signal(dest, ...)                                         \
    _Generic((dest), RGEX_SHMEM_G_TYPES(RGEX_SHMEM_G_PUT_SIGNAL) default   \
             : shmem_putmem_signal)(dest, __VA_ARGS__)
#define shmem_put_signal_nbi(dest, ...)                                     \
    _Generic((dest), RGEX_SHMEM_G_TYPES(RGEX_SHMEM_G_PUT_SIGNAL_NBI)       \
             default : shmem_putmem_signal_nbi)(dest, __VA_ARGS__)
#define shmem_p(dest, ...)                                                  \
    _Generic((dest), RGEX_SHMEM_G_TYPES(RGEX_SHMEM_G_P) default            \
             : shmem_int_p)(dest, __VA_ARGS__)
#define shmem_g(source, ...)                                                \
    _Generic((source), RGEX_SHMEM_G_TYPES(RGEX_SHMEM_G_G) default          \
             : shmem_int_g)(source, __VA_ARGS__)

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

#define shmem_atomic_fetch(source, ...)                                     \
    _Generic((source), RGEX_SHMEM_G_AMO_EXT(RGEX_SHMEM_G_FETCH) default    \
             : shmem_int_atomic_fetch)(source, __VA_ARGS__)
#define shmem_atomic_set(dest, ...)                                         \
    _Generic((dest), RGEX_SHMEM_G_AMO_EXT(RGEX_SHMEM_G_SET) default        \
             : shmem_int_atomic_set)(dest, __VA_ARGS__)
#define shmem_atomic_swap(dest, ...)                                        \
    _Generic((dest), RGEX_SHMEM_G_AMO_EXT(RGEX_SHMEM_G_SWAP) default       \
             : shmem_int_atomic_swap)(dest, __VA_ARGS__)
#define shmem_atomic_compare_swap(dest, ...)                                \
    _Generic((dest), RGEX_SHMEM_G_AMO_STD(RGEX_SHMEM_G_CSWAP) default      \
             : shmem_int_atomic_compare_swap)(dest, __VA_ARGS__)
#define shmem_atomic_fetch_inc(dest, ...)                                   \
    _Generic((dest), RGEX_SHMEM_G_AMO_STD(RGEX_SHMEM_G_FINC) default       \
             : shmem_int_atomic_fetch_inc)(dest, __VA_ARGS__)
#define shmem_atomic_inc(dest, ...)                                         \
    _Generic((dest), RGEX_SHMEM_G_AMO_STD(RGEX_SHMEM_G_INC) default        \
             : shmem_int_atomic_inc)(dest, __VA_ARGS__)
#define shmem_atomic_fetch_add(dest, ...)                                   \
    _Generic((dest), RGEX_SHMEM_G_AMO_STD(RGEX_SHMEM_G_FADD) default       \
             : shmem_int_atomic_fetch_add)(dest, __VA_ARGS__)
#define shmem_atomic_add(dest, ...)                                         \
    _Generic((dest), RGEX_SHMEM_G_AMO_STD(RGEX_SHMEM_G_ADD) default        \
             : shmem_int_atomic_add)(dest, __VA_ARGS__)
#define shmem_atomic_fetch_and(dest, ...)                                   \
    _Generic((dest), RGEX_SHMEM_G_AMO_BIT(RGEX_SHMEM_G_FAND) default       \
             : shmem_uint_atomic_fetch_and)(dest, __VA_ARGS__)
#define shmem_atomic_and(dest, ...)                                         \
    _Generic((dest), RGEX_SHMEM_G_AMO_BIT(RGEX_SHMEM_G_AND) default        \
             : shmem_uint_atomic_and)(dest, __VA_ARGS__)
#define shmem_atomic_fetch_or(dest, ...)                                    \
    _Generic((dest), RGEX_SHMEM_G_AMO_BIT(RGEX_SHMEM_G_FOR) default        \
             : shmem_uint_atomic_fetch_or)(dest, __VA_ARGS__)
#define shmem_atomic_or(dest, ...)                                          \
    _Generic((dest), RGEX_SHMEM_G_AMO_BIT(RGEX_SHMEM_G_OR) default         \
             : shmem_uint_atomic_or)(dest, __VA_ARGS__)
#define shmem_atomic_fetch_xor(dest, ...)                                   \
    _Generic((dest), RGEX_SHMEM_G_AMO_BIT(RGEX_SHMEM_G_FXOR) default       \
             : shmem_uint_atomic_fetch_xor)(dest, __VA_ARGS__)
#define shmem_atomic_xor(dest, ...)                                         \
    _Generic((dest), RGEX_SHMEM_G_AMO_BIT(RGEX_SHMEM_G_XOR) default        \
             : shmem_uint_atomic_xor)(dest, __VA_ARGS__)
#define shmem_wait_until(ivar, ...)                                         \
    _Generic((ivar), RGEX_SHMEM_G_SYNC(RGEX_SHMEM_G_WAIT) default          \
             : shmem_int_wait_until)(ivar, __VA_ARGS__)
#define shmem_test(ivar, ...)                                               \
    _Generic((ivar), RGEX_SHMEM_G_SYNC(RGEX_SHMEM_G_TEST) default          \
             : shmem_int_test)(ivar, __VA_ARGS__)

#endif /* C11 */

#endif /* RGEX_SHMEM_H */
