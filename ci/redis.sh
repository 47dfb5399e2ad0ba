#!/usr/bin/env bash
# The redis experiment in CI: installs redis-server (Debian's package, which
# also brings redis-benchmark) if it is missing, runs the client's tests
# against a real server, and a --quick run of `wheel-bench redis` with both
# workloads and all seven mechanisms, the server and the client pinned to CPUs
# of their own, which fails if any row has errors.
# Exits non-zero on any failure. Called by .ci/run; runnable on its own.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v redis-server >/dev/null; then
    apt-get update
    apt-get install -y redis-server
fi
redis-server --version

# The tests fail, rather than skip, without a server when CI is set. Debug,
# as `cargo test --workspace` builds them.
CI=1 cargo test -p wheel-bench --test redis
cargo run --release -p wheel-bench -- redis --quick --pin \
    --workload set,list --impls none,executor-2,executor-8,wheel,none-async,wheel-async,tokio
# The stall mode: every caller's command in flight times out once, and the
# run fails if any reply is lost, doubled or mismatched.
cargo run --release -p wheel-bench -- redis --quick --threads 50 --secs 2 \
    --workload set --timeout-ms 300 --stall-ms 500
