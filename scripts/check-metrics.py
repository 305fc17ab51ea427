#!/usr/bin/env python3
"""Checks the lab's /metrics expositions with a real Prometheus text parser.

Usage: check-metrics.py DUMP_DIR DASHBOARD_JSON

DUMP_DIR holds what client-swarm/tests/metrics_live.rs scraped at the end of a short live run
(when E03_TEST_METRICS_DUMP=DUMP_DIR is set): `swarm.prom`, `dependency-<strategy>.prom`, and
`expected.json`, the figures the logs give (a list of {file, name, labels, value}).

1. Every `*.prom` file must parse with prometheus_client's OpenMetrics parser (the Prometheus
   client library for Python, from PyPI): the lab serves `application/openmetrics-text`.
2. Every expected sample must be there, with the value the logs give (arrivals, attempts by
   strategy, attempt number and outcome, operations by outcome and reason).
3. Every metric name the Grafana dashboard's queries use must be one the lab exports.
Exit 0 when all hold, 1 otherwise (each failure is printed).
"""

import json
import pathlib
import re
import sys

# The lab serves the OpenMetrics text format (its Content-Type says so), so the strict
# OpenMetrics parser reads it.
from prometheus_client.openmetrics.parser import text_string_to_metric_families


def main(dump_dir: str, dashboard: str) -> int:
    failures = []
    samples = {}
    exported = set()
    proms = sorted(pathlib.Path(dump_dir).glob("*.prom"))
    if not proms:
        print(f"check-metrics: no .prom file in {dump_dir}", file=sys.stderr)
        return 1
    for path in proms:
        try:
            families = list(text_string_to_metric_families(path.read_text()))
        except Exception as e:  # the parser raises ValueError and friends on bad input
            failures.append(f"{path.name} does not parse: {e}")
            continue
        rows = []
        for family in families:
            exported.add(family.name)
            for s in family.samples:
                exported.add(s.name)
                rows.append((s.name, dict(s.labels), s.value))
        samples[path.name] = rows
        print(f"check-metrics: {path.name}: {len(families)} families, {len(rows)} samples parse")

    expected = json.loads((pathlib.Path(dump_dir) / "expected.json").read_text())
    if not expected:
        failures.append("expected.json lists no figure")
    for e in expected:
        rows = samples.get(e["file"], [])
        found = [v for (n, labels, v) in rows if n == e["name"] and labels == e["labels"]]
        if found != [e["value"]]:
            failures.append(
                f"{e['file']}: {e['name']}{e['labels']} is {found or 'missing'}, "
                f"the logs say {e['value']}"
            )
    print(f"check-metrics: {len(expected)} counters compared with the logs")

    text = pathlib.Path(dashboard).read_text()
    board = json.loads(text)
    exprs = []

    def walk(node):
        if isinstance(node, dict):
            for k, v in node.items():
                if k in ("expr", "query") and isinstance(v, str):
                    exprs.append(v)
                walk(v)
        elif isinstance(node, list):
            for v in node:
                walk(v)

    walk(board)
    used = set()
    for expr in exprs:
        # Metric names of the lab: every identifier with one of its prefixes.
        used.update(re.findall(r"\b((?:e03_|http_)[a-zA-Z0-9_:]+)", expr))
    # The recording rules the dashboard reads (docker/observe/rules.yml) use the lab's names too.
    rules = pathlib.Path(dashboard).resolve().parents[2] / "rules.yml"
    if rules.exists():
        used.update(re.findall(r"\b((?:e03_|http_)[a-zA-Z0-9_:]+)", rules.read_text()))
    if not exprs:
        failures.append(f"{dashboard}: no query found")
    for name in sorted(used - exported):
        failures.append(f"{dashboard} queries {name}, which the lab does not export")
    if used <= exported:
        print(f"check-metrics: the dashboard's {len(exprs)} queries use {len(used)} metric "
              "names, all exported")

    for f in failures:
        print(f"check-metrics: FAIL: {f}", file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    sys.exit(main(sys.argv[1], sys.argv[2]))
