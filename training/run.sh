#!/usr/bin/env bash
# Regenerates the injection classifier's committed artefacts from the pinned
# PyPI wheels, byte for byte:
#   classifier/weights/injection.bin            int8 weights
#   classifier/weights/injection.manifest.json  checksum, sources, thresholds
#   classifier/tests/vectors.json               shared Rust/Python vectors
#   training/report.json                        per-source rates (not committed)
# One command, no arguments; never run by cargo build or CI.
set -euo pipefail
cd "$(dirname "$0")"
if [ ! -x .venv/bin/python ]; then
    python3 -m venv .venv
fi
.venv/bin/pip install --quiet --disable-pip-version-check -r requirements.txt
mkdir -p .cache/wheels
.venv/bin/pip download --quiet --disable-pip-version-check --no-deps --require-hashes \
    -r sources.txt -d .cache/wheels
# Single-threaded (the machine is shared) and deterministic.
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1 PYTHONHASHSEED=0
nice -n 10 .venv/bin/python -m parallax_train.train \
    --wheels .cache/wheels \
    --weights ../classifier/weights/injection.bin \
    --manifest ../classifier/weights/injection.manifest.json \
    --vectors ../classifier/tests/vectors.json \
    --report report.json
