#!/usr/bin/env bash
# Local stand-ins for the two base images of the standard Dockerfile, for machines that cannot
# pull them (no registry): debian:bookworm-slim from `debootstrap --variant=minbase bookworm`,
# and rust:1-bookworm = the same plus gcc/libc6-dev and this host's Rust toolchain (rustup's
# default), with PATH, CARGO_HOME and RUSTUP_HOME set as in the official image. An image that is
# already present, or that `docker pull` gets, is used as it is. Prints which images are
# stand-ins. Needs root (debootstrap), and Debian's package mirror.
set -euo pipefail
cd "$(dirname "$0")/.."

have() { docker image inspect "$1" >/dev/null 2>&1; }
need_slim=0 need_rust=0
for img in debian:bookworm-slim rust:1-bookworm; do
    if have "$img"; then
        continue
    fi
    if docker pull "$img" >/dev/null 2>&1; then
        echo "standin-images: pulled $img"
        continue
    fi
    case "$img" in
        debian:*) need_slim=1 ;;
        rust:*) need_rust=1 ;;
    esac
done
if [ "$need_slim$need_rust" = 00 ]; then
    echo "standin-images: debian:bookworm-slim and rust:1-bookworm are present; no stand-in needed"
    exit 0
fi
if ! command -v debootstrap >/dev/null 2>&1; then
    echo "standin-images: installing debootstrap (Debian package)"
    if ! apt-get install -y debootstrap >/dev/null 2>&1; then
        apt-get update >/dev/null
        apt-get install -y debootstrap >/dev/null
    fi
fi
work=$(mktemp -d /var/tmp/e03-standin.XXXXXX)
trap 'rm -rf "$work"' EXIT
root="$work/rootfs"
mirror=${E03_DEBIAN_MIRROR:-http://deb.debian.org/debian}
echo "standin-images: debootstrap bookworm from $mirror (a few minutes)"
debootstrap --variant=minbase bookworm "$root" "$mirror" >"$work/debootstrap.log" 2>&1 || {
    tail -20 "$work/debootstrap.log" >&2
    echo "standin-images: debootstrap failed" >&2
    exit 1
}
rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/*
if [ "$need_slim" = 1 ]; then
    tar -C "$root" -c . | docker import \
        --change 'CMD ["bash"]' \
        --message "e03 stand-in for debian:bookworm-slim (debootstrap minbase)" - debian:bookworm-slim >/dev/null
    echo "standin-images: STAND-IN built: debian:bookworm-slim (debootstrap minbase bookworm)"
fi
if [ "$need_rust" = 1 ]; then
    cp /etc/resolv.conf "$root/etc/resolv.conf"
    chroot "$root" apt-get update >"$work/apt.log" 2>&1
    chroot "$root" env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
        gcc libc6-dev ca-certificates >>"$work/apt.log" 2>&1 || {
        tail -20 "$work/apt.log" >&2
        echo "standin-images: installing gcc in the stand-in failed" >&2
        exit 1
    }
    rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/*
    : >"$root/etc/resolv.conf"
    toolchain=$(rustc --print sysroot)
    mkdir -p "$root/usr/local/rustup/toolchain" "$root/usr/local/cargo/bin"
    # The compiler, cargo and the standard library; no docs.
    tar -C "$toolchain" -c --exclude=share/doc --exclude='lib/rustlib/*/share' bin lib libexec etc \
        | tar -C "$root/usr/local/rustup/toolchain" -x
    for tool in cargo rustc rustdoc; do
        ln -sf "/usr/local/rustup/toolchain/bin/$tool" "$root/usr/local/cargo/bin/$tool"
    done
    tar -C "$root" -c . | docker import \
        --change 'ENV PATH=/usr/local/cargo/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
        --change 'ENV CARGO_HOME=/usr/local/cargo' \
        --change 'ENV RUSTUP_HOME=/usr/local/rustup' \
        --change 'CMD ["bash"]' \
        --message "e03 stand-in for rust:1-bookworm (debootstrap + host toolchain $(rustc -V))" \
        - rust:1-bookworm >/dev/null
    echo "standin-images: STAND-IN built: rust:1-bookworm (debootstrap bookworm, gcc, host's $(rustc -V))"
fi
