"""NLI throughput: batched, length-sorted scoring against one pair at a time, same model, same pairs.

Target: batched throughput at least 2.5x one-pair-at-a-time. Runs on a tiny randomly
initialised DeBERTa-v2 built here (no download); give a real model directory as the first argument or
in NLI_BENCH_MODEL to measure it too (e.g. a local copy of MoritzLaurer/DeBERTa-v3-base-mnli-fever-anli).

    .venv/bin/python bench/bench_nli.py [MODEL_DIR]
"""

from __future__ import annotations

import os
import random
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
_tmp = tempfile.mkdtemp(prefix="bench-nli-")
# Django set up for its settings alone (the NLI client reads NLI_MODEL there): no database is opened.
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "assay.settings")

import django  # noqa: E402

django.setup()

from judging.clients.nli import NliModel, nli_model  # noqa: E402
from tests.judging.nli_model import SENTENCES, build_tiny_nli_model  # noqa: E402

TARGET = 2.5
BATCH = 32


def make_pairs(count: int, seed: int = 7) -> list[tuple[str, str]]:
    """Nugget-like pairs of mixed lengths (one to three sentences each side), reproducible."""
    rng = random.Random(seed)
    pairs = []
    for _ in range(count):
        premise = " ".join(rng.sample(SENTENCES, rng.randint(1, 3)))
        hypothesis = " ".join(rng.sample(SENTENCES, rng.randint(1, 2)))
        pairs.append((premise, hypothesis))
    return pairs


def timed(
    model: NliModel, pairs: list[tuple[str, str]], batch_size: int, repeats: int
) -> tuple[float, list[bool]]:
    """Best pairs/s of `repeats` runs (the machine is shared), and the labels."""
    best = 0.0
    labels: list[bool] = []
    for _ in range(repeats):
        start = time.perf_counter()
        labels = model.entails(pairs, batch_size=batch_size)
        best = max(best, len(pairs) / (time.perf_counter() - start))
    return best, labels


def measure(name: str, model: NliModel, pairs: list[tuple[str, str]], repeats: int) -> float:
    model.entails(pairs[:BATCH], batch_size=BATCH)  # warm-up: first-call allocations are not throughput
    single, single_labels = timed(model, pairs, 1, repeats)
    batched, batched_labels = timed(model, pairs, BATCH, repeats)
    ratio = batched / single
    same = sum(a == b for a, b in zip(single_labels, batched_labels, strict=True))
    print(
        f"{name}: {len(pairs)} pairs; one at a time {single:,.0f} pairs/s; batched ({BATCH}, length-sorted) "
        f"{batched:,.0f} pairs/s; ratio {ratio:.1f}x (target >= {TARGET}x); labels equal {same}/{len(pairs)}"
    )
    return ratio


def main() -> int:
    import torch

    # One thread on both sides: on a shared 2-core machine torch's thread pool spins against other
    # processes and makes the one-pair-at-a-time baseline ten times slower than it is, flattering batching.
    torch.set_num_threads(1)
    tiny_dir = build_tiny_nli_model(Path(_tmp) / "tiny-nli", hidden_size=64)
    ratios = {
        "tiny": measure("tiny DeBERTa-v2 (hidden 64, 2 layers)", nli_model(str(tiny_dir)), make_pairs(256), 3)
    }
    real = sys.argv[1] if len(sys.argv) > 1 else os.environ.get("NLI_BENCH_MODEL")
    if real:
        ratios["real"] = measure(real, nli_model(real), make_pairs(96), 1)
    else:
        print("no real model given (argv[1] or NLI_BENCH_MODEL): measured the tiny model only")
    failed = [name for name, ratio in ratios.items() if ratio < TARGET]
    if failed:
        print(f"FAILED: batched speed-up below {TARGET}x for {', '.join(failed)}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
