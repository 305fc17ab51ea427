#!/usr/bin/env bash
# Runs every shell command the docs show, so they cannot drift from the lab:
#   - every fenced ```sh block of README.md, ARCHITECTURE.md and docs/*.md, as a bash script, in
#     a fresh temporary folder (relative paths such as results/ and logs/ land there; E03_OUT
#     points there too, so nothing is written into the repository), with `lab`,
#     `cargo run --release [-p lab] --` and `./target/release/lab` standing for the lab built by
#     `cargo build -p lab` (the debug build `cargo test` made); whatever a block leaves running
#     is stopped when it ends;
#   - a command already run by an earlier block is not run again (it says so; decided when the
#     pages are read, so it does not depend on which block ends first), but for one left running
#     with `&`, a `kill` and a `sleep`, which belong to their block;
#   - Docker commands (docker, docker-compose, scripts/compose*.sh, scripts/build-*.sh) are not
#     run here: scripts/test-compose.sh runs the compose topology, the offline images and the
#     standard image (the last step of ./test-e03.sh), and this script says so for each;
#     `./test-e03.sh` is the command running this script, and `cargo build --release` is
#     replaced by the debug build;
#   - every file in examples/ must be used by a command that ran;
#   - every relative link of those pages must name a file that exists, and an anchor that exists.
# Blocks that record how a figure was measured, and take minutes, are not ```sh blocks (see
# docs/measurements.md).
#
# Several blocks at once (most of the time goes to live runs sleeping on real-time timers, and
# each block has a folder of its own): JOBS blocks at a time, 3 unless `--jobs N` or
# E03_DOCS_JOBS says otherwise (1 to 32, unset or empty: 3; 1 runs the blocks one after another
# in page order, as before).
# A block runs alone, with nothing else running, when its text
#   - binds or names a fixed port: `lab serve`, `lab hop`, `lab proxy`, `http.server`, `--port`,
#     `--listen`, `--control-listen`, `--api`, an address such as 127.0.0.1:8080 or
#     localhost:8080, or a command left running with a trailing `&`; or
#   - judges a live run, so it can exit non-zero when the machine is busy: `lab run`,
#     `lab compare`, `lab soak`, `lab map --verify`, `lab audit --require`; or
#   - follows a `<!-- check-docs: alone -->` line (blank lines between allowed), for a block
#     whose text does not show it.
# The others (simulations, listings, an audit without --require) run JOBS at a time first, then
# the alone blocks one after another. Each block's output is kept and printed in page order, as
# the blocks before it have ended; the last line gives the count and the wall time.
#
# Usage: scripts/check-docs.sh [--jobs N] [FILE.md ...] (default: all the pages).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

# How many blocks at once: --jobs N (or --jobs=N) over E03_DOCS_JOBS over 3.
jobs_from="E03_DOCS_JOBS"
jobs=${E03_DOCS_JOBS:-3}
[ -n "${E03_DOCS_JOBS+set}" ] || jobs_from=""
pages=()
while [ "$#" -gt 0 ]; do
    case $1 in
    --jobs)
        if [ "$#" -lt 2 ]; then
            echo "check-docs: --jobs needs a value: a number of blocks at once, 1 to 32" >&2
            exit 2
        fi
        jobs=$2 jobs_from="--jobs"
        shift 2
        ;;
    --jobs=*) jobs=${1#--jobs=} jobs_from="--jobs" && shift ;;
    -h | --help)
        echo "Usage: scripts/check-docs.sh [--jobs N] [FILE.md ...] (N blocks at once, 1 to 32;" \
            "default E03_DOCS_JOBS or 3; default pages README.md ARCHITECTURE.md docs/*.md)"
        exit 0
        ;;
    -*)
        echo "check-docs: unknown option $1: expected --jobs N (1 to 32) and page files" >&2
        exit 2
        ;;
    *) pages+=("$1") && shift ;;
    esac
done
if ! [[ $jobs =~ ^[0-9]{1,4}$ ]] || [ "$((10#$jobs))" -lt 1 ] || [ "$((10#$jobs))" -gt 32 ]; then
    echo "check-docs: invalid ${jobs_from:-E03_DOCS_JOBS} \"$jobs\": expected a number of blocks" \
        "at once, 1 to 32" >&2
    exit 2
fi
jobs=$((10#$jobs))
all_pages=0
if [ "${#pages[@]}" -eq 0 ]; then
    pages=(README.md ARCHITECTURE.md docs/*.md)
    all_pages=1
fi

cargo build -p lab --locked --quiet

work=$(mktemp -d /tmp/e03-check-docs.XXXXXX)
# On the way out (an interrupt included), blocks still running are stopped, group and all.
stop_blocks() {
    local p g
    for p in $(jobs -p); do kill -TERM "$p" 2>/dev/null || true; done
    for g in "$work"/run-*/group; do
        [ -e "$g" ] || continue # no block started (the glob matched nothing)
        [ -e "${g%/group}/rc" ] || kill -TERM -- "-$(cat "$g")" 2>/dev/null || true
    done
    wait 2>/dev/null || true
    rm -rf "$work"
}
trap stop_blocks EXIT
mkdir -p "$work/bin"
ln -s "$root/target/debug/lab" "$work/bin/lab"

# The blocks, as scripts: $work/blocks/NNN.sh, with $work/blocks/NNN.where naming the page and
# line, $work/blocks/NNN.alone (why) for a block that runs alone, and $work/used naming the
# examples/ files the commands use.
python3 - "$work" "${pages[@]}" <<'PY'
import os, re, shlex, sys
work, pages = sys.argv[1], sys.argv[2:]
os.makedirs(f"{work}/blocks")
DOCKER = re.compile(r"(^|[\s;&|(=])(docker|docker-compose)\s|(^|\s)(\./)?scripts/(compose[\w-]*|test-compose|build-standard-image|build-static|standin-images)\.sh")
# Why a block runs alone (the script's header): the first rule its commands match.
ALONE = [
    ("binds a fixed port", re.compile(
        r"(^|[\s;&|(])lab (serve|hop|proxy)\b|\bhttp\.server\b|(^|\s)--(port|listen|control-listen|api)\b"
        r"|\b(\d{1,3}(\.\d{1,3}){3}|localhost|\[[0-9a-fA-F:]*\]):\d+|(^|[^&])&$")),
    ("judges a live run", re.compile(
        r"(^|[\s;&|(])lab (run|compare|soak)\b|(^|[\s;&|(])lab map\b.*\s--verify\b"
        r"|(^|[\s;&|(])lab audit\b.*\s--require\b")),
]
MARKER = "<!-- check-docs: alone -->"
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
        body, cmd, alone = [], "", None
        k = i - 1
        while k >= 0 and not lines[k].strip():
            k -= 1
        if k >= 0 and lines[k].strip() == MARKER:
            alone = f"marked {MARKER}"
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
            # A wait (`sleep 1` before a curl to a server just started) is a block's own: skipping
            # it because another block waited too would make the next command race the server.
            if norm in seen and not norm.endswith("&") and not norm.startswith(("kill ", "sleep ")):
                body.append("echo " + shlex.quote(f"already run above: {text}"))
                continue
            seen.add(norm)
            for why, rule in ALONE:
                m = rule.search(norm)
                if alone is None and m:
                    alone = f"{why}: {m.group(0).strip()}"
            used.update(re.findall(r"examples/[\w.-]+", norm))
            body.append("echo " + shlex.quote(f"+ {text}"))
            body.append(norm)
        n += 1
        with open(f"{work}/blocks/{n:03}.sh", "w") as f:
            f.write("\n".join(body) + "\n")
        with open(f"{work}/blocks/{n:03}.where", "w") as f:
            f.write(f"{page}:{start}")
        if alone:
            with open(f"{work}/blocks/{n:03}.alone", "w") as f:
                f.write(alone)
        i = j + 1
with open(f"{work}/used", "w") as f:
    f.write("\n".join(sorted(used)) + "\n")
PY

# One block, in its folder $work/run-NNN: its output in log, its wall time in seconds, and its
# exit code in rc, written last (rc present: the block has ended).
run_block() {
    local block=$1 dir=$2 start rc=0
    start=$(date +%s)
    # `lab` is the lab just built, first on PATH; every E03_* of the caller is dropped so the
    # commands run as the docs say, and E03_OUT keeps results out of the repository. `timeout`
    # runs the block in a process group of its own: whatever the block left running (a server
    # started with `&`) is stopped when it ends.
    (
        cd "$dir"
        for v in $(env | sed -n 's/^\(E03_[A-Z0-9_]*\)=.*/\1/p'); do unset "$v"; done
        export E03_OUT="$dir/results" E03_PROGRESS=off PATH="$work/bin:$PATH"
        timeout 600 bash -euo pipefail "$block" &
        group=$!
        echo "$group" >group
        rc=0
        wait "$group" || rc=$?
        kill -TERM -- "-$group" 2>/dev/null || true
        exit "$rc"
    ) >"$dir/log" 2>&1 || rc=$?
    echo "$(($(date +%s) - start))" >"$dir/seconds"
    echo "$rc" >"$dir/rc.part" && mv "$dir/rc.part" "$dir/rc"
}

failed=0
total_start=$(date +%s)
shopt -s nullglob
blocks=("$work"/blocks/*.sh) # none: a page with no sh block (then only its links are checked)
shopt -u nullglob
shared=() alone=()
for block in "${blocks[@]}"; do
    dir="$work/run-$(basename "$block" .sh)"
    mkdir -p "$dir"
    ln -s "$root/examples" "$dir/examples"
    if [ "$jobs" -gt 1 ] && [ -e "${block%.sh}.alone" ]; then
        alone+=("$block")
    else
        shared+=("$block")
    fi
done

# Prints, in page order, the blocks that have ended and every block before them has too.
printed=0
print_ended() {
    local block dir where rc
    while [ "$printed" -lt "${#blocks[@]}" ]; do
        block=${blocks[$printed]}
        dir="$work/run-$(basename "$block" .sh)"
        [ -e "$dir/rc" ] || return 0
        where=$(cat "${block%.sh}.where")
        rc=$(cat "$dir/rc")
        if [ "$rc" = 0 ]; then
            if [ -e "${block%.sh}.alone" ] && [ "$jobs" -gt 1 ]; then
                printf 'check-docs: %-28s ok (%ss, alone: %s)\n' "$where" "$(cat "$dir/seconds")" \
                    "$(cat "${block%.sh}.alone")"
            else
                printf 'check-docs: %-28s ok (%ss)\n' "$where" "$(cat "$dir/seconds")"
            fi
            grep -E "^(\+ |not run here|already run)" "$dir/log" | sed 's/^/    /' || true
        else
            printf 'check-docs: %-28s FAILED (exit %s)\n' "$where" "$rc"
            tail -n 40 "$dir/log" | sed 's/^/    /'
            failed=1
        fi
        printed=$((printed + 1))
    done
}

# The shared blocks, $jobs at a time; then the alone ones, one after another, nothing beside.
for block in "${shared[@]}"; do
    while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do
        wait -n || true
        print_ended
    done
    run_block "$block" "$work/run-$(basename "$block" .sh)" &
done
wait
print_ended
for block in "${alone[@]}"; do
    run_block "$block" "$work/run-$(basename "$block" .sh)"
    print_ended
done

if [ "$all_pages" = 1 ]; then
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

echo "check-docs: ${#blocks[@]} blocks in $(($(date +%s) - total_start)) s ($jobs at a time, ${#alone[@]} alone)"
if [ "$failed" != 0 ]; then
    echo "check-docs: FAILED" >&2
    exit 1
fi
