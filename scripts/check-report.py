#!/usr/bin/env python3
"""Opens report.html pages in headless Chromium and checks what a reader sees.

Usage: check-report.py [--screenshot PNG] REPORT.html...

For each page, a probe copy (the page plus two small scripts and a Content-Security-Policy that
forbids every network request) is loaded with `chromium --headless --dump-dom`; the probe writes
what the browser laid out into the DOM, and this script asserts:

- every figure is an inline SVG with a non-zero rendered width and height (a missing figure
  fails);
- the comparison table's cells match summary.json (beside the page): total, retries, denied,
  peaks, p95, p99 and success, mean (min..max) over seeds;
- the console shows no error (the page's, or a blocked request);
- every figure has a legend: the comparison names every strategy (its id and name, as the
  table's first column), the arrivals figures name every phase kind of the scenario's timeline
  (scenario.toml beside the page) after "shaded: ".

A chain run's page (chain.json beside it, no summary.json): the calls-per-layer table's cells
match chain.json (counts and layer names exactly, the rest to the table's 0.1), the checks
table equals chain.json's check rows with PASS green and FAIL red, the calls_per_layer figure
names every variant, and the page has a conclusion.

Only the standard library. Exit 0 when every page passes, 1 otherwise, 2 on bad usage.
"""

import html
import json
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile
import tomllib

CHROMIUM = os.environ.get("CHECK_REPORT_CHROMIUM", "chromium")
TIMEOUT_S = 60

HEAD = """<meta http-equiv="Content-Security-Policy" content="default-src 'none'; \
style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:">
<script>
window.__errors = [];
window.addEventListener('error', e => window.__errors.push('error: ' + e.message));
document.addEventListener('securitypolicyviolation',
  e => window.__errors.push('blocked request: ' + e.blockedURI));
const __ce = console.error;
console.error = function(...a) { window.__errors.push('console.error: ' + a.join(' ')); };
</script>"""

TAIL = """<script>
const figs = [...document.querySelectorAll('figure.figure')].map(f => {
  const s = f.querySelector('svg');
  const r = s ? s.getBoundingClientRect() : {width: 0, height: 0};
  return {name: f.dataset.figure, svg: !!s, width: r.width, height: r.height,
          text: s ? s.textContent.replace(/\\s+/g, ' ') : ''};
});
const cells = sel => [...document.querySelectorAll(sel)].map(
  t => [...t.rows].map(r => [...r.cells].map(c => c.textContent)));
const tables = cells('table.comparison');
const chain = cells('table.chain');
const checks = cells('table.checks');
const coloured = [...document.querySelectorAll('td.pass, td.fail')].map(
  c => c.className + ' ' + c.textContent);
const conclusions = [...document.querySelectorAll('p.conclusion')].map(p => p.textContent);
const pre = document.createElement('pre');
pre.id = 'probe';
pre.textContent = JSON.stringify({figs, tables, chain, checks, coloured, conclusions,
  errors: window.__errors,
  missing: [...document.querySelectorAll('.missing')].map(m => m.textContent)});
document.body.appendChild(pre);
</script>"""

# Column of the comparison table -> (summary.json field, unit).
COLUMNS = {
    "total": ("total_requests", "count"),
    "retries": ("retries_sent", "count"),
    "denied": ("retries_denied", "count"),
    "peak 1 s": ("peak_1s", "count"),
    "peak 100 ms": ("peak_100ms", "count"),
    "p95 (ms)": ("p95_ms", "count"),
    "p99 (ms)": ("p99_ms", "count"),
    "success (affected)": ("success_affected", "share"),
    "success (all ops)": ("success_affected", "share"),
}

PHASE_NAMES = {
    "down": "shaded: down",
    "freeze": "shaded: freeze",
    "degraded": "shaded: degraded",
    "rate_limited": "shaded: rate limited",
}


def run_chromium(args):
    cmd = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
           "--disable-dev-shm-usage", "--enable-logging=stderr", "--v=0",
           "--virtual-time-budget=3000"] + args
    return subprocess.run(cmd, capture_output=True, text=True, timeout=TIMEOUT_S)


def numbers(cell):
    """The numbers of a cell: `3097 (3047..3137)` -> [3097, 3047, 3137]; `91.0%` -> [91.0]."""
    return [float(x) for x in re.findall(r"-?\d+(?:\.\d+)?", cell)]


def check_table(rows, summary, failures):
    headers = rows[0]
    runs = summary["runs"]
    strategies = []
    for r in runs:
        if r["strategy"] not in strategies:
            strategies.append(r["strategy"])
    body = rows[1:]
    if len(body) != len(strategies):
        failures.append(f"comparison has {len(body)} rows, summary.json {len(strategies)} strategies")
        return
    checked = 0
    for row, sid in zip(body, strategies):
        if not (row[0] == sid or row[0].startswith(sid + " ")):
            failures.append(f"row {row[0]!r} is not strategy {sid!r}")
            continue
        mine = [r for r in runs if r["strategy"] == sid]
        for col, cell in zip(headers, row):
            if col not in COLUMNS:
                continue
            field, unit = COLUMNS[col]
            values = [float(r[field]) for r in mine]
            scale = 100.0 if unit == "share" else 1.0
            mean = sum(values) / len(values) * scale
            lo, hi = min(values) * scale, max(values) * scale
            got = numbers(cell)
            # Whole counts, shares to a tenth of a point: a rounding's half step.
            tol = 0.05 + 1e-9 if unit == "share" else 0.5 + 1e-9
            want = [mean] if len(got) == 1 else [mean, lo, hi]
            if len(got) not in (1, 3) or any(abs(g - w) > tol for g, w in zip(got, want)):
                failures.append(f"{sid} {col}: cell {cell!r}, summary.json {want}")
            checked += 1
    if checked == 0:
        failures.append("no comparison cell checked")


def phase_kinds(page_dir):
    path = os.path.join(page_dir, "scenario.toml")
    if not os.path.exists(path):
        return []
    with open(path, "rb") as f:
        doc = tomllib.load(f)
    kinds = []
    for p in doc.get("timeline", []):
        k = p.get("phase")
        if k in PHASE_NAMES and k not in kinds:
            kinds.append(k)
    return kinds


def check_chain(data, figs, summary, failures):
    """A chain run's page (chain.json beside it): the calls-per-layer table's cells equal
    chain.json's figures (counts exactly, the rest to the table's 0.1), the checks table equals
    its check rows with PASS/FAIL coloured, the figure names every variant, a conclusion."""
    variants = summary["variants"]
    if not data["chain"]:
        failures.append("no chain table (calls per layer)")
    else:
        rows = data["chain"][0]
        headers, body = rows[0], rows[1:]
        if len(body) != len(variants):
            failures.append(f"chain table has {len(body)} rows, chain.json {len(variants)} variants")
        for row, v in zip(body, variants):
            cell = dict(zip(headers, row))
            want_exact = {
                "variant": v["id"],
                "requests": str(v["requests"]),
                "calls per layer (top first)": ", ".join(
                    f"{name} {n}" for name, n in zip(v["layers"], v["calls_per_layer"])),
                "ok": str(v["succeeded"]),
                "refused": str(sum(v["refused_per_layer"])),
            }
            for col, want in want_exact.items():
                if cell.get(col) != want:
                    failures.append(f"{v['id']} {col}: cell {cell.get(col)!r}, chain.json {want!r}")
            for col, field in [("bottom per request", "bottom_per_request"),
                               ("op max ms", "op_max_ms"), ("op mean ms", "op_mean_ms"),
                               ("wasted ms/request", "wasted_ms"),
                               ("late calls/request", "late_calls_per_request")]:
                got = numbers(cell.get(col, ""))
                if len(got) != 1 or abs(got[0] - float(v[field])) > 0.05 + 1e-9:
                    failures.append(f"{v['id']} {col}: cell {cell.get(col)!r}, chain.json {v[field]}")
    want_checks = [[c["variant"], c["figure"], c["published"], c["ours"], c["band"], c["check"]]
                   for c in summary["checks"]]
    got_checks = data["checks"][0][1:] if data["checks"] else []
    if got_checks != want_checks:
        failures.append(f"checks table {got_checks}, chain.json {want_checks}")
    verdicts = [c[-1] for c in want_checks if c[-1] in ("PASS", "FAIL")]
    coloured = [c for c in data["coloured"] if c.split()[1] in ("PASS", "FAIL")]
    if len(coloured) != len(verdicts):
        failures.append(f"{len(verdicts)} PASS/FAIL verdicts, {len(coloured)} coloured cells")
    for c in coloured:
        cls, word = c.split()[:2]
        if cls != word.lower():
            failures.append(f"verdict {word} coloured {cls}")
    layer_figs = [f for f in figs if f["name"] == "calls_per_layer"]
    if not layer_figs:
        failures.append("no calls_per_layer figure")
    for fig in layer_figs:
        for v in variants:
            if v["id"] not in fig["text"]:
                failures.append(f"calls_per_layer legend lacks {v['id']!r}")
    if not data["conclusions"]:
        failures.append("no conclusion")


def check_page(page, failures):
    page_dir = os.path.dirname(os.path.abspath(page))
    with open(page, encoding="utf-8") as f:
        text = f.read()
    for bad in ("<script", "<link", "@import", "src=\"http", "href=\"http", "url("):
        if bad in text:
            failures.append(f"the page itself holds {bad!r}")
    probe_text = text.replace("<head>", "<head>" + HEAD, 1).replace("</body>", TAIL + "</body>", 1)
    with tempfile.TemporaryDirectory(prefix="e03-probe.") as tmp:
        probe = os.path.join(tmp, "probe.html")
        with open(probe, "w", encoding="utf-8") as f:
            f.write(probe_text)
        res = run_chromium(["--window-size=1200,900", "--dump-dom", "file://" + probe])
    m = re.search(r'<pre id="probe">(.*?)</pre>', res.stdout, re.S)
    if res.returncode != 0 or not m:
        failures.append(f"chromium gave no probe (exit {res.returncode}): {res.stderr[-600:]}")
        return
    data = json.loads(html.unescape(m.group(1)))
    for line in res.stderr.splitlines():
        if "CONSOLE" in line:
            failures.append(f"console: {line.strip()}")
    failures.extend(data["errors"])
    for note in data["missing"]:
        failures.append(f"page says: {note}")
    figs = data["figs"]
    if not figs:
        failures.append("no figure on the page")
    for fig in figs:
        if not fig["svg"] or fig["width"] <= 0 or fig["height"] <= 0:
            failures.append(f"figure {fig['name']}: rendered {fig['width']}x{fig['height']} "
                            f"(svg: {fig['svg']})")
    chain_json = os.path.join(page_dir, "chain.json")
    if os.path.exists(chain_json):
        with open(chain_json, encoding="utf-8") as f:
            check_chain(data, figs, json.load(f), failures)
        return len(figs), ["chain"]
    with open(os.path.join(page_dir, "summary.json"), encoding="utf-8") as f:
        summary = json.load(f)
    if not data["tables"]:
        failures.append("no comparison table")
    else:
        check_table(data["tables"][0], summary, failures)
        labels = [re.sub(r" \(incomplete\)", "", row[0]) for row in data["tables"][0][1:]]
        comparison = [f for f in figs if f["name"] == "comparison"]
        if not comparison:
            failures.append("no comparison figure")
        for fig in comparison:
            for label in labels:
                if label not in fig["text"]:
                    failures.append(f"comparison legend lacks {label!r}")
    kinds = phase_kinds(page_dir)
    arrivals = [f for f in figs if f["name"].startswith("arrivals_")]
    if not arrivals:
        failures.append("no arrivals figure")
    for fig in arrivals:
        for k in kinds:
            if PHASE_NAMES[k] not in fig["text"]:
                failures.append(f"{fig['name']}: phase {k} not shaded/named")
    return len(figs), kinds


def main(argv):
    shot = None
    if len(argv) >= 2 and argv[0] == "--screenshot":
        shot, argv = argv[1], argv[2:]
    if not argv:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    if shutil.which(CHROMIUM) is None:
        print(f"check-report: {CHROMIUM} not found (CHECK_REPORT_CHROMIUM)", file=sys.stderr)
        return 2
    bad = 0
    for page in argv:
        failures = []
        got = check_page(page, failures)
        if failures:
            bad += 1
            print(f"FAIL {page}")
            for f in failures:
                print(f"  - {f}")
        else:
            n, kinds = got
            if kinds == ["chain"]:
                print(f"ok   {page}: {n} figure(s), non-zero size, variants in the legend, "
                      f"tables = chain.json, verdicts coloured, conclusion, no console error")
            else:
                print(f"ok   {page}: {n} figures, non-zero size, legends, phases "
                      f"{','.join(kinds) or 'none'} named, table = summary.json, no console error")
    if shot:
        res = run_chromium(["--window-size=900,1500", "--hide-scrollbars",
                            f"--screenshot={os.path.abspath(shot)}",
                            "file://" + os.path.abspath(argv[0])])
        if res.returncode != 0 or not os.path.exists(shot) or os.path.getsize(shot) == 0:
            print(f"FAIL screenshot {shot}: {res.stderr[-400:]}")
            bad += 1
        else:
            print(f"screenshot {shot}: {os.path.getsize(shot)} bytes")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
