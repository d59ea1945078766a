//! `rgex-run -n N [--conduit C] [--bind] [--timeout SECS] PROGRAM [ARGS...]`:
//! start N ranks of PROGRAM on this node. See [`rgex::launch::cli`].

fn main() {
    std::process::exit(rgex::launch::cli::main());
}
