#!/usr/bin/env bash
# Runs every shell command the docs show, so they cannot drift from the lab:
#   - every fenced ```sh block of README.md, ARCHITECTURE.md and docs/*.md, as a bash script, in
#     a fresh temporary folder (relative paths such as results/ and logs/ land there; E03_OUT
#     points there too, so nothing is written into the repository), with `lab`,
#     `cargo run --release [-p lab] --` and `./target/release/lab` standing for the lab built by
#     `cargo build -p lab` (the debug build `cargo test` made); whatever a block leaves running
#     is stopped when it ends;
#   - a command already run by an earlier block is not run again (it says so);
#   - Docker commands (docker, docker-compose, scripts/compose*.sh, scripts/build-*.sh) are not
#     run here: scripts/test-compose.sh runs the compose topology, the offline images and the
#     standard image (the last step of ./test-e03.sh), and this script says so for each;
#     `./test-e03.sh` is the command running this script, and `cargo build --release` is
#     replaced by the debug build;
#   - every file in examples/ must be used by a command that ran;
#   - every relative link of those pages must name a file that exists, and an anchor that exists.
# Blocks that record how a figure was measured, and take minutes, are not ```sh blocks (see
# docs/measurements.md). Usage: scripts/check-docs.sh [FILE.md ...] (default: all the pages).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

cargo build -p lab --locked --quiet

work=$(mktemp -d /tmp/e03-check-docs.XXXXXX)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/bin"
ln -s "$root/target/debug/lab" "$work/bin/lab"

if [ "$#" -gt 0 ]; then
    pages=("$@")
else
    pages=(README.md ARCHITECTURE.md docs/*.md)
fi

# The blocks, as scripts: $work/blocks/NNN.sh, with $work/blocks/NNN.where naming the page and
# line, and $work/used naming the examples/ files the commands use.
python3 - "$work" "${pages[@]}" <<'PY'
import os, re, shlex, sys
work, pages = sys.argv[1], sys.argv[2:]
os.makedirs(f"{work}/blocks")
DOCKER = re.compile(r"(^|[\s;&|(=])(docker|docker-compose)\s|(^|\s)(\./)?scripts/(compose[\w-]*|test-compose|build-standard-image|build-static|standin-images)\.sh")
seen = set()
used = set()
n = 0
for page in pages:
    lines = open(page).read().split("\n")
    i = 0
    while i < len(lines):
        if lines[i].strip() != "```sh":
            i += 1
            continue
        start = i + 1
        j = start
        while lines[j].strip() != "```":
            j += 1
        body, cmd = [], ""
        for raw in lines[start:j]:
            cmd += raw
            if raw.endswith("\\"):
                cmd = cmd[:-1] + " "
                continue
            line, cmd = cmd, ""
            text = line.split(" #")[0].strip() if not line.lstrip().startswith("#") else ""
            if not text:
                continue
            norm = re.sub(r"cargo run --release( -p lab)? --(?= )", "lab", text)
            norm = re.sub(r"\./target/release/lab(?= )", "lab", norm)
            norm = re.sub(r"\s+", " ", norm)
            if DOCKER.search(norm):
                body.append("echo " + shlex.quote(f"not run here (Docker; scripts/test-compose.sh runs it): {text}"))
                continue
            if norm in ("./test-e03.sh",):
                body.append("echo " + shlex.quote(f"not run here (the test command that runs this script): {text}"))
                continue
            if norm.startswith("cargo build --release"):
                body.append("echo " + shlex.quote(f"not run here (the debug build stands for it): {text}"))
                continue
            if norm in seen and not norm.endswith("&") and not norm.startswith("kill "):
                body.append("echo " + shlex.quote(f"already run above: {text}"))
                continue
            seen.add(norm)
            used.update(re.findall(r"examples/[\w.-]+", norm))
            body.append("echo " + shlex.quote(f"+ {text}"))
            body.append(norm)
        n += 1
        with open(f"{work}/blocks/{n:03}.sh", "w") as f:
            f.write("\n".join(body) + "\n")
        with open(f"{work}/blocks/{n:03}.where", "w") as f:
            f.write(f"{page}:{start}")
        i = j + 1
with open(f"{work}/used", "w") as f:
    f.write("\n".join(sorted(used)) + "\n")
PY

failed=0
total_start=$(date +%s)
for block in "$work"/blocks/*.sh; do
    [ -e "$block" ] || continue # a page with no sh block (then only its links are checked)
    where=$(cat "${block%.sh}.where")
    dir="$work/run-$(basename "$block" .sh)"
    mkdir -p "$dir"
    ln -s "$root/examples" "$dir/examples"
    start=$(date +%s)
    # `lab` is the lab just built, first on PATH; every E03_* of the caller is dropped so the
    # commands run as the docs say, and E03_OUT keeps results out of the repository. `timeout`
    # runs the block in a process group of its own: whatever the block left running (a server
    # started with `&`) is stopped when it ends.
    if (
        cd "$dir"
        for v in $(env | sed -n 's/^\(E03_[A-Z0-9_]*\)=.*/\1/p'); do unset "$v"; done
        export E03_OUT="$dir/results" E03_PROGRESS=off PATH="$work/bin:$PATH"
        timeout 600 bash -euo pipefail "$block" &
        group=$!
        rc=0
        wait "$group" || rc=$?
        kill -TERM -- "-$group" 2>/dev/null || true
        exit "$rc"
    ) >"$dir/log" 2>&1; then
        printf 'check-docs: %-28s ok (%ss)\n' "$where" "$(($(date +%s) - start))"
        grep -E "^(\+ |not run here|already run)" "$dir/log" | sed 's/^/    /'
    else
        rc=$?
        printf 'check-docs: %-28s FAILED (exit %s)\n' "$where" "$rc"
        tail -n 40 "$dir/log" | sed 's/^/    /'
        failed=1
    fi
done

if [ "$#" -eq 0 ]; then
    for f in examples/*; do
        if ! grep -qx "$f" "$work/used"; then
            echo "check-docs: $f is not used by any command the docs show (every file in examples/ must run)"
            failed=1
        fi
    done
fi

# Relative links: the file exists, and so does the anchor (GitHub's heading slugs).
python3 - "${pages[@]}" <<'PY' || failed=1
import os, re, sys
def slug(h):
    h = re.sub(r"[^\w\- ]", "", h.strip().lower())
    return h.replace(" ", "-")
def text(f):
    return re.sub(r"```.*?```", "", open(f).read(), flags=re.S)
anchors = {}
def anchors_of(f):
    if f not in anchors:
        anchors[f] = {slug(m.group(1)) for m in re.finditer(r"^#+ (.*)$", text(f), re.M)}
    return anchors[f]
bad = 0
for f in sys.argv[1:]:
    for m in re.finditer(r"\]\(([^)\s]+)\)", text(f)):
        u = m.group(1)
        if re.match(r"^[a-z]+:", u):
            continue
        path, _, anchor = u.partition("#")
        target = os.path.normpath(os.path.join(os.path.dirname(f), path)) if path else f
        if not os.path.exists(target):
            print(f"check-docs: {f}: link to a missing file: {u}")
            bad += 1
        elif anchor and target.endswith(".md") and anchor not in anchors_of(target):
            print(f"check-docs: {f}: link to a missing heading: {u}")
            bad += 1
sys.exit(1 if bad else 0)
PY

echo "check-docs: $(find "$work/blocks" -name "*.sh" | wc -l) blocks in $(($(date +%s) - total_start)) s"
if [ "$failed" != 0 ]; then
    echo "check-docs: FAILED" >&2
    exit 1
fi
