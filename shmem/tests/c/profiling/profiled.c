/* The program profiler.c measures: a known number of calls to each
 * routine it counts (1 malloc, 5 putmem, 3 long_p, 2 fetch_add and 4
 * barrier_all per PE), checking that each did its work, then
 * "profiled PE N: done" and shmem_finalize. */
#include <shmem.h>
#include <stdio.h>
#include <stdlib.h>

#define CHECK(cond, what)                                                   \
    do {                                                                    \
        if (!(cond)) {                                                      \
            fprintf(stderr, "PE %d: %s\n", shmem_my_pe(), what);            \
            shmem_global_exit(1);                                           \
        }                                                                   \
    } while (0)

int main(void) {
    shmem_init();
    int me = shmem_my_pe(), n = shmem_n_pes(), next = (me + 1) % n;
    long *w = shmem_malloc(8 * sizeof(long));
    CHECK(w != NULL, "shmem_malloc gave NULL");
    for (int i = 0; i < 8; i++) w[i] = 0;
    shmem_barrier_all();
    for (long i = 0; i < 5; i++) {
        long v = 100 * me + i;
        shmem_putmem(&w[i], &v, sizeof v, next);
    }
    for (int i = 0; i < 3; i++) shmem_long_p(&w[5], 1000 + me, next);
    shmem_barrier_all();
    int prev = (me + n - 1) % n;
    for (long i = 0; i < 5; i++) CHECK(w[i] == 100 * prev + i, "putmem's data");
    CHECK(w[5] == 1000 + prev, "long_p's data");
    long old = shmem_long_atomic_fetch_add(&w[6], 1, 0);
    old += shmem_long_atomic_fetch_add(&w[6], 1, 0);
    CHECK(old >= 0 && old <= 4 * n, "fetch_add's old values");
    shmem_barrier_all();
    if (me == 0) CHECK(w[6] == 2 * n, "fetch_add's sum");
    shmem_barrier_all();
    shmem_free(w);
    printf("profiled PE %d: done\n", me);
    fflush(stdout);
    shmem_finalize();
    return 0;
}
