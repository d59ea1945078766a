/* Teams: rgex-shmem's C test of section 9.4 (split_strided, split_2d,
 * my_pe, n_pes, translate_pe, get_config, destroy, the predefined teams). */
#include "check.h"

int main(void) {
    shmem_init();
    banner();
    int me, n, right, left;
    neighbours(&me, &n, &right, &left);
    (void)right;
    (void)left;

    CHECK(shmem_team_my_pe(SHMEM_TEAM_WORLD) == me, "world my_pe");
    CHECK(shmem_team_n_pes(SHMEM_TEAM_WORLD) == n, "world n_pes");
    CHECK(shmem_team_my_pe(SHMEM_TEAM_INVALID) == -1, "invalid my_pe");
    CHECK(shmem_team_n_pes(SHMEM_TEAM_INVALID) == -1, "invalid n_pes");
    ok("SHMEM_TEAM_WORLD is the job; SHMEM_TEAM_INVALID answers -1");

    int shared = shmem_team_n_pes(SHMEM_TEAM_SHARED);
    int shared_me = shmem_team_my_pe(SHMEM_TEAM_SHARED);
    CHECK(shared >= 1 && shared <= n && shared_me >= 0 && shared_me < shared,
          "shared %d of %d", shared_me, shared);
    for (int p = 0; p < shared; p++) {
        int w = shmem_team_translate_pe(SHMEM_TEAM_SHARED, p, SHMEM_TEAM_WORLD);
        CHECK(w >= 0 && w < n, "shared PE %d is world %d", p, w);
        long *sym = shmem_malloc(sizeof(long));
        CHECK(shmem_team_ptr(SHMEM_TEAM_SHARED, sym, p) != NULL, "team_ptr of shared PE %d", p);
        shmem_free(sym);
    }
    ok("SHMEM_TEAM_SHARED: its PEs' heaps are reachable by shmem_team_ptr");

    /* The odd world PEs, by split_strided. */
    shmem_team_t odd;
    shmem_team_config_t conf = {.num_contexts = 3};
    int rc = shmem_team_split_strided(SHMEM_TEAM_WORLD, 1, 2, n / 2, &conf,
                                      SHMEM_TEAM_NUM_CONTEXTS, &odd);
    if (n < 2) {
        CHECK(rc != 0 && odd == SHMEM_TEAM_INVALID, "an empty triplet is refused");
    } else {
        CHECK(rc == 0, "split_strided returned %d", rc);
        if (me % 2 == 1) {
            CHECK(odd != SHMEM_TEAM_INVALID, "an odd PE is in the team");
            CHECK(shmem_team_my_pe(odd) == me / 2, "odd my_pe %d", shmem_team_my_pe(odd));
            CHECK(shmem_team_n_pes(odd) == n / 2, "odd n_pes");
            CHECK(shmem_team_translate_pe(odd, 0, SHMEM_TEAM_WORLD) == 1, "odd 0 is world 1");
            CHECK(shmem_team_translate_pe(SHMEM_TEAM_WORLD, me, odd) == me / 2, "world to odd");
            CHECK(shmem_team_translate_pe(SHMEM_TEAM_WORLD, 0, odd) == -1, "world 0 is not odd");
            shmem_team_config_t got = {.num_contexts = -1};
            CHECK(shmem_team_get_config(odd, SHMEM_TEAM_NUM_CONTEXTS, &got) == 0 &&
                      got.num_contexts == 3,
                  "get_config: %d", got.num_contexts);
        } else {
            CHECK(odd == SHMEM_TEAM_INVALID, "an even PE is not in the team");
        }
    }
    ok("split_strided: members, numbering, translate_pe, get_config");

    /* A triplet outside the parent fails alike on every PE. */
    shmem_team_t bad;
    CHECK(shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 1, n + 1, NULL, 0, &bad) != 0 &&
              bad == SHMEM_TEAM_INVALID,
          "a triplet past the parent");
    ok("split_strided refuses a triplet outside the parent");

    /* A grid 2 wide: rows (x) and columns (y). */
    shmem_team_t x, y;
    CHECK(shmem_team_split_2d(SHMEM_TEAM_WORLD, 2, NULL, 0, &x, NULL, 0, &y) == 0, "split_2d");
    int xr = n < 2 ? n : 2;
    CHECK(shmem_team_my_pe(x) == me % xr && shmem_team_my_pe(y) == me / xr,
          "grid position x %d y %d", shmem_team_my_pe(x), shmem_team_my_pe(y));
    int ysize = (n - me % xr + xr - 1) / xr;
    CHECK(shmem_team_n_pes(y) == ysize, "column of %d, want %d", shmem_team_n_pes(y), ysize);
    CHECK(shmem_team_translate_pe(x, 0, SHMEM_TEAM_WORLD) == me - me % xr, "row start");
    ok("split_2d: rows and columns of a grid 2 wide");

    /* Teams made and destroyed many times (their rgex teams are freed). */
    for (int i = 0; i < 50; i++) {
        shmem_team_t t;
        CHECK(shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 1, n, NULL, 0, &t) == 0, "round %d", i);
        CHECK(shmem_team_n_pes(t) == n, "round %d size", i);
        shmem_team_sync(t);
        shmem_team_destroy(t);
    }
    if (odd != SHMEM_TEAM_INVALID) shmem_team_destroy(odd);
    shmem_team_destroy(x);
    shmem_team_destroy(y);
    shmem_team_destroy(SHMEM_TEAM_INVALID);
    ok("50 teams made, synced and destroyed");
    done();
    shmem_finalize();
    return 0;
}
