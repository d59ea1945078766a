/* A C user's first OpenSHMEM program, for tests/install.rs: built with
 * the installed oshcc and with pkg-config's flags, run on 2 PEs. Every
 * PE puts 100 + its number into its right neighbour's symmetric x. */
#include <shmem.h>
#include <stdio.h>

int main(void) {
    shmem_init();
    int me = shmem_my_pe(), n = shmem_n_pes();
    long *x = shmem_malloc(sizeof *x);
    long mine = 100 + me;
    shmem_long_put(x, &mine, 1, (me + 1) % n);
    shmem_barrier_all();
    printf("PE %d of %d got %ld from PE %d\n", me, n, *x, (me + n - 1) % n);
    shmem_free(x);
    shmem_finalize();
    return 0;
}
