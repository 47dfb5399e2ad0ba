//! `wheel-bench`: reproduces the two seed experiments (many long delays; a
//! schedule + cancel per request) for `wheel-sync` side by side with its peers,
//! each implementation measured in its own child process.
//!
//! Run `wheel-bench --help` for the experiments and their flags.

mod cli;

fn main() -> std::process::ExitCode {
    cli::main()
}
