#!/usr/bin/env bash
# `lab proxy --http` in front of a real upstream the lab did not write: Debian's nginx (installed
# with apt-get when missing) serving a static file, driven by a real client, urllib3's Retry
# (PyPI, pinned, by scripts/pydeps.sh), under examples/proxy/outage-then-429.toml (2 s of 503, then 429 with
# Retry-After: 1). scripts/check-http-proxy.py checks that every request is accounted for on all
# three sides (the client's own retry history, the proxy's records, nginx's access log), that
# lab analyze reads the proxy's log titled with the scenario, and prints what the proxy adds to
# a request on loopback (p50 and p99, direct and through the proxy). About 30 s.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v nginx >/dev/null 2>&1 && [ ! -x /usr/sbin/nginx ]; then
    echo "check-http-proxy: installing Debian's nginx"
    if [ "$(id -u)" = 0 ]; then sudo=(); else sudo=(sudo); fi
    "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends nginx-light >/dev/null 2>&1 ||
        { "${sudo[@]}" apt-get update -q >/dev/null && "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends nginx-light >/dev/null; } ||
        { "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends nginx >/dev/null; }
fi
nginx=$(command -v nginx || echo /usr/sbin/nginx)
pydeps=$(scripts/pydeps.sh 'requests==2.32.3' 'urllib3==2.2.3')
cargo build -p lab --locked --quiet
work=$(mktemp -d /tmp/e03-http-proxy.XXXXXX)
trap 'rm -rf "$work"' EXIT
chmod 755 "$work"  # nginx's worker (another user) reads the file it serves
PYTHONPATH="$pydeps" python3 scripts/check-http-proxy.py "$PWD/target/debug/lab" "$nginx" "$work"
