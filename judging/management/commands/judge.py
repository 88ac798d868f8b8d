"""judge: run one machine-judge job (LLM or NLI) over a collection and say what it made and what it cost."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.management.base import CommandError, CommandParser

from annotation.commands import CollectionCommand, import_judge_check
from annotation.models import Judge
from core.progress import CommandProgress
from core.wording import plural
from judging.clients.llm import LlmError
from judging.clients.nli import NliError
from judging.machine.jobs import (
    NLI_TASKS,
    JobError,
    job_estimate,
    job_model,
    job_options,
    judge_job_run,
    judge_job_start,
)
from judging.machine.jobs.state import job_status_text, jobs_read
from judging.machine.nli import NliJobError
from judging.machine.tasks import judge_job_queue
from judging.models import JudgeJob


class Command(CollectionCommand):
    bar: CommandProgress  # set by handle() at the command's verbosity
    help = (
        "Run a machine judge over a collection as a resumable job: TASK is relevance, nuggets, ntr, "
        "support, or TREC RAG's nuggets-create, importance (vital/okay) and assignment (an LLM through any OpenAI-compatible endpoint: OPENAI_BASE_URL, OPENAI_API_KEY, or "
        "Azure via AZURE_OPENAI_ENDPOINT), ntn (NLI matching of response nuggets against gold nuggets) or "
        "dedup (de-duplication of a judge's nuggets, exact then by NLI). Labels land in the same tables as "
        "human labels, under the judge named by --judge. Running the same command again, or after a kill, "
        "resumes the unfinished job without repeating paid calls (every LLM answer is cached) or stored "
        "NLI pairs. The job runs here, or with --queue on the task workers (the Jobs page shows its "
        "progress either way). At its end it prints the calls made, those from "
        "the cache and the cost (NLI: pairs scored, pairs already stored, cost 0). --dry-run (LLM tasks) "
        "prints the calls and the estimated cost without calling anything."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        super().add_arguments(parser)
        parser.add_argument("task", choices=[t.value for t in JudgeJob.Task], help="What to judge.")
        parser.add_argument(
            "--judge",
            dest="judge_name",
            required=True,
            help="Name of the machine judge whose labels to write.",
        )
        parser.add_argument(
            "--model",
            default=None,
            help="LLM (Azure: deployment) name, default OPENAI_MODEL; NLI model folder or hub id, "
            "default NLI_MODEL.",
        )
        parser.add_argument("--turns", nargs="+", default=None, help="Only these turn ids (default: all).")
        parser.add_argument(
            "--runs",
            nargs="+",
            default=None,
            help="Only these runs (default: all); ntn: only the nuggets of their responses.",
        )
        parser.add_argument("--depth", type=int, default=30, help="relevance: judge each run's top DEPTH.")
        parser.add_argument(
            "--source",
            choices=["passages", "responses"],
            default="passages",
            help="nuggets: extract from relevant passages (gold nuggets) or from the runs' responses.",
        )
        parser.add_argument(
            "--relevance-judge",
            "--qrels-judge",
            dest="relevance_judge",
            default="",
            help="nuggets, nuggets-create: whose relevance grades pick passages (default: any judge's).",
        )
        parser.add_argument(
            "--min-grade",
            type=int,
            default=None,
            help="nuggets, nuggets-create: lowest grade of a relevant passage (default 2; nuggets-create 1).",
        )
        parser.add_argument(
            "--max-nuggets", type=int, default=30, help="nuggets-create: longest nugget list per turn."
        )
        parser.add_argument(
            "--window",
            type=int,
            default=10,
            help="nuggets-create: passages read per call; importance, assignment: nuggets labelled per call.",
        )
        parser.add_argument(
            "--nuggets-judge",
            default="",
            help="importance, assignment: the judge whose nugget lists to label (created or post-edited).",
        )
        parser.add_argument(
            "--gold-judge", default="", help="ntr, ntn: the judge whose gold nuggets to match."
        )
        parser.add_argument(
            "--concurrency", type=int, default=None, help="LLM calls in flight (default LLM_CONCURRENCY)."
        )
        parser.add_argument(
            "--response-nugget-judge", default="", help="ntn: the judge of the nuggets of the responses."
        )
        parser.add_argument(
            "--source-judge", default="", help="dedup: the judge whose nuggets to de-duplicate."
        )
        parser.add_argument(
            "--threshold", type=float, default=None, help="ntn, dedup: entailment threshold (NLI_THRESHOLD)."
        )
        parser.add_argument(
            "--batch-size",
            type=int,
            default=None,
            help="ntn, dedup: pairs per forward pass (NLI_BATCH_SIZE).",
        )
        parser.add_argument(
            "--exact-only", action="store_true", help="dedup: exact duplicates only, no NLI model."
        )
        parser.add_argument(
            "--dry-run",
            action="store_true",
            help="LLM tasks: print the calls and estimated cost; call nothing.",
        )
        parser.add_argument(
            "--queue",
            action="store_true",
            help="Hand the job to the task workers (manage.py task_worker) and return at once.",
        )

    def handle(self, *args: Any, **opts: Any) -> None:
        collection = self.get_collection(opts["collection"])
        task = opts["task"]
        concurrency = opts["concurrency"] or int(getattr(settings, "LLM_CONCURRENCY", 8))
        if concurrency < 1:
            raise CommandError("--concurrency must be at least 1")
        options = job_options(task, opts)
        import_judge_check(opts["judge_name"], kind=Judge.Kind.NLI if task in NLI_TASKS else Judge.Kind.LLM)
        try:
            if opts["dry_run"]:
                if task in NLI_TASKS:
                    raise CommandError("--dry-run estimates LLM calls; NLI tasks make no paid call")
                model = job_model(task, opts["model"], options)
                estimate = job_estimate(collection=collection, task=task, model=model, options=options)
                self.stdout.write(f"dry run, {task} with {model}: {estimate}")
                return
            job = judge_job_start(
                collection=collection,
                task=task,
                judge_name=opts["judge_name"],
                model=opts["model"] or "",
                options=options,
                concurrency=concurrency,
            )
        except JobError as exc:
            raise CommandError(str(exc)) from None
        if job.started_at:
            self.stdout.write(
                f"resuming job {job.pk} ({job.units_done}/{plural(job.units_total, 'unit')} done before)"
            )
        if opts["queue"]:
            judge_job_queue(job=job)
            self.stdout.write(f"job {job.pk} queued; the Jobs page shows its progress")
            return
        self.bar = self.command_progress(opts, unit="turns" if job.is_nli else "units")
        try:
            judge_job_run(job=job, progress=self.progress)
        except (JobError, LlmError, NliError, NliJobError) as exc:
            raise CommandError(f"job {job.pk} stopped: {exc}") from None
        finally:
            self.bar.close()
        job = jobs_read([job])[0].job
        self.stdout.write(self.report(job))
        if job.status == JudgeJob.Status.FAILED:
            # Nothing to show for it (or it stopped): a script or a shell `&&` must not go on as if it had.
            raise CommandError(f"job {job.pk} {job_status_text(job)}")

    @staticmethod
    def report(job: JudgeJob) -> str:
        """The outcome first (with how many units failed and why), then the counts."""
        status = job_status_text(job)
        if job.is_nli:
            return (
                f"job {job.pk} {status}: {plural(job.units_done, 'turn')}, {plural(job.calls_made, 'pair')} "
                f"scored, {plural(job.cache_hits, 'pair')} already stored, cost $0.0000; {job.summary}"
            )
        text = (
            f"job {job.pk} {status}: {plural(job.units_done, 'unit')} ({job.units_failed} failed), "
            f"{plural(job.calls_made, 'call')} made, {job.cache_hits} from the cache, "
            f"{job.input_tokens} input + {plural(job.output_tokens, 'output token')}, cost ${job.cost_usd:.4f}"
        )
        if job.units_failed:
            text += f"\nfailures are listed on the jobs page and in the admin (LLM failures of job {job.pk})"
        return text

    def progress(self, job: JudgeJob) -> None:
        """The job's own progress report (per unit, or per poll of a worker's job) shown on stderr."""
        counts = (
            f"pairs scored {job.calls_made} stored {job.cache_hits}"
            if job.is_nli
            else f"calls {job.calls_made} cached {job.cache_hits} ${job.cost_usd:.4f}"
        )
        self.bar(job.units_done, job.units_total, counts)
