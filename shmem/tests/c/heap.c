/* The symmetric heap: rgex-shmem's C test of section 9.3.
 * Run with SHMEM_SYMMETRIC_SIZE=8M. */
#include "check.h"
#include <stdint.h>
#include <string.h>

static int me, n;

/* Every PE's offset of p from base, gathered on PE 0: all equal. */
static void symmetric(const char *what, void *base, void *p) {
    long *offs = shmem_malloc((size_t)n * sizeof(long));
    shmem_long_p(&offs[me], (long)((char *)p - (char *)base), 0);
    shmem_barrier_all();
    if (me == 0)
        for (int pe = 0; pe < n; pe++)
            CHECK(offs[pe] == offs[0], "%s: PE %d's offset %ld, PE 0's %ld", what, pe,
                  offs[pe], offs[0]);
    shmem_free(offs);
}

int main(void) {
    shmem_init();
    banner();
    me = shmem_my_pe();
    n = shmem_n_pes();
    char *base = shmem_malloc(1);

    long *a = shmem_malloc(100 * sizeof(long));
    CHECK(a != NULL && (uintptr_t)a % 16 == 0, "malloc gave %p", (void *)a);
    symmetric("malloc", base, a);
    /* The same object on every PE: put into the right neighbour's. */
    for (int i = 0; i < 100; i++) a[i] = -1;
    shmem_barrier_all();
    long mine[100];
    for (int i = 0; i < 100; i++) mine[i] = me * 1000 + i;
    shmem_long_put(a, mine, 100, (me + 1) % n);
    shmem_barrier_all();
    for (int i = 0; i < 100; i++)
        CHECK(a[i] == ((me + n - 1) % n) * 1000 + i, "a[%d] = %ld", i, a[i]);
    ok("malloc: one offset on every PE, a put lands in the peer's block");

    CHECK(shmem_malloc(0) == NULL, "malloc(0)");
    ok("malloc(0) is NULL");

    /* Dirty a block, free it, and calloc over it: zeroed. */
    char *dirty = shmem_malloc(4096);
    memset(dirty, 0xab, 4096);
    shmem_free(dirty);
    char *z = shmem_calloc(512, 8);
    CHECK(z == dirty, "first fit reuses the freed block: %p, %p", (void *)z, (void *)dirty);
    for (int i = 0; i < 4096; i++) CHECK(z[i] == 0, "calloc byte %d = %d", i, z[i]);
    symmetric("calloc", base, z);
    ok("calloc zeroes, and first fit reuses a freed block");

    void *al = shmem_align(4096, 10);
    CHECK((uintptr_t)al % 4096 == 0, "align gave %p", al);
    symmetric("align", base, al);
    ok("align: aligned, one offset on every PE");

    /* Every alignment from a cache line to half the 8 MiB heap: every
     * PE's block is aligned and at one offset (the heap bases agree
     * modulo each). */
    for (size_t align = 128; align <= (4 << 20); align <<= 1) {
        void *b = shmem_align(align, 24);
        CHECK(b != NULL && (uintptr_t)b % align == 0, "align(%zu) gave %p", align, b);
        symmetric("align loop", base, b);
        shmem_free(b);
    }
    ok("align: 128 B to 4 MiB, aligned, one offset on every PE");

    /* realloc keeps the contents, growing and shrinking. */
    int *r = shmem_malloc(10 * sizeof(int));
    for (int i = 0; i < 10; i++) r[i] = me + i;
    int *r2 = shmem_realloc(r, 100000 * sizeof(int));
    for (int i = 0; i < 10; i++) CHECK(r2[i] == me + i, "realloc lost r[%d] = %d", i, r2[i]);
    r2[99999] = 7;
    symmetric("realloc", base, r2);
    int *r3 = shmem_realloc(r2, 5 * sizeof(int));
    CHECK(r3 == r2, "shrinking moved the block");
    for (int i = 0; i < 5; i++) CHECK(r3[i] == me + i, "shrunk r[%d] = %d", i, r3[i]);
    int *rn = shmem_realloc(NULL, 8);
    CHECK(rn != NULL, "realloc(NULL, 8)");
    ok("realloc keeps the contents, grows, shrinks in place, and is malloc for NULL");

    /* Fill most of the 8 MiB heap with 64 KiB blocks, patterned; free
     * every other one, then all; a 7 MiB block fits again. */
    enum { BLOCKS = 100, SIZE = 64 << 10 };
    unsigned char *blk[BLOCKS];
    for (int b = 0; b < BLOCKS; b++) {
        blk[b] = shmem_malloc(SIZE);
        memset(blk[b], b, SIZE);
    }
    for (int b = 0; b < BLOCKS; b++)
        for (int i = 0; i < SIZE; i += 4099)
            CHECK(blk[b][i] == b, "block %d byte %d = %d: blocks overlap", b, i, blk[b][i]);
    for (int b = 0; b < BLOCKS; b += 2) shmem_free(blk[b]);
    for (int b = 1; b < BLOCKS; b += 2) shmem_free(blk[b]);
    void *big = shmem_malloc(7 << 20);
    CHECK(big != NULL, "7 MiB after freeing");
    symmetric("7 MiB", base, big);
    shmem_free(big);
    ok("100 blocks do not overlap; freed, they merge back into one");

    shmem_free(rn);
    shmem_free(r3);
    shmem_free(al);
    shmem_free(z);
    shmem_free(a);
    shmem_free(NULL);
    long *again = shmem_malloc(8);
    CHECK((char *)again == base + 64, "after every free the heap starts over: %p, base %p",
          (void *)again, (void *)base);
    ok("every free returns its block: the next malloc is where the first one was");
    done();
    shmem_finalize();
    return 0;
}
