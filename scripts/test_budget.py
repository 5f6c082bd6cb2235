#!/usr/bin/env python3
"""Prints the slowest tests of a CTest run against their time limit, from CTest's JUnit file.

usage: test_budget.py JUNIT_XML LIMIT_S [TOP]

The capped tests (cap_<level>/..., the CPU-target reruns) are marked. Exits 1 when a test that
passed took more than half its limit: on a slower host (the capped runs' cost moves with the CPU)
it would be the first to run out, so it fails here first, where the test was written.
"""
import sys
import xml.etree.ElementTree as ET


def main() -> int:
    if len(sys.argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    path, limit = sys.argv[1], float(sys.argv[2])
    top = int(sys.argv[3]) if len(sys.argv) > 3 else 10
    try:
        root = ET.parse(path).getroot()
    except (OSError, ET.ParseError) as e:
        print(f"test_budget: cannot read {path}: {e}", file=sys.stderr)
        return 2
    cases = []
    for case in root.iter("testcase"):
        failed = case.find("failure") is not None or case.find("error") is not None
        skipped = case.find("skipped") is not None or case.get("status") == "notrun"
        cases.append((float(case.get("time", "0")), case.get("name", "?"), failed, skipped))
    cases.sort(reverse=True)
    total = sum(t for t, *_ in cases)
    print(f"test_budget: {len(cases)} tests, {total:.0f} s of test time; the slowest against "
          f"the {limit:.0f} s limit of each:")
    over = []
    for t, name, failed, skipped in cases[:top]:
        kind = " (capped)" if name.startswith("cap_") else ""
        print(f"test_budget:   {t:7.1f} s  {100 * t / limit:5.1f}%  {name}{kind}")
    for t, name, failed, skipped in cases:
        if not failed and not skipped and t > limit / 2:
            over.append((t, name))
    for t, name in over:
        print(f"test_budget: FAILED: {name} took {t:.0f} s, more than half its {limit:.0f} s "
              "limit: give it shapes or steps that leave a slower host room", file=sys.stderr)
    return 1 if over else 0


if __name__ == "__main__":
    sys.exit(main())
