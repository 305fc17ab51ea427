"""Checks JUnit files the lab wrote (scripts/check-junit.sh, docs/ci-gates.md).

    python3 scripts/check-junit.py SCHEMA OUTDIR FILE:TESTS:FAILURES ...

Each FILE must validate against SCHEMA (the JUnit XML schema, scripts/junit-schema/JUnit.xsd)
with xmlschema, be read by junitparser with TESTS test cases of which FAILURES failed (what the
lab said it wrote), and open in junit2html, whose HTML report (written to OUTDIR) names every
failed case. Prints one line per file; exits 1 on the first difference. First, as a control, a copy of
the first file without a suite's `hostname` must not validate.
"""

import os
import sys

import xmlschema
from junit2htmlreport import parser as j2h
from junitparser import Failure, JUnitXml


def main():
    schema = xmlschema.XMLSchema(sys.argv[1])
    outdir = sys.argv[2]
    # The validator rejects what the schema forbids: a suite without its hostname.
    first = sys.argv[3].rsplit(":", 2)[0]
    broken = open(first, encoding="utf-8").read().replace(' hostname="localhost"', "", 1)
    if schema.is_valid(broken):
        sys.exit("check-junit: the schema accepted a testsuite without hostname")
    for spec in sys.argv[3:]:
        path, tests, failures = spec.rsplit(":", 2)
        tests, failures = int(tests), int(failures)
        # 1. The schema: raises with the element and the reason on the first violation.
        schema.validate(path)
        # 2. junitparser: the cases and their results.
        xml = JUnitXml.fromfile(path)
        cases = [(s.name, c) for s in xml for c in s]
        failed = [
            (suite, c) for suite, c in cases if any(isinstance(r, Failure) for r in c.result)
        ]
        if (len(cases), len(failed)) != (tests, failures):
            sys.exit(
                f"check-junit: {path}: junitparser reads {len(cases)} case(s), {len(failed)} "
                f"failed; the lab said {tests}, {failures}"
            )
        for _, c in failed:
            message = next(r.message for r in c.result if isinstance(r, Failure))
            if not message:
                sys.exit(f"check-junit: {path}: the failed case {c.name!r} has no message")
        # 3. junit2html: its parser and its HTML report, which names each failed case.
        report = j2h.Junit(path)
        outcomes = [c.outcome() for s in report.suites for c in s.all()]
        if len(outcomes) != tests or outcomes.count("failed") != failures:
            sys.exit(f"check-junit: {path}: junit2html reads {outcomes}")
        html_path = os.path.join(outdir, os.path.basename(path) + ".html")
        with open(html_path, "w", encoding="utf-8") as f:
            f.write(report.html())
        html = open(html_path, encoding="utf-8").read()
        for _, c in failed:
            name = c.name.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
            if name not in html:
                sys.exit(f"check-junit: {path}: junit2html's report does not name {c.name!r}")
        print(
            f"check-junit: {os.path.basename(path)}: valid against JUnit.xsd; {tests} case(s), "
            f"{failures} failed, read alike by junitparser and junit2html "
            f"({os.path.basename(html_path)}, {len(html)} bytes)"
        )


if __name__ == "__main__":
    main()
