/* shmem_global_exit: PE 0 ends the job with the status argv[1] names
 * while every other PE waits for a word nobody writes; the job must end
 * with that status, the waiters never going on. */
#include "check.h"
#include <stdlib.h>

static long never;

int main(int argc, char **argv) {
    int status = argc > 1 ? atoi(argv[1]) : 3;
    shmem_init();
    banner();
    shmem_barrier_all();
    if (shmem_my_pe() == 0) {
        printf("PE 0: global exit with status %d\n", status);
        shmem_global_exit(status);
        printf("PE 0: went on after shmem_global_exit\n");
    } else {
        shmem_long_wait_until(&never, SHMEM_CMP_EQ, 1);
        printf("PE %d: the wait ended\n", shmem_my_pe());
    }
    shmem_finalize();
    return 0;
}
