/* Signalling: rgex-shmem's C test of section 9.9: put_signal and
 * put_signal_nbi (set and add; mem, typed and sized forms),
 * signal_fetch, signal_wait_until, and data never behind its signal. */
#include "check.h"
#include <stdint.h>
#include <string.h>

enum { LEN = 4096, FLOOD = 500 };
static int me, npes, right, left;

static void set_signal(void) {
    unsigned char *buf = shmem_calloc(LEN, 1);
    uint64_t *sig = shmem_calloc(1, sizeof(uint64_t));
    unsigned char src[LEN];
    for (int i = 0; i < LEN; i++) src[i] = (unsigned char)(me + i);
    shmem_putmem_signal(buf, src, LEN, sig, 7, SHMEM_SIGNAL_SET, right);
    uint64_t seen = shmem_signal_wait_until(sig, SHMEM_CMP_EQ, 7);
    CHECK(seen == 7, "signal_wait_until returned %llu", (unsigned long long)seen);
    for (int i = 0; i < LEN; i++)
        CHECK(buf[i] == (unsigned char)(left + i), "byte %d behind its signal", i);
    CHECK(shmem_signal_fetch(sig) == 7, "signal_fetch");
    shmem_barrier_all();
    shmem_free(sig);
    shmem_free(buf);
    ok("putmem_signal SET: 4 KiB, then the signal; signal_wait_until and signal_fetch see it");
}

/* Every PE floods PE 0 with put-with-signals that add 1; each one's data
 * is in its own slot, checked once the count says it is there. */
static void add_flood(void) {
    long *slots = shmem_calloc((size_t)npes * FLOOD, sizeof(long));
    uint64_t *count = shmem_calloc(1, sizeof(uint64_t));
    for (int i = 0; i < FLOOD; i++) {
        long v = (long)me * 100000 + i;
        if (i % 2)
            shmem_long_put_signal(&slots[me * FLOOD + i], &v, 1, count, 1, SHMEM_SIGNAL_ADD, 0);
        else
            shmem_long_put_signal_nbi(&slots[me * FLOOD + i], &v, 1, count, 1, SHMEM_SIGNAL_ADD, 0);
    }
    shmem_quiet();
    if (me == 0) {
        shmem_signal_wait_until(count, SHMEM_CMP_GE, (uint64_t)npes * FLOOD);
        CHECK(shmem_signal_fetch(count) == (uint64_t)npes * FLOOD, "count %llu",
              (unsigned long long)shmem_signal_fetch(count));
        for (int pe = 0; pe < npes; pe++)
            for (int i = 0; i < FLOOD; i++)
                CHECK(slots[pe * FLOOD + i] == (long)pe * 100000 + i, "slot %d of PE %d", i, pe);
    }
    shmem_barrier_all();
    shmem_free(count);
    shmem_free(slots);
    ok("put_signal and put_signal_nbi ADD from every PE: every slot there once the count is");
}

#define TYPED(T, NAME)                                                      \
    {                                                                       \
        T *d = shmem_calloc(4, sizeof(T));                                  \
        T s[4] = {(T)1, (T)2, (T)3, (T)(me + 4)};                           \
        shmem_##NAME##_put_signal(d, s, 4, sig, 1, SHMEM_SIGNAL_ADD, right); \
        shmem_##NAME##_put_signal_nbi(d + 2, s, 2, sig, 1, SHMEM_SIGNAL_ADD, right); \
        shmem_signal_wait_until(sig, SHMEM_CMP_GE, want += 2);              \
        shmem_barrier_all();                                                \
        CHECK(d[0] == (T)1 && d[2] == (T)1 && d[3] == (T)2, #NAME " put_signal"); \
        shmem_free(d);                                                      \
    }

#define RMA_TYPES(X)                                                        \
    X(float, float) X(double, double) X(long double, longdouble)           \
    X(char, char) X(signed char, schar) X(short, short) X(int, int)        \
    X(long, long) X(long long, longlong) X(unsigned char, uchar)           \
    X(unsigned short, ushort) X(unsigned int, uint)                        \
    X(unsigned long, ulong) X(unsigned long long, ulonglong)               \
    X(int8_t, int8) X(int16_t, int16) X(int32_t, int32) X(int64_t, int64)  \
    X(uint8_t, uint8) X(uint16_t, uint16) X(uint32_t, uint32)              \
    X(uint64_t, uint64) X(size_t, size) X(ptrdiff_t, ptrdiff)

static void typed(void) {
    uint64_t *sig = shmem_calloc(1, sizeof(uint64_t));
    uint64_t want = 0;
    RMA_TYPES(TYPED)
    ok("put_signal and put_signal_nbi of every standard RMA type");
    unsigned char src[16 * 4];
    for (int i = 0; i < 64; i++) src[i] = (unsigned char)(i + me);
#define SIZED(BITS)                                                         \
    {                                                                       \
        unsigned char *d = shmem_calloc(4, BITS / 8);                       \
        shmem_put##BITS##_signal(d, src, 2, sig, 1, SHMEM_SIGNAL_ADD, right); \
        shmem_put##BITS##_signal_nbi(d + 2 * (BITS / 8), src, 2, sig, 1,    \
                                     SHMEM_SIGNAL_ADD, right);              \
        shmem_signal_wait_until(sig, SHMEM_CMP_GE, want += 2);              \
        for (int i = 0; i < 4 * (BITS / 8); i++)                            \
            CHECK(d[i] == (unsigned char)(i % (2 * (BITS / 8)) + left),     \
                  "put%d_signal byte %d", BITS, i);                         \
        shmem_barrier_all();                                                \
        shmem_free(d);                                                      \
    }
    SIZED(8) SIZED(16) SIZED(32) SIZED(64) SIZED(128)
    ok("put8..put128_signal and their _nbi forms");
    char *m = shmem_calloc(8, 1);
    shmem_putmem_signal_nbi(m, "abcdefg", 8, sig, 0, SHMEM_SIGNAL_SET, right);
    shmem_signal_wait_until(sig, SHMEM_CMP_EQ, 0);
    shmem_barrier_all();
    CHECK(strcmp(m, "abcdefg") == 0, "putmem_signal_nbi SET 0: %s", m);
    int *g = shmem_calloc(2, sizeof(int));
    int two[2] = {me, me};
    shmem_put_signal(g, two, 2, sig, 5, SHMEM_SIGNAL_SET, right);
    shmem_signal_wait_until(sig, SHMEM_CMP_EQ, 5);
    CHECK(g[1] == left, "generic put_signal");
    shmem_barrier_all();
    shmem_free(g);
    shmem_free(m);
    shmem_free(sig);
    ok("putmem_signal_nbi and the C11 generic put_signal");
}

int main(void) {
    shmem_init();
    banner();
    neighbours(&me, &npes, &right, &left);
    set_signal();
    add_flood();
    typed();
    done();
    shmem_finalize();
    return 0;
}
