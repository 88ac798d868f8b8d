"""Budget simulations as background tasks: the budget page records what was asked and a task worker
(manage.py task_worker) simulates it while the page shows how it stands, then the stored figures.

Every simulation goes to a worker, however small the collection: its time grows with repeats x budgets x
units, and a page of real size (20,000 pairs, 500 repeats) takes seconds, too long to hold a request.
"""

from __future__ import annotations

import logging
from typing import Any

from django.db import transaction
from django_tasks import task

from annotation.models import Collection
from core.background import requeue_on_shutdown
from core.jobs import job_end, job_interrupted, job_queue, job_start
from judging.hybrid.budget import budget_compute, labels_fingerprint, params_key
from judging.hybrid.services import HybridError
from judging.hybrid.units import UnitsError
from judging.measures.hybrid.estimators import EstimationError
from judging.models import BudgetSimulation

log = logging.getLogger(__name__)


@task()
def budget_simulation_run_task(simulation_id: int) -> dict[str, object]:
    """Run one simulation. A worker stopped in the middle queues it again: nothing is written before the
    end, so the next worker computes the same figures from the start."""
    with requeue_on_shutdown(
        f"budget simulation {simulation_id}",
        lambda: budget_simulation_queue(simulation=BudgetSimulation(pk=simulation_id)),
    ):
        simulation = budget_simulation_run(simulation_id=simulation_id)
    return {"simulation": simulation.pk, "status": simulation.status}


def budget_simulation_run(*, simulation_id: int) -> BudgetSimulation:
    """Simulate and store the figures (or why it failed) on the row. One already finished is left as it
    is, so a task delivered twice computes once. The labels' fingerprint is taken again as the work
    starts: the figures are those of the labels as they were then."""
    simulation = BudgetSimulation.objects.select_related("collection").get(pk=simulation_id)
    if simulation.finished:
        return simulation
    collection, params = simulation.collection, simulation.params
    job_start(job=simulation, fingerprint=labels_fingerprint(collection=collection, params=params))
    status, result, message = BudgetSimulation.Status.DONE, None, ""
    try:
        result = budget_compute(collection=collection, params=params)
    except (UnitsError, EstimationError) as exc:
        status, message = BudgetSimulation.Status.FAILED, str(exc)
    except Exception as exc:  # recorded on the row so the page can say it
        log.exception("budget simulation %s failed", simulation.pk)
        status, message = BudgetSimulation.Status.FAILED, f"{type(exc).__name__}: {exc}"
    job_end(job=simulation, status=status, result=result, message=message)
    simulation.refresh_from_db()
    return simulation


@transaction.atomic
def budget_simulation_start(
    *, collection: Collection, params: dict[str, Any], user: Any
) -> tuple[BudgetSimulation, bool]:
    """The simulation of `params` on the collection, and whether it is an earlier one reused: the same
    choices on the same labels, done, waiting or running (not failed, not interrupted), answer again
    instead of simulating twice. Otherwise a new one is recorded and queued."""
    key = params_key(params)
    fingerprint = labels_fingerprint(collection=collection, params=params)
    same = BudgetSimulation.objects.filter(collection=collection, params_key=key, fingerprint=fingerprint)
    for earlier in same.exclude(status=BudgetSimulation.Status.FAILED)[:3]:
        if not job_interrupted(earlier):
            return earlier, True
    simulation = BudgetSimulation.objects.create(
        collection=collection,
        params=params,
        params_key=key,
        fingerprint=fingerprint,
        created_by=user if getattr(user, "is_authenticated", False) else None,
    )
    budget_simulation_queue(simulation=simulation)
    simulation.refresh_from_db()
    return simulation, False


@transaction.atomic
def budget_simulation_queue(*, simulation: BudgetSimulation) -> None:
    """Mark the simulation waiting and enqueue it in the caller's transaction: the queue lives in the
    same database, so no worker sees the task before the row is committed."""
    job_queue(job=simulation, task=budget_simulation_run_task, message="", started_at=None, finished_at=None)


@transaction.atomic
def budget_simulation_again(*, simulation: BudgetSimulation) -> BudgetSimulation:
    """Queue again a simulation whose worker died. One that waits, runs or finished is refused (two runs
    of one row would race); the row is locked first, so two clicks queue it once. Its dead task is marked
    failed as the new one is queued."""
    simulation = BudgetSimulation.objects.select_for_update().get(pk=simulation.pk)
    if not job_interrupted(simulation):
        raise HybridError(
            f"simulation {simulation.pk} is {simulation.get_status_display().lower()}: not interrupted"
        )
    budget_simulation_queue(simulation=simulation)
    simulation.refresh_from_db()
    return simulation
