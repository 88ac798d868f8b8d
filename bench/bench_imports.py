"""Import speed of the foundation on PostgreSQL, each figure beside a baseline run in the same invocation.

The baseline of 1 and 2 is the plainest fast load into the same database: the same files read, each line
split, and the rows written by psycopg's COPY into a plain table of text columns, in one transaction
(bench/_setup.py's raw_copy).

1. The official iKAT 2024 qrels (20,575 lines): import + export (goal: under 2 s together).
2. A generated 40-run x 116-turn x 1000-deep TREC run set (4.64 M lines): import_run (goal: under 60 s),
   and its ratio to the raw COPY of the same rows, parsing included in both (no goal is set for the ratio
   until it has been measured at this size).
3. Peak memory (RSS) and time of importing generated files of --qrels-mb, --run-mb and --passages-mb
   megabytes (200 MB: 4.5 M qrels lines; a 3.3 M-line run of 1000 documents per turn; 200,000 passages of
   about 150 words), each in a process of its own on a copy of the same database (CREATE DATABASE with the
   bench's database as template): the import command, and the console's upload path (the stored upload,
   then its job as a task worker runs it); beside them the same Django process reading the file line by
   line and splitting each line, whose time the imports' are told against (goal: imports under 300 MB at
   200 MB). The RSS is the importing process's own: the PostgreSQL server's memory is not in it.

4. Beside other collections (--only beside): --beside-passages generated passages imported into a
   collection while the database holds six other collections of 10,000 (analyzed), the new rows written by
   `INSERT ... ON CONFLICT DO NOTHING` (today's) beside the former `INSERT ... WHERE NOT EXISTS`, both timed
   on the same stage in their generic plan, a statement per 2,000-line batch, each rolled back; then the
   whole import of the file; and --answers TREC RAG answers
   of six sentences imported a block at a time (today's) beside a block of one, the former import's
   response and its sentences at a time, each into a collection of its own.

5. A TREC RAG nugget evaluation (--only nuggets): nuggetizer's assignments files of --nugget-runs answer runs
   x --nugget-topics topics x --nuggets nuggets a topic (default 30 x 2,180 x 12: 784,800 labels, the
   evaluation `load_real_size --scale 10` builds), imported a run's file at a time (the first makes the
   judge's nugget lists, the others are matched against them), beside the raw COPY of the same labels (run,
   topic, nugget text, label) and the files' reading.

Usage: python bench/bench_imports.py [--runs 40] [--turns 116] [--depth 1000] [--qrels-mb 200]
                                     [--run-mb 200] [--passages-mb 200] [--beside-passages 100000]
                                     [--answers 3000] [--nugget-runs 30] [--nugget-topics 2180] [--nuggets 12]
                                     [--only qrels,runs,memory,beside,nuggets]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import secrets
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _setup import (  # noqa: E402
    ROOT,
    database_create,
    database_drop,
    django_disconnect,
    django_with_temp_database,
    raw_copy,
)

SHARED = ROOT.parent / "shared" / "data" / "ikat2024"


def raw_baseline(files: list[Path], columns: int) -> float:
    """Seconds to read the files, split each line and COPY the rows into one plain table, committed."""

    def rows():
        for path in files:
            with open(path, encoding="utf-8") as handle:
                for line in handle:
                    yield line.split()

    return raw_copy(columns, rows())


def bench_qrels(scratch: Path) -> None:
    from annotation.collection.io import topics_import
    from annotation.relevance.io import qrels_import, qrels_lines
    from annotation.services import collection_get_or_create, judge_get_or_create

    qrels = SHARED / "2024_test_qrels.trec"
    if not qrels.exists():
        print(f"qrels: skipped, {qrels} not found")
        return
    collection = collection_get_or_create(name="ikat24")
    topics_import(path=SHARED / "2024_test_topics.json", collection=collection)
    judge = judge_get_or_create(name="nist")
    start = time.perf_counter()
    qrels_import(path=qrels, collection=collection, judge=judge)
    imported = time.perf_counter() - start
    out = scratch / "export.qrels"
    with open(out, "w") as handle:
        handle.writelines(qrels_lines(collection=collection, judge=judge))
    total = time.perf_counter() - start
    baseline = raw_baseline([qrels], 4)
    print(
        f"qrels: 20,575 lines imported in {imported:.2f} s, import + export {total:.2f} s (goal < 2 s); "
        f"raw COPY {baseline:.2f} s; ratio {total / baseline:.1f}x"
    )


def bench_runs(scratch: Path, n_runs: int, n_turns: int, depth: int) -> None:
    from annotation.collection.io import run_import
    from annotation.models import Ranking, Topic, Turn
    from annotation.services import collection_get_or_create

    collection = collection_get_or_create(name="runs")
    turn_ids = [f"{t // 7}_{t % 7 + 1}" for t in range(n_turns)]
    for turn_id in turn_ids:
        topic, _ = Topic.objects.get_or_create(collection=collection, number=turn_id.split("_")[0])
        Turn.objects.create(collection=collection, topic=topic, turn_id=turn_id, position=0, utterance="q")
    rng = random.Random(42)
    docs = [
        f"clueweb22-en{rng.randrange(10000):04d}-{rng.randrange(100):02d}-{rng.randrange(100000):05d}:{rng.randrange(30)}"
        for _ in range(20000)
    ]
    files = []
    for r in range(n_runs):
        path = scratch / f"run{r}.trec"
        with open(path, "w") as handle:
            for turn_id in turn_ids:
                for rank, doc in enumerate(rng.sample(docs, depth), start=1):
                    handle.write(f"{turn_id} Q0 {doc} {rank} {1000 - rank + rng.random():.4f} run{r}\n")
        files.append(path)
    lines = n_runs * n_turns * depth
    start = time.perf_counter()
    for path in files:
        run_import(path=path, collection=collection)
    ours = time.perf_counter() - start
    assert Ranking.objects.count() == n_runs * n_turns
    baseline = raw_baseline(files, 6)
    print(
        f"runs: {lines:,} lines ({n_runs} runs x {n_turns} turns x {depth}) imported in {ours:.1f} s (goal < 60 s); "
        f"raw COPY {baseline:.1f} s; ratio {ours / baseline:.2f}x"
    )


MEMORY_KINDS = ("read lines", "command", "console upload")
# The file kinds measured: (import command, console upload kind, its options, the command's options).
FILE_KINDS: dict[str, tuple[str, str, dict[str, str], list[str]]] = {
    "qrels": ("import_qrels", "qrels", {"judge": "nist"}, ["--judge", "nist"]),
    "run": ("import_run", "run", {}, []),
    "passages": ("import_passages", "passages", {}, []),
}
WORDS = "the of and to in a is that for on with as by at from search passage retrieval query answer".split()


def _turn_id(index: int) -> str:
    return f"{index // 7}_{index % 7 + 1}"


def _write_qrels(path: Path, megabytes: int) -> tuple[int, int]:
    """(lines, turns): grades over the first 116 turns."""
    rng = random.Random(7)
    lines = 0
    with open(path, "w") as handle:
        while handle.tell() < megabytes * 1024**2:
            doc = f"clueweb22-en{rng.randrange(10000):04d}-{rng.randrange(100):02d}-{lines:08d}:{lines % 30}"
            handle.write(f"{_turn_id(lines % 116)} 0 {doc} {rng.randrange(5)}\n")
            lines += 1
    return lines, 116


def _write_run(path: Path, megabytes: int) -> tuple[int, int]:
    """(lines, turns): one run, 1000 documents per turn, as many turns as the size takes."""
    rng = random.Random(8)
    lines = turns = 0
    with open(path, "w") as handle:
        while handle.tell() < megabytes * 1024**2:
            for rank in range(1, 1001):
                doc = f"clueweb22-en{rng.randrange(10000):04d}-{rng.randrange(100):02d}-{rng.randrange(100000):05d}:{rank % 30}"
                handle.write(f"{_turn_id(turns)} Q0 {doc} {rank} {1000 - rank + rng.random():.4f} bm25\n")
            lines += 1000
            turns += 1
    return lines, turns


def _write_passages(path: Path, megabytes: int) -> tuple[int, int]:
    """(lines, 0): iKAT-shaped passages of about 150 words."""
    rng = random.Random(9)
    lines = 0
    with open(path, "w") as handle:
        while handle.tell() < megabytes * 1024**2:
            text = " ".join(rng.choices(WORDS, k=150))
            handle.write(
                json.dumps(
                    {
                        "doc_id": f"clueweb22-en{lines:08d}",
                        "passage_id": str(lines % 30),
                        "passage_text": text,
                    }
                )
            )
            handle.write("\n")
            lines += 1
    return lines, 0


WRITERS = {"qrels": _write_qrels, "run": _write_run, "passages": _write_passages}


def bench_memory(scratch: Path, sizes: dict[str, int]) -> None:
    """Each import in a child process on its own copy of a database holding the turns; its peak RSS and
    time beside the same Django process reading the file's lines alone."""
    from django.db import connection

    from annotation.models import Topic, Turn
    from annotation.services import collection_get_or_create

    files: dict[str, tuple[Path, int]] = {}
    needed = 0
    for kind, megabytes in sizes.items():
        if megabytes:
            path = scratch / f"big-{kind}"
            lines, turns = WRITERS[kind](path, megabytes)
            files[kind] = (path, lines)
            needed = max(needed, turns)
    collection = collection_get_or_create(name="memory")
    topics = {
        number: Topic.objects.create(collection=collection, number=number)
        for number in {_turn_id(t).split("_")[0] for t in range(needed)}
    }
    Turn.objects.bulk_create(
        Turn(
            collection=collection,
            topic=topics[_turn_id(t).split("_")[0]],
            turn_id=_turn_id(t),
            position=t % 7 + 1,
            utterance="q",
        )
        for t in range(needed)
    )
    template = connection.settings_dict["NAME"]
    django_disconnect()  # a database with sessions open cannot be copied
    for kind, (path, lines) in files.items():
        size = path.stat().st_size / 1024**2
        baseline = 0.0
        for measured in MEMORY_KINDS:
            copy = f"{template}_copy"
            copy_url = database_create(copy, template=template)
            # Measured as production runs: with DEBUG on, Django keeps the SQL of its last 9,000 queries, and
            # a chunk of a run's rankings makes one of megabytes.
            env = {
                **os.environ,
                "DATABASE_URL": copy_url,
                "DEBUG": "0",
                "SECRET_KEY": os.environ.get("SECRET_KEY") or secrets.token_urlsafe(50),
            }
            child = subprocess.run(
                [sys.executable, __file__, "--child", measured, kind, str(path)],
                env=env,
                capture_output=True,
                text=True,
            )
            database_drop(copy)
            label = FILE_KINDS[kind][0] if measured == "command" else measured
            if child.returncode:
                print(f"memory, {kind}, {label}: failed\n{child.stderr[-2000:]}")
                continue
            figures = json.loads(child.stdout.strip().splitlines()[-1])
            baseline = baseline or figures["seconds"]
            print(
                f"memory, {kind}, {label}: {size:.0f} MB ({lines:,} lines), peak RSS {figures['peak_mb']:.0f} MB, "
                f"{figures['seconds']:.1f} s ({figures['seconds'] / baseline:.1f}x reading the lines)"
                f"{figures.get('note', '')}"
            )


def memory_child(measured: str, kind: str, path: Path) -> None:
    """One measured run (the parent set DATABASE_URL); prints its peak RSS and time as JSON."""
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "assay.settings")
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()
    from django.core.files.uploadedfile import UploadedFile
    from django.core.management import call_command

    from annotation.models import Collection, Passage, Ranking, RelevanceJudgment
    from console.uploads.services import import_job_create, import_job_run

    collection = Collection.objects.get(name="memory")
    command, upload_kind, options, command_options = FILE_KINDS[kind]
    start = time.perf_counter()
    note = ""
    if measured == "read lines":
        with open(path, encoding="utf-8") as handle:
            for line in handle:
                line.split()
    elif measured == "command":
        call_command(
            command, str(path), "--collection", "memory", *command_options, stdout=open(os.devnull, "w")
        )
    else:
        with open(path, "rb") as handle:
            upload = UploadedFile(handle, name=path.name, size=path.stat().st_size)
            job = import_job_create(
                collection=collection, kind=upload_kind, upload=upload, options=options, user=None
            )
        job = import_job_run(job_id=job.pk)
        note = f", job {job.status}"
    if measured != "read lines":
        counts = {
            "qrels": (RelevanceJudgment, "judgments"),
            "run": (Ranking, "rankings"),
            "passages": (Passage, "passages"),
        }
        model, what = counts[kind]
        note += f", {model.objects.count():,} {what}"
    seconds = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps({"peak_mb": peak, "seconds": seconds, "note": note}))


def _passage_lines(count: int, prefix: str) -> list[dict]:
    rng = random.Random(prefix)
    return [
        {"id": f"msmarco_v2.1_doc_{i:08d}#{i % 9}", "title": "t", "text": " ".join(rng.choices(WORDS, k=80))}
        for i in range(count)
    ]


def _jsonl(path: Path, records: list[dict]) -> Path:
    with open(path, "w") as handle:
        handle.writelines(json.dumps(record) + "\n" for record in records)
    return path


def _stage_inserts(collection, path: Path, statement: str) -> float:
    """Seconds the passages' inserts take, a statement per batch as the import writes them, on a stage of
    the file; rolled back after."""
    from django.db import connection, transaction

    from annotation.collection.io import BATCH
    from annotation.formats.base import Problems
    from annotation.formats.topics import passage_records
    from core.staging import Stage, staged

    columns = [("passage_id", "varchar(255) NOT NULL"), ("title", "text NOT NULL"), ("body", "text NOT NULL")]
    with transaction.atomic():
        with staged(Stage("default", "bench_stage", columns, key=("passage_id",))) as stage:
            problems = Problems(str(path))
            stage.fill(
                (r.line, r.passage_id, r.title, r.text) for r in passage_records(path, problems=problems)
            )
            stage.seal(("line",))
            with connection.cursor() as cursor:
                # As a prepared statement runs once PostgreSQL settles on its generic plan.
                cursor.execute("SET LOCAL plan_cache_mode = force_generic_plan")
                start = time.perf_counter()
                for first in range(1, stage.rows + 1, BATCH):
                    cursor.execute(
                        statement.format(rows=stage.table),
                        {"collection": collection.pk, "first": first, "last": first + BATCH - 1},
                    )
                seconds = time.perf_counter() - start
        transaction.set_rollback(True)
    return seconds


OTHER_COLLECTIONS, OTHER_PASSAGES = 6, 10_000
FORMER_INSERT = (
    "INSERT INTO annotation_passage (collection_id, passage_id, title, text) "
    "SELECT %(collection)s, s.passage_id, s.title, s.body FROM {rows} s WHERE s.line BETWEEN %(first)s AND "
    "%(last)s AND NOT EXISTS (SELECT 1 FROM annotation_passage WHERE annotation_passage.collection_id = "
    "%(collection)s AND annotation_passage.passage_id = s.passage_id) ORDER BY s.line"
)
TODAYS_INSERT = (
    "INSERT INTO annotation_passage (collection_id, passage_id, title, text) "
    "SELECT %(collection)s, s.passage_id, s.title, s.body FROM {rows} s WHERE s.line BETWEEN %(first)s AND "
    "%(last)s ORDER BY s.line ON CONFLICT (collection_id, passage_id) DO NOTHING"
)


def _answer_lines(count: int) -> list[dict]:
    rng = random.Random(11)
    answers = []
    for topic in range(count):
        references = [f"msmarco_v2.1_doc_{rng.randrange(10**8):08d}#0" for _ in range(8)]
        sentences = [
            {"text": " ".join(rng.choices(WORDS, k=20)), "citations": rng.sample(range(8), 2)}
            for _ in range(6)
        ]
        answers.append(
            {
                "run_id": "rag-bench",
                "topic_id": f"2024-{topic:06d}",
                "topic": "a question",
                "references": references,
                "response_length": 120,
                "answer": sentences,
            }
        )
    return answers


def bench_beside(scratch: Path, n_passages: int, n_answers: int) -> None:
    from django.db import connection

    from annotation.collection import io
    from annotation.collection.io import passages_import, run_import
    from annotation.models import Response, ResponseSentence
    from annotation.services import collection_get_or_create

    # Other collections, analyzed: the statistics then say a new collection holds a few of their size,
    # whatever it holds by the end of its import.
    small = _jsonl(scratch / "small.jsonl", _passage_lines(OTHER_PASSAGES, "small"))
    for k in range(OTHER_COLLECTIONS):
        passages_import(path=small, collection=collection_get_or_create(name=f"other-{k}"))
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE annotation_passage")
    others = OTHER_COLLECTIONS * OTHER_PASSAGES
    path = _jsonl(scratch / "beside.jsonl", _passage_lines(n_passages, "beside"))
    third = collection_get_or_create(name="third")
    former = _stage_inserts(third, path, FORMER_INSERT)
    todays = _stage_inserts(third, path, TODAYS_INSERT)
    print(
        f"beside, passages' inserts of {n_passages:,} beside {OTHER_COLLECTIONS} collections of {OTHER_PASSAGES:,} "
        f"(generic plan): NOT EXISTS (former) {former:.1f} s, ON CONFLICT (today) {todays:.1f} s; "
        f"ratio {former / todays:.1f}x"
    )
    second = collection_get_or_create(name="second")
    start = time.perf_counter()
    passages_import(path=path, collection=second)
    print(
        f"beside, passages: {n_passages:,} imported beside {others:,} of other collections in "
        f"{time.perf_counter() - start:.1f} s (today's import, whole)"
    )

    path = _jsonl(scratch / "answers.jsonl", _answer_lines(n_answers))
    seconds = {}
    block = io.RESPONSE_BLOCK
    for label, size in (("a response at a time (former)", 1), (f"blocks of {block} (today)", block)):
        io.RESPONSE_BLOCK = size
        collection = collection_get_or_create(name=f"answers-{size}")
        start = time.perf_counter()
        run_import(path=path, collection=collection)
        seconds[label] = time.perf_counter() - start
        assert Response.objects.filter(run__collection=collection).count() == n_answers
        assert ResponseSentence.objects.filter(response__run__collection=collection).count() == 6 * n_answers
    io.RESPONSE_BLOCK = block
    (former_label, former), (todays_label, todays) = seconds.items()
    print(
        f"beside, answers: {n_answers:,} TREC RAG answers of 6 sentences, {former_label} {former:.1f} s, "
        f"{todays_label} {todays:.1f} s; ratio {former / todays:.1f}x"
    )


def bench_nuggets(scratch: Path, n_runs: int, n_topics: int, n_nuggets: int) -> None:
    from annotation.collection.io import run_import
    from annotation.models import Judge, NuggetAssignment
    from annotation.rag_nuggets.formats import AssignedAnswer, FileNugget, assignment_line
    from annotation.rag_nuggets.io import assignments_import
    from annotation.services import collection_get_or_create

    rng = random.Random(12)
    collection = collection_get_or_create(name="nuggets")
    topics = [f"2024-{t:06d}" for t in range(n_topics)]
    texts = {
        qid: [f"{k + 1}. {' '.join(rng.choices(WORDS, k=7))}" for k in range(n_nuggets)] for qid in topics
    }
    labels = ("support", "partial_support", "not_support")
    files: list[Path] = []
    rows: list[tuple[str, str, str, str]] = []
    for r in range(n_runs):
        run = f"rag-{r + 1:02d}"
        answers, lines = [], []
        for qid in topics:
            sentences = [" ".join(rng.choices(WORDS, k=14)) for _ in range(3)]
            answers.append(
                {
                    "run_id": run,
                    "topic_id": qid,
                    "topic": f"question {qid}",
                    "references": ["d0"],
                    "response_length": 0,
                    "answer": [{"text": text, "citations": [0]} for text in sentences],
                }
            )
            nuggets = [
                FileNugget(text, "vital" if k < n_nuggets * 2 // 5 else "okay", rng.choice(labels))
                for k, text in enumerate(texts[qid])
            ]
            rows += [(run, qid, n.text, n.assignment) for n in nuggets]
            record = AssignedAnswer(
                qid=qid, query=f"question {qid}", run_id=run, answer_text=" ".join(sentences), nuggets=nuggets
            )
            lines.append(assignment_line(record))
        run_import(path=_jsonl(scratch / f"{run}.jsonl", answers), collection=collection)
        path = scratch / f"{run}.assignments.jsonl"
        path.write_text("".join(lines), encoding="utf-8")
        files.append(path)
    judge = Judge.objects.create(name="nuggetizer", kind=Judge.Kind.LLM)
    start = time.perf_counter()
    for path in files:
        assignments_import(path=path, collection=collection, judge=judge)
    ours = time.perf_counter() - start
    assert NuggetAssignment.objects.filter(judge=judge).count() == len(rows)
    start = time.perf_counter()
    for path in files:
        with open(path, encoding="utf-8") as handle:
            for line in handle:
                json.loads(line)
    reading = time.perf_counter() - start
    baseline = raw_copy(4, rows)
    print(
        f"nuggets: {len(rows):,} assignment labels ({n_runs} runs x {n_topics:,} topics x {n_nuggets} nuggets), "
        f"a run's file at a time, imported in {ours:.1f} s; reading the files {reading:.1f} s, raw COPY of the "
        f"labels {baseline:.1f} s; ratio {ours / (reading + baseline):.1f}x the two"
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--runs", type=int, default=40)
    parser.add_argument("--turns", type=int, default=116)
    parser.add_argument("--depth", type=int, default=1000)
    parser.add_argument("--qrels-mb", type=int, default=200, help="memory: qrels file size (0: skip)")
    parser.add_argument("--run-mb", type=int, default=200, help="memory: TREC run file size (0: skip)")
    parser.add_argument("--passages-mb", type=int, default=200, help="memory: passages file size (0: skip)")
    parser.add_argument("--beside-passages", type=int, default=100_000, help="beside: passages imported")
    parser.add_argument("--answers", type=int, default=3000, help="beside: TREC RAG answers imported")
    parser.add_argument("--nugget-runs", type=int, default=30, help="nuggets: answer runs assessed")
    parser.add_argument("--nugget-topics", type=int, default=2180, help="nuggets: topics of each run")
    parser.add_argument("--nuggets", type=int, default=12, help="nuggets: nuggets a topic")
    parser.add_argument(
        "--only", default="qrels,runs,memory,beside,nuggets", help="which figures, comma-separated"
    )
    parser.add_argument("--child", nargs=3, metavar=("MEASURED", "KIND", "PATH"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        memory_child(args.child[0], args.child[1], Path(args.child[2]))
        return
    only = set(args.only.split(","))
    scratch = django_with_temp_database()
    if "qrels" in only:
        bench_qrels(scratch)
    if "runs" in only:
        bench_runs(scratch, args.runs, args.turns, args.depth)
    if "memory" in only:
        bench_memory(scratch, {"qrels": args.qrels_mb, "run": args.run_mb, "passages": args.passages_mb})
    if "beside" in only:
        bench_beside(scratch, args.beside_passages, args.answers)
    if "nuggets" in only:
        bench_nuggets(scratch, args.nugget_runs, args.nugget_topics, args.nuggets)


if __name__ == "__main__":
    main()
