/* Contexts: rgex-shmem's C test of section 9.6. */
#include "check.h"

static long x[8];

int main(void) {
    shmem_init();
    banner();
    int me, n, right, left;
    neighbours(&me, &n, &right, &left);
    shmem_ctx_t ctx;
    CHECK(shmem_ctx_create(SHMEM_CTX_PRIVATE | SHMEM_CTX_SERIALIZED, &ctx) == 0, "ctx_create");
    CHECK(ctx != SHMEM_CTX_INVALID && ctx != SHMEM_CTX_DEFAULT, "a new handle");
    shmem_team_t t;
    CHECK(shmem_ctx_get_team(ctx, &t) == 0 && t == SHMEM_TEAM_WORLD, "ctx_get_team");
    CHECK(shmem_ctx_get_team(SHMEM_CTX_DEFAULT, &t) == 0 && t == SHMEM_TEAM_WORLD, "default team");
    ok("ctx_create; a context's team is the world");

    long v = 1000 + me;
    shmem_ctx_long_put(ctx, &x[0], &v, 1, right);
    shmem_ctx_long_p(ctx, &x[1], v, right);
    shmem_ctx_putmem_nbi(ctx, &x[2], &v, sizeof v, right);
    shmem_put(ctx, &x[3], &v, 1, right); /* generic, with a context */
    shmem_p(SHMEM_CTX_DEFAULT, &x[4], v, right);
    shmem_ctx_quiet(ctx);
    shmem_barrier_all();
    for (int i = 0; i < 5; i++) CHECK(x[i] == 1000 + left, "x[%d] %ld", i, x[i]);
    CHECK(shmem_ctx_long_g(ctx, &x[0], right) == 1000 + me, "ctx g");
    ok("ctx puts (typed, p, mem nbi, generic) land after ctx_quiet");

    for (int i = 0; i < 10; i++) shmem_ctx_long_atomic_inc(ctx, &x[5], 0);
    shmem_ctx_long_atomic_fetch_add(ctx, &x[6], 2, 0);
    shmem_atomic_add(ctx, &x[7], 3L, 0);
    shmem_ctx_fence(ctx);
    shmem_barrier_all();
    if (me == 0) CHECK(x[5] == 10 * n && x[6] == 2 * n && x[7] == 3 * n, "amos %ld %ld %ld", x[5], x[6], x[7]);
    ok("ctx AMOs");

    /* A context of a team takes the team's PE numbers. */
    shmem_team_t rev;
    shmem_team_split_strided(SHMEM_TEAM_WORLD, n - 1, -1, n, NULL, 0, &rev);
    shmem_ctx_t tctx;
    CHECK(shmem_team_create_ctx(rev, 0, &tctx) == 0, "team_create_ctx");
    shmem_ctx_long_p(tctx, &x[0], -me, 0); /* team PE 0 is world PE n-1 */
    shmem_ctx_quiet(tctx);
    shmem_barrier_all();
    if (me == n - 1) CHECK(x[0] <= 0, "the last world PE got a team write: %ld", x[0]);
    shmem_team_t back;
    CHECK(shmem_ctx_get_team(tctx, &back) == 0 && back == rev, "get_team of a team's ctx");
    shmem_ctx_t none;
    CHECK(shmem_team_create_ctx(SHMEM_TEAM_INVALID, 0, &none) != 0 && none == SHMEM_CTX_INVALID,
          "a context of SHMEM_TEAM_INVALID");
    shmem_ctx_destroy(tctx);
    shmem_ctx_destroy(ctx);
    shmem_team_destroy(rev);
    ok("team_create_ctx: PE numbers are the team's");
    done();
    shmem_finalize();
    return 0;
}
