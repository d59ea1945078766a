/* Bad input: each case must end the job with a non-zero status and a
 * message naming the PE, the call, the argument and the limit
 * (shmem/tests/c.rs checks both). Usage: errors CASE. */
#include <shmem.h>
#include <stdio.h>
#include <string.h>

int main(int argc, char **argv) {
    const char *c = argc > 1 ? argv[1] : "";
    if (strcmp(c, "before_init") == 0) {
        printf("n_pes before init: %d\n", shmem_n_pes());
        return 0;
    }
    shmem_init();
    int me = shmem_my_pe(), n = shmem_n_pes();
    long *sym = shmem_malloc(8 * sizeof(long));
    long local[8] = {0};
    shmem_barrier_all();
    if (strcmp(c, "not_symmetric") == 0 && me == 0) {
        shmem_long_put(local, sym, 8, (me + 1) % n);
    } else if (strcmp(c, "pe_out_of_range") == 0 && me == 0) {
        shmem_long_p(sym, 1, n);
    } else if (strcmp(c, "past_the_heap") == 0 && me == 0) {
        /* 8 longs from the block's start are fine; from 2 before the end
         * of the heap they are not. */
        shmem_getmem(local, (char *)sym + (8 << 20) - 16, 64, 0);
    } else if (strcmp(c, "out_of_heap") == 0) {
        shmem_malloc(1UL << 40);
    } else if (strcmp(c, "align_too_large") == 0) {
        shmem_align((size_t)1 << 31, 8);
    } else if (strcmp(c, "mismatch") == 0) {
        shmem_malloc(me == 0 ? 64 : 128);
    } else if (strcmp(c, "bad_free") == 0) {
        shmem_free(sym + 1);
    } else if (strcmp(c, "bad_cmp") == 0 && me == 0) {
        shmem_long_wait_until(sym, 42, 0);
    } else if (strcmp(c, "bad_sig_op") == 0 && me == 0) {
        shmem_putmem_signal(sym, local, 8, (uint64_t *)sym + 7, 1, 9, 0);
    } else if (strcmp(c, "after_finalize") == 0) {
        shmem_finalize();
        shmem_barrier_all();
    }
    shmem_barrier_all();
    printf("PE %d: case %s ended without an error\n", me, c);
    shmem_finalize();
    return 0;
}
