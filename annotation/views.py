from django.contrib.auth.decorators import login_required
from django.db.models import Count
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render

from annotation.console.selectors import organiser_home
from annotation.judge_access import judges_readable
from annotation.models import Collection
from annotation.permissions import is_organiser
from annotation.selectors import collection_counts, natural_key
from core.registry import WORK_LINKS


@login_required
def home(request: HttpRequest) -> HttpResponse:
    collections = list(Collection.objects.all())
    counts = collection_counts(collection_ids=[c.pk for c in collections])
    context: dict[str, object] = {
        "collections": [(c, counts[c.pk]) for c in collections],
        "work_links": [link() for link in WORK_LINKS],
    }
    if is_organiser(request.user):
        context.update(organiser_home(user=request.user))
    return render(request, "annotation/home.html", context)


@login_required
def collection_detail(request: HttpRequest, name: str) -> HttpResponse:
    collection = get_object_or_404(Collection, name=name)
    # Only the judges this reader may read: an assessor sees the machines, the files and their own
    # judge, never another assessor's name or how much they have judged.
    judges = (
        judges_readable(user=request.user)
        .filter(relevancejudgments__turn__collection=collection)
        .annotate(n=Count("relevancejudgments"))
    )
    return render(
        request,
        "annotation/collection_detail.html",
        {
            "collection": collection,
            "runs": collection.runs.all(),
            "judges": judges,
            # By number as people read it (2 before 10), not in the order the topics were imported.
            "topics": sorted(
                collection.topics.prefetch_related("ptkb", "turns"), key=lambda t: natural_key(t.number)
            ),
        },
    )
