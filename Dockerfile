# The lab's image: one `lab` binary that serves (`lab serve`), swarms (`lab swarm`) and reports
# (`lab report`). Built in the official Rust image, run in a small Debian image as a non-root
# user. It builds with BuildKit and with the legacy builder alike (Compose v1, `DOCKER_BUILDKIT=0`):
# no `RUN --mount`. Dependency caching comes from layers instead: the crates.io dependencies are
# fetched and compiled from the manifests alone, in a layer that a source edit does not touch, so
# a rebuild after an edit compiles only the lab's own crates.
#
# docker/cargo-home/ is copied into CARGO_HOME. In the repository it holds only a README; a build
# context that adds a `config.toml` and a `vendor/` directory there (scripts/build-standard-image.sh
# does, for machines whose containers cannot reach crates.io) builds from vendored crates.
#
# The binary is linked statically (glibc's static libraries, from libc6-dev; names are resolved by
# the lab's own DNS client), so the one build serves this image and the FROM scratch images of
# the offline path too (docker/Dockerfile.offline; scripts/test-compose.sh copies it out of this
# image instead of compiling the lab a second time).
#
# Offline / air-gapped machines without any base image: see docker/Dockerfile.offline and
# docker-compose.offline.yml.
FROM rust:1-bookworm AS build
WORKDIR /src
# As scripts/build-static.sh: static, no debug info. The target is named so that the flags reach
# the lab and not the build scripts and proc macros, which run on the build machine.
ENV RUSTFLAGS="-C target-feature=+crt-static -C strip=debuginfo"
COPY docker/cargo-home/ /usr/local/cargo/
# 1. The dependencies, from the manifests only: every workspace crate gets an empty stub.
COPY Cargo.toml Cargo.lock ./
COPY e03-model/Cargo.toml e03-model/
COPY e03-plan/Cargo.toml e03-plan/
COPY e03-io/Cargo.toml e03-io/
COPY e03-metrics/Cargo.toml e03-metrics/
COPY precise-timer/Cargo.toml precise-timer/
COPY dependency-service/Cargo.toml dependency-service/
COPY client-swarm/Cargo.toml client-swarm/
COPY analyzer/Cargo.toml analyzer/
COPY simulator/Cargo.toml simulator/
COPY lab/Cargo.toml lab/
# The audit's Rust clients (docs/clients.md): a workspace member, so its manifest must be here;
# `-p lab` does not build it.
COPY examples/audit/rust-clients/Cargo.toml examples/audit/rust-clients/
#    Every target a manifest names (a [[bench]], a `path = "..."`) gets a stub too.
RUN set -eu; \
    for c in e03-model e03-plan e03-io e03-metrics precise-timer dependency-service client-swarm analyzer simulator lab examples/audit/rust-clients; do \
        mkdir -p "$c/src"; : >"$c/src/lib.rs"; echo 'fn main() {}' >"$c/src/main.rs"; \
        for b in $(sed -n '/^\[\[bench\]\]/,/^$/s/^name *= *"\(.*\)"/\1/p' "$c/Cargo.toml"); do \
            mkdir -p "$c/benches"; echo 'fn main() {}' >"$c/benches/$b.rs"; \
        done; \
        for p in $(sed -n 's/^path *= *"\(.*\)"/\1/p' "$c/Cargo.toml"); do \
            mkdir -p "$c/$(dirname "$p")"; [ -e "$c/$p" ] || echo 'fn main() {}' >"$c/$p"; \
        done; \
    done; \
    cargo build --release --locked -p lab --target "$(rustc -vV | sed -n 's/^host: //p')"; \
    rm -rf e03-model e03-plan e03-io e03-metrics precise-timer dependency-service client-swarm analyzer simulator lab examples
# 2. The lab's own crates. Their stubs' build results are dropped, so nothing stale survives
#    whatever the sources' timestamps.
COPY . .
RUN host=$(rustc -vV | sed -n 's/^host: //p') \
    && cargo clean --release --target "$host" -p e03-model -p e03-plan -p e03-io -p e03-metrics -p precise-timer \
        -p dependency-service -p client-swarm -p analyzer -p simulator -p lab \
    && cargo build --release --locked -p lab --target "$host" \
    && cp "target/$host/release/lab" /usr/local/bin/lab

FROM debian:bookworm-slim
RUN useradd --uid 10001 --user-group --no-create-home --shell /usr/sbin/nologin lab
COPY --from=build /usr/local/bin/lab /lab
USER 10001:10001
ENTRYPOINT ["/lab"]
