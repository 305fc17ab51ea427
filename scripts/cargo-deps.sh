#!/usr/bin/env bash
# Seeds target/ with the workspace's crates.io dependencies, compiled once per set of locked
# inputs and kept in a cache outside the clone, as CI systems keep a dependency build keyed by
# its lock file (and as the standard Dockerfile's dependency layer does for the image).
#
#   scripts/cargo-deps.sh        # before the first cargo command of a fresh clone
#
# The key is Cargo.lock, every workspace manifest and the toolchain's version. On a miss, the
# dependencies are built (debug, every target, and clippy's check) in a copy of the workspace
# whose crates are empty stubs, so nothing of the lab's own code is compiled into the cache;
# its stubs' outputs are then removed. On a hit, or after the miss, the cache is copied into
# target/ when target/ holds no build yet, and cargo compiles only the lab's own crates.
# Nothing is ever copied over an existing build. A machine without the cache builds it once,
# which takes as long as the build it saves.
#
# Env: E03_CACHE_DIR, the cache's root (default ${XDG_CACHE_HOME:-~/.cache}/e03-lab);
# E03_CARGO_DEPS=0 skips this step on purpose.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "${E03_CARGO_DEPS:-1}" = 0 ]; then
    echo "cargo-deps: skipped (E03_CARGO_DEPS=0)"
    exit 0
fi
if [ -d target/debug/deps ] && [ -n "$(ls -A target/debug/deps 2>/dev/null)" ]; then
    echo "cargo-deps: target/ already holds a build; nothing to seed"
    exit 0
fi
root=${E03_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/e03-lab}
if ! mkdir -p "$root/cargo-deps" 2>/dev/null || [ ! -w "$root/cargo-deps" ]; then
    echo "cargo-deps: the cache folder $root/cargo-deps cannot be written; building without it"
    exit 0
fi
members=$(sed -n '/^members *=/s/.*\[\(.*\)\].*/\1/p' Cargo.toml | tr -d '" ' | tr ',' ' ')
key=$( {
    cat Cargo.lock Cargo.toml
    for m in $members; do cat "$m/Cargo.toml"; done
    rustc -vV
    cargo -V
    cargo clippy -V 2>/dev/null || true
    echo "${RUSTFLAGS:-}"
} | sha256sum | cut -c1-16)
cache="$root/cargo-deps/$key"
# One build of a key at a time (two clones testing at once wait for each other here).
exec 9>"$cache.lock"
flock 9

if [ ! -f "$cache/.complete" ]; then
    echo "cargo-deps: building the dependencies once into $cache (a few minutes)"
    rm -rf "$cache"
    mkdir -p "$cache/src"
    cp Cargo.toml Cargo.lock "$cache/src/"
    [ -d .cargo ] && cp -R .cargo "$cache/src/"
    # Every member an empty stub: a lib, a bin, and every target its manifest names.
    for m in $members; do
        mkdir -p "$cache/src/$m/src"
        cp "$m/Cargo.toml" "$cache/src/$m/"
        : >"$cache/src/$m/src/lib.rs"
        echo 'fn main() {}' >"$cache/src/$m/src/main.rs"
        for b in $(sed -n '/^\[\[bench\]\]/,/^$/s/^name *= *"\(.*\)"/\1/p' "$m/Cargo.toml"); do
            mkdir -p "$cache/src/$m/benches"
            echo 'fn main() {}' >"$cache/src/$m/benches/$b.rs"
        done
        for p in $(sed -n 's/^path *= *"\(.*\)"/\1/p' "$m/Cargo.toml"); do
            mkdir -p "$cache/src/$m/$(dirname "$p")"
            [ -e "$cache/src/$m/$p" ] || echo 'fn main() {}' >"$cache/src/$m/$p"
        done
    done
    (
        cd "$cache/src"
        export CARGO_TARGET_DIR="$cache/target"
        cargo build --workspace --all-targets --locked --quiet
        cargo clippy --workspace --all-targets --locked --quiet
        # The stubs' own outputs: gone, so that only the dependencies are kept.
        pkgs=()
        # By package name (a member's path, such as examples/audit/rust-clients, is not one).
        for m in $members; do
            pkgs+=(-p "$(sed -n '/^\[package\]/,/^\[/s/^name *= *"\(.*\)"/\1/p' "$m/Cargo.toml" | head -n 1)")
        done
        cargo clean "${pkgs[@]}" --quiet
    )
    rm -rf "$cache/src"
    touch "$cache/.complete"
    echo "cargo-deps: cached $(du -sh "$cache/target" | cut -f1)"
fi
mkdir -p target
cp -a --reflink=auto "$cache/target/." target/
echo "cargo-deps: target/ seeded with the dependencies built for $key ($(du -sh "$cache/target" | cut -f1))"
