"""Nugget recall and precision of RAG runs read from the database: the gold nuggets, the runs' rank-1
responses, the NtN or NtR labels and the personal turns, scored by `judging.measures.nuggets` (whose
docstring gives the rules)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence

from annotation.models import (
    Collection,
    Judge,
    NtnJudgment,
    NtrJudgment,
    Nugget,
    PtkbJudgment,
    Response,
    Run,
    Turn,
)
from core.ordering import natural_key
from judging.measures.nuggets import (
    Mode,
    NuggetMetricsError,
    NuggetMetricsReport,
    RunScore,
    TurnScore,
    averages,
    ntn_turn_scores,
    ntr_turn_recall,
    rank_by_recall,
)


def personal_turn_ids(*, collection: Collection, ptkb_judge: Judge | None = None) -> set[int]:
    """Turns with a relevant PTKB statement: judged relevant, or named in the turn's ptkb_provenance."""
    judgments = PtkbJudgment.objects.filter(turn__collection=collection, relevant=True)
    if ptkb_judge is not None:
        judgments = judgments.filter(judge=ptkb_judge)
    personal = set(judgments.values_list("turn_id", flat=True))
    for turn_id, provenance in Turn.objects.filter(collection=collection).values_list(
        "id", "ptkb_provenance"
    ):
        if provenance:
            personal.add(turn_id)
    return personal


def nugget_metrics(
    *,
    collection: Collection,
    gold_judge: Judge,
    response_nugget_judge: Judge | None = None,
    ntn_judge: Judge | None = None,
    ntr_judge: Judge | None = None,
    runs: Sequence[str] | None = None,
    ptkb_judge: Judge | None = None,
) -> NuggetMetricsReport:
    """Recall/precision NtN (with a response-nugget judge and an NtN judge) or recall NtR (with an NtR
    judge) of every run of the collection, per turn and macro-averaged, ranked by recall."""
    if ntr_judge is not None and (ntn_judge is not None or response_nugget_judge is not None):
        raise NuggetMetricsError("give either an NtR judge or a response-nugget judge with an NtN judge")
    if ntr_judge is None and (ntn_judge is None or response_nugget_judge is None):
        raise NuggetMetricsError("NtN metrics need both a response-nugget judge and an NtN judge")
    mode: Mode = "ntr" if ntr_judge is not None else "ntn"

    gold_by_turn: dict[int, list[int]] = defaultdict(list)
    # A de-duplicated gold set is a copy whose nuggets point at their originals: labels given on an
    # original count for its copy, so NtN/NtR labels need not be made again for the de-duplicated set.
    copy_of_original: dict[int, int] = {}
    for nugget_id, gold_turn, original_id in Nugget.objects.filter(
        judge=gold_judge, turn__collection=collection
    ).values_list("id", "turn_id", "original_id"):
        gold_by_turn[gold_turn].append(nugget_id)
        if original_id is not None:
            copy_of_original[original_id] = nugget_id
    label_targets = [n for ids in gold_by_turn.values() for n in ids] + list(copy_of_original)
    if not gold_by_turn:
        raise NuggetMetricsError(f"judge {gold_judge.name!r} has no nuggets in {collection.name}")
    turns = sorted(
        Turn.objects.filter(collection=collection, id__in=gold_by_turn).values_list("id", "turn_id"),
        key=lambda row: natural_key(row[1]),
    )
    all_turns = Turn.objects.filter(collection=collection).count()
    personal = personal_turn_ids(collection=collection, ptkb_judge=ptkb_judge)

    run_qs = Run.objects.filter(collection=collection)
    if runs is not None:
        run_qs = run_qs.filter(name__in=list(runs))
        missing = set(runs) - set(run_qs.values_list("name", flat=True))
        if missing:
            raise NuggetMetricsError(f"no such runs in {collection.name}: {', '.join(sorted(missing))}")
    run_list = list(run_qs.order_by("name"))

    # The rank-1 response of each (run, turn).
    first_response: dict[tuple[int, int], int] = {}
    for first_id, run_id, first_turn in (
        Response.objects.filter(run__in=run_list, turn_id__in=gold_by_turn)
        .order_by("-rank", "-id")
        .values_list("id", "run_id", "turn_id")
    ):
        first_response[(run_id, first_turn)] = first_id

    # Response nuggets per response (linked) or per turn (unlinked), and the positive pairs.
    linked: dict[int, list[int]] = defaultdict(list)
    unlinked: dict[int, list[int]] = defaultdict(list)
    labels: Iterable[tuple[int, int, bool]]
    if mode == "ntn":
        assert response_nugget_judge is not None and ntn_judge is not None
        for nugget_id, nugget_turn, nugget_response in Nugget.objects.filter(
            judge=response_nugget_judge, turn_id__in=gold_by_turn
        ).values_list("id", "turn_id", "response_id"):
            (linked[nugget_response] if nugget_response else unlinked[nugget_turn]).append(nugget_id)
        labels = NtnJudgment.objects.filter(judge=ntn_judge, gold_nugget_id__in=label_targets).values_list(
            "response_nugget_id", "gold_nugget_id", "entails"
        )
    else:
        labels = NtrJudgment.objects.filter(judge=ntr_judge, nugget_id__in=label_targets).values_list(
            "response_id", "nugget_id", "matched"
        )
    # Carried labels first, so a label given on the copy itself wins over its original's.
    label_of: dict[tuple[int, int], bool] = {}
    for unit, gold_id, positive in sorted(labels, key=lambda row: row[1] not in copy_of_original):
        label_of[(unit, copy_of_original.get(gold_id, gold_id))] = positive
    judged = set(label_of)
    positives = {pair for pair, positive in label_of.items() if positive}

    scores: list[RunScore] = []
    for run in run_list:
        turn_scores: list[TurnScore] = []
        for turn_pk, turn_id in turns:
            gold = gold_by_turn[turn_pk]
            response_id = first_response.get((run.id, turn_pk))
            score = TurnScore(
                turn_id=turn_id,
                personal=turn_pk in personal,
                gold=len(gold),
                response_id=response_id,
                response_nuggets=None,
                recall=0.0,
                precision=0.0 if mode == "ntn" else None,
            )
            if response_id is not None and mode == "ntn":
                premises = linked.get(response_id, []) + unlinked.get(turn_pk, [])
                score.response_nuggets = len(premises)
                score.recall, score.precision = ntn_turn_scores(
                    gold=gold, response_nuggets=premises, entails=positives
                )
                score.unjudged = sum(1 for r in premises for g in gold if (r, g) not in judged)
            elif response_id is not None:
                score.recall = ntr_turn_recall(
                    gold=gold, matched=[g for g in gold if (response_id, g) in positives]
                )
                score.unjudged = sum(1 for g in gold if (response_id, g) not in judged)
            turn_scores.append(score)
        scores.append(
            RunScore(
                run=run.name,
                all=averages(turn_scores, mode),
                personal=averages([s for s in turn_scores if s.personal], mode),
                non_personal=averages([s for s in turn_scores if not s.personal], mode),
                unjudged=sum(s.unjudged for s in turn_scores),
                turns=turn_scores,
            )
        )

    rank_by_recall(scores)

    matching = ntr_judge if ntr_judge is not None else ntn_judge
    assert matching is not None
    return NuggetMetricsReport(
        collection=collection.name,
        gold_judge=gold_judge.name,
        mode=mode,
        matching_judge=matching.name,
        response_nugget_judge=response_nugget_judge.name if response_nugget_judge else None,
        turns_with_gold=len(turns),
        turns_without_gold=all_turns - len(turns),
        runs=scores,
    )
