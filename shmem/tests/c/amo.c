/* AMOs: rgex-shmem's C test of section 9.7, for every AMO type: fetch,
 * set, swap (extended types), compare_swap, fetch_inc, inc, fetch_add,
 * add (standard types), and, or, xor with their fetch forms (bitwise
 * types), the _nbi fetching forms, and the C11 generic interfaces. */
#include "check.h"
#include <stdint.h>

enum { ROUNDS = 50 };
static int me, npes;

/* fetch, set, swap, and their nbi forms: each PE sets its slot on PE 0. */
#define TEST_EXT(T, NAME)                                                   \
    static void ext_##NAME(void) {                                          \
        T *slot = shmem_calloc((size_t)npes, sizeof(T));                    \
        shmem_##NAME##_atomic_set(&slot[me], (T)(me + 1), 0);               \
        shmem_barrier_all();                                                \
        for (int pe = 0; pe < npes; pe++)                                   \
            CHECK(shmem_##NAME##_atomic_fetch(&slot[pe], 0) == (T)(pe + 1), \
                  #NAME " fetch of slot %d", pe);                           \
        shmem_barrier_all();                                                \
        T old = shmem_##NAME##_atomic_swap(&slot[me], (T)(me + 10), 0);     \
        CHECK(old == (T)(me + 1), #NAME " swap returned the old value");    \
        T f = 0;                                                            \
        shmem_##NAME##_atomic_swap_nbi(&f, &slot[me], (T)(me + 20), 0);     \
        shmem_quiet();                                                      \
        CHECK(f == (T)(me + 10), #NAME " swap_nbi");                        \
        shmem_##NAME##_atomic_fetch_nbi(&f, &slot[me], 0);                  \
        shmem_quiet();                                                      \
        CHECK(f == (T)(me + 20), #NAME " fetch_nbi");                       \
        shmem_barrier_all();                                                \
        shmem_free(slot);                                                   \
        ok(#NAME ": fetch, set, swap, fetch_nbi, swap_nbi");                \
    }

/* Every PE adds and increments one counter on every PE; compare_swap
 * hands out tickets. */
#define TEST_STD(T, NAME)                                                   \
    static void std_##NAME(void) {                                          \
        T *c = shmem_calloc(4, sizeof(T));                                  \
        for (int r = 0; r < ROUNDS; r++)                                    \
            for (int pe = 0; pe < npes; pe++) {                             \
                shmem_##NAME##_atomic_inc(&c[0], pe);                       \
                shmem_##NAME##_atomic_add(&c[1], (T)3, pe);                 \
                T a = shmem_##NAME##_atomic_fetch_inc(&c[2], pe);           \
                T b = shmem_##NAME##_atomic_fetch_add(&c[3], (T)2, pe);     \
                CHECK(a < (T)(ROUNDS * npes) && b < (T)(2 * ROUNDS * npes), \
                      #NAME " fetched %lld, %lld", (long long)a, (long long)b); \
            }                                                               \
        shmem_barrier_all();                                                \
        CHECK(c[0] == (T)(ROUNDS * npes) && c[1] == (T)(3 * ROUNDS * npes) && \
                  c[2] == (T)(ROUNDS * npes) && c[3] == (T)(2 * ROUNDS * npes), \
              #NAME " counters %lld %lld %lld %lld", (long long)c[0],       \
              (long long)c[1], (long long)c[2], (long long)c[3]);           \
        shmem_barrier_all();                                                \
        /* compare_swap: each PE claims slot 0 of PE 0 in turn */           \
        T *t = shmem_calloc(1, sizeof(T));                                  \
        int claimed = 0;                                                    \
        for (int tries = 0; tries < 1000000 && !claimed; tries++) {         \
            T cur = shmem_##NAME##_atomic_fetch(t, 0);                      \
            if (cur == (T)me &&                                             \
                shmem_##NAME##_atomic_compare_swap(t, cur, (T)(me + 1), 0) == cur) \
                claimed = 1;                                                \
        }                                                                   \
        CHECK(claimed, #NAME " compare_swap never succeeded");              \
        CHECK(shmem_##NAME##_atomic_compare_swap(t, (T)(npes + 5), (T)0, 0) != (T)(npes + 5), \
              #NAME " a failing compare_swap");                             \
        shmem_barrier_all();                                                \
        CHECK(shmem_##NAME##_atomic_fetch(t, 0) == (T)npes, #NAME " tickets"); \
        T f = 0;                                                            \
        shmem_barrier_all();                                                \
        shmem_##NAME##_atomic_fetch_inc_nbi(&f, &c[0], 0);                  \
        shmem_quiet();                                                      \
        CHECK(f >= (T)(ROUNDS * npes), #NAME " fetch_inc_nbi");             \
        shmem_##NAME##_atomic_fetch_add_nbi(&f, &c[1], (T)1, 0);            \
        shmem_quiet();                                                      \
        CHECK(f >= (T)(3 * ROUNDS * npes), #NAME " fetch_add_nbi");         \
        shmem_##NAME##_atomic_compare_swap_nbi(&f, &c[2], (T)0, (T)1, 0);   \
        shmem_quiet();                                                      \
        CHECK(f == (T)(ROUNDS * npes), #NAME " compare_swap_nbi");          \
        shmem_barrier_all();                                                \
        shmem_free(t);                                                      \
        shmem_free(c);                                                      \
        ok(#NAME ": inc, add, fetch_inc, fetch_add, compare_swap, nbi forms"); \
    }

/* Each PE sets, toggles and clears its own bit of a word on PE 0. */
#define TEST_BIT(T, NAME)                                                   \
    static void bit_##NAME(void) {                                          \
        T *w = shmem_calloc(2, sizeof(T));                                  \
        T bit = (T)1 << me;                                                 \
        T old = shmem_##NAME##_atomic_fetch_or(&w[0], bit, 0);              \
        CHECK((old & bit) == 0, #NAME " fetch_or");                         \
        shmem_##NAME##_atomic_or(&w[1], bit, 0);                            \
        shmem_barrier_all();                                                \
        T all = (T)(((T)1 << npes) - 1);                                    \
        CHECK(shmem_##NAME##_atomic_fetch(&w[0], 0) == all &&               \
                  shmem_##NAME##_atomic_fetch(&w[1], 0) == all, #NAME " or"); \
        shmem_barrier_all();                                                \
        old = shmem_##NAME##_atomic_fetch_xor(&w[0], bit, 0);               \
        CHECK((old & bit) == bit, #NAME " fetch_xor");                      \
        shmem_##NAME##_atomic_xor(&w[1], bit, 0);                           \
        shmem_barrier_all();                                                \
        CHECK(shmem_##NAME##_atomic_fetch(&w[0], 0) == 0 &&                 \
                  shmem_##NAME##_atomic_fetch(&w[1], 0) == 0, #NAME " xor"); \
        shmem_barrier_all();                                                \
        shmem_##NAME##_atomic_set(&w[0], all, 0);                           \
        shmem_##NAME##_atomic_set(&w[1], all, 0);                           \
        shmem_barrier_all();                                                \
        old = shmem_##NAME##_atomic_fetch_and(&w[0], (T)~bit, 0);           \
        CHECK((old & bit) == bit, #NAME " fetch_and");                      \
        shmem_##NAME##_atomic_and(&w[1], (T)~bit, 0);                       \
        T f = 0;                                                            \
        shmem_##NAME##_atomic_fetch_or_nbi(&f, &w[0], (T)0, 0);             \
        shmem_quiet();                                                      \
        CHECK((f & bit) == 0, #NAME " fetch_or_nbi");                       \
        shmem_barrier_all();                                                \
        CHECK(shmem_##NAME##_atomic_fetch(&w[0], 0) == 0 &&                 \
                  shmem_##NAME##_atomic_fetch(&w[1], 0) == 0, #NAME " and"); \
        shmem_##NAME##_atomic_fetch_and_nbi(&f, &w[0], (T)0, 0);            \
        shmem_##NAME##_atomic_fetch_xor_nbi(&f, &w[0], (T)0, 0);            \
        shmem_quiet();                                                      \
        shmem_barrier_all();                                                \
        shmem_free(w);                                                      \
        ok(#NAME ": and, or, xor, fetch and fetch_nbi forms");              \
    }

#define EXT_TYPES(X)                                                        \
    X(float, float) X(double, double) X(int, int) X(long, long)            \
    X(long long, longlong) X(unsigned int, uint) X(unsigned long, ulong)   \
    X(unsigned long long, ulonglong) X(int32_t, int32) X(int64_t, int64)   \
    X(uint32_t, uint32) X(uint64_t, uint64) X(size_t, size)                \
    X(ptrdiff_t, ptrdiff)
#define STD_TYPES(X)                                                        \
    X(int, int) X(long, long) X(long long, longlong) X(unsigned int, uint) \
    X(unsigned long, ulong) X(unsigned long long, ulonglong)               \
    X(int32_t, int32) X(int64_t, int64) X(uint32_t, uint32)                \
    X(uint64_t, uint64) X(size_t, size) X(ptrdiff_t, ptrdiff)
#define BIT_TYPES(X)                                                        \
    X(unsigned int, uint) X(unsigned long, ulong)                          \
    X(unsigned long long, ulonglong) X(int32_t, int32) X(int64_t, int64)   \
    X(uint32_t, uint32) X(uint64_t, uint64)

EXT_TYPES(TEST_EXT)
STD_TYPES(TEST_STD)
BIT_TYPES(TEST_BIT)

/* 4- and 8-byte types share one word: AMOs through either name are
 * atomic with each other. */
static void shared_word(void) {
    int64_t *w = shmem_calloc(1, sizeof(int64_t));
    for (int r = 0; r < ROUNDS; r++) {
        shmem_int64_atomic_add(w, 1, 0);
        shmem_long_atomic_fetch_inc((long *)w, 0);
        shmem_ulonglong_atomic_add((unsigned long long *)w, 1ULL, 0);
    }
    shmem_barrier_all();
    CHECK(shmem_int64_atomic_fetch(w, 0) == 3 * ROUNDS * npes, "shared word: %lld",
          (long long)*w);
    shmem_barrier_all();
    shmem_free(w);
    ok("long, long long and int64_t AMOs on one word are atomic together");
}

static void generic(void) {
    long *l = shmem_calloc(1, sizeof(long));
    unsigned int *u = shmem_calloc(1, sizeof(unsigned int));
    double *d = shmem_calloc(1, sizeof(double));
    shmem_atomic_add(l, 2L, 0);
    shmem_atomic_inc(l, 0);
    shmem_atomic_fetch_or(u, 1u << me, 0);
    if (me == 0) shmem_atomic_set(d, 2.5, 0);
    shmem_barrier_all();
    CHECK(shmem_atomic_fetch(l, 0) == 3 * npes, "generic add/inc");
    CHECK(shmem_atomic_fetch(u, 0) == (1u << npes) - 1, "generic fetch_or");
    CHECK(shmem_atomic_fetch(d, 0) == 2.5, "generic set/fetch of a double");
    shmem_barrier_all();
    if (me == 0) CHECK(shmem_atomic_compare_swap(l, 3L * npes, 0L, 0) == 3 * npes, "generic cswap");
    shmem_barrier_all();
    CHECK(shmem_atomic_fetch(l, 0) == 0, "generic cswap stored");
    shmem_barrier_all();
    shmem_free(d);
    shmem_free(u);
    shmem_free(l);
    ok("C11 generic atomic_add, inc, fetch_or, set, fetch, compare_swap");
}

int main(void) {
    shmem_init();
    banner();
    me = shmem_my_pe();
    npes = shmem_n_pes();
#define RUN_EXT(T, N) ext_##N();
#define RUN_STD(T, N) std_##N();
#define RUN_BIT(T, N) bit_##N();
    EXT_TYPES(RUN_EXT)
    STD_TYPES(RUN_STD)
    BIT_TYPES(RUN_BIT)
    shared_word();
    generic();
    done();
    shmem_finalize();
    return 0;
}
