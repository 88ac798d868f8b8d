"""llm_judge: label a collection with an LLM judge (relevance, nuggets, NtR or support)."""

from __future__ import annotations

import sys
from typing import Any

from django.conf import settings
from django.core.management.base import CommandError, CommandParser

from annotation.management.commands._base import CollectionCommand
from judging.clients.llm import LlmError, default_model
from judging.jobs import JobError, job_estimate, judge_job_run, judge_job_start
from judging.models import JudgeJob
from judging.tasks import judge_job_run_task


class Command(CollectionCommand):
    help = (
        "Label a collection with an LLM judge through any OpenAI-compatible endpoint (OPENAI_BASE_URL, "
        "OPENAI_API_KEY, or Azure via AZURE_OPENAI_ENDPOINT). Labels land in the same tables as human "
        "labels, under the judge named by --judge-name. Every call is cached in the database, so running "
        "the same command again, or after a kill, pays for no call twice and resumes the unfinished job. "
        "--dry-run prints how many calls the job would make and what they would cost."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        super().add_arguments(parser)
        parser.add_argument("--task", required=True, choices=[t.value for t in JudgeJob.Task])
        parser.add_argument(
            "--judge-name", required=True, help="Name of the LLM judge whose labels to write."
        )
        parser.add_argument(
            "--model", default=None, help="Model (Azure: deployment) name; default OPENAI_MODEL."
        )
        parser.add_argument("--turns", nargs="+", default=None, help="Only these turn ids (default: all).")
        parser.add_argument("--runs", nargs="+", default=None, help="Only these runs (default: all).")
        parser.add_argument("--depth", type=int, default=30, help="relevance: judge each run's top DEPTH.")
        parser.add_argument(
            "--source",
            choices=["passages", "responses"],
            default="passages",
            help="nuggets: extract from relevant passages (gold nuggets) or from the runs' responses.",
        )
        parser.add_argument(
            "--relevance-judge", default="", help="nuggets: whose relevance grades pick passages."
        )
        parser.add_argument(
            "--min-grade", type=int, default=2, help="nuggets: lowest grade of a relevant passage."
        )
        parser.add_argument("--gold-judge", default="", help="ntr: the judge whose gold nuggets to match.")
        parser.add_argument(
            "--concurrency", type=int, default=None, help="Calls in flight (default LLM_CONCURRENCY)."
        )
        parser.add_argument(
            "--dry-run", action="store_true", help="Print the calls and estimated cost; call nothing."
        )
        parser.add_argument(
            "--queue", action="store_true", help="Hand the job to Celery workers instead of running here."
        )

    def handle(self, *args: Any, **opts: Any) -> None:
        collection = self.get_collection(opts["collection"])
        model = opts["model"] or default_model()
        concurrency = opts["concurrency"] or int(getattr(settings, "LLM_CONCURRENCY", 8))
        if concurrency < 1:
            raise CommandError("--concurrency must be at least 1")
        options = self.task_options(opts)
        try:
            if opts["dry_run"]:
                estimate = job_estimate(
                    collection=collection, task=opts["task"], model=model, options=options
                )
                self.stdout.write(f"dry run, {opts['task']} with {model}: {estimate}")
                return
            job = judge_job_start(
                collection=collection,
                task=opts["task"],
                judge_name=opts["judge_name"],
                model=model,
                options=options,
                concurrency=concurrency,
            )
        except JobError as exc:
            raise CommandError(str(exc)) from None
        if job.started_at:
            self.stdout.write(f"resuming job {job.pk} ({job.units_done}/{job.units_total} units done before)")
        if opts["queue"]:
            judge_job_run_task.delay(job.pk)
            self.stdout.write(f"job {job.pk} queued")
            return
        try:
            judge_job_run(job=job, progress=self.progress)
        except (JobError, LlmError) as exc:
            raise CommandError(f"job {job.pk} stopped: {exc}") from None
        finally:
            if sys.stderr.isatty():
                sys.stderr.write("\n")
        self.stdout.write(
            f"job {job.pk} {job.status}: {job.units_done} units ({job.units_failed} failed), "
            f"{job.calls_made} calls made, {job.cache_hits} from the cache, "
            f"{job.input_tokens} input + {job.output_tokens} output tokens, cost ${job.cost_usd:.4f}"
        )
        if job.units_failed:
            self.stdout.write(
                f"failures are listed on the jobs page and in the admin (LLM failures of job {job.pk})"
            )

    @staticmethod
    def task_options(opts: dict[str, Any]) -> dict[str, Any]:
        """Only what changes the task's units, so the same work maps to the same (resumable) job."""
        options: dict[str, Any] = {}
        if opts["turns"]:
            options["turns"] = sorted(opts["turns"])
        if opts["runs"]:
            options["runs"] = sorted(opts["runs"])
        task = opts["task"]
        if task == JudgeJob.Task.RELEVANCE:
            options["depth"] = opts["depth"]
        elif task == JudgeJob.Task.NUGGETS:
            options["source"] = opts["source"]
            if opts["source"] == "passages":
                options["min_grade"] = opts["min_grade"]
                if opts["relevance_judge"]:
                    options["relevance_judge"] = opts["relevance_judge"]
        elif task == JudgeJob.Task.NTR:
            options["gold_judge"] = opts["gold_judge"]
        return options

    def progress(self, job: JudgeJob) -> None:
        # A progress bar on a terminal; nothing on pipes and in tests, where it would only be noise.
        if not sys.stderr.isatty() or not job.units_total:
            return
        width = 30
        filled = width * job.units_done // job.units_total
        sys.stderr.write(
            f"\r[{'#' * filled}{'.' * (width - filled)}] {job.units_done}/{job.units_total} "
            f"calls {job.calls_made} cached {job.cache_hits} ${job.cost_usd:.4f}"
        )
        sys.stderr.flush()
