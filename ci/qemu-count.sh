#!/usr/bin/env bash
# WakerQueue against embassy's ConstGenericQueue on an emulated Cortex-M4:
# builds ci/qemu-tests' `count` firmware (release, without the tests'
# checks) and runs it on QEMU's mps2-an386 with `-icount shift=6`, which
# makes its SysTick count executed instructions; prints instructions a call
# at 8, 64 and 512 pending tasks. Fails unless the counter's calibration
# reads 2 instructions a turn of a two-instruction loop and the firmware
# exits with success. Installs the rustup target and qemu-system-arm when
# missing. Run from anywhere.
set -euo pipefail
cd "$(dirname "$0")/.."

source ci/qemu-setup.sh
cargo build --profile count --bin count --manifest-path ci/qemu-tests/Cargo.toml --target "$target"
firmware="$CARGO_TARGET_DIR/$target/count/count"

log=$(mktemp)
trap 'rm -f "$log"' EXIT
status=0
timeout 300 "${qemu[@]}" -icount shift=6 -kernel "$firmware" | tee "$log" || status=$?
if [ "$status" -ne 0 ] || ! grep -q '^calibration: 2 instructions a turn' "$log"; then
    echo "qemu count failed (exit status $status, or the counter is not counting instructions)" >&2
    exit 1
fi
