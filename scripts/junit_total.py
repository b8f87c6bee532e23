"""One closing line over the JUnit files of scripts/test.sh's phases: `total: N passed, N failed, N skipped`
(errors counted with the failures, as a CI reader of that line expects)."""
import sys
import xml.etree.ElementTree as ET

passed = failed = skipped = 0
for path in sys.argv[1:]:
    try:
        root = ET.parse(path).getroot()
    except (OSError, ET.ParseError):
        continue  # a phase that collected nothing writes no report
    for suite in root.iter("testsuite"):
        tests, skips = int(suite.get("tests", 0)), int(suite.get("skipped", 0))
        bad = int(suite.get("failures", 0)) + int(suite.get("errors", 0))
        passed += tests - skips - bad
        failed += bad
        skipped += skips
print(f"total: {passed} passed, {failed} failed, {skipped} skipped")
