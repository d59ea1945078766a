/* Point-to-point synchronisation: rgex-shmem's C test of section 9.10,
 * for every point-to-point type: wait_until and test, the _all, _any,
 * _some and _vector forms, status masks, and data put before a flag
 * (with a fence) seen once the flag is. */
#define _DEFAULT_SOURCE /* usleep */
#include "check.h"
#include <stdint.h>
#include <unistd.h>

static int me, npes, right, left;

#define TEST_SYNC(T, NAME)                                                  \
    static void sync_##NAME(void) {                                         \
        T *v = shmem_calloc(4, sizeof(T));                                  \
        long *data = shmem_calloc(1, sizeof(long));                         \
        CHECK(shmem_##NAME##_test(&v[1], SHMEM_CMP_NE, (T)0) == 0,          \
              #NAME " test of an unwritten word");                          \
        shmem_barrier_all();                                                \
        if (me == 0) usleep(2000); /* the neighbour waits first */          \
        shmem_long_p(data, 1000 + me, right);                               \
        shmem_fence();                                                      \
        shmem_##NAME##_p(&v[0], (T)1, right);                               \
        shmem_##NAME##_wait_until(&v[0], SHMEM_CMP_EQ, (T)1);               \
        CHECK(*data == 1000 + left, #NAME " data before the flag: %ld", *data); \
        shmem_##NAME##_wait_until(&v[0], SHMEM_CMP_NE, (T)0);               \
        shmem_##NAME##_wait_until(&v[0], SHMEM_CMP_GT, (T)0);               \
        shmem_##NAME##_wait_until(&v[0], SHMEM_CMP_GE, (T)1);               \
        shmem_##NAME##_wait_until(&v[0], SHMEM_CMP_LT, (T)2);               \
        shmem_##NAME##_wait_until(&v[0], SHMEM_CMP_LE, (T)1);               \
        CHECK(shmem_##NAME##_test(&v[0], SHMEM_CMP_GE, (T)1) == 1 &&        \
                  shmem_##NAME##_test(&v[0], SHMEM_CMP_GT, (T)1) == 0,      \
              #NAME " test");                                               \
        shmem_barrier_all();                                                \
        /* v[1..3] set to 2 by the left neighbour, one at a time */         \
        int status[4] = {1, 0, 0, 0};                                       \
        for (int i = 1; i < 4; i++) {                                       \
            shmem_##NAME##_p(&v[i], (T)2, right);                           \
            shmem_quiet();                                                  \
        }                                                                   \
        size_t any = shmem_##NAME##_wait_until_any(v, 4, status, SHMEM_CMP_EQ, (T)2); \
        CHECK(any >= 1 && any <= 3, #NAME " wait_until_any: %zu", any);     \
        shmem_##NAME##_wait_until_all(v, 4, status, SHMEM_CMP_EQ, (T)2);    \
        size_t idx[4] = {9, 9, 9, 9};                                       \
        size_t k = shmem_##NAME##_wait_until_some(v, 4, idx, status, SHMEM_CMP_EQ, (T)2); \
        CHECK(k == 3 && idx[0] == 1 && idx[1] == 2 && idx[2] == 3,          \
              #NAME " wait_until_some: %zu", k);                            \
        T want[4] = {(T)1, (T)2, (T)2, (T)2};                               \
        shmem_##NAME##_wait_until_all_vector(v, 4, NULL, SHMEM_CMP_EQ, want); \
        CHECK(shmem_##NAME##_wait_until_any_vector(v, 4, NULL, SHMEM_CMP_EQ, want) < 4, \
              #NAME " wait_until_any_vector");                              \
        CHECK(shmem_##NAME##_wait_until_some_vector(v, 4, idx, NULL, SHMEM_CMP_EQ, want) == 4, \
              #NAME " wait_until_some_vector");                             \
        CHECK(shmem_##NAME##_test_all(v, 4, status, SHMEM_CMP_EQ, (T)2) == 1 && \
                  shmem_##NAME##_test_all(v, 4, NULL, SHMEM_CMP_EQ, (T)2) == 0, \
              #NAME " test_all");                                           \
        CHECK(shmem_##NAME##_test_any(v, 4, NULL, SHMEM_CMP_EQ, (T)1) == 0 && \
                  shmem_##NAME##_test_any(v, 4, NULL, SHMEM_CMP_EQ, (T)99) == SIZE_MAX, \
              #NAME " test_any");                                           \
        /* Repeated _any calls come round to every word that holds. */   \
        int seen[4] = {0, 0, 0, 0};                                          \
        for (int r = 0; r < 8; r++)                                          \
            seen[shmem_##NAME##_test_any(v, 4, NULL, SHMEM_CMP_GE, (T)1)] = 1; \
        CHECK(seen[0] && seen[1] && seen[2] && seen[3], #NAME " test_any comes round"); \
        CHECK(shmem_##NAME##_test_some(v, 4, idx, NULL, SHMEM_CMP_GE, (T)1) == 4 && \
                  shmem_##NAME##_test_some(v, 4, idx, NULL, SHMEM_CMP_GT, (T)5) == 0, \
              #NAME " test_some");                                          \
        CHECK(shmem_##NAME##_test_all_vector(v, 4, NULL, SHMEM_CMP_EQ, want) == 1 && \
                  shmem_##NAME##_test_any_vector(v, 4, status, SHMEM_CMP_EQ, want) - 1 < 3 && \
                  shmem_##NAME##_test_some_vector(v, 4, idx, status, SHMEM_CMP_LE, want) == 3, \
              #NAME " test vector forms");                                  \
        int none[4] = {1, 1, 1, 1};                                         \
        CHECK(shmem_##NAME##_wait_until_any(v, 4, none, SHMEM_CMP_EQ, (T)7) == SIZE_MAX && \
                  shmem_##NAME##_wait_until_some(v, 4, idx, none, SHMEM_CMP_EQ, (T)7) == 0, \
              #NAME " every word excluded");                                \
        shmem_barrier_all();                                                \
        shmem_free(data);                                                   \
        shmem_free(v);                                                      \
        ok(#NAME ": wait_until, test, _all, _any, _some, _vector");         \
    }

#define SYNC_TYPES(X)                                                       \
    X(short, short) X(int, int) X(long, long) X(long long, longlong)       \
    X(unsigned short, ushort) X(unsigned int, uint)                        \
    X(unsigned long, ulong) X(unsigned long long, ulonglong)               \
    X(int32_t, int32) X(int64_t, int64) X(uint32_t, uint32)                \
    X(uint64_t, uint64) X(size_t, size) X(ptrdiff_t, ptrdiff)
SYNC_TYPES(TEST_SYNC)

/* A waiter asleep while its peer computes is woken by the peer's AMO. */
static void late_writer(void) {
    long *flag = shmem_calloc(1, sizeof(long));
    if (me == 1 % npes) usleep(50000);
    shmem_long_atomic_add(flag, 1, 0);
    if (me == 0) shmem_long_wait_until(flag, SHMEM_CMP_EQ, npes);
    shmem_barrier_all();
    shmem_free(flag);
    ok("a wait outlasts a late writer's AMO");
}

static void generic(void) {
    int *v = shmem_calloc(1, sizeof(int));
    shmem_int_p(v, 5, right);
    shmem_wait_until(v, SHMEM_CMP_EQ, 5);
    CHECK(shmem_test(v, SHMEM_CMP_EQ, 5), "generic test");
    shmem_barrier_all();
    shmem_free(v);
    ok("C11 generic wait_until and test");
}

int main(void) {
    shmem_init();
    banner();
    neighbours(&me, &npes, &right, &left);
#define RUN(T, N) sync_##N();
    SYNC_TYPES(RUN)
    late_writer();
    generic();
    done();
    shmem_finalize();
    return 0;
}
