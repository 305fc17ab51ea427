#!/usr/bin/env bash
# Builds a statically linked `lab` on this host and puts it where docker/Dockerfile.offline
# expects it (docker/offline/lab). Needs only the Rust toolchain and glibc's static libraries
# (Debian: libc6-dev, installed with gcc), no network beyond crates.io.
set -euo pipefail
cd "$(dirname "$0")/.."
host=$(rustc -vV | sed -n 's/^host: //p')
RUSTFLAGS="-C target-feature=+crt-static -C strip=debuginfo" cargo build --release --locked -p lab --target "$host"
mkdir -p docker/offline
cp "target/$host/release/lab" docker/offline/lab
if ! ldd docker/offline/lab 2>&1 | grep -Eq 'statically linked|not a dynamic executable'; then
    echo "build-static: docker/offline/lab is dynamically linked; a FROM scratch image cannot run it" >&2
    exit 1
fi
echo "build-static: docker/offline/lab ($(du -h docker/offline/lab | cut -f1), statically linked)"
