#!/usr/bin/env bash
# Install everything the test suite needs, from scratch, on a Debian machine:
# the package with its test extras (Dask included), Debian's Chromium (for Playwright), Java (for
# the Nu Html Checker) and the npm packages vnu-jar and axe-core (into tests/node_modules).
set -euo pipefail
cd "$(dirname "$0")/.."

SUDO=""
if [ "$(id -u)" != "0" ] && command -v sudo >/dev/null 2>&1; then SUDO="sudo"; fi

need_apt=()
[ -x /usr/bin/chromium ] || need_apt+=(chromium)
command -v java >/dev/null 2>&1 || need_apt+=(default-jre-headless)
command -v npm >/dev/null 2>&1 || need_apt+=(npm)
if [ ${#need_apt[@]} -gt 0 ]; then
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${need_apt[@]}" >/dev/null
fi

# The test extra includes dask: tests/test_distributed.py builds on a real Dask cluster.
python3 -m pip install -q --disable-pip-version-check -e '.[test]'

if [ ! -f tests/node_modules/vnu-jar/build/dist/vnu.jar ] || [ ! -f tests/node_modules/axe-core/axe.min.js ]; then
  (cd tests && npm install --no-audit --no-fund --silent --ignore-scripts >/dev/null)
fi
echo "test dependencies ready"
