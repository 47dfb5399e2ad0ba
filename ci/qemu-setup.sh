# Sourced by ci/qemu.sh and ci/qemu-count.sh, from the repository's root:
# installs the rustup target and Debian's qemu-system-arm when missing,
# points cargo at the firmware's own target directory, and sets `qemu` to
# the emulator's command line for QEMU's mps2-an386 (a Cortex-M4) with
# semihosting, to which the caller adds its flags and `-kernel`.
target=thumbv7em-none-eabihf
rustup target list --installed | grep -qx "$target" || rustup target add "$target"
if ! command -v qemu-system-arm >/dev/null; then
    apt-get update
    DEBIAN_FRONTEND=noninteractive apt-get install -y qemu-system-arm
fi
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$PWD/target}/qemu"
qemu=(qemu-system-arm -cpu cortex-m4 -machine mps2-an386 -nographic
    -monitor none -serial none -semihosting-config enable=on,target=native)
