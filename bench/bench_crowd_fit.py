"""Fitting the nugget-support aggregation models: where a fit's time goes.

A seeded synthetic crowd (150 questions, 8 answers each from 10 workers: three good, one fair, five
random, one who always says support) is fitted by each crowd-kit model with the settings in force
(CROWD_MACE_RESTARTS, CROWD_MACE_ITERATIONS, CROWD_GLAD_ITERATIONS, CROWD_GLAD_M_STEP_ITERATIONS,
CROWD_DS_ITERATIONS; set them in the environment to compare). Prints the time of building the answers'
DataFrame (ours) and of each model's fit (crowd-kit's), each fitted alone as an aggregation fits it.
No database; about a minute with crowd-kit's defaults.
"""

from __future__ import annotations

import os
import random
import sys
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "assay.settings")
import django  # noqa: E402

django.setup()

from django.conf import settings  # noqa: E402

from crowd.rag_nuggets.selectors import MODEL_METHODS, CountedAnswer, _fit_models  # noqa: E402

LABELS = ("support", "partial_support", "not_support")
WORKERS = {"good-1": 0.9, "good-2": 0.85, "good-3": 0.8, "fair-1": 0.6, "always": "support"}
WORKERS.update({f"random-{i}": 1 / 3 for i in range(1, 6)})


def synthetic(questions: int = 150, per_question: int = 8, seed: int = 1) -> list[CountedAnswer]:
    rng = random.Random(seed)
    answers = []
    for q in range(questions):
        truth = rng.choice(LABELS)
        for worker in rng.sample(sorted(WORKERS), per_question):
            skill = WORKERS[worker]
            if isinstance(skill, str):
                label = skill
            else:
                label = truth if rng.random() < skill else rng.choice([x for x in LABELS if x != truth])
            answers.append(CountedAnswer(f"q{q}", worker, label, True, q, None, None, ""))
    return answers


def main() -> None:
    import pandas as pd

    answers = synthetic()
    started = time.perf_counter()
    pd.DataFrame({"task": [a.task for a in answers], "worker": [a.worker for a in answers]})
    print(f"{len(answers)} answers; DataFrame built in {time.perf_counter() - started:.3f} s")
    print(
        f"settings: DS {settings.CROWD_DS_ITERATIONS} iterations; MACE {settings.CROWD_MACE_RESTARTS} restarts "
        f"x {settings.CROWD_MACE_ITERATIONS}; GLAD {settings.CROWD_GLAD_ITERATIONS} iterations, "
        f"{settings.CROWD_GLAD_M_STEP_ITERATIONS} M-step steps"
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _fit_models(answers[:10], methods=("ds",), seed=0)  # imports pandas, scipy and crowd-kit once
        for method in MODEL_METHODS:
            started = time.perf_counter()
            _fit_models(answers, methods=(method,), seed=0)
            print(f"{method}: {time.perf_counter() - started:.2f} s")


if __name__ == "__main__":
    main()
