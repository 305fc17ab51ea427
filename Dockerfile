# The lab's image: one static-ish `lab` binary that serves (`lab serve`), swarms (`lab swarm`)
# and reports (`lab report`). Built in the official Rust image, run in a small Debian image as a
# non-root user. BuildKit cache mounts keep the crates.io downloads and the dependency builds
# between source edits, so a rebuild after an edit compiles only the lab's own crates.
#
# Offline / air-gapped machines: see docker/Dockerfile.offline and docker-compose.offline.yml.
FROM rust:1-bookworm AS build
WORKDIR /src
COPY . .
RUN --mount=type=cache,target=/usr/local/cargo/registry \
    --mount=type=cache,target=/src/target \
    cargo build --release --locked -p lab \
    && cp target/release/lab /usr/local/bin/lab

FROM debian:bookworm-slim
RUN useradd --uid 10001 --user-group --no-create-home --shell /usr/sbin/nologin lab
COPY --from=build /usr/local/bin/lab /lab
USER 10001:10001
ENTRYPOINT ["/lab"]
