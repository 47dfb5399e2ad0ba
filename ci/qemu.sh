#!/usr/bin/env bash
# wheel-core's FixedWheel and WakerQueue behaviour tests on an emulated
# Cortex-M4 (QEMU's mps2-an386): builds the firmware in ci/qemu-tests, runs
# it with semihosting under a timeout, and fails unless its last result line
# is `N passed, 0 failed` and it exited with success. Installs the rustup
# target and Debian's qemu-system-arm when missing. Run from anywhere.
set -euo pipefail
cd "$(dirname "$0")/.."

source ci/qemu-setup.sh
cargo build --release --bin qemu-tests --manifest-path ci/qemu-tests/Cargo.toml --target "$target"
firmware="$CARGO_TARGET_DIR/$target/release/qemu-tests"

log=$(mktemp)
trap 'rm -f "$log"' EXIT
status=0
# Semihosting can only say success or failure, and a hung test would hang
# QEMU: the counts come from the output, the timeout bounds the run.
timeout 300 "${qemu[@]}" -kernel "$firmware" | tee "$log" || status=$?
last=$(grep -E '^[0-9]+ passed, [0-9]+ failed$' "$log" | tail -n 1 || true)
if [ "$status" -ne 0 ] || [ -z "$last" ] || [ "${last#* passed, }" != "0 failed" ]; then
    echo "qemu tests failed (exit status $status, result: ${last:-none})" >&2
    exit 1
fi
