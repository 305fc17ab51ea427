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
# Offline / air-gapped machines without any base image: see docker/Dockerfile.offline and
# docker-compose.offline.yml.
FROM rust:1-bookworm AS build
WORKDIR /src
COPY docker/cargo-home/ /usr/local/cargo/
# 1. The dependencies, from the manifests only: every workspace crate gets an empty stub.
COPY Cargo.toml Cargo.lock ./
COPY e03-core/Cargo.toml e03-core/
COPY e03-io/Cargo.toml e03-io/
COPY e03-metrics/Cargo.toml e03-metrics/
COPY precise-timer/Cargo.toml precise-timer/
COPY dependency-service/Cargo.toml dependency-service/
COPY client-swarm/Cargo.toml client-swarm/
COPY analyzer/Cargo.toml analyzer/
COPY simulator/Cargo.toml simulator/
COPY lab/Cargo.toml lab/
#    Every target a manifest names (a [[bench]], a `path = "..."`) gets a stub too.
RUN set -eu; \
    for c in e03-core e03-io e03-metrics precise-timer dependency-service client-swarm analyzer simulator lab; do \
        mkdir -p "$c/src"; : >"$c/src/lib.rs"; echo 'fn main() {}' >"$c/src/main.rs"; \
        for b in $(sed -n '/^\[\[bench\]\]/,/^$/s/^name *= *"\(.*\)"/\1/p' "$c/Cargo.toml"); do \
            mkdir -p "$c/benches"; echo 'fn main() {}' >"$c/benches/$b.rs"; \
        done; \
        for p in $(sed -n 's/^path *= *"\(.*\)"/\1/p' "$c/Cargo.toml"); do \
            mkdir -p "$c/$(dirname "$p")"; [ -e "$c/$p" ] || echo 'fn main() {}' >"$c/$p"; \
        done; \
    done; \
    cargo build --release --locked -p lab; \
    rm -rf e03-core e03-io e03-metrics precise-timer dependency-service client-swarm analyzer simulator lab
# 2. The lab's own crates. Their stubs' build results are dropped, so nothing stale survives
#    whatever the sources' timestamps.
COPY . .
RUN cargo clean --release -p e03-core -p e03-io -p e03-metrics -p precise-timer -p dependency-service \
        -p client-swarm -p analyzer -p simulator -p lab \
    && cargo build --release --locked -p lab \
    && cp target/release/lab /usr/local/bin/lab

FROM debian:bookworm-slim
RUN useradd --uid 10001 --user-group --no-create-home --shell /usr/sbin/nologin lab
COPY --from=build /usr/local/bin/lab /lab
USER 10001:10001
ENTRYPOINT ["/lab"]
