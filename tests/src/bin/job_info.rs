//! job_info: the job as the bootstrap found it. Every rank checks that the
//! ranks agree on the size, that each rank is present once (an allgather of
//! ranks and an allreduce of their sum), then rank 0 prints
//! `ok: N ranks via BOOTSTRAP` and every rank `ok: rank R of N`.
//! Used to check the bootstrap paths: rgex-run, PMIx (mpirun, srun), one rank.

use rgex::{Rank, ReduceOp};

fn main() -> rgex::Result<()> {
    let client = rgex::init()?;
    let (me, n) = (client.rank().0, client.size());
    let boot = client.endpoint().conduit().bootstrap();
    let all = boot.allgather(&me.to_le_bytes())?;
    let ranks: Vec<u32> = all
        .iter()
        .map(|b| u32::from_le_bytes(b.as_slice().try_into().expect("4 bytes from every rank")))
        .collect();
    assert_eq!(
        ranks,
        (0..n).collect::<Vec<_>>(),
        "{}: allgather of ranks",
        Rank(me)
    );
    let sum = client.world().allreduce(&[u64::from(me)], ReduceOp::Sum)?[0];
    assert_eq!(
        sum,
        u64::from(n) * u64::from(n - 1) / 2,
        "allreduce of ranks"
    );
    boot.barrier()?;
    client.barrier()?;
    if me == 0 {
        println!("ok: {n} ranks via {}", boot.name());
    }
    println!("ok: rank {me} of {n}");
    Ok(())
}
