"""Drawing a human sample and handing it to people through the existing work pages.

`human_sample_create` draws the units, stores each one's inclusion probability, and creates the work
that collects the labels: a relevance assignment of the sampled turns (or of a pool holding only the
sampled pairs), support assignments of the sampled topics, or a crowd campaign over the sampled turns.
All in one transaction: a sample whose work could not be created is not kept.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from django.contrib.auth.models import User
from django.db import transaction

from annotation.models import (
    Collection,
    Judge,
    Pool,
    PoolEntry,
    RelevanceJudgment,
    Run,
    Topic,
    TopicWork,
    Turn,
)
from annotation.relevance.assignments import AssignmentFailed, assignment_create
from annotation.relevance.pooling import pool_counts_store
from annotation.support.services import SupportConflict, support_assignment_set
from core.wording import plural
from crowd.campaigns.services import campaign_compose
from crowd.errors import CrowdError
from judging.hybrid.pair_estimate import pair_population_for
from judging.hybrid.units import HYBRID, RELEVANT_SHARE, UnitsError, unit_table
from judging.measures.hybrid.active import correction_from_machine, correction_from_pilot
from judging.measures.hybrid.estimators import EstimationError
from judging.measures.hybrid.pairs import stratified_draw
from judging.measures.hybrid.ranked import design_value, is_ranked, parse_ranked
from judging.measures.hybrid.sampling import SamplingError, disagreement, draw
from judging.measures.hybrid.two_stage import two_stage_keys
from judging.models import HumanSample, SampleUnit

# Each family declares the measure asked for when none is named (annotation/<family>/family.py).
DEFAULT_MEASURE = {task: hybrid.default for task, hybrid in HYBRID.items()}


class HybridError(ValueError):
    """The sample or its work cannot be made as asked; the message says why."""


@dataclass(frozen=True)
class WorkSpec:
    """Who collects the labels: assessors for relevance and support, a gold nugget judge for a campaign."""

    assessors: Sequence[User] = ()
    pool: Pool | None = None
    support_condition: str = "scratch"
    gold_judge: Judge | None = None
    create_work: bool = True
    crowd_provider: str = "platform"
    tests_per_batch: int = 1
    generate_tests: int = 0


def _population(
    *,
    collection: Collection,
    task: str,
    unit: str,
    measure: str,
    machine_judge: Judge,
    confidence_judges: Sequence[Judge],
    gold_judge: Judge | None,
    rel_threshold: int,
    pool: Pool | None,
    pilot_judges: Sequence[Judge] = (),
) -> tuple[list[str], np.ndarray]:
    """The units to draw from (those the machine judge labelled) and each one's weight for the
    uncertainty strategy: with confidence judges, the spread of their values around the machine judge's;
    else the expected size of the human-machine correction (`active`), predicted from the pilot judges'
    labels by machine value, or from the machine's values alone."""
    try:
        base = unit_table(
            collection=collection,
            task=task,
            measure=measure,
            human=machine_judge,
            machine=machine_judge,
            unit=unit,
            rel_threshold=rel_threshold,
            gold=gold_judge,
        )
        others = [
            unit_table(
                collection=collection,
                task=task,
                measure=measure,
                human=judge,
                machine=machine_judge,
                unit=unit,
                rel_threshold=rel_threshold,
                gold=gold_judge,
            ).human
            for judge in confidence_judges
        ]
        pilot = (
            unit_table(
                collection=collection,
                task=task,
                measure=measure,
                human=list(pilot_judges),
                machine=machine_judge,
                unit=unit,
                rel_threshold=rel_threshold,
                gold=gold_judge,
            ).human
            if pilot_judges
            else None
        )
    except UnitsError as exc:
        raise HybridError(str(exc)) from None
    keys = base.keys
    if pool is not None and task == "relevance":
        pooled_turns = set(PoolEntry.objects.filter(pool=pool).values_list("turn__turn_id", flat=True))
        if unit == "pair":
            pooled = {
                f"{t}\t{p}"
                for t, p in PoolEntry.objects.filter(pool=pool).values_list("turn__turn_id", "passage_id")
            }
            keep = [k in pooled for k in keys]
        else:
            keep = [k in pooled_turns for k in keys]
        keys = [k for k, ok in zip(keys, keep, strict=True) if ok]
        others = [o[:, np.array(keep, dtype=bool)] for o in others]
        machine = base.machine[:, np.array(keep, dtype=bool)]
        pilot = None if pilot is None else pilot[:, np.array(keep, dtype=bool)]
    else:
        machine = base.machine
    if others:
        return keys, disagreement(machine=machine, others=others)
    if pilot is not None:
        return keys, correction_from_pilot(human=pilot, machine=machine)
    return keys, correction_from_machine(machine)


def _relevance_work(*, sample: HumanSample, keys: list[str], spec: WorkSpec) -> str:

    if spec.pool is None:
        raise HybridError("relevance work needs the pool the sampled units come from (--pool)")
    pool = spec.pool
    try:
        if sample.unit == "pair":
            # A pool of just the sampled pairs, copied from the source pool, so the relevance pages show
            # assessors only the pairs that were drawn.
            wanted = {tuple(k.split("\t", 1)) for k in keys}
            entries = [
                e
                for e in PoolEntry.objects.filter(pool=spec.pool).select_related("turn")
                if (e.turn.turn_id, e.passage_id) in wanted
            ]
            if Pool.objects.filter(collection=sample.collection, name=sample.name).exists():
                raise HybridError(f"a pool named {sample.name!r} already exists in {sample.collection.name}")
            pool = Pool.objects.create(
                collection=sample.collection, name=sample.name, depth=spec.pool.depth, adaptive=False
            )
            PoolEntry.objects.bulk_create(
                [
                    PoolEntry(
                        pool=pool,
                        turn=e.turn,
                        passage_id=e.passage_id,
                        best_rank=e.best_rank,
                        best_run=e.best_run,
                        filter_grade=e.filter_grade,
                        via_filter=e.via_filter,
                        order=e.order,
                    )
                    for e in entries
                ]
            )
            pool_counts_store(pool=pool)
            turn_ids = sorted({e.turn.turn_id for e in entries})
        else:
            turn_ids = list(keys)
        assignment = assignment_create(
            pool=pool, name=sample.name, assessors=spec.assessors, turn_ids=turn_ids, with_ptkb=False
        )
    except AssignmentFailed as exc:
        raise HybridError(str(exc)) from None
    return f"relevance assignment {assignment.name} (pool {pool.name}, {plural(len(turn_ids), 'turn')})"


def _support_work(*, sample: HumanSample, keys: list[str], spec: WorkSpec, machine_judge: Judge) -> str:

    if not spec.assessors:
        raise HybridError("support work needs at least one assessor (--assessors)")
    topics = list(
        Topic.objects.filter(turns__collection=sample.collection, turns__turn_id__in=keys)
        .distinct()
        .order_by("id")
    )
    try:
        # Topics go round the assessors, so each sampled topic is judged once, in the chosen condition.
        for i, topic in enumerate(topics):
            user = spec.assessors[i % len(spec.assessors)]
            current = TopicWork.objects.filter(kind=TopicWork.Kind.SUPPORT, topic=topic, user=user).first()
            if current is not None and current.condition != spec.support_condition:
                # support_assignment_set would switch it quietly while it holds no labels; an organiser's
                # earlier choice of condition is not the sampler's to change.
                raise HybridError(
                    f"{user.get_username()} already has topic {topic.number} in condition {current.condition}; "
                    f"sample with --condition {current.condition}, or choose other assessors"
                )
            support_assignment_set(
                topic=topic,
                user=user,
                condition=spec.support_condition,
                machine_judge=machine_judge if spec.support_condition == "post-edit" else None,
            )
    except SupportConflict as exc:
        raise HybridError(str(exc)) from None
    # A topic with several turns is handed out whole; only its drawn turns count in the estimate.
    return (
        f"support assignments of {plural(len(topics), 'topic')} ({plural(len(keys), 'drawn turn')}, "
        f"{spec.support_condition}) to {plural(len(spec.assessors), 'assessor')}"
    )


def _crowd_work(*, sample: HumanSample, keys: list[str], spec: WorkSpec) -> str:
    # The crowd app's own compose service (the one crowd_compose and the compose page call) makes the
    # campaign and its batches, so the sampled pairs reach workers exactly as a hand-made campaign's do.
    # judging may use crowd's services; crowd imports nothing from judging, so there is no cycle.

    if spec.gold_judge is None:
        raise HybridError("an NtR campaign needs the gold nugget judge (--gold-judge)")
    turns = list(Turn.objects.filter(collection=sample.collection, turn_id__in=keys))
    runs = list(Run.objects.filter(collection=sample.collection))
    try:
        campaign, batches = campaign_compose(
            collection=sample.collection,
            name=sample.name,
            nugget_judge=spec.gold_judge,
            turns=turns,
            runs=runs,
            generate_tests=spec.generate_tests,
            provider=spec.crowd_provider,
            seed=sample.seed or 0,
            tests_per_batch=spec.tests_per_batch,
        )
    except CrowdError as exc:
        raise HybridError(str(exc)) from None
    return (
        f"crowd campaign {campaign.name} ({plural(len(turns), 'turn')} x {plural(len(runs), 'run')}, "
        f"{plural(len(batches), 'batch')}; "
        f"labels as {campaign.label_judge.name})"
    )


@transaction.atomic
def human_sample_create(
    *,
    collection: Collection,
    name: str,
    task: str,
    machine_judge: Judge,
    budget: int,
    strategy: str,
    seed: int | None = None,
    unit: str = "turn",
    measure: str | None = None,
    rel_threshold: int = 2,
    confidence_judges: Sequence[Judge] = (),
    pilot_judges: Sequence[Judge] = (),
    work: WorkSpec | None = None,
    pilot: HumanSample | None = None,
) -> HumanSample:
    """Draw `budget` units (exactly, or on average for the uncertainty strategy) for people to judge,
    store their inclusion probabilities, and create the work that collects the labels. The uncertainty
    strategy weighs units by the confidence judges' disagreement, else by the correction expected from
    the pilot judges' labels, else from the machine's values (`_population`)."""
    spec = work or WorkSpec()
    if HumanSample.objects.filter(collection=collection, name=name).exists():
        raise HybridError(f"a sample named {name!r} already exists in {collection.name}")
    measure = measure or DEFAULT_MEASURE.get(task, "")
    stratified = strategy in (HumanSample.Strategy.STRATIFIED, HumanSample.Strategy.TWO_STAGE)
    keys, uncertainty = _population(
        collection=collection,
        task=task,
        unit=unit,
        # A stratified pair sample may be meant for P@k or AP; its population is the pooled pairs all the same.
        measure=RELEVANT_SHARE if stratified and unit == "pair" else measure,
        machine_judge=machine_judge,
        confidence_judges=confidence_judges,
        gold_judge=spec.gold_judge,
        rel_threshold=rel_threshold,
        pool=spec.pool,
        pilot_judges=() if stratified else pilot_judges,
    )
    if not keys:
        raise HybridError("no units to draw from: the machine judge labelled none (in the pool)")
    strata: list[str] = [""] * budget
    try:
        if strategy == HumanSample.Strategy.TWO_STAGE:
            if task != "relevance" or unit != "pair" or pilot is not None:
                raise HybridError(
                    "the two-stage design draws (turn, passage) pairs, with no pilot: use --task relevance "
                    "--unit pair"
                )
            chosen, pi, strata = two_stage_keys(
                population=pair_population_for(collection=collection, human=[], machine=machine_judge),
                keys=keys,
                measure=measure,
                budget=budget,
                seed=seed,
            )
        elif stratified:
            chosen, pi, strata = _stratified(
                collection=collection,
                keys=keys,
                task=task,
                unit=unit,
                machine_judge=machine_judge,
                budget=budget,
                seed=seed,
                pilot=pilot,
                pilot_judges=pilot_judges,
                measure=measure,
            )
        else:
            if pilot is not None:
                raise HybridError("a pilot sample sets the allocation of a stratified sample only")
            chosen, pi = draw(
                size=len(keys), budget=budget, strategy=strategy, uncertainty=uncertainty, seed=seed
            )
            strata = [""] * len(chosen)
    except (SamplingError, EstimationError) as exc:
        raise HybridError(str(exc)) from None
    sample = HumanSample.objects.create(
        collection=collection,
        name=name,
        task=task,
        unit=unit,
        measure=measure,
        machine_judge=machine_judge,
        strategy=strategy,
        budget=budget,
        seed=seed,
        population=len(keys),
    )
    drawn = [keys[i] for i in chosen]
    SampleUnit.objects.bulk_create(
        [
            SampleUnit(sample=sample, key=k, inclusion_probability=float(p), stratum=st)
            for k, p, st in zip(drawn, pi, strata, strict=True)
        ]
    )
    if spec.create_work and drawn:
        if task == "relevance":
            made = _relevance_work(sample=sample, keys=drawn, spec=spec)
        elif task == "support":
            made = _support_work(sample=sample, keys=drawn, spec=spec, machine_judge=machine_judge)
        elif task == "ntr":
            made = _crowd_work(sample=sample, keys=drawn, spec=spec)
        else:
            raise HybridError(f"no work is made for {task} here: hand the sampled turns out on its own pages")
        sample.work = made[: HumanSample._meta.get_field("work").max_length]
        sample.save(update_fields=["work"])
    return sample


def _stratified(
    *,
    collection: Collection,
    keys: list[str],
    task: str,
    unit: str,
    machine_judge: Judge,
    budget: int,
    seed: int | None,
    pilot: HumanSample | None,
    pilot_judges: Sequence[Judge],
    measure: str,
) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """Pairs drawn within machine-grade strata (`pairs.stratified_draw`), Neyman-allocated from the pilot
    sample's human grades (the first of `pilot_judges` that graded a pair) when one is given, else
    proportionally."""
    if task != "relevance" or unit != "pair":
        raise HybridError(
            "the stratified design draws (turn, passage) pairs: use --task relevance --unit pair"
        )
    try:
        population = pair_population_for(collection=collection, human=[], machine=machine_judge)
    except EstimationError as exc:
        raise HybridError(str(exc)) from None
    position = {k: j for j, k in enumerate(population.keys)}
    at = np.array([position[k] for k in keys])
    machine = population.machine[at]
    # For a per-run measure the strata also split the pairs some run ranks within the cutoff from the
    # rest, and the allocation leans on them: they are the pairs the runs' scores depend on.
    value = design_value(population, parse_ranked(measure))[at] if is_ranked(measure) else None
    pilot_grades = None
    if pilot is not None:
        if not pilot_judges:
            raise HybridError("name the judges whose labels on the pilot sample set the allocation")
        drawn = set(pilot.units.values_list("key", flat=True))
        human: dict[str, int] = {}
        for judge in reversed(list(pilot_judges)):
            human.update(
                {
                    f"{t}\t{p}": g
                    for t, p, g in RelevanceJudgment.objects.filter(
                        judge=judge, turn__collection=collection
                    ).values_list("turn__turn_id", "passage_id", "grade")
                }
            )
        pilot_grades = np.array([human.get(k, np.nan) if k in drawn else np.nan for k in keys], dtype=float)
        if np.isnan(pilot_grades).all():
            names = ", ".join(j.name for j in pilot_judges)
            raise HybridError(f"{names} labelled none of the pilot sample {pilot.name}'s pairs")
    result = stratified_draw(machine=machine, budget=budget, seed=seed, pilot=pilot_grades, value=value)
    return result.chosen, result.probability, result.stratum


def human_sample_get(*, collection: Collection, name: str) -> HumanSample:
    try:
        return HumanSample.objects.select_related("machine_judge").get(collection=collection, name=name)
    except HumanSample.DoesNotExist:
        known = list(HumanSample.objects.filter(collection=collection).values_list("name", flat=True)[:10])
        raise HybridError(
            f"no sample named {name!r} in {collection.name}; samples: {', '.join(known) or 'none yet'}"
        ) from None
