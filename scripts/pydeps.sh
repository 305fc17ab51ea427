#!/usr/bin/env bash
# Prints the folder that holds the pinned Python packages named, installing them from PyPI first
# when they are not there yet. The folder is a cache outside the clone, keyed by the Python
# version and the pins, as CI systems keep such installs: a second clone on the same machine
# reuses it, and a change of pin or Python makes a new one. A machine without the cache installs
# once, only slower.
#
#   dir=$(scripts/pydeps.sh 'requests==2.32.3' 'urllib3==2.2.3')
#   PYTHONPATH="$dir" python3 ...
#
# Env: E03_CACHE_DIR, the cache's root (default ${XDG_CACHE_HOME:-~/.cache}/e03-lab); when it
# cannot be written, target/e03-python-cache in the clone is used instead.
set -euo pipefail
if [ "$#" -eq 0 ]; then
    echo "pydeps: name at least one pinned package, e.g. 'requests==2.32.3'" >&2
    exit 2
fi
for pin in "$@"; do
    case "$pin" in
        *==*) ;;
        *) echo "pydeps: '$pin' is not pinned: expected NAME==VERSION" >&2; exit 2 ;;
    esac
done
root=${E03_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/e03-lab}
if ! mkdir -p "$root/python" 2>/dev/null || [ ! -w "$root/python" ]; then
    root="$(cd "$(dirname "$0")/.." && pwd)/target/e03-python-cache"
    mkdir -p "$root/python"
fi
key=$( { python3 -c 'import sys; print(sys.version)'; printf '%s\n' "$@" | sort; } | sha256sum | cut -c1-16)
dir="$root/python/$key"
if [ ! -f "$dir/.complete" ]; then
    tmp=$(mktemp -d "$root/python/.install.XXXXXX")
    trap 'rm -rf "$tmp"' EXIT
    python3 -m pip install --quiet --disable-pip-version-check --no-warn-script-location \
        --target "$tmp" "$@" >&2
    printf '%s\n' "$@" >"$tmp/.complete"
    # Another run may have finished the same install meanwhile: keep the first.
    if ! mv -T "$tmp" "$dir" 2>/dev/null; then
        rm -rf "$tmp"
    fi
    trap - EXIT
fi
echo "$dir"
