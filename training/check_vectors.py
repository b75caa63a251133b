"""Checks the Python feature hashing (the specification) against the
committed shared vectors, as `classifier/tests/vectors.rs` checks the Rust
side: both must reproduce every vector's feature count, first features
and digest. Standard library only, so CI runs it with any python3, without
the training venv. Exit status 1 on any difference.

    python3 training/check_vectors.py
"""

import json
import struct
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from parallax_train import features  # noqa: E402

vectors = json.loads((Path(__file__).resolve().parent.parent / "classifier/tests/vectors.json").read_text())
bad = 0
for v in vectors:
    seq = [b for _, b in features.features(v["text"])]
    digest = features.FNV_OFFSET
    for b in seq:
        digest = features.fnv_bytes(digest, struct.pack("<I", b))
    if len(seq) != v["count"] or seq[:16] != v["first"] or f"{digest:016x}" != v["digest"]:
        bad += 1
        print(f"mismatch: {v['text'][:60]!r}")
print(f"{len(vectors) - bad} passed, {bad} failed")
sys.exit(1 if bad else 0)
