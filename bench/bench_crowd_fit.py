"""Fitting the nugget-support aggregation models: each one's time against the majority vote, and its accuracy.

A seeded synthetic crowd (250 questions, 4 answers each = 1,000 answers, from 10 workers: three good, one
fair, five random, one who always says support) is aggregated by majority vote and fitted by each crowd-kit
model with the settings in force (CROWD_MACE_RESTARTS, CROWD_MACE_ITERATIONS, CROWD_GLAD_ITERATIONS,
CROWD_GLAD_M_STEP_ITERATIONS, CROWD_DS_ITERATIONS; set them in the environment to compare). Prints each
method's time, its ratio to the majority vote's time measured in the same run, and its accuracy against the
crowd's true labels. Times are the process's CPU seconds (time.process_time), which other work on a shared
machine inflates far less than wall time; `--wall` times wall-clock seconds instead. `--questions N` and `--per-question K` change the crowd's size,
`--repeat N` times each method N times and keeps the fastest; `--against-crowdkit` also fits with crowd-kit's
own defaults and says how many labels the settings in force share with that fit. No database.

`--job N` instead times the fit job of each method as the campaign page's button runs it, on a campaign of
about N confirmed answers built in a throwaway database (the crowd tests' seeded synthetic crowd): the job
reads the answers from the database, fits, writes the method's labels and stores the comparison of all
four methods. The majority vote's job, in the same invocation, is the baseline; the target is every job
under 60 s of wall time at N = 10,000.

    .venv/bin/python bench/bench_crowd_fit.py
    .venv/bin/python bench/bench_crowd_fit.py --questions 2500   # 10,000 answers
    DEBUG=1 PG_PORT=.. .venv/bin/python bench/bench_crowd_fit.py --job 10000
    CROWD_MACE_RESTARTS=10 CROWD_GLAD_ITERATIONS=100 .venv/bin/python bench/bench_crowd_fit.py
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import time
import warnings
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "assay.settings")
os.environ.setdefault("DEBUG", "1")  # no database, no secret: the development settings do
if "--job" in sys.argv:
    from _setup import django_with_temp_database

    django_with_temp_database()
else:
    import django

    django.setup()

from django.conf import settings  # noqa: E402
from django.test import override_settings  # noqa: E402

from crowd.aggregation.selectors import MODEL_METHODS, CountedAnswer, _fit_models, majority_labels  # noqa: E402,I001

LABELS = ("support", "partial_support", "not_support")
WORKERS: dict[str, float | str] = {
    "good-1": 0.9,
    "good-2": 0.85,
    "good-3": 0.8,
    "fair-1": 0.6,
    "always": "support",
}
WORKERS.update({f"random-{i}": 1 / 3 for i in range(1, 6)})


def synthetic(
    questions: int, per_question: int = 8, seed: int = 1
) -> tuple[list[CountedAnswer], dict[str, str]]:
    """The crowd's answers and each question's true label."""
    rng = random.Random(seed)
    answers = []
    truth: dict[str, str] = {}
    for q in range(questions):
        truth[f"q{q}"] = label_true = rng.choice(LABELS)
        for worker in rng.sample(sorted(WORKERS), per_question):
            skill = WORKERS[worker]
            if isinstance(skill, str):
                label = skill
            else:
                wrong = [x for x in LABELS if x != label_true]
                label = label_true if rng.random() < skill else rng.choice(wrong)
            answers.append(CountedAnswer(f"q{q}", worker, label, True, q, None, None, ""))
    return answers, truth


def fastest(
    action: Callable[[], dict[str, str]], repeat: int, clock: Callable[[], float]
) -> tuple[float, dict[str, str]]:
    best, labels = float("inf"), {}
    for _ in range(repeat):
        started = clock()
        labels = action()
        best = min(best, clock() - started)
    return best, labels


def accuracy(labels: dict[str, str], truth: dict[str, str]) -> float:
    return sum(labels.get(task) == label for task, label in truth.items()) / len(truth)


# crowd-kit's own defaults, to compare a cheaper setting's labels with (--against-crowdkit).
CROWDKIT_DEFAULTS = {
    "CROWD_DS_ITERATIONS": 100,
    "CROWD_MACE_RESTARTS": 10,
    "CROWD_MACE_ITERATIONS": 50,
    "CROWD_GLAD_ITERATIONS": 100,
    "CROWD_GLAD_M_STEP_ITERATIONS": 25,
}


def job_bench(answers_wanted: int) -> None:
    """Each method's fit job on a campaign of about `answers_wanted` answers, read from the database."""
    from crowd.aggregation.services import fit_job_run
    from crowd.aggregation.tasks import fit_job_start
    from crowd.models import CrowdAnswer
    from tests.crowd.crowd_helpers import build_nugget_campaign, synthetic_crowd_answer

    # Batches of 5 pairs and 3 test questions, 5 workers each: 40 answers a batch, 5 per pair.
    pairs = max(5, answers_wanted // 8)
    topics = max(1, pairs // 25)
    started = time.perf_counter()
    campaign = build_nugget_campaign(
        topics=topics, runs=5, nuggets=5, n_tests=60, batch_size=5, tests_per_batch=3, assignments=5
    )
    synthetic_crowd_answer(campaign, workers=WORKERS)
    answers = CrowdAnswer.objects.filter(item__batch__campaign=campaign).count()
    print(
        f"fit jobs, as the campaign page runs them: {answers:,} answers ({topics * 25:,} pairs x 5 workers, "
        f"and the test questions) from the database, built in {time.perf_counter() - started:.0f} s; "
        f"wall seconds, load average {os.getloadavg()[0]:.1f}"
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        baseline = 0.0
        for method in ("majority", *MODEL_METHODS):
            job = fit_job_start(campaign=campaign, method=method, min_votes=1)
            started, cpu = time.perf_counter(), time.process_time()
            job = fit_job_run(job_id=job.pk)
            took, cpu = time.perf_counter() - started, time.process_time() - cpu
            baseline = baseline or took
            print(
                f"{method:>8} job: {took:6.1f} s ({cpu:5.1f} s CPU)  {took / baseline:5.2f}x the majority's job  "
                f"({job.status}: {job.message[:60]})"
            )
            assert job.status == "done", job.message


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--questions", type=int, default=250)
    parser.add_argument("--per-question", type=int, default=4)
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--wall", action="store_true", help="Wall-clock seconds instead of CPU seconds.")
    parser.add_argument(
        "--against-crowdkit",
        action="store_true",
        help="Also fit with crowd-kit's defaults and print the share of labels each setting shares with them.",
    )
    parser.add_argument(
        "--job",
        type=int,
        default=0,
        help="Time each method's fit job on a campaign of about this many answers in a throwaway database.",
    )
    args = parser.parse_args()
    if args.job:
        job_bench(args.job)
        return
    clock = time.perf_counter if args.wall else time.process_time

    answers, truth = synthetic(args.questions, args.per_question)
    print(
        f"{len(answers)} answers on {len(truth)} questions, {'wall' if args.wall else 'CPU'} seconds; "
        f"settings: DS {settings.CROWD_DS_ITERATIONS} iterations; MACE {settings.CROWD_MACE_RESTARTS} restarts "
        f"x {settings.CROWD_MACE_ITERATIONS}; GLAD {settings.CROWD_GLAD_ITERATIONS} iterations, "
        f"{settings.CROWD_GLAD_M_STEP_ITERATIONS} M-step steps"
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _fit_models(answers[:10], methods=("ds",), seed=0)  # imports pandas, scipy and crowd-kit once
        # Milliseconds: the fastest of several, so one scheduling hiccup does not halve every ratio.
        majority_s, majority = fastest(lambda: majority_labels(answers), max(args.repeat, 20), clock)
        print(f"{'majority':>8}: {majority_s:8.4f} s  {'1':>7}x  accuracy {accuracy(majority, truth):.3f}")
        fitted = {}
        for method in MODEL_METHODS:
            took, fitted[method] = fastest(
                lambda m=method: _fit_models(answers, methods=(m,), seed=0)[0][m], args.repeat, clock
            )
            print(
                f"{method:>8}: {took:8.2f} s  {took / majority_s:7.0f}x  "
                f"accuracy {accuracy(fitted[method], truth):.3f}"
            )
        if args.against_crowdkit:
            with override_settings(**CROWDKIT_DEFAULTS):
                reference, _ = _fit_models(answers, methods=MODEL_METHODS, seed=0)
            for method in MODEL_METHODS:
                same = accuracy(fitted[method], reference[method])
                print(f"{method:>8}: {same:.3f} of its labels equal to crowd-kit's defaults' fit")


if __name__ == "__main__":
    main()
