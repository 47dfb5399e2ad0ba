#!/usr/bin/env bash
# wheel-core's FixedWheel and WakerQueue behaviour tests on an emulated
# Cortex-M4 (QEMU's mps2-an386): builds the firmware in ci/qemu-tests, runs
# it with semihosting under a timeout, and fails unless its last result line
# is `N passed, 0 failed` and it exited with success. Installs the rustup
# target and Debian's qemu-system-arm when missing. Run from anywhere.
set -euo pipefail
cd "$(dirname "$0")/.."

target=thumbv7em-none-eabihf
rustup target list --installed | grep -qx "$target" || rustup target add "$target"
if ! command -v qemu-system-arm >/dev/null; then
    apt-get update
    DEBIAN_FRONTEND=noninteractive apt-get install -y qemu-system-arm
fi

export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$PWD/target}/qemu"
cargo build --release --manifest-path ci/qemu-tests/Cargo.toml --target "$target"
firmware="$CARGO_TARGET_DIR/$target/release/qemu-tests"

log=$(mktemp)
trap 'rm -f "$log"' EXIT
status=0
# Semihosting can only say success or failure, and a hung test would hang
# QEMU: the counts come from the output, the timeout bounds the run.
timeout 300 qemu-system-arm -cpu cortex-m4 -machine mps2-an386 -nographic \
    -monitor none -serial none -semihosting-config enable=on,target=native \
    -kernel "$firmware" | tee "$log" || status=$?
last=$(grep -E '^[0-9]+ passed, [0-9]+ failed$' "$log" | tail -n 1 || true)
if [ "$status" -ne 0 ] || [ -z "$last" ] || [ "${last#* passed, }" != "0 failed" ]; then
    echo "qemu tests failed (exit status $status, result: ${last:-none})" >&2
    exit 1
fi
