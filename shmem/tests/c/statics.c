/* Symmetric static data: rgex-shmem's C test of global and static
 * variables as symmetric objects (section 3). */
#include "check.h"

long global_counter;                 /* bss */
int initialised[4] = {1, 2, 3, 4};   /* data */
static double table[1024];           /* static bss */
static long flag;

int main(void) {
    shmem_init();
    banner();
    int me, n, right, left;
    neighbours(&me, &n, &right, &left);
    CHECK(shmem_addr_accessible(&global_counter, right) == 1, "a global is accessible");
    CHECK(shmem_addr_accessible(table, right) == 1 && shmem_addr_accessible(&table[1023], left) == 1,
          "a static array is accessible");
    ok("addr_accessible: global and static variables");

    CHECK(initialised[3] == 4, "data kept its value");
    shmem_int_p(&initialised[0], 100 + me, right);
    for (int i = 0; i < 1024; i++) table[i] = me * 10000 + i;
    shmem_barrier_all();
    double got[1024];
    shmem_double_get(got, table, 1024, right);
    for (int i = 0; i < 1024; i++) CHECK(got[i] == right * 10000 + i, "table[%d] %f", i, got[i]);
    shmem_barrier_all();
    CHECK(initialised[0] == 100 + left, "initialised[0] %d", initialised[0]);
    ok("put and get on initialised data and a static bss array");

    for (int i = 0; i < 5; i++) shmem_long_atomic_add(&global_counter, i + 1, 0);
    shmem_barrier_all();
    if (me == 0) CHECK(global_counter == 15L * n, "counter %ld", global_counter);
    ok("AMOs on a global");

    /* A wait on a static word, set by the left neighbour. */
    shmem_long_atomic_set(&flag, me + 1, right);
    shmem_long_wait_until(&flag, SHMEM_CMP_EQ, left + 1);
    ok("wait_until on a static word");
    done();
    shmem_finalize();
    return 0;
}
