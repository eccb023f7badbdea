#!/usr/bin/env bash
# The first GPU run of issue 32 in one command (scripts/gpu_check.py says what it runs):
#   bash scripts/gpu_check.sh OUT_DIR [--device cpu] [--budget-s S] [--only KINDS]
# OUT_DIR defaults to $OUT. Packages the GPU image lacks (duckdb, submitit, ...) travel as wheels
# in .whl/ (made here by scripts/gpu_wheels.sh, carried with the working tree): they are
# installed into a private folder first, offline, and put on PYTHONPATH.
set -uo pipefail
cd "$(dirname "$0")/.."
out="${OUT:-}"
if [ $# -gt 0 ] && [ "${1#-}" = "$1" ]; then out="$1"; shift; fi
if [ -z "$out" ]; then echo "usage: $0 OUT_DIR [options] (or set OUT)" >&2; exit 2; fi
mkdir -p "$out"
if compgen -G ".whl/*.whl" >/dev/null; then
  site="${TMPDIR:-/tmp}/harness-gpu-site"
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target "$site" .whl/*.whl >"$out/env.log" 2>&1 || echo "wheel install failed" >>"$out/env.log"
  export PYTHONPATH="$site${PYTHONPATH:+:$PYTHONPATH}"
fi
exec python3 scripts/gpu_check.py --out "$out" "$@"
