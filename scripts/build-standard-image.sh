#!/usr/bin/env bash
# Builds the standard Dockerfile on this machine, as Compose v1 and the legacy builder do
# (DOCKER_BUILDKIT=0, no BuildKit), and tags it e03-lab:latest (the compose files' image) and
# e03-lab:standard.
#
# Two things this machine lacks are supplied here, and only here:
#   - the base images: scripts/standin-images.sh builds local stand-ins from Debian's packages
#     when `docker pull` fails (it says so);
#   - crates.io from inside a container: the build context is a temporary copy of the
#     repository plus `cargo vendor` output and a cargo source replacement in
#     docker/cargo-home/ (see docker/cargo-home/README.md). A user's normal build downloads
#     the crates as usual.
# The repository itself is not changed. Env: E03_KEEP_CONTEXT=1 keeps the temporary context.
set -euo pipefail
cd "$(dirname "$0")/.."
# The Dockerfile names every workspace crate's manifest (its dependency layer); a crate added to
# the workspace but not to the Dockerfile would only fail deep inside the build.
members=$(sed -n '/^members *=/s/.*\[\(.*\)\].*/\1/p' Cargo.toml | tr -d '" ' | tr ',' ' ')
for m in $members; do
    if ! grep -q "^COPY $m/Cargo.toml $m/" Dockerfile || ! grep -q "for c in .*\b$m\b" Dockerfile; then
        echo "build-standard-image: the Dockerfile's dependency layer does not list the workspace crate $m" >&2
        exit 1
    fi
done
scripts/standin-images.sh
ctx=$(mktemp -d /var/tmp/e03-build-context.XXXXXX)
cleanup() { if [ "${E03_KEEP_CONTEXT:-0}" != 1 ]; then rm -rf "$ctx"; fi; }
trap cleanup EXIT
# The repository's files as they are in the work tree (tracked, and new files git does not ignore).
git ls-files -z --cached --others --exclude-standard | while IFS= read -r -d '' f; do
    [ -e "$f" ] && printf '%s\0' "$f"
done | xargs -0 cp --parents -t "$ctx"
echo "build-standard-image: vendoring the crates (cargo vendor) into the build context"
cargo vendor --locked --quiet "$ctx/docker/cargo-home/vendor" >/dev/null
cat >"$ctx/docker/cargo-home/config.toml" <<'TOML'
[source.crates-io]
replace-with = "vendored-sources"

[source.vendored-sources]
directory = "/usr/local/cargo/vendor"
TOML
echo "build-standard-image: docker build (legacy builder) of Dockerfile, context $(du -sh "$ctx" | cut -f1)"
start=$(date +%s)
DOCKER_BUILDKIT=0 docker build -f "$ctx/Dockerfile" -t e03-lab:latest -t e03-lab:standard "$ctx"
echo "build-standard-image: built e03-lab:latest from the standard Dockerfile in $(( $(date +%s) - start )) s"
