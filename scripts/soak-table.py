#!/usr/bin/env python3
"""The curves of a `lab soak` as a Markdown table: RSS, open descriptors and tasks of each
process every STEP seconds (default 180), from the soak's soak.csv.

Usage: soak-table.py OUT/<run id>/soak.csv [STEP]
"""
import csv
import sys


def main() -> None:
    path = sys.argv[1]
    step = float(sys.argv[2]) if len(sys.argv) > 2 else 180.0
    by: dict[str, list[dict]] = {}
    for row in csv.DictReader(open(path, encoding="utf-8")):
        by.setdefault(row["process"], []).append(row)
    names = sorted(by)
    # Soaks since 2026-12-02 18:00 also sample RSS's anonymous part (heap, stacks).
    anon = all("rss_anon_kib" in r for rows in by.values() for r in rows)
    cols = ["RSS KiB"] + (["anon KiB"] if anon else []) + ["fds", "tasks"]
    print("| t (s) | " + " | ".join(f"{n} {c}" for n in names for c in cols) + " |")
    print("|---:|" + "---:|" * len(cols) * len(names))
    end = max(float(r["t_s"]) for rows in by.values() for r in rows)
    marks = [0.0, 60.0] + [k * step for k in range(1, int(end // step) + 1) if k * step > 60.0]
    marks.append(end)
    for t in marks:
        cells = []
        for n in names:
            # The sample nearest to t.
            r = min(by[n], key=lambda r: abs(float(r["t_s"]) - t))
            cells += [r["rss_kib"]] + ([r["rss_anon_kib"]] if anon else []) + [r["fds"], r["tasks"]]
        print(f"| {t:.0f} | " + " | ".join(cells) + " |")
    for n in names:
        rows = by[n]
        print(
            f"\n{n}: max RSS {max(int(r['rss_kib']) for r in rows)} KiB, "
            f"max fds {max(int(r['fds']) for r in rows)}, "
            f"max tasks {max(int(r['tasks']) for r in rows)}, {len(rows)} samples"
        )


if __name__ == "__main__":
    main()
