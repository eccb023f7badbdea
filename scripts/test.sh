#!/usr/bin/env bash
# The whole test suite on a fresh machine: install the package with its test tools, start the
# project's single-node SLURM cluster (needs root and apt; see .ci/slurm/start.sh), install
# Debian's chromium (the report's test opens it headless) and faketime (the clock-skew test),
# lint (ruff), run pytest with the import contracts (lint-imports) and types (mypy) checked
# beside it.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install.sh
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  missing=()  # chromium: the report's test; faketime: the clock-skew test (test_clock_skew.py);
  # tmux: harness watch's test (test_watch.py)
  command -v chromium >/dev/null || missing+=(chromium)
  command -v faketime >/dev/null || missing+=(faketime)
  command -v tmux >/dev/null || missing+=(tmux)
  if [ ${#missing[@]} -gt 0 ]; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}"
  fi
  bash .ci/slurm/start.sh
else
  echo "not root: SLURM test cluster not started, chromium and tmux not installed; their tests skip" \
    "(they fail under CI=true)"
fi
ruff check . && ruff format --check .
# the import contracts (lint-imports: the architecture's layers and "never" rules, pyproject.toml
# [tool.importlinter]) and the types (mypy: --strict on every package, pyproject.toml
# [tool.mypy]; cache in .mypy_cache, gitignored) are checked beside pytest: one core's 30 s
# that would otherwise come first; their output follows pytest's, and either failing fails
checks=$(mktemp)
(lint-imports && mypy) >"$checks" 2>&1 &
checks_pid=$!
# four pytest workers (-n 4) on the 2-core machine: most tests wait on processes they start or
# on the SLURM queue, and two workers left a core idle half the time (21.6 min against 17.0);
# tests on the SLURM cluster run one after another, each file's tests together
# (tests/conftest.py: xdist groups), the longest groups first (tests/durations.json;
# --no-loadscope-reorder keeps that order). The benchmarks' quick modes but two are the
# nightly lane's (scripts/nightly.sh).
status=0
python3 -m pytest -q -n 4 --dist loadgroup --no-loadscope-reorder -m "not nightly" "$@" || status=$?
checked=0
wait "$checks_pid" || checked=$?
cat "$checks"
rm -f "$checks"
if [ "$checked" != 0 ]; then
  echo "lint-imports or mypy failed (above)" >&2
  exit 1
fi
exit "$status"
