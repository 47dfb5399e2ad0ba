#!/usr/bin/env bash
# The no-reachable-panic check: ci/nopanic-app calls every FixedWheel and
# WakerQueue operation and its panic handler calls a symbol that exists
# nowhere, so it links only if no panic is reachable from them. Built for
# thumbv7em-none-eabihf, optimised, debug assertions off: with fat LTO (the
# check) and without (where a failure can be traced to its call). Installs
# the rustup target when missing. Run from anywhere.
set -euo pipefail
cd "$(dirname "$0")/.."

target=thumbv7em-none-eabihf
rustup target list --installed | grep -qx "$target" || rustup target add "$target"

export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$PWD/target}/nopanic"
manifest=ci/nopanic-app/Cargo.toml
for profile in release nolto; do
    if ! cargo build --manifest-path "$manifest" --target "$target" --profile "$profile"; then
        echo "A panic is reachable from a wheel-core operation (profile $profile)." >&2
        echo "Functions of the non-LTO build that call into core::panicking:" >&2
        cargo rustc --manifest-path "$manifest" --target "$target" --profile nolto \
            -- --emit=asm -C codegen-units=1 >/dev/null 2>&1 || true
        asm=$(ls -t "$CARGO_TARGET_DIR/$target/nolto/deps/"nopanic_app-*.s | head -n 1)
        awk '/^[_A-Za-z][_A-Za-z0-9$.]*:/ { fn = $1 }
             /\tbl?(\.w)?\t.*(panicking|slice_index_fail|unwrap_failed|expect_failed)/ { print "  " fn }' "$asm" |
            sort | uniq -c >&2
        exit 1
    fi
done
echo "no panic reachable from FixedWheel or WakerQueue"
