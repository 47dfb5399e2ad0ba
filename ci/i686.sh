#!/usr/bin/env bash
# wheel-core's whole test suite on a 32-bit host (i686, where usize is 32
# bits): its own tests, doctests, and the model tests of wheel-model that
# drive it. Installs the rustup target and Debian's gcc-multilib (the 32-bit
# C runtime the linker needs) if missing. Run from anywhere.
set -euo pipefail
cd "$(dirname "$0")/.."

target=i686-unknown-linux-gnu
rustup target list --installed | grep -qx "$target" || rustup target add "$target"
if ! dpkg -s gcc-multilib >/dev/null 2>&1; then
    apt-get update
    DEBIAN_FRONTEND=noninteractive apt-get install -y gcc-multilib
fi

# Its own target directory: a 32-bit build shares nothing with the host's.
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-target}/i686"
cargo test -p wheel-core --target "$target"
# Without `alloc` the wheel has no staging box: WakerQueue and the sizes as a
# bare-metal build has them.
cargo test -p wheel-core --no-default-features --target "$target" --test waker_queue --test memory
# Model tests: quickcheck against the std models, the fuzz seeds and regressions.
cargo test -p wheel-model --target "$target"
