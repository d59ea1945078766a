//! Programs for the launcher's fault tests, chosen by the first argument:
//!
//! - `die`: after init, the last rank kills itself with SIGKILL while the
//!   others wait in a barrier that can never complete;
//! - `exit3`: after init, rank 1 (or 0 in a job of one) exits with status 3
//!   while the others wait in a barrier.
//!
//! Either way the launcher must end the job, name the rank, and leave
//! nothing in /dev/shm; no rank may hang.

fn main() -> rgex::Result<()> {
    let what = std::env::args().nth(1).unwrap_or_default();
    let client = rgex::init()?;
    let (me, n) = (client.rank().0, client.size());
    match what.as_str() {
        "die" if me == n - 1 => {
            println!("rank {me}: killing myself");
            // SAFETY: raise has no memory-safety preconditions.
            unsafe { libc::raise(libc::SIGKILL) };
            unreachable!("SIGKILL cannot be caught");
        }
        "exit3" if me == 1 % n => {
            println!("rank {me}: exiting with status 3");
            std::process::exit(3);
        }
        "die" | "exit3" => {}
        other => {
            eprintln!("usage: job_faults die|exit3 (got {other:?})");
            std::process::exit(2);
        }
    }
    // Waits for the rank that is gone: only the launcher can end this.
    client.barrier()?;
    eprintln!("rank {me}: the barrier completed although a rank left: wrong");
    std::process::exit(1)
}
