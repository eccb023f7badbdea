#!/usr/bin/env bash
# The nightly lane: what CI leaves out to fit its time (scripts/test.sh): the benchmarks' quick
# modes marked `nightly` (tests/system/test_benchmarks.py), then every benchmark at its default
# size, each into benchmarks/nightly/<name>.txt. Assumes scripts/test.sh's set-up was done once.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m pytest -q -m nightly -p no:cacheprovider tests/system/test_benchmarks.py
mkdir -p benchmarks/nightly
for b in benchmarks/*.py; do
  name=$(basename "$b" .py)
  [ "$name" = common ] && continue  # the benchmarks' shared helpers
  echo "== $name"
  python3 "$b" | tee "benchmarks/nightly/$name.txt"
done
