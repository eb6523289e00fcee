#!/usr/bin/env bash
# Regenerate docs/junit-report.png: the JUnit report of the main sample session, as the
# GitHub recipe of docs/ci.md writes it, rendered by a JUnit viewer (junit2html, from PyPI)
# and photographed by Debian's headless Chromium.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
command -v junit2html >/dev/null || python3 -m pip install -q --disable-pip-version-check junit2html
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# Exit 1 is the gate failing on the sample's findings: the report is written all the same.
python3 -m publisher export '#ab12cd' --project sample_sessions --format junit \
  --out "$tmp/junit.xml" --fail-on error,tool-error,denied,truncated,cancelled,running \
  2>/dev/null || [ $? -eq 1 ]
(cd "$tmp" && junit2html junit.xml junit.html)
/usr/bin/chromium --headless --no-sandbox --disable-gpu --hide-scrollbars \
  --window-size=1280,1500 --screenshot="$root/docs/junit-report.png" "file://$tmp/junit.html" \
  2>/dev/null
echo "docs/junit-report.png written"
