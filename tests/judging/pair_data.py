"""Pair populations with known truth for the pair-design tests: a synthetic collection, and the iKAT 2024
qrels (read from the shared data folder, never copied) with synthetic runs and a noisy, miscalibrated machine."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from judging.measures.hybrid.pairs import PairPopulation, pair_population
from tests.conftest import SHARED_DATA

IKAT_QRELS = SHARED_DATA / "ikat2024" / "2024_test_qrels.trec"


def read_qrels(path: Path) -> dict[str, dict[str, int]]:
    qrels: dict[str, dict[str, int]] = {}
    for line in path.read_text().splitlines():
        if line.strip():
            turn, _zero, doc, grade = line.split()
            qrels.setdefault(turn, {})[doc] = int(grade)
    return qrels


def ikat_qrels() -> dict[str, dict[str, int]]:
    if not IKAT_QRELS.exists():
        pytest.skip(f"public iKAT data not found at {SHARED_DATA} (set ASSAY_SHARED_DATA)")
    return read_qrels(IKAT_QRELS)


def machine_judge(human: dict[str, dict[str, int]], *, seed: int) -> dict[str, dict[str, int]]:
    """A noisy, miscalibrated machine: over-grades the low grades, squeezes the top, and errs by ~1 grade."""
    rng = np.random.default_rng(seed)
    out: dict[str, dict[str, int]] = {}
    for turn in sorted(human):
        for doc in sorted(human[turn]):
            h = human[turn][doc]
            out.setdefault(turn, {})[doc] = int(np.clip(np.round(0.6 * h + 0.7 + rng.normal(0, 0.9)), 0, 4))
    return out


def runs_for(
    human: dict[str, dict[str, int]], *, seed: int, runs: int = 5, depth: int = 30
) -> dict[str, dict[str, dict[str, float]]]:
    """Runs of growing quality ranking pooled passages by a noisy view of the human grade, with a few
    passages outside the pool mixed in (they count as not relevant)."""
    rng = np.random.default_rng(seed)
    out: dict[str, dict[str, dict[str, float]]] = {}
    for r in range(runs):
        quality = 0.3 + 0.35 * r
        out[f"run{r}"] = {}
        for turn in sorted(human):
            docs = sorted(human[turn])
            score = {d: quality * human[turn][d] + rng.normal(0, 1.0) for d in docs}
            for extra in range(3):
                score[f"unpooled-{turn}-{extra}"] = rng.normal(1.0, 1.0)
            top = sorted(score, key=lambda d: -score[d])[:depth]
            out[f"run{r}"][turn] = {d: float(depth - i) for i, d in enumerate(top)}
    return out


def synthetic_qrels(*, seed: int, turns: int, per_turn: int) -> dict[str, dict[str, int]]:
    rng = np.random.default_rng(seed)
    qrels: dict[str, dict[str, int]] = {}
    for t in range(turns):
        richness = rng.beta(2, 3)
        for p in range(per_turn):
            grade = int(rng.binomial(4, richness * rng.beta(1, 2)))
            qrels.setdefault(f"{t + 1}_1", {})[f"d{p}"] = grade
    return qrels


def population(human: dict[str, dict[str, int]], *, seed: int, runs: int = 5) -> PairPopulation:
    return pair_population(
        machine=machine_judge(human, seed=seed),
        human=human,
        rankings=runs_for(human, seed=seed + 1, runs=runs),
    )
