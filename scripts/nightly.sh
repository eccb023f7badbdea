#!/usr/bin/env bash
# The nightly lane: what CI leaves out to fit its time (scripts/test.sh): the benchmarks' quick
# modes marked `nightly` (tests/system/test_benchmarks.py), the GPU script run end to end on the
# CPU (tests/system/test_gpu_check.py: three benchmarks and two pytest runs, 2 min of CPU; CI
# keeps its plan's tests), the SLURM sweep at 10,000 runs, then
# every benchmark at its default size, each into benchmarks/nightly/<name>.txt. Assumes
# scripts/test.sh's set-up was done once (the SLURM test cluster included).
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m pytest -q -m nightly -p no:cacheprovider tests/system/test_benchmarks.py \
  tests/system/test_gpu_check.py
# the disturbed SLURM sweep at 10,000 runs (CI runs it at 100), with its timings
CI=true HARNESS_SWEEP_LRS=1000 python3 -m pytest -q -s -p no:cacheprovider tests/launch/test_slurm_sweep.py
mkdir -p benchmarks/nightly
for b in benchmarks/*.py; do
  name=$(basename "$b" .py)
  [ "$name" = common ] && continue  # the benchmarks' shared helpers
  echo "== $name"
  python3 "$b" | tee "benchmarks/nightly/$name.txt"
done
