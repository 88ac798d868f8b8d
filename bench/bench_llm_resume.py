"""An LLM judge job at TREC scale on real task workers: throughput against the concurrency x latency bound,
and a worker killed with SIGKILL in the middle, the job resumed from where it stood.

The set-up, `--task relevance` (the default): `--units` relevance pairs (turns x passages ranked by one run,
passages of about 60 words); `--task support`: `--units` answer sentences (TREC RAG answers of many runs
per topic, each sentence citing a passage of its topic), each against its first cited passage. Written with
bulk inserts. The fake OpenAI server (devtools/openai_server.py) runs in a process of its
own with a fixed latency L per call, so its work does not share this process's or the worker's
interpreter. The job runs with concurrency C on `manage.py task_worker` processes: the best it can do
is C / L calls per second, and the target is at least 0.9 of that, measured end to end (units read from
the database, calls through the openai SDK, labels and answers written), from the moment the job's row
says running to the moment it says done (or to the kill). The time from the worker's start to the job
running (the worker's start-up and the job's plan) is printed apart.

The kill: when about half the units are done, the worker gets SIGKILL; the job is queued again as the
Jobs page's "resume" button does (`judge_job_resume`, once the job reads as interrupted) and a new
worker ends it. Checked: every unit labelled exactly once; the resumed run pays exactly for the units
whose answers were not saved at the kill (none twice); the calls lost to the kill (reached the server,
answer not saved) are at most those in flight plus what arrives in two save intervals and a save (the
runner saves once SAVE_EVERY_S has passed, checked after a wait of up to SAVE_EVERY_S). The worker's peak
memory is printed too (it must not grow with the number of units: compare two sizes); the workers run
with DEBUG off, as in production.

`--baseline CHECKOUT` runs the same job first with the workers of another checkout (say /work/main, before
a change) on the same database, then, the answers cache emptied, with this checkout's: the two are
compared in the same invocation, under the same load.

    DEBUG=1 PG_PORT=.. .venv/bin/python bench/bench_llm_resume.py [--task relevance|support]
        [--units 200000] [--concurrency 64] [--latency 0.25] [--baseline /path/to/checkout]

The baseline of the same invocation is the bound C / L itself, taken by the fake's own clock: the
calls the fake served per second at the job's peak are printed beside it.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import secrets
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _setup import ROOT, django_with_temp_database  # noqa: E402

TARGET = 0.9
PASSAGES_PER_TURN = 500
# A support collection: per topic, RUNS answers of SENTENCES sentences, each citing one of the topic's
# CITED passages (TREC 2024 RAG: 301 topics, tens of runs, answers of about ten to twenty sentences).
RUNS, SENTENCES, CITED = 40, 25, 100
WORDS = (
    "bicycle frame steel carbon wheel spoke tyre pressure gear chain saddle brake disc rim hub crank pedal "
    "cassette derailleur handlebar stem fork suspension commute tour race gravel mountain road city cargo"
).split()


SUPPORT_ANSWERS = ("Full Support", "Partial Support", "No Support")


def _fake_serve(
    latency: float, task: str, port: multiprocessing.Value, served: multiprocessing.Value
) -> None:
    """The fake in its own process: it counts the calls it answered in shared memory."""
    from devtools.openai_server import FakeOpenAI

    # The killed worker's connections end in resets, which http.server prints at length: not news here.
    sys.stderr = open(os.devnull, "w")  # noqa: SIM115 - for the life of this process

    def responder(prompt: str) -> str:
        with served.get_lock():
            served.value += 1
        if task == "support":
            return SUPPORT_ANSWERS[len(prompt) % 3]
        return f"Grade: {len(prompt) % 5}"

    server = FakeOpenAI(latency=latency, responder=responder, keep=0).start()
    assert server._server is not None
    port.value = server._server.server_address[1]
    while True:
        time.sleep(3600)


def _peak_rss_mb(pid: int) -> float:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def _cpu_s(pid: int) -> float:
    """User and system CPU seconds of a live process so far."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def collection_build(units: int):
    from annotation.models import Collection, Passage, Ranking, Run, Topic, Turn

    turns_n = max(1, units // PASSAGES_PER_TURN)
    collection = Collection.objects.create(name="scale")
    run = Run.objects.create(collection=collection, name="run")
    passages, rankings = [], []
    for t in range(turns_n):
        topic = Topic.objects.create(collection=collection, number=str(t + 1), title=f"topic {t + 1}")
        turn = Turn.objects.create(
            collection=collection,
            topic=topic,
            turn_id=f"{t + 1}_1",
            position=1,
            utterance=f"How do I choose a {WORDS[t % len(WORDS)]} for {WORDS[(t * 7) % len(WORDS)]}?",
        )
        ids = [f"t{t}p{i}" for i in range(min(PASSAGES_PER_TURN, units - t * PASSAGES_PER_TURN))]
        for i, pid in enumerate(ids):
            words = [WORDS[(t * 31 + i * 7 + k * k) % len(WORDS)] for k in range(60)]
            passages.append(Passage(collection=collection, passage_id=pid, text=f"{pid}: " + " ".join(words)))
        rankings.append(Ranking(run=run, turn=turn, passage_ids=ids, scores=[1.0] * len(ids)))
        if len(passages) >= 20_000:
            Passage.objects.bulk_create(passages, batch_size=5000)
            passages = []
    Passage.objects.bulk_create(passages, batch_size=5000)
    Ranking.objects.bulk_create(rankings, batch_size=500)
    return collection


def support_collection_build(units: int):
    """Topics with RUNS answers each, SENTENCES sentences an answer, `units` sentences in all, every sentence
    citing one or two of its topic's CITED passages (the first is the one judged)."""
    from annotation.models import Collection, Passage, Response, ResponseSentence, Run, Topic, Turn

    per_turn = RUNS * SENTENCES
    turns_n = max(1, -(-units // per_turn))
    collection = Collection.objects.create(name="scale")
    runs = Run.objects.bulk_create([Run(collection=collection, name=f"run{r:02d}") for r in range(RUNS)])
    left = units
    for t in range(turns_n):
        topic = Topic.objects.create(collection=collection, number=str(t + 1), title=f"topic {t + 1}")
        turn = Turn.objects.create(
            collection=collection,
            topic=topic,
            turn_id=str(t + 1),
            position=1,
            utterance=f"How do I choose a {WORDS[t % len(WORDS)]} for {WORDS[(t * 7) % len(WORDS)]}?",
        )
        passages = []
        for i in range(CITED):
            words = [WORDS[(t * 31 + i * 7 + k * k) % len(WORDS)] for k in range(60)]
            passages.append(Passage(collection=collection, passage_id=f"t{t}p{i}", text=" ".join(words)))
        Passage.objects.bulk_create(passages)
        responses = Response.objects.bulk_create(
            [Response(run=run, turn=turn, rank=1, text="...", references=[]) for run in runs]
        )
        sentences = []
        for r, response in enumerate(responses):
            for i in range(min(SENTENCES, left - r * SENTENCES)):
                words = [WORDS[(t + r * 3 + i * 5 + k) % len(WORDS)] for k in range(20)]
                cited = [f"t{t}p{(r * 7 + i) % CITED}", f"t{t}p{(r + i * 3) % CITED}"][: 1 + i % 2]
                text = f"{response.run.name} {turn.turn_id} s{i}: " + " ".join(words) + "."
                sentences.append(ResponseSentence(response=response, index=i, text=text, citations=cited))
        ResponseSentence.objects.bulk_create(sentences, batch_size=5000)
        left -= len(sentences)
    return collection


@dataclass
class Outcome:
    """One job's run under one checkout's workers: the kill, the resume, and the checks."""

    start_s: float  # worker start to the job running (start-up and plan), first worker
    seconds: float  # running, both workers
    calls: int
    rss_mb: float  # the larger of the two workers' peak
    ok: bool

    @property
    def rate(self) -> float:
        return self.calls / self.seconds


def job_run(
    args: argparse.Namespace,
    *,
    collection,
    checkout: Path,
    judge: str,
    served: multiprocessing.Value,
    labels_of: Callable[[object], tuple[int, int]],
) -> Outcome:
    """Start a job, run it on a worker of `checkout`, kill the worker half-way, resume it on another."""
    from django.db import connection

    from judging.machine.jobs import judge_job_start
    from judging.machine.jobs.state import INTERRUPTED, jobs_read
    from judging.machine.tasks import judge_job_queue, judge_job_resume
    from judging.models import JudgeJob, LlmCall

    print(f"{judge}: workers of {checkout}")
    options = {"depth": PASSAGES_PER_TURN} if args.task == "relevance" else {}
    job = judge_job_start(
        collection=collection,
        task=args.task,
        judge_name=judge,
        model="gpt-4o-mini",
        options=options,
        concurrency=args.concurrency,
    )
    judge_job_queue(job=job)
    connection.close()
    worker_command = [sys.executable, "manage.py", "task_worker", "--no-startup-delay", "--interval", "0.1"]
    # The workers run as in production, with DEBUG off: with it on, Django keeps the SQL of a connection's
    # last 9,000 queries, the arrays of prompts the answers' inserts carry included, which the worker's
    # peak memory would count.
    env = {**os.environ, "PYTHONPATH": str(checkout), "DEBUG": "0", "SECRET_KEY": secrets.token_urlsafe(50)}
    served_at_start = served.value

    def row() -> JudgeJob:
        return JudgeJob.objects.get(pk=job.pk)

    def segment(worker: subprocess.Popen[bytes], until) -> tuple[float, float, float, int, float]:
        """Wait for the job to run, then for `until`; (seconds from the worker's start to running, seconds
        running, peak RSS MB, calls served, peak/s). Prints the worker's CPU time per call."""
        launched = time.perf_counter()
        while row().status != JudgeJob.Status.RUNNING:
            assert worker.poll() is None, "the worker stopped before the job ran"
            time.sleep(0.05)
        t0, served0, rss, cpu0 = time.perf_counter(), served.value, 0.0, _cpu_s(worker.pid)
        peak, last_t, last_n, cpu = 0.0, t0, served0, cpu0
        while not until():
            time.sleep(0.1)
            rss = max(rss, _peak_rss_mb(worker.pid))
            cpu = max(cpu, _cpu_s(worker.pid))
            now, n = time.perf_counter(), served.value
            if now - last_t >= 5:
                peak, last_t, last_n = max(peak, (n - last_n) / (now - last_t)), now, n
        calls = served.value - served0
        load = os.getloadavg()[0]
        print(f"  worker CPU {1000 * (cpu - cpu0) / max(calls, 1):.2f} ms per call; load average {load:.1f}")
        return t0 - launched, time.perf_counter() - t0, rss, calls, peak

    bound = args.concurrency / args.latency
    # First worker: until about half the units are done, then SIGKILL.
    first = subprocess.Popen(worker_command, cwd=checkout, env=env, stdout=subprocess.DEVNULL)
    kill_at = int(args.units * args.kill_at)
    start1, s1, rss1, calls1, peak1 = segment(first, lambda: row().units_done >= kill_at)
    first.send_signal(signal.SIGKILL)
    first.wait()
    served_at_kill = served.value
    time.sleep(0.5)  # calls the dead worker's threads had open are answered into a closed socket, or not
    saved_at_kill = LlmCall.objects.count()
    labelled_at_kill, _ = labels_of(row().judge)
    lost = served.value - served_at_start - saved_at_kill
    from judging.machine.jobs.runner import SAVE_EVERY_S

    # How long an answer may wait unsaved: two of the runner's save intervals and a save's own time at load.
    unsaved_s = 2 * SAVE_EVERY_S + 0.05
    print(
        f"killed (SIGKILL) after {s1:.1f} s running ({start1:.1f} s from the worker's start to running): "
        f"{calls1:,} calls, {calls1 / s1:.1f} calls/s "
        f"(bound C/L = {args.concurrency}/{args.latency:g} s = {bound:.0f}/s: {calls1 / s1 / bound:.2f}; "
        f"best 5 s {peak1:.0f}/s); {saved_at_kill:,} answers and {labelled_at_kill:,} labels saved; "
        f"{lost} calls lost (served {served_at_kill - served_at_start - saved_at_kill} before the kill, "
        f"{served.value - served_at_kill} after); worker peak RSS {rss1:.0f} MB"
    )

    deadline = time.monotonic() + 30
    while jobs_read([row()])[0].state != INTERRUPTED:
        assert time.monotonic() < deadline, "the killed job never read as interrupted"
        time.sleep(0.1)
    judge_job_resume(job=row())
    connection.close()
    served_before_resume = served.value
    second = subprocess.Popen([*worker_command, "--batch"], cwd=checkout, env=env, stdout=subprocess.DEVNULL)
    start2, s2, rss2, calls2, peak2 = segment(second, lambda: row().status in ("done", "failed"))
    second.wait(timeout=60)
    done = row()
    print(
        f"resumed: {calls2:,} calls in {s2:.1f} s ({start2:.1f} s to running), {calls2 / s2:.1f} calls/s "
        f"({calls2 / s2 / bound:.2f} of the bound; best 5 s {peak2:.0f}/s), {done.cache_hits:,} answers "
        f"from the cache; worker peak RSS {rss2:.0f} MB; job {done.status}, "
        f"{done.units_done:,}/{done.units_total:,} units"
    )
    overall = (calls1 + calls2) / (s1 + s2)
    print(
        f"whole job: {calls1 + calls2:,} calls in {s1 + s2:.1f} s: {overall:.1f} calls/s = "
        f"{overall / bound:.2f} of the bound (target >= {TARGET})"
    )

    labels, units = labels_of(done.judge)
    calls = LlmCall.objects.count()
    repeated = served.value - served_at_start - args.units
    paid_after = served.value - served_before_resume
    print(
        f"labels {labels:,} ({units:,} distinct units) for {args.units:,} units; {calls:,} answers stored; "
        f"{served.value - served_at_start:,} calls served in all: {repeated} paid twice (lost at the kill: "
        f"{lost}; bound: C + {unsaved_s:g} s of answers = {args.concurrency} + {bound * unsaved_s:.0f}); "
        f"the resumed run "
        f"paid {paid_after:,} = units whose answers were not saved ({args.units - saved_at_kill:,})"
    )
    ok = (
        done.status == "done"
        and labels == units == calls == args.units
        and paid_after == args.units - saved_at_kill
        and repeated == lost <= args.concurrency + bound * unsaved_s + 1
        and overall / bound >= TARGET
    )
    print("PASS" if ok else "FAILED")
    return Outcome(start1, s1 + s2, calls1 + calls2, max(rss1, rss2), ok)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--task", choices=("relevance", "support"), default="relevance")
    parser.add_argument("--units", type=int, default=200_000)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--latency", type=float, default=0.25)
    parser.add_argument("--kill-at", type=float, default=0.5, help="share of the units done at the kill")
    parser.add_argument("--baseline", type=Path, help="a checkout whose workers run the same job first")
    args = parser.parse_args()

    context = multiprocessing.get_context("fork")  # before Django holds any connection
    port, served = context.Value("i", 0), context.Value("q", 0)
    fake = context.Process(target=_fake_serve, args=(args.latency, args.task, port, served), daemon=True)
    fake.start()
    while not port.value:
        time.sleep(0.01)
    os.environ.update(
        OPENAI_BASE_URL=f"http://127.0.0.1:{port.value}/v1",
        OPENAI_API_KEY="sk-bench",
        OPENAI_MODEL="gpt-4o-mini",
        LOG_LEVEL="ERROR",
    )
    os.environ.pop("AZURE_OPENAI_ENDPOINT", None)
    django_with_temp_database()

    from annotation.models import RelevanceJudgment, SupportJudgment
    from judging.models import LlmCall

    def labels_of(judge) -> tuple[int, int]:
        """The judge's labels, and the distinct units they label."""
        if args.task == "relevance":
            rows, unit = RelevanceJudgment.objects.filter(judge=judge), ("turn_id", "passage_id")
        else:
            rows, unit = SupportJudgment.objects.filter(judge=judge), ("sentence_id", "citation_index")
        return rows.count(), rows.values(*unit).distinct().count()

    started = time.perf_counter()
    build = collection_build if args.task == "relevance" else support_collection_build
    collection = build(args.units)
    print(f"set-up: {args.units:,} {args.task} units built in {time.perf_counter() - started:.1f} s")
    runs = dict(collection=collection, served=served, labels_of=labels_of)
    before = None
    if args.baseline:
        before = job_run(args, checkout=args.baseline.resolve(), judge="baseline", **runs)
        LlmCall.objects.all().delete()  # the second job pays for its answers too
    after = job_run(args, checkout=ROOT, judge="scale", **runs)
    if before is not None:
        print(
            f"this checkout against the baseline ({args.baseline}), load average {os.getloadavg()[0]:.1f}: "
            f"calls/s running {after.rate:.1f} / {before.rate:.1f} = {after.rate / before.rate:.2f}; "
            f"worker start to running {after.start_s:.1f} s / {before.start_s:.1f} s; "
            f"worker peak RSS {after.rss_mb:.0f} MB / {before.rss_mb:.0f} MB = "
            f"{after.rss_mb / before.rss_mb:.2f}"
        )
    fake.terminate()
    return 0 if after.ok else 1


if __name__ == "__main__":
    sys.exit(main())
