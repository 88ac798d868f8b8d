"""Exports and imports of the big label families at TREC scale, each beside a baseline run in the same
invocation.

Set-up (psycopg COPY, not the writers, so that it takes a minute): 300 topics of one turn, 90 runs answering
each, and
- relevance: --qrels grades (1,000,000) of the judge `nist`, spread over the turns;
- TREC RAG nuggets: 30 nuggets per topic with vital/okay, and one assignment label per (answer, nugget) of
  the judge `gpt-4o` (810,000: nuggetizer's evaluation of 30 nuggets per topic over 90 runs);
- support: --sentences sentences per answer citing --citations passages each, one label per citation of the
  judge `gpt-4o-support` (972,000).

Then each export is read as a user asks for it, through the URL the console's download links name (the
console's export, or the nugget scores page's assignments download), with Django's test client in a process
of its own, its streamed body written to a file a block at a time: its time, its first block's time, and its
peak RSS beside the process's RSS before the request (what the export itself took). The baseline is
psycopg's COPY TO of the same rows (the same join, no order, no formatting) from a process set up the same
way. Each file is read back by its reference reader (ir_measures' qrels reader; nuggetizer's record shape
read with `parse_assignments`; the support labels' own parser) and compared with the database.

Then each exported file is uploaded back as another judge through the console's upload path (the stored
upload, then its job as a task worker runs it) in a process of its own on a copy of the database, its peak
RSS against the bound of bench_imports (300 MB) and its time against reading the file's lines in the same
kind of process.

Usage: python bench/bench_exports.py [--topics 300] [--runs 90] [--nuggets 30] [--qrels 1000000]
                                     [--sentences 12] [--citations 3] [--only exports,imports]
                                     [--kinds qrels,judgment-log,nugget-assignments,support-labels]
"""

from __future__ import annotations

import argparse
import json
import os
import random
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
)

COLLECTION = "trec-scale"
EXPORT_GOAL_S = 30.0
IMPORT_BOUND_MB = 300.0
LABELS = ("support", "partial_support", "not_support")
SUPPORT = ("FS", "PS", "NS")

# kind: (URL name, its arguments after the collection, query, file name, upload kind, upload options)
EXPORTS: dict[str, tuple[str, str, dict[str, str], str, str, dict[str, str]]] = {
    "qrels": ("console-export", "qrels", {"judge": "nist"}, "qrels", "qrels", {"judge": "nist-copy"}),
    "judgment-log": ("console-export", "judgment-log", {"judge": "nist"}, "log.csv", "", {}),
    "nugget-assignments": (
        "judging:nugget-scores-download",
        "assignments",
        {"judge": "gpt-4o"},
        "assignments.jsonl",
        "nugget-assignments",
        {"judge": "gpt-4o-copy", "nugget_judge": "gpt-4o"},
    ),
    "support-labels": (
        "console-export",
        "support-labels",
        {"judge": "gpt-4o-support"},
        "support.jsonl",
        "support-labels",
        {"judge": "gpt-4o-support-copy"},
    ),
}
# The same rows read by COPY TO: the least any export of them can cost.
BASELINES = {
    "qrels": """SELECT t.turn_id, j.passage_id, j.grade FROM annotation_relevancejudgment j
        JOIN annotation_turn t ON t.id = j.turn_id JOIN annotation_judge d ON d.id = j.judge_id
        WHERE d.name = 'nist'""",
    "judgment-log": """SELECT d.name, u.username, d.kind, t.turn_id, j.passage_id, j.grade, j.time_spent_ms,
        j.created_at, j.updated_at FROM annotation_relevancejudgment j
        JOIN annotation_turn t ON t.id = j.turn_id JOIN annotation_judge d ON d.id = j.judge_id
        LEFT JOIN auth_user u ON u.id = d.user_id WHERE d.name = 'nist'""",
    "nugget-assignments": """SELECT u.name, t.turn_id, t.utterance, n.text, i.importance, a.label
        FROM annotation_nuggetassignment a JOIN annotation_response r ON r.id = a.response_id
        JOIN annotation_run u ON u.id = r.run_id JOIN annotation_turn t ON t.id = r.turn_id
        JOIN annotation_nugget n ON n.id = a.nugget_id
        LEFT JOIN annotation_nuggetimportancejudgment i ON i.nugget_id = n.id AND i.judge_id = a.judge_id
        JOIN annotation_judge d ON d.id = a.judge_id WHERE d.name = 'gpt-4o'""",
    "support-labels": """SELECT u.name, t.turn_id, s.index, j.passage_id, j.label
        FROM annotation_supportjudgment j JOIN annotation_responsesentence s ON s.id = j.sentence_id
        JOIN annotation_response r ON r.id = s.response_id JOIN annotation_run u ON u.id = r.run_id
        JOIN annotation_turn t ON t.id = r.turn_id JOIN annotation_judge d ON d.id = j.judge_id
        WHERE d.name = 'gpt-4o-support'""",
}


def copy_into(cursor, table: str, columns: list[str], rows) -> int:
    count = 0
    with cursor.copy(f"COPY {table} ({', '.join(columns)}) FROM STDIN") as copy:
        for row in rows:
            copy.write_row(row)
            count += 1
    return count


def sentence(run: str, topic: int, index: int) -> str:
    return f"Sentence {index} of {run} on question {topic}."


def build(args: argparse.Namespace) -> dict[str, int]:
    """The collection, written by COPY in one transaction; returns the number of labels of each kind."""
    import psycopg
    from django.contrib.auth.models import User
    from django.utils import timezone

    from annotation.models import Collection, Judge

    User.objects.create_user("organiser", password="x", is_staff=True)
    collection = Collection.objects.create(name=COLLECTION)
    judges = {
        name: Judge.objects.create(name=name, kind=kind).pk
        for name, kind in (("nist", "file"), ("gpt-4o", "llm"), ("gpt-4o-support", "llm"))
    }
    rng = random.Random(1)
    now = timezone.now()
    counts: dict[str, int] = {}
    with psycopg.connect(os.environ["DATABASE_URL"]) as conn, conn.cursor() as cur:
        copy_into(
            cur,
            "annotation_topic",
            ["collection_id", "number", "title"],
            ((collection.pk, str(t), f"topic {t}") for t in range(args.topics)),
        )
        cur.execute("SELECT id, number FROM annotation_topic WHERE collection_id = %s", [collection.pk])
        topics = {number: pk for pk, number in cur.fetchall()}
        copy_into(
            cur,
            "annotation_turn",
            [
                "collection_id",
                "topic_id",
                "turn_id",
                "position",
                "utterance",
                "resolved_utterance",
                "response",
            ]
            + ["response_provenance", "ptkb_provenance"],
            (
                (collection.pk, topics[str(t)], str(t), 1, f"question {t} about things", "", "", "[]", "[]")
                for t in range(args.topics)
            ),
        )
        cur.execute("SELECT id, turn_id FROM annotation_turn WHERE collection_id = %s", [collection.pk])
        turns = {turn_id: pk for pk, turn_id in cur.fetchall()}
        per_turn = -(-args.qrels // args.topics)
        counts["qrels"] = copy_into(
            cur,
            "annotation_relevancejudgment",
            ["judge_id", "turn_id", "passage_id", "grade", "created_at", "updated_at"],
            (
                (
                    judges["nist"],
                    turns[str(t)],
                    f"clueweb22-en{t:04d}-{p:06d}:{rng.randrange(30)}",
                    rng.randrange(5),
                )
                + (now, now)
                for t in range(args.topics)
                for p in range(per_turn)
                if t * per_turn + p < args.qrels
            ),
        )
        counts["judgment-log"] = counts["qrels"]
        copy_into(
            cur,
            "annotation_run",
            ["collection_id", "name", '"group"', "kind", "source_format", "created_at", "report"],
            (
                (collection.pk, f"run{r:02d}", "", "automatic", "trec-rag-jsonl", now, "{}")
                for r in range(args.runs)
            ),
        )
        cur.execute("SELECT id, name FROM annotation_run WHERE collection_id = %s", [collection.pk])
        runs = dict(cur.fetchall())
        copy_into(
            cur,
            "annotation_response",
            ["run_id", "turn_id", "rank", "text", '"references"', "response_length"],
            (
                (
                    run_pk,
                    turns[str(t)],
                    1,
                    " ".join(sentence(run, t, i) for i in range(args.sentences)),
                    "[]",
                    8,
                )
                for run_pk, run in runs.items()
                for t in range(args.topics)
            ),
        )
        cur.execute(
            "SELECT r.id, r.turn_id, u.name, t.turn_id FROM annotation_response r "
            "JOIN annotation_run u ON u.id = r.run_id JOIN annotation_turn t ON t.id = r.turn_id "
            "WHERE u.collection_id = %s",
            [collection.pk],
        )
        responses = cur.fetchall()
        copy_into(
            cur,
            "annotation_nuggetsetturn",
            ["judge_id", "turn_id", "position"],
            ((judges["gpt-4o"], turns[str(t)], t) for t in range(args.topics)),
        )
        copy_into(
            cur,
            "annotation_nugget",
            ["judge_id", "created_at", "updated_at", "turn_id", "key", "text", "position", "passage_id"]
            + ["relevance"],
            (
                (
                    judges["gpt-4o"],
                    now,
                    now,
                    turns[str(t)],
                    str(k + 1),
                    f"nugget {k} of question {t}",
                    k,
                    "",
                    "",
                )
                for t in range(args.topics)
                for k in range(args.nuggets)
            ),
        )
        cur.execute("SELECT id, turn_id FROM annotation_nugget WHERE judge_id = %s", [judges["gpt-4o"]])
        nuggets: dict[int, list[int]] = {}
        for pk, turn_pk in cur.fetchall():
            nuggets.setdefault(turn_pk, []).append(pk)
        copy_into(
            cur,
            "annotation_nuggetimportancejudgment",
            ["judge_id", "created_at", "updated_at", "nugget_id", "importance", "condition", "shown_label"],
            (
                (judges["gpt-4o"], now, now, pk, rng.choice(("vital", "okay")), "machine", "")
                for pks in nuggets.values()
                for pk in pks
            ),
        )
        counts["nugget-assignments"] = copy_into(
            cur,
            "annotation_nuggetassignment",
            ["judge_id", "created_at", "updated_at", "response_id", "nugget_id", "label", "condition"]
            + ["shown_label"],
            (
                (judges["gpt-4o"], now, now, response_pk, pk, rng.choice(LABELS), "machine", "")
                for response_pk, turn_pk, _, _ in responses
                for pk in nuggets[turn_pk]
            ),
        )
        copy_into(
            cur,
            "annotation_responsesentence",
            ["response_id", "index", "text", "citations"],
            (
                (
                    response_pk,
                    i,
                    sentence(run, int(qid), i),
                    json.dumps([f"d{response_pk}-{i}-{c}" for c in range(args.citations)]),
                )
                for response_pk, _, run, qid in responses
                for i in range(args.sentences)
            ),
        )
        cur.execute(
            "SELECT s.id, s.citations FROM annotation_responsesentence s JOIN annotation_response r "
            "ON r.id = s.response_id JOIN annotation_run u ON u.id = r.run_id WHERE u.collection_id = %s",
            [collection.pk],
        )
        counts["support-labels"] = copy_into(
            cur,
            "annotation_supportjudgment",
            ["judge_id", "created_at", "updated_at", "sentence_id", "citation_index", "passage_id", "label"]
            + ["condition", "shown_label"],
            (
                (
                    judges["gpt-4o-support"],
                    now,
                    now,
                    sentence_pk,
                    c,
                    passage,
                    rng.choice(SUPPORT),
                    "machine",
                    "",
                )
                for sentence_pk, citations in cur.fetchall()
                for c, passage in enumerate(citations)
            ),
        )
    with psycopg.connect(os.environ["DATABASE_URL"], autocommit=True) as conn:
        conn.execute("VACUUM ANALYZE")
    return counts


def run_child(measured: str, kind: str, path: Path, database_url: str) -> dict:
    env = {
        **os.environ,
        "DATABASE_URL": database_url,
        # As production runs: with DEBUG on, Django keeps the SQL of its last 9,000 queries.
        "DEBUG": "0",
        "SECRET_KEY": os.environ.get("SECRET_KEY") or secrets.token_urlsafe(50),
        "ALLOWED_HOSTS": "testserver,localhost",
    }
    child = subprocess.run(
        [sys.executable, __file__, "--child", measured, kind, str(path)],
        env=env,
        capture_output=True,
        text=True,
    )
    if child.returncode:
        return {"failed": child.stderr[-3000:]}
    return json.loads(child.stdout.strip().splitlines()[-1])


def _status_mb(field: str) -> float:
    with open("/proc/self/status") as status:
        line = next(line for line in status if line.startswith(f"{field}:"))
    return int(line.split()[1]) / 1024


def rss_mb() -> float:
    """The process's resident memory now."""
    return _status_mb("VmRSS")


def peak_mb() -> float:
    """The process's peak resident memory: VmHWM, not getrusage's ru_maxrss, which a child started by
    fork and exec carries over from its parent (this bench's, grown by reading the files back)."""
    return _status_mb("VmHWM")


def child(measured: str, kind: str, path: Path) -> None:
    """One measured run in this process (the parent set DATABASE_URL); prints its figures as JSON."""
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "assay.settings")
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()
    from django.contrib.auth.models import User
    from django.core.files.uploadedfile import UploadedFile
    from django.db import connection
    from django.test import Client
    from django.urls import reverse

    from annotation.models import Collection

    url_name, url_kind, query, _file, upload_kind, options = EXPORTS[kind]
    collection = Collection.objects.get(name=COLLECTION)
    client = Client()
    client.force_login(User.objects.get(username="organiser"))
    # Once before the measure: the view's modules loaded, the connection open (a judge of no labels: a 400).
    client.get(reverse(url_name, args=[COLLECTION, url_kind]), {"judge": "no-such-judge"})
    connection.ensure_connection()
    before = rss_mb()
    figures: dict[str, object] = {}
    cpu = time.process_time()
    start = time.perf_counter()
    if measured == "export":
        response = client.get(reverse(url_name, args=[COLLECTION, url_kind]), query)
        assert response.status_code == 200, response.status_code
        figures["streaming"] = response.streaming
        size = 0
        with open(path, "wb") as out:
            for block in response.streaming_content if response.streaming else [response.content]:
                if "first_s" not in figures:
                    figures["first_s"] = time.perf_counter() - start
                out.write(block)
                size += len(block)
        response.close()
        figures["bytes"] = size
    elif measured == "copy":
        with connection.cursor() as cursor, open(path, "wb") as out:
            with cursor.cursor.copy(f"COPY ({BASELINES[kind]}) TO STDOUT") as copy:
                for block in copy:
                    if "first_s" not in figures:
                        figures["first_s"] = time.perf_counter() - start
                    out.write(block)
    elif measured == "read lines":
        with open(path, encoding="utf-8") as handle:
            for line in handle:
                line.split()
    else:
        from console.uploads.services import import_job_create, import_job_run

        with open(path, "rb") as handle:
            upload = UploadedFile(handle, name=path.name, size=path.stat().st_size)
            job = import_job_create(
                collection=collection, kind=upload_kind, upload=upload, options=options, user=None
            )
        job = import_job_run(job_id=job.pk)
        figures["status"] = job.status
        figures["result"] = str(job.problems)[:500] if job.status != "done" else ""
    figures["seconds"] = time.perf_counter() - start
    figures["cpu_s"] = time.process_time() - cpu
    figures["before_mb"] = before
    figures["peak_mb"] = peak_mb()
    print(json.dumps(figures))


def read_back(kind: str, path: Path) -> str:
    """The file read by its reference reader, compared with the database: '' when equal, else what differs."""
    from annotation.formats.base import Problems
    from annotation.models import Collection, Judge, NuggetAssignment, SupportJudgment
    from annotation.rag_nuggets.formats import parse_assignments
    from annotation.selectors import qrels_dict
    from annotation.support.formats import parse_support_labels

    collection = Collection.objects.get(name=COLLECTION)
    if kind == "qrels":
        import ir_measures

        read: dict[str, dict[str, int]] = {}
        for qrel in ir_measures.read_trec_qrels(str(path)):
            read.setdefault(qrel.query_id, {})[qrel.doc_id] = qrel.relevance
        stored = qrels_dict(collection=collection, judge=Judge.objects.get(name="nist"))
        return "" if read == stored else "the qrels read back differ from the database"
    if kind == "nugget-assignments":
        problems = Problems(str(path))
        records = parse_assignments(path, problems=problems)
        problems.raise_if_any()
        read_labels = {(r.run_id, r.qid, n.text): n.assignment for r in records for n in r.nuggets}
        stored_labels = {
            row[:3]: row[3]
            for row in NuggetAssignment.objects.filter(judge__name="gpt-4o").values_list(
                "response__run__name", "response__turn__turn_id", "nugget__text", "label"
            )
        }
        return "" if read_labels == stored_labels else "the assignments read back differ from the database"
    if kind == "support-labels":
        problems = Problems(str(path))
        support = parse_support_labels(path, problems=problems)
        problems.raise_if_any()
        read_support = {(r.run_id, r.topic_id, r.sentence_index, r.passage_id): r.label for r in support}
        stored_support = {
            row[:4]: row[4]
            for row in SupportJudgment.objects.filter(judge__name="gpt-4o-support").values_list(
                "sentence__response__run__name",
                "sentence__response__turn__turn_id",
                "sentence__index",
                "passage_id",
                "label",
            )
        }
        return (
            "" if read_support == stored_support else "the support labels read back differ from the database"
        )
    with open(path, encoding="utf-8") as handle:
        lines = sum(1 for _ in handle) - 1
    stored = Judge.objects.get(name="nist").relevancejudgments.count()
    return "" if lines == stored else f"the log has {lines:,} rows, the database {stored:,}"


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--topics", type=int, default=300)
    parser.add_argument("--runs", type=int, default=90)
    parser.add_argument("--nuggets", type=int, default=30)
    parser.add_argument("--qrels", type=int, default=1_000_000)
    parser.add_argument("--sentences", type=int, default=12)
    parser.add_argument("--citations", type=int, default=3)
    parser.add_argument("--only", default="exports,imports", help="which figures, comma-separated")
    parser.add_argument(
        "--kinds", default=",".join(EXPORTS), help="which files, comma-separated (default: all)"
    )
    parser.add_argument("--child", nargs=3, metavar=("MEASURED", "KIND", "PATH"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child[0], args.child[1], Path(args.child[2]))
        return
    only = set(args.only.split(","))
    scratch = django_with_temp_database()
    from django.db import connection

    print(f"load average at the start: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")

    start = time.perf_counter()
    counts = build(args)
    print(
        f"set-up: {args.topics} topics, {args.runs} runs; "
        + ", ".join(f"{n:,} {kind}" for kind, n in counts.items() if kind != "judgment-log")
        + f" (COPY, {time.perf_counter() - start:.0f} s)"
    )
    template = connection.settings_dict["NAME"]
    url = os.environ["DATABASE_URL"]
    django_disconnect()
    files = {kind: scratch / EXPORTS[kind][3] for kind in EXPORTS if kind in args.kinds.split(",")}
    for kind, path in files.items():
        figures = run_child("export", kind, path, url)
        if "failed" in figures:
            print(f"export {kind}: failed\n{figures['failed']}")
            continue
        base = run_child("copy", kind, scratch / f"{kind}.copy", url)
        problem = read_back(kind, path)
        django_disconnect()
        verdict = "ok" if figures["seconds"] < EXPORT_GOAL_S else "TOO SLOW"
        print(
            f"export {kind}: {counts[kind]:,} labels, {figures['bytes'] / 1024**2:.0f} MB in {figures['seconds']:.1f} s "
            f"({figures['cpu_s']:.1f} s of the web process's CPU) "
            f"({verdict}, goal < {EXPORT_GOAL_S:.0f} s), first block at {figures['first_s']:.2f} s, "
            f"{'streamed' if figures['streaming'] else 'NOT STREAMED'}; peak RSS {figures['peak_mb']:.0f} MB "
            f"(+{figures['peak_mb'] - figures['before_mb']:.0f} MB over the process before the request); "
            f"COPY TO of the same rows {base['seconds']:.1f} s ({base['cpu_s']:.1f} s CPU), peak RSS {base['peak_mb']:.0f} MB "
            f"(+{base['peak_mb'] - base['before_mb']:.0f} MB); ratio {figures['seconds'] / base['seconds']:.1f}x; "
            f"read back: {problem or 'equal to the database'}"
        )
    if "imports" not in only:
        return
    for kind, path in files.items():
        if not EXPORTS[kind][4] or not path.exists():
            continue
        copy = f"{template}_copy"
        lines = run_child("read lines", kind, path, url)
        copy_url = database_create(copy, template=template)
        figures = run_child("upload", kind, path, copy_url)
        database_drop(copy)
        if "failed" in figures:
            print(f"upload {kind}: failed\n{figures['failed']}")
            continue
        verdict = "ok" if figures["peak_mb"] < IMPORT_BOUND_MB else "OVER"
        print(
            f"upload {kind}: {path.stat().st_size / 1024**2:.0f} MB ({counts[kind]:,} labels) as another judge, "
            f"job {figures['status']}{figures['result']}, {figures['seconds']:.1f} s ({figures['cpu_s']:.1f} s CPU) "
            f"({figures['seconds'] / lines['seconds']:.0f}x reading its lines); peak RSS {figures['peak_mb']:.0f} MB "
            f"({verdict}, bound {IMPORT_BOUND_MB:.0f} MB; the process before it {figures['before_mb']:.0f} MB, "
            f"reading the lines {lines['peak_mb']:.0f} MB)"
        )


if __name__ == "__main__":
    main()
