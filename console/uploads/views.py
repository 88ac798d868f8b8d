"""The upload pages: a collection's page with its upload form and recent uploads, and one upload's page
(its progress while it runs, its outcome once done) with the resume of an interrupted import."""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.csrf import csrf_exempt, csrf_protect
from django.views.decorators.http import require_POST

from annotation.collection.checks import RunValidation, run_validations
from annotation.formats.base import import_max_bytes, megabytes
from annotation.labels.files import UploadRefused
from annotation.models import Collection, Pool, Run
from annotation.permissions import organiser_required
from annotation.selectors import collection_counts
from annotation.typed import AuthenticatedRequest
from console.models import ImportJob
from console.selectors import collection_links
from console.uploads.forms import UPLOAD_OPTIONS, UploadForm
from console.uploads.selectors import import_job_state, progress_unit
from console.uploads.services import import_job_create
from console.uploads.tasks import import_job_resumable, import_job_resume, import_job_start
from core.upload_limit import LimitedUploadHandler, upload_limit_install


# CSRF is checked inside, after the size limit is in place: the middleware's check reads the body first.
@csrf_exempt
@organiser_required
def collection_page(request: AuthenticatedRequest, name: str) -> HttpResponse:
    """A collection's contents, its upload form and its recent uploads; POST stores an upload.

    An upload past IMPORT_MAX_BYTES is stopped while it streams in (nothing of it is kept) and answered
    413 with the form and the reason, instead of being stored to be refused by its import.
    """
    limit = upload_limit_install(request, limit=import_max_bytes())
    return _collection_page(request, name, limit)


@csrf_protect
def _collection_page(request: AuthenticatedRequest, name: str, limit: LimitedUploadHandler) -> HttpResponse:
    collection = get_object_or_404(Collection, name=name)
    form = UploadForm(request.POST or None, request.FILES or None)
    if limit.refused:
        # The form keeps what was typed and shows only the reason (not "this field is required").
        form = UploadForm(request.POST)
        form.full_clean()
        form.errors.clear()
        form.add_error(
            None,
            f"The file is larger than the upload limit of {megabytes(limit.limit)} (setting "
            "IMPORT_MAX_BYTES); nothing was stored. Import it with the command instead.",
        )
    elif request.method == "POST" and form.is_valid():
        try:
            job = import_job_create(
                collection=collection,
                kind=form.cleaned_data["kind"],
                upload=form.cleaned_data["file"],
                options=form.options(),
                user=request.user,
            )
        except UploadRefused as exc:
            form.add_error(None, str(exc))
        else:
            import_job_start(job=job)
            return redirect("console-import", name=collection.name, pk=job.pk)
    counts = collection_counts(collection_ids=[collection.pk])[collection.pk]
    return render(
        request,
        "console/collection.html",
        {
            "collection": collection,
            "counts": counts,
            "form": form,
            "jobs": ImportJob.objects.filter(collection=collection)[:15],
            "pools": Pool.objects.filter(collection=collection),
            "links": collection_links(collection_name=collection.name),
            "upload_options": {kind: list(names) for kind, names in UPLOAD_OPTIONS.items()},
        },
        status=413 if limit.refused else 400 if request.method == "POST" else 200,
    )


def _job(name: str, pk: int) -> ImportJob:
    return get_object_or_404(ImportJob.objects.select_related("collection"), pk=pk, collection__name=name)


@organiser_required
def import_page(request: AuthenticatedRequest, name: str, pk: int) -> HttpResponse:
    job = _job(name, pk)
    state = import_job_state(job=job)
    unit = progress_unit(job=job)
    resumable = state.interrupted and import_job_resumable(job=job)
    return render(
        request,
        "console/import.html",
        {
            "collection": job.collection,
            "job": job,
            "state": state,
            "unit": unit,
            "resumable": resumable,
            "runs": _imported_runs(job),
        },
    )


def _imported_runs(job: ImportJob) -> list[RunValidation]:
    """The runs a finished run upload stored, whose validation reports its page shows; the result rows
    name each as `run <name>: <kind>`."""
    if job.kind != ImportJob.Kind.RUN or job.status != ImportJob.Status.DONE:
        return []
    names = {
        row["kind"][4:].rpartition(": ")[0] for row in job.result if row.get("kind", "").startswith("run ")
    }
    return run_validations(runs=Run.objects.filter(collection=job.collection, name__in=names))


@organiser_required
@require_POST
def import_resume(request: AuthenticatedRequest, name: str, pk: int) -> HttpResponse:
    job = _job(name, pk)
    try:
        import_job_resume(job=job)
    except UploadRefused as exc:
        messages.error(request, str(exc))
    else:
        messages.success(request, f"The import of {job.file_name} is queued again.")
    return redirect("console-import", name=job.collection.name, pk=job.pk)
