"""A collection of real size, for the page-budget test and the page bench.

The pages were only ever rendered on the demo (two conversations, three runs), where a query that joins
every table costs nothing; at a real campaign's size the same query took 40 s. This builds what a track
organiser has mid-campaign: the iKAT 2024 conversations (or generated ones of the same shape when the
public files are absent), tens of ranked and answer runs, three pools, machine judges' grades and
support labels, gold nuggets, assessors with work in progress, support work in both conditions and two
crowd campaigns (the in-platform one two-thirds answered by link workers) and a nugget evaluation of the
answer runs in nuggetizer's files (TREC RAG's). Passage texts are generated (the iKAT 2024 passages are not
public); the official qrels are loaded as a judge when the file is given.

`Size.scaled(n)` is that collection n times over, up to a TREC track's numbers (`load_real_size --scale
n`; 10 is the track's size): past the public file's 17 conversations, generated ones of the same shapes.

Everything goes in through the import and work services the console uses, from files written in the
formats people upload, so the rows have the shape real uploads give them.
"""

from __future__ import annotations

import gc
import json
import random
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path

from django.apps import apps
from django.contrib.auth import get_user_model
from django.db import connection, transaction
from django.test.utils import override_settings

from annotation.collection.io import passages_import, run_import, topics_import
from annotation.models import (
    Collection,
    Condition,
    Judge,
    NuggetAssignment,
    NuggetImportance,
    NuggetSupport,
    Passage,
    Pool,
    PoolEntry,
    RelevanceJudgment,
    Turn,
)
from annotation.nuggets.writer import nugget_upsert
from annotation.rag_nuggets.formats import AssignedAnswer, FileNugget, assignment_line
from annotation.rag_nuggets.io import assignments_import
from annotation.relevance.assignments import assignment_create
from annotation.relevance.io import qrels_import
from annotation.relevance.pooling import pool_build
from annotation.relevance.services import work_close, work_lease
from annotation.relevance.writer import RelevanceRow, relevance_judgments_upsert
from annotation.selectors import annotation_tables
from annotation.services import collection_get_or_create, judge_for_assessor, judge_get_or_create
from annotation.support.io import support_labels_import
from annotation.support.services import support_assignment_set
from core.bulk import statistics_refresh
from core.wording import plural
from crowd.answers.services import assignment_submit, worker_get_or_create
from crowd.campaigns.services import batches_compose, campaign_create
from crowd.models import CrowdAnswer, CrowdBatch, CrowdCampaign

WORDS = (
    "travel visa season weather budget museum train hotel route coast river market food history "
    "festival climate permit ticket walking guide desert temple mountain lake island city village "
    "health diet yoga sleep running injury recovery protein doctor insurance school course career"
).split()


@dataclass(frozen=True)
class Size:
    """How big a collection to build. The defaults are the real one; tests build smaller ones."""

    topics: int = 17
    turns_per_topic: int = 13  # generated conversations only; the iKAT file has its own
    ranked_runs: int = 30
    answer_runs: int = 15
    depth: int = 30  # ranks per turn in each ranked run
    candidates: int = 150  # passages per turn that the runs draw from
    pools: int = 3
    assessors: int = 10
    campaigns: int = 2
    campaign_topics: int = 2  # conversations each crowd campaign covers
    crowd_workers: int = 12  # link workers answering the in-platform campaign
    rag_nuggets: int = 12  # nuggets per turn that every answer run's answers are assigned against

    def scaled(self, factor: int) -> Size:
        """This size `factor` times over: conversations, turns, passages and pools' pairs (which follow the
        turns), crowd work and, up to a TREC track's numbers, runs (90) and assessors (50). A run's depth,
        a turn's candidates and its nuggets stay: they are a run's and a topic's shape, not the track's."""
        if factor < 1:
            raise ValueError("the scale is a whole number of at least 1")
        return replace(
            self,
            topics=self.topics * factor,
            ranked_runs=min(self.ranked_runs * factor, MAX_RANKED_RUNS),
            answer_runs=min(self.answer_runs * factor, MAX_ANSWER_RUNS),
            assessors=min(self.assessors * factor, MAX_ASSESSORS),
            campaign_topics=self.campaign_topics * factor,
            crowd_workers=self.crowd_workers * factor,
        )


# A TREC track's numbers: the 2024 RAG track had tens of runs (about 90 with its answer runs) and a
# campaign of 50 assessors is a large one; scaling stops there.
MAX_RANKED_RUNS, MAX_ANSWER_RUNS, MAX_ASSESSORS = 60, 30, 50

REAL = Size()
# A small collection of the same shape, for trying the command and for tests that build it at several scales.
SMALL = Size(
    topics=2,
    turns_per_topic=4,
    ranked_runs=2,
    answer_runs=1,
    depth=6,
    candidates=10,
    pools=2,
    assessors=2,
    campaigns=2,
    campaign_topics=1,
    crowd_workers=3,
    rag_nuggets=3,
)
SIZES = {"real": REAL, "small": SMALL}


@dataclass
class Built:
    collection: Collection
    counts: dict[str, int] = field(default_factory=dict)


def _text(rng: random.Random, words: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(words)).capitalize() + "."


def _topics(size: Size, topics_path: Path | None, rng: random.Random, seed: int) -> list[dict]:
    """The file's conversations, then (past its end, at a larger scale) generated ones of the same shape:
    the k-th generated one has as many turns and statements as the file's (k mod n)-th."""
    if topics_path is None:
        return [_conversation(rng, number, size.turns_per_topic, 12) for number in range(size.topics)]
    public = json.loads(topics_path.read_text(encoding="utf-8"))
    topics = public[: size.topics]
    # Their own stream: the file's conversations take nothing from the main one, so adding more leaves
    # everything else a scale-1 build makes as it was.
    more = random.Random(f"{seed}-conversations")
    numbers = {int(t["number"]) for t in public if str(t["number"]).isdigit()}
    number = max(numbers, default=-1) + 1
    for k in range(size.topics - len(topics)):
        shape = public[k % len(public)]
        topics.append(_conversation(more, number + k, len(shape["turns"]), len(shape["ptkb"])))
    return topics


def _conversation(rng: random.Random, number: int, turns: int, statements: int) -> dict:
    conversation = [
        {
            "turn_id": t + 1,
            "utterance": _text(rng, 12).rstrip(".") + "?",
            "resolved_utterance": _text(rng, 14).rstrip(".") + "?",
            "response": _text(rng, 40),
            "ptkb_provenance": [],
            "response_provenance": [],
        }
        for t in range(turns)
    ]
    ptkb = {str(k + 1): _text(rng, 8) for k in range(statements)}
    return {"number": number, "title": _text(rng, 4), "ptkb": ptkb, "turns": conversation}


def _official_passages(qrels_path: Path | None, turn_ids: set[str]) -> dict[str, list[str]]:
    """Passage ids the official qrels judged per turn, so those grades land on pooled passages."""
    by_turn: dict[str, list[str]] = {}
    if qrels_path is None:
        return by_turn
    for line in qrels_path.read_text(encoding="utf-8").splitlines():
        parts = line.split()
        if len(parts) == 4 and parts[0] in turn_ids:
            by_turn.setdefault(parts[0], []).append(parts[2])
    return by_turn


def _write(path: Path, lines: list[str]) -> Path:
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def realsize_build(
    *,
    name: str = "ikat-real-size",
    size: Size = REAL,
    topics_path: Path | None = None,
    qrels_path: Path | None = None,
    seed: int = 2024,
    say: Callable[[str], None] = lambda message: None,
) -> Built:
    """Build the collection `name` (which must not exist yet) at `size`, all or nothing; deterministic for
    a seed. `say` is told each step with the seconds so far."""
    # With DEBUG on (a development machine, the benches) Django would also log and format each of the
    # build's queries, a sixth of its time, which a server (DEBUG off) never spends.
    with override_settings(DEBUG=False), _collected_between_steps(), transaction.atomic():
        # Foreign keys checked as each statement ends rather than at the commit. Deferred, the checks of
        # every row written so far wait in one list, which PostgreSQL reads whole on each DDL statement of
        # the transaction (an import's stage is a temporary table created, indexed and dropped): at a
        # TREC track's size each stage then cost tenths of a second, and the commit a minute of checks.
        with connection.cursor() as cursor:
            cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
        built = _build(
            name=name, size=size, topics_path=topics_path, qrels_path=qrels_path, seed=seed, say=say
        )
    statistics_refresh([*annotation_tables(), *apps.get_app_config("crowd").get_models()])
    return built


@contextmanager
def _collected_between_steps() -> Iterator[None]:
    """Python's cycle collector paused for the build, which collects once after each step (`_build`'s
    `step`). The build holds its plan of the collection (every run's rankings, every answer) while the
    imports make and drop objects by the million, and the collector walked that plan again each time they
    piled up: tens of full passes, a tenth of the build's Python time."""
    paused = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if paused:
            gc.enable()


def _build(
    *,
    name: str,
    size: Size,
    topics_path: Path | None,
    qrels_path: Path | None,
    seed: int,
    say: Callable[[str], None],
) -> Built:
    if Collection.objects.filter(name=name).exists():
        raise ValueError(f"collection {name!r} exists: choose another name or delete it first")
    rng = random.Random(seed)
    collection = collection_get_or_create(name=name, description="A collection of real size (generated).")
    built = Built(collection)
    started = time.monotonic()

    def step(message: str) -> None:
        gc.collect()
        say(f"{message} ({time.monotonic() - started:.0f} s)")

    with tempfile.TemporaryDirectory(prefix="assay-realsize-") as scratch:
        folder = Path(scratch)
        topics = _topics(size, topics_path, rng, seed)
        topics_import(path=_write(folder / "topics.json", [json.dumps(topics)]), collection=collection)
        turns = list(Turn.objects.filter(collection=collection).order_by("topic__number", "position"))
        step(f"topics: {plural(len(topics), 'conversation')}, {plural(len(turns), 'turn')}")

        official = _official_passages(qrels_path, {t.turn_id for t in turns})
        candidates: dict[str, list[str]] = {}
        for turn in turns:
            ids = official.get(turn.turn_id, [])[: size.candidates]
            ids += [f"gen-{turn.turn_id}-{k}:0" for k in range(size.candidates - len(ids))]
            candidates[turn.turn_id] = ids
        # A passage can be a candidate of several turns of a conversation: it is written once.
        unique = dict.fromkeys(pid for ids in candidates.values() for pid in ids)
        with (folder / "passages.jsonl").open("w", encoding="utf-8") as out:
            for pid in unique:
                out.write(json.dumps({"id": pid, "text": _text(rng, rng.randint(40, 90))}) + "\n")
        passages_import(path=folder / "passages.jsonl", collection=collection)
        step(f"passages: {len(unique)}")

        # Each run prefers the turn's first candidates, with a run-specific taste, so runs overlap at the
        # top as real runs do and a depth-10 pool holds about 90 passages per turn.
        ranked: dict[str, dict[str, list[str]]] = {}
        powers = [(k + 1) ** 0.7 for k in range(size.candidates)]
        for r in range(size.ranked_runs):
            run = f"ranked-{r + 1:02d}"
            lines = []
            ranked[run] = {}
            for turn in turns:
                # Weighted sampling without replacement (Efraimidis-Spirakis): weight 1/(k+1)^0.7.
                keys = [
                    (rng.random() ** power, pid)
                    for power, pid in zip(powers, candidates[turn.turn_id], strict=True)
                ]
                top = [pid for _, pid in sorted(keys, reverse=True)[: size.depth]]
                ranked[run][turn.turn_id] = top
                lines += [f"{turn.turn_id} Q0 {pid} {k + 1} {100 - k:.3f} {run}" for k, pid in enumerate(top)]
            run_import(
                path=_write(folder / f"{run}.trec", lines), collection=collection, group=f"group-{r % 8}"
            )
        step(f"ranked runs: {size.ranked_runs} of depth {size.depth}")
        answers: list[str] = []
        for r in range(size.answer_runs):
            run = f"rag-{r + 1:02d}"
            for turn in turns:
                refs = rng.sample(candidates[turn.turn_id][:20], 3)
                answer = [{"text": _text(rng, 14), "citations": [k]} for k in range(3)]
                answers.append(
                    json.dumps(
                        {
                            "run_id": run,
                            "topic_id": turn.turn_id,
                            "topic": "",
                            "references": refs,
                            "response_length": 0,
                            "answer": answer,
                        }
                    )
                )
        # One file per run, as TREC RAG takes submissions: the answers import reads a file whole.
        for run, lines in _by_run(answers).items():
            run_import(path=_write(folder / f"{run}.jsonl", lines), collection=collection, group="rag")
        step(f"answer runs: {size.answer_runs}")

        judges = _machine_judges(collection, folder, rng, turns, ranked, answers, qrels_path)
        step("machine judges")
        _pools(collection, size, judges["llm"])
        step(f"pools: {size.pools}")
        _people(collection, size, rng)
        step(f"assessors: {size.assessors}")
        _crowd(collection, size, rng, turns, candidates)
        step(f"crowd campaigns: {size.campaigns}")
        _rag_nuggets(collection, folder, size, turns, answers, random.Random(f"{seed}-nuggets"))
        step(f"nugget assignments: {plural(size.rag_nuggets, 'nugget')} a turn")
        built.counts = realsize_counts(collection)
    return built


def realsize_counts(collection: Collection) -> dict[str, int]:
    """What a built collection holds, as the build and the page bench report it."""
    return {
        "topics": collection.topics.count(),
        "turns": Turn.objects.filter(collection=collection).count(),
        "passages": Passage.objects.filter(collection=collection).count(),
        "runs": collection.runs.count(),
        "pooled_pairs": PoolEntry.objects.filter(pool__collection=collection).count(),
        "relevance_labels": RelevanceJudgment.objects.filter(turn__collection=collection).count(),
        "nugget_assignments": NuggetAssignment.objects.filter(response__run__collection=collection).count(),
        "assessors": get_user_model()
        .objects.filter(username__startswith=f"{collection.name}-assessor-")
        .count(),
        "crowd_answers": CrowdAnswer.objects.filter(item__batch__campaign__collection=collection).count(),
    }


def _machine_judges(
    collection: Collection,
    folder: Path,
    rng: random.Random,
    turns: list[Turn],
    ranked: dict[str, dict[str, list[str]]],
    answers: list[str],
    qrels_path: Path | None,
) -> dict[str, Judge]:
    """Five machine judges: two LLMs grading passages, the official qrels, an LLM and an NLI model on support."""
    depth_of: dict[tuple[str, str], int] = {}
    for by_turn in ranked.values():
        for turn_id, pids in by_turn.items():
            for k, pid in enumerate(pids):
                depth_of[(turn_id, pid)] = min(depth_of.get((turn_id, pid), k), k)

    def grade(k: int) -> int:
        return max(0, min(4, int(rng.gauss(2.6 - k / 8, 1.2))))

    judges = {
        "llm": judge_get_or_create(
            name=f"{collection.name}-gpt-4o", kind=Judge.Kind.LLM, model="gpt-4o", prompt_version="umbrela-1"
        ),
        "llm2": judge_get_or_create(
            name=f"{collection.name}-llama-3",
            kind=Judge.Kind.LLM,
            model="llama-3-70b",
            prompt_version="umbrela-1",
        ),
    }
    every = [f"{t} 0 {p} {grade(k)}" for (t, p), k in depth_of.items()]
    qrels_import(path=_write(folder / "llm.qrels", every), collection=collection, judge=judges["llm"])
    top10 = [f"{t} 0 {p} {grade(k)}" for (t, p), k in depth_of.items() if k < 10]
    qrels_import(path=_write(folder / "llm2.qrels", top10), collection=collection, judge=judges["llm2"])
    if qrels_path is not None:
        turn_ids = {t.turn_id for t in turns}
        lines = [line for line in qrels_path.read_text().splitlines() if line.split()[:1][0] in turn_ids]
        judges["nist"] = judge_get_or_create(name=f"{collection.name}-nist-qrels", kind=Judge.Kind.IMPORTED)
        qrels_import(path=_write(folder / "nist.qrels", lines), collection=collection, judge=judges["nist"])
    for key, kind, model in (
        ("support-llm", Judge.Kind.LLM, "gpt-4o"),
        ("support-nli", Judge.Kind.NLI, "deberta"),
    ):
        judges[key] = judge_get_or_create(name=f"{collection.name}-{key}", kind=kind, model=model)
        labels = []
        for line in answers:
            answer = json.loads(line)
            for index, sentence in enumerate(answer["answer"]):
                labels.append(
                    json.dumps(
                        {
                            "run_id": answer["run_id"],
                            "topic_id": answer["topic_id"],
                            "sentence_index": index,
                            "passage_id": answer["references"][sentence["citations"][0]],
                            "label": rng.choice(["FS", "PS", "NS"]),
                        }
                    )
                )
        support_labels_import(
            path=_write(folder / f"{key}.jsonl", labels), collection=collection, judge=judges[key]
        )
    return judges


def _pools(collection: Collection, size: Size, llm: Judge) -> None:
    """Depth-10 over every run, the iKAT adaptive pool (top 5, then ranks 6-30 the LLM grades 2 or more)
    and depth-5, as many as `size.pools` asks for."""
    builds: list[Callable[[], object]] = [
        lambda: pool_build(collection=collection, name="top10", depth=10),
        lambda: pool_build(
            collection=collection,
            name="adaptive",
            depth=30,
            adaptive=True,
            filter_judge=llm,
            min_grade=2,
            always_depth=5,
        ),
        lambda: pool_build(collection=collection, name="top5", depth=5),
    ]
    for build in builds[: size.pools]:
        build()


def _people(collection: Collection, size: Size, rng: random.Random) -> None:
    """Assessors part-way through the first pool (some units done, one held half-done), and support work."""
    User = get_user_model()
    users = []
    for k in range(size.assessors):
        user, _ = User.objects.get_or_create(username=f"{collection.name}-assessor-{k + 1:02d}")
        users.append(user)
    pool = Pool.objects.filter(collection=collection).order_by("pk").first()
    if pool is None or not users:
        return
    assignment = assignment_create(
        pool=pool, name=f"{collection.name}-round-1", assessors=users, with_ptkb=False
    )
    for user in users:
        judge = judge_for_assessor(user=user)
        for done in (True, True, False):
            slot = work_lease(assignment=assignment, user=user)
            if slot is None:
                break
            pids = list(
                pool.entries.filter(turn_id__in=slot.unit.turn_pks).values_list("turn_id", "passage_id")
            )
            if not done:
                pids = pids[: len(pids) // 2]
            rows = [RelevanceRow(turn_id, pid, rng.randint(0, 4)) for turn_id, pid in pids]
            relevance_judgments_upsert(judge=judge, collection=collection, rows=rows)
            if done:
                work_close(slot=slot, judge=judge, passages_done=True)
    machine = Judge.objects.get(name=f"{collection.name}-support-llm")
    for i, user in enumerate(users):
        for j, topic in enumerate(collection.topics.order_by("number")[:3]):
            post_edit = (i + j) % 2 == 1
            support_assignment_set(
                topic=topic,
                user=user,
                condition=Condition.POST_EDIT if post_edit else Condition.SCRATCH,
                machine_judge=machine if post_edit else None,
            )


def _crowd(
    collection: Collection,
    size: Size,
    rng: random.Random,
    turns: list[Turn],
    candidates: dict[str, list[str]],
) -> None:
    """Gold nuggets (spans of pooled passages) on the first conversations, and crowd campaigns matching
    the answer runs' responses against them."""
    if size.campaigns < 1:
        return
    gold = judge_get_or_create(name=f"{collection.name}-gold-nuggets", kind=Judge.Kind.IMPORTED)
    topic_ids = list(dict.fromkeys(t.topic_id for t in turns))[: size.campaign_topics]
    chosen = [t for t in turns if t.topic_id in topic_ids]
    texts = dict(
        Passage.objects.filter(
            collection=collection, passage_id__in=[candidates[t.turn_id][0] for t in chosen]
        ).values_list("passage_id", "text")
    )
    for turn in chosen:
        pid = candidates[turn.turn_id][0]
        text = texts[pid]
        for k in range(3):
            start = (len(text) // 3) * k
            span = text[start : start + min(40, len(text) // 3)]
            nugget_upsert(
                judge=gold,
                turn=turn,
                key=f"[{k + 1}]",
                text=span,
                passage_id=pid,
                start=start,
                end=start + len(span),
            )
    runs = list(collection.runs.filter(name__startswith="rag-").order_by("name")[:3])
    providers = [CrowdCampaign.Provider.PLATFORM, CrowdCampaign.Provider.MTURK]
    for c in range(size.campaigns):
        campaign = campaign_create(
            collection=collection,
            name=f"{collection.name}-crowd-{c + 1}",
            nugget_judge=gold,
            turns=chosen,
            runs=runs,
            provider=providers[c % 2],
            seed=rng.randint(0, 10_000),
            tests_per_batch=0,
        )
        batches = batches_compose(campaign=campaign)
        if campaign.provider == CrowdCampaign.Provider.PLATFORM:
            _crowd_answer(batches, rng, size)


def _crowd_answer(batches: list[CrowdBatch], rng: random.Random, size: Size) -> None:
    """Workers with signed links answer the first two thirds of the batches, each batch by as many
    workers as it has places, so the campaign page has answers, votes and workers to count."""
    workers = [worker_get_or_create(worker_id=f"link:realsize-{k:02d}") for k in range(size.crowd_workers)]
    for batch in batches[: 2 * len(batches) // 3]:
        positions = list(batch.items.values_list("position", flat=True))
        for worker in rng.sample(workers, batch.max_assignments):
            assignment_submit(
                batch=batch,
                worker=worker,
                answers={p: rng.random() < 0.4 for p in positions},
                times_ms={p: rng.randint(3_000, 40_000) for p in positions},
            )


def _by_run(answers: list[str]) -> dict[str, list[str]]:
    runs: dict[str, list[str]] = {}
    for line in answers:
        runs.setdefault(json.loads(line)["run_id"], []).append(line)
    return runs


def _rag_nuggets(
    collection: Collection,
    folder: Path,
    size: Size,
    turns: list[Turn],
    answers: list[str],
    rng: random.Random,
) -> None:
    """A nugget evaluation of every answer run, as nuggetizer writes it: `size.rag_nuggets` nuggets a turn
    (the first ones vital) and each answer's support of each, imported a run's file at a time (the first
    file makes the judge's nugget lists, the others are matched against them)."""
    if size.rag_nuggets < 1 or not answers:
        return
    judge = judge_get_or_create(
        name=f"{collection.name}-nuggetizer",
        kind=Judge.Kind.LLM,
        model="gpt-4o",
        prompt_version="nuggetizer-1",
    )
    vital = max(1, size.rag_nuggets * 2 // 5)
    nuggets = {
        turn.turn_id: [
            (f"{k + 1}. {_text(rng, 7)}", NuggetImportance.VITAL if k < vital else NuggetImportance.OKAY)
            for k in range(size.rag_nuggets)
        ]
        for turn in turns
    }
    query = {turn.turn_id: turn.resolved_utterance or turn.utterance for turn in turns}
    labels = (NuggetSupport.SUPPORT, NuggetSupport.PARTIAL, NuggetSupport.NONE)
    for run, lines in _by_run(answers).items():
        records = []
        for line in lines:
            answer = json.loads(line)
            qid = answer["topic_id"]
            records.append(
                AssignedAnswer(
                    qid=qid,
                    query=query[qid],
                    run_id=run,
                    answer_text=" ".join(sentence["text"].strip() for sentence in answer["answer"]),
                    nuggets=[
                        FileNugget(text, importance, rng.choices(labels, weights=(3, 2, 5))[0])
                        for text, importance in nuggets[qid]
                    ],
                )
            )
        path = folder / f"{run}.assignments.jsonl"
        path.write_text("".join(assignment_line(r) for r in records), encoding="utf-8")
        assignments_import(path=path, collection=collection, judge=judge)
