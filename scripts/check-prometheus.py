#!/usr/bin/env python3
"""The Grafana dashboard's queries proven on a real Prometheus, against a live `lab run e03b`.

Usage: check-prometheus.py LAB_BINARY DASHBOARD.json PROMETHEUS.yml RULES.yml

1. Starts `lab run e03b` (short: 60 clients, freeze 14-15.5 s (Prometheus starts after the lab names its dependencies: the later freeze leaves it time to be scraping), degraded to 18 s, operations starting
   in [0, 22 s)) with the swarm's metrics on a free loopback port (E03_METRICS_LISTEN); reads the
   dependencies' addresses from the lab's `strategy X's dependency: work http://...` lines.
2. Starts Prometheus on loopback with the observe profile's prometheus.yml, its targets
   (dep-a:8080 ... swarm:9464) replaced by those addresses, and its recording rules.
3. When the run is over, runs every PromQL query of the dashboard (and each recording rule)
   through Prometheus's HTTP API (query_range over the run, step 1 s) and asserts each returns a
   non-empty series (the frozen-phase query must reach 1: the freeze was scraped).
4. Arrivals per strategy: the per-second increase of e03_dependency_arrivals_total agrees with
   the analyzer's arrivals (arrivals_100ms.csv) summed over the same second, within the scrape's
   resolution: at the best alignment, each second differs by at most the largest 100 ms window
   at its two edges (a scrape may land anywhere in it).
5. Stops Prometheus and the lab (their process ids only); exits 1 on a failure.

Only the standard library. Bounded: the lab run 90 s, Prometheus's start 20 s.
"""

import csv
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def get_json(url, timeout=10):
    req = urllib.request.Request(url)
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    with opener.open(req, timeout=timeout) as r:
        return json.load(r)


def dashboard_queries(path):
    with open(path) as f:
        dash = json.load(f)
    out = []

    def walk(node, title):
        if isinstance(node, dict):
            title = node.get("title", title)
            if isinstance(node.get("expr"), str):
                out.append((title, node["expr"]))
            for v in node.values():
                walk(v, title)
        elif isinstance(node, list):
            for v in node:
                walk(v, title)

    walk(dash, "")
    return out


def rule_names(path):
    return re.findall(r"^\s*-\s*record:\s*(\S+)", open(path).read(), re.M)


def stop(proc, name, grace=10):
    if proc is None or proc.poll() is not None:
        return
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        print(f"check-prometheus: {name} did not stop in {grace} s; killing it")
        proc.kill()
        proc.wait()


def main(argv):
    if len(argv) != 4:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    lab, dashboard, prom_yml, rules = argv
    failures = []
    tmp = tempfile.mkdtemp(prefix="e03-prom.")
    lab_proc = prom = None
    try:
        swarm_port, prom_port = free_port(), free_port()
        env = dict(os.environ, E03_METRICS_LISTEN=f"127.0.0.1:{swarm_port}", E03_PROGRESS="off")
        lab_err = open(os.path.join(tmp, "lab.err"), "w+")
        t_start = time.time()
        lab_proc = subprocess.Popen(
            [lab, "run", "e03b", "--out", os.path.join(tmp, "out"), "--run-id", "prom",
             "--clients", "60", "--freeze-start-s", "14", "--freeze-end-s", "15.5",
             "--recovery-end-s", "18", "--duration-s", "22"],
            env=env, stdout=subprocess.DEVNULL, stderr=lab_err)
        # The dependencies' addresses, printed before the swarm starts.
        deps = {}
        deadline = time.time() + 20
        while len(deps) < 4 and time.time() < deadline and lab_proc.poll() is None:
            lab_err.seek(0)
            for m in re.finditer(r"strategy (\S+)'s dependency: work http://(\S+) ",
                                 lab_err.read()):
                deps[m.group(1)] = m.group(2)
            time.sleep(0.05)
        if sorted(deps) != ["A", "B", "C", "D"]:
            lab_err.seek(0)
            print(f"check-prometheus: the lab named dependencies {deps}:\n{lab_err.read()[-800:]}")
            return 1
        # The observe profile's configuration, pointed at this run.
        conf = open(prom_yml).read()
        for s, addr in deps.items():
            conf = conf.replace(f'"dep-{s.lower()}:8080"', f'"{addr}"')
        conf = conf.replace('"swarm:9464"', f'"127.0.0.1:{swarm_port}"')
        if "dep-" in conf or "swarm:9464" in conf or "rule_files" not in conf:
            print("check-prometheus: prometheus.yml's targets or rule_files were not as expected")
            return 1
        with open(os.path.join(tmp, "prometheus.yml"), "w") as f:
            f.write(conf)
        shutil.copy(rules, os.path.join(tmp, "rules.yml"))
        prom_log = open(os.path.join(tmp, "prometheus.log"), "w")
        prom = subprocess.Popen(
            ["prometheus", f"--config.file={tmp}/prometheus.yml",
             f"--storage.tsdb.path={tmp}/data", f"--web.listen-address=127.0.0.1:{prom_port}"],
            stdout=prom_log, stderr=subprocess.STDOUT)
        api = f"http://127.0.0.1:{prom_port}/api/v1"
        deadline = time.time() + 20
        while True:
            try:
                get_json(f"{api}/status/buildinfo", timeout=1)
                break
            except Exception:
                if time.time() > deadline or prom.poll() is not None:
                    print("check-prometheus: Prometheus did not start; its log:")
                    print(open(os.path.join(tmp, "prometheus.log")).read()[-1500:])
                    return 1
                time.sleep(0.2)
        try:
            code = lab_proc.wait(timeout=90)
        except subprocess.TimeoutExpired:
            print("check-prometheus: lab run e03b took more than 90 s")
            return 1
        t_end = time.time()
        if code not in (0, 3):
            lab_err.seek(0)
            print(f"check-prometheus: lab run e03b exited {code}:\n{lab_err.read()[-800:]}")
            return 1
        time.sleep(2.5)  # the rules' last evaluations

        def query_range(expr):
            q = urllib.parse.urlencode({"query": expr, "start": f"{t_start:.3f}",
                                        "end": f"{t_end + 2:.3f}", "step": "1"})
            return get_json(f"{api}/query_range?{q}")

        targets = get_json(f"{api}/targets")["data"]["activeTargets"]
        print(f"check-prometheus: Prometheus {prom_port} scraped {len(targets)} targets over "
              f"{t_end - t_start:.1f} s")
        queries = dashboard_queries(dashboard) + [(f"rule {n}", n) for n in rule_names(rules)]
        for title, expr in queries:
            res = query_range(expr)
            series = res["data"]["result"] if res.get("status") == "success" else []
            points = [v for s in series for _, v in s["values"] if v not in ("NaN", "+Inf", "-Inf")]
            if not series or not points:
                failures.append(f"{title}: {expr} returned no series ({res.get('error', 'empty')})")
            elif 'phase="frozen"' in expr and max(float(v) for v in points) < 1:
                failures.append(f"{title}: {expr} never saw the freeze (max {max(points)})")
            else:
                labels = sorted({s["metric"].get("strategy", "") for s in series} - {""})
                print(f"ok   {title}: {expr} -> {len(series)} series "
                      f"{','.join(labels)} {len(points)} points")
        used = "\n".join(e for _, e in dashboard_queries(dashboard))
        for n in rule_names(rules):
            if n not in used:
                failures.append(f"the dashboard does not use the recording rule {n}")
        # Arrivals per strategy against the analyzer's counts.
        # The raw samples, at the instants they were scraped: a scrape that came late (a loaded
        # machine) is compared with the windows it really spans, not with the next second's.
        span = int(t_end + 2 - t_start) + 5
        q = urllib.parse.urlencode({"query": f"e03_dependency_arrivals_total[{span}s]",
                                    "time": f"{t_end + 2:.3f}"})
        raw = get_json(f"{api}/query?{q}")["data"]["result"]
        by_strategy = {}
        for series in raw:
            by_strategy.setdefault(series["metric"].get("strategy", ""), []).append(series)
        counter = {}
        for strategy, group in by_strategy.items():
            if len(group) != 1:
                failures.append(f"arrivals {strategy}: {len(group)} series, expected one per strategy")
                continue
            counter[strategy] = [(float(t), float(v)) for t, v in group[0]["values"]]
        with open(os.path.join(tmp, "out", "prom", "e03b", "arrivals_100ms.csv")) as f:
            rows = list(csv.DictReader(f))
        for s in ["A", "B", "C", "D"]:
            w100 = [int(r[s]) for r in rows if r["seed"] == "42"]
            pts = counter.get(s, [])
            if len(pts) < 4:
                failures.append(f"arrivals {s}: {len(pts)} scraped points")
                continue
            # Each increment with the 100 ms windows it spans, from the scrapes' own instants.
            t0 = pts[0][0]
            inc = [(round((pts[i - 1][0] - t0) * 10), round((pts[i][0] - t0) * 10),
                    pts[i][1] - pts[i - 1][1]) for i in range(1, len(pts))]
            total = sum(w100)

            def window_sum(a, b):
                a, b = max(a, 0), min(b, len(w100))
                return sum(w100[a:b]) if b > a else 0

            best = None
            # Offset of the run's time zero against the first scrape, in 100 ms steps.
            for off in range(-30, inc[-1][1] + 30):
                worst, excess = 0, 0
                for i0, i1, d in inc:
                    a, b = off + i0, off + i1
                    want = window_sum(a, b)
                    edge = max(window_sum(a - 1, a + 1), window_sum(b - 1, b + 1))
                    err = abs(d - want)
                    worst = max(worst, err)
                    excess = max(excess, err - edge)
                if best is None or (excess, worst) < best[:2]:
                    best = (excess, worst, off)
            excess, worst, off = best
            seen = pts[-1][1] - pts[0][1]
            if excess > 0:
                failures.append(f"arrivals {s}: a scraped second differs from the analyzer's by "
                                f"{worst}, {excess} beyond the edge windows (best offset {off / 10} s)")
            else:
                print(f"ok   arrivals {s}: {len(inc)} scraped seconds agree with the analyzer's "
                      f"100 ms counts within the edge windows (largest difference {worst}; "
                      f"{int(seen)} of {total} arrivals between the first and last scrape)")
    finally:
        stop(lab_proc, "lab run")
        stop(prom, "prometheus")
        shutil.rmtree(tmp, ignore_errors=True)
    for f in failures:
        print(f"FAIL {f}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
