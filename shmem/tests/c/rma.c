/* RMA: rgex-shmem's C test of section 9.5: put, get, p, g, iput, iget,
 * put_nbi and get_nbi for every standard RMA type, the sized and mem
 * forms, the C11 generic interfaces, and a large put. */
#include "check.h"
#include <stdint.h>
#include <string.h>

enum { N = 16 };
static int me, npes, right, left;

/* The value element i of PE pe's source holds. */
#define VAL(T, pe, i) ((T)(((pe) * 13 + (i) * 3) % 100))

#define TEST_TYPE(T, NAME)                                                  \
    static void test_##NAME(void) {                                         \
        T *dest = shmem_malloc(2 * N * sizeof(T));                          \
        T src[2 * N], back[2 * N];                                          \
        for (int i = 0; i < 2 * N; i++) {                                   \
            src[i] = VAL(T, me, i);                                         \
            dest[i] = (T)0;                                                 \
        }                                                                   \
        shmem_barrier_all();                                                \
        /* put to the right; get it back from the right */                  \
        shmem_##NAME##_put(dest, src, N, right);                            \
        shmem_barrier_all();                                                \
        for (int i = 0; i < N; i++)                                         \
            CHECK(dest[i] == VAL(T, left, i), #NAME " put: element %d", i); \
        shmem_##NAME##_get(back, dest, N, right);                           \
        for (int i = 0; i < N; i++)                                         \
            CHECK(back[i] == VAL(T, me, i), #NAME " get: element %d", i);   \
        /* p and g */                                                       \
        shmem_##NAME##_p(&dest[N], VAL(T, me, 50), right);                  \
        shmem_barrier_all();                                                \
        CHECK(dest[N] == VAL(T, left, 50), #NAME " p");                     \
        CHECK(shmem_##NAME##_g(&dest[N], left) == VAL(T, (left + npes - 1) % npes, 50), \
              #NAME " g");                                                  \
        shmem_barrier_all();                                                \
        /* iput: every 2nd source element to every 3rd... within 2N */      \
        for (int i = 0; i < 2 * N; i++) dest[i] = (T)0;                     \
        shmem_barrier_all();                                                \
        shmem_##NAME##_iput(dest, src, 3, 2, 10, right);                    \
        shmem_barrier_all();                                                \
        for (int i = 0; i < 10; i++)                                        \
            CHECK(dest[3 * i] == VAL(T, left, 2 * i), #NAME " iput %d", i); \
        CHECK(dest[1] == (T)0 && dest[29] == (T)0, #NAME " iput wrote between"); \
        memset(back, 0, sizeof back);                                       \
        shmem_##NAME##_iget(back, dest, 2, 3, 10, right);                   \
        for (int i = 0; i < 10; i++)                                        \
            CHECK(back[2 * i] == VAL(T, me, 2 * i), #NAME " iget %d", i);   \
        shmem_barrier_all();                                                \
        /* nbi, completed by quiet */                                       \
        shmem_##NAME##_put_nbi(&dest[N], src, N, right);                    \
        shmem_quiet();                                                      \
        shmem_barrier_all();                                                \
        for (int i = 0; i < N; i++)                                         \
            CHECK(dest[N + i] == VAL(T, left, i), #NAME " put_nbi %d", i);  \
        memset(back, 0, sizeof back);                                       \
        shmem_##NAME##_get_nbi(back, &dest[N], N, left);                    \
        shmem_quiet();                                                      \
        for (int i = 0; i < N; i++)                                         \
            CHECK(back[i] == VAL(T, (left + npes - 1) % npes, i),           \
                  #NAME " get_nbi %d", i);                                  \
        shmem_free(dest);                                                   \
        ok(#NAME ": put, get, p, g, iput, iget, put_nbi, get_nbi");         \
    }

TEST_TYPE(float, float)
TEST_TYPE(double, double)
TEST_TYPE(long double, longdouble)
TEST_TYPE(char, char)
TEST_TYPE(signed char, schar)
TEST_TYPE(short, short)
TEST_TYPE(int, int)
TEST_TYPE(long, long)
TEST_TYPE(long long, longlong)
TEST_TYPE(unsigned char, uchar)
TEST_TYPE(unsigned short, ushort)
TEST_TYPE(unsigned int, uint)
TEST_TYPE(unsigned long, ulong)
TEST_TYPE(unsigned long long, ulonglong)
TEST_TYPE(int8_t, int8)
TEST_TYPE(int16_t, int16)
TEST_TYPE(int32_t, int32)
TEST_TYPE(int64_t, int64)
TEST_TYPE(uint8_t, uint8)
TEST_TYPE(uint16_t, uint16)
TEST_TYPE(uint32_t, uint32)
TEST_TYPE(uint64_t, uint64)
TEST_TYPE(size_t, size)
TEST_TYPE(ptrdiff_t, ptrdiff)

/* A sized form: put, get, iput, iget, nbi, on BYTES-byte elements. */
#define TEST_SIZED(BITS)                                                    \
    static void test_sized_##BITS(void) {                                   \
        enum { B = BITS / 8 };                                              \
        unsigned char *dest = shmem_malloc(2 * N * B);                      \
        unsigned char src[2 * N * B], back[2 * N * B], exp[2 * N * B];      \
        for (int i = 0; i < 2 * N * B; i++) {                               \
            src[i] = (unsigned char)(me * 31 + i);                          \
            exp[i] = (unsigned char)(left * 31 + i);                        \
        }                                                                   \
        memset(dest, 0, 2 * N * B);                                         \
        shmem_barrier_all();                                                \
        shmem_put##BITS(dest, src, N, right);                               \
        shmem_barrier_all();                                                \
        for (int i = 0; i < N * B; i++)                                     \
            CHECK(dest[i] == (unsigned char)(left * 31 + i), "put%d byte %d", BITS, i); \
        CHECK(dest[N * B] == 0, "put%d wrote past its end", BITS);          \
        shmem_get##BITS(back, dest, N, right);                              \
        CHECK(memcmp(back, src, N * B) == 0, "get%d", BITS);                \
        shmem_barrier_all();                                                \
        memset(dest, 0, 2 * N * B);                                         \
        shmem_barrier_all();                                                \
        shmem_iput##BITS(dest, src, 2, 1, N, right);                        \
        shmem_barrier_all();                                                \
        for (int e = 0; e < N; e++)                                         \
            CHECK(memcmp(dest + 2 * e * B, exp + e * B, B) == 0 &&          \
                  dest[(2 * e + 1) * B] == 0, "iput%d element %d", BITS, e); \
        memset(back, 0, sizeof back);                                       \
        shmem_iget##BITS(back, dest, 1, 2, N, right);                       \
        CHECK(memcmp(back, src, N * B) == 0, "iget%d", BITS);               \
        shmem_barrier_all();                                                \
        shmem_put##BITS##_nbi(dest, src, N, right);                         \
        shmem_quiet();                                                      \
        shmem_barrier_all();                                                \
        memset(back, 0, sizeof back);                                       \
        shmem_get##BITS##_nbi(back, dest, N, me);                           \
        shmem_quiet();                                                      \
        CHECK(memcmp(back, exp, N * B) == 0, "put%d_nbi, get%d_nbi", BITS, BITS); \
        shmem_barrier_all();                                                \
        shmem_free(dest);                                                   \
        ok("put" #BITS ", get" #BITS ", iput" #BITS ", iget" #BITS ", put" #BITS "_nbi, get" #BITS "_nbi"); \
    }

TEST_SIZED(8)
TEST_SIZED(16)
TEST_SIZED(32)
TEST_SIZED(64)
TEST_SIZED(128)

static void test_mem(void) {
    char *dest = shmem_malloc(64);
    char msg[64];
    snprintf(msg, sizeof msg, "from PE %d", me);
    memset(dest, 0, 64);
    shmem_barrier_all();
    shmem_putmem(dest, msg, strlen(msg) + 1, right);
    shmem_barrier_all();
    char want[64];
    snprintf(want, sizeof want, "from PE %d", left);
    CHECK(strcmp(dest, want) == 0, "putmem: %s", dest);
    char back[64] = {0};
    shmem_getmem(back, dest, 64, right);
    CHECK(strcmp(back, msg) == 0, "getmem: %s", back);
    shmem_barrier_all();
    shmem_putmem_nbi(dest + 32, msg, 16, right);
    shmem_quiet();
    memset(back, 0, sizeof back);
    shmem_getmem_nbi(back, dest + 32, 16, right);
    shmem_quiet();
    CHECK(memcmp(back, msg, 16) == 0, "putmem_nbi, getmem_nbi");
    shmem_barrier_all();
    shmem_free(dest);
    ok("putmem, getmem, putmem_nbi, getmem_nbi");
}

static void test_generic(void) {
    long *l = shmem_malloc(4 * sizeof(long));
    double *d = shmem_malloc(4 * sizeof(double));
    long ls[4] = {me, me + 1, me + 2, me + 3};
    double ds[4] = {me + 0.5, me + 1.5, me + 2.5, me + 3.5};
    shmem_put(l, ls, 4, right);
    shmem_put(d, ds, 4, right);
    shmem_barrier_all();
    CHECK(l[3] == left + 3 && d[3] == left + 3.5, "generic put");
    long lb[4];
    double db[4];
    shmem_get(lb, l, 4, right);
    shmem_get(db, d, 4, right);
    CHECK(lb[0] == me && db[2] == me + 2.5, "generic get");
    shmem_barrier_all();
    shmem_p(&l[0], 100L + me, right);
    shmem_p(&d[0], 0.25 + me, right);
    shmem_barrier_all();
    CHECK(shmem_g(&l[0], me) == 100 + left && shmem_g(&d[0], me) == 0.25 + left, "generic p, g");
    shmem_barrier_all();
    shmem_free(d);
    shmem_free(l);
    ok("C11 generic put, get, p, g pick the typed routine");
}

static void test_large(void) {
    size_t len = 1 << 20;
    unsigned char *dest = shmem_malloc(len);
    unsigned char *src = malloc(len);
    for (size_t i = 0; i < len; i++) src[i] = (unsigned char)(i * 7 + me);
    shmem_putmem(dest, src, len, right);
    shmem_barrier_all();
    for (size_t i = 0; i < len; i++)
        if (dest[i] != (unsigned char)(i * 7 + left)) FAIL("1 MiB put: byte %zu", i);
    memset(src, 0, len);
    shmem_getmem(src, dest, len, left);
    for (size_t i = 0; i < len; i++)
        if (src[i] != (unsigned char)(i * 7 + (left + npes - 1) % npes)) FAIL("1 MiB get: byte %zu", i);
    free(src);
    shmem_barrier_all();
    shmem_free(dest);
    ok("1 MiB putmem and getmem, byte for byte");
}

int main(void) {
    shmem_init();
    banner();
    neighbours(&me, &npes, &right, &left);
    test_float(); test_double(); test_longdouble(); test_char(); test_schar();
    test_short(); test_int(); test_long(); test_longlong(); test_uchar();
    test_ushort(); test_uint(); test_ulong(); test_ulonglong(); test_int8();
    test_int16(); test_int32(); test_int64(); test_uint8(); test_uint16();
    test_uint32(); test_uint64(); test_size(); test_ptrdiff();
    test_sized_8(); test_sized_16(); test_sized_32(); test_sized_64(); test_sized_128();
    test_mem();
    test_generic();
    test_large();
    done();
    shmem_finalize();
    return 0;
}
