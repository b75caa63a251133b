# Sourced by .ci/run (bash, set -euo pipefail, cwd = repository root).
# The injection classifier: its committed weights come from training/run.sh,
# which CI never runs. CI checks that the Python feature hashing (the
# specification) still reproduces the committed shared vectors; the Rust
# side, the weights' checksum against the manifest and the scores are
# checked by `cargo test -p parallax-classifier`. Standard library only.
echo "--- classifier: Python feature hashing against classifier/tests/vectors.json"
python3 training/check_vectors.py
