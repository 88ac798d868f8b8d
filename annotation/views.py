from django.contrib.auth.decorators import login_required
from django.db.models import Count
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render

from annotation.console.selectors import organiser_home
from annotation.models import Collection, Judge
from annotation.permissions import is_organiser


@login_required
def home(request: HttpRequest) -> HttpResponse:
    collections = Collection.objects.annotate(
        n_topics=Count("topics", distinct=True),
        n_turns=Count("turns", distinct=True),
        n_passages=Count("passages", distinct=True),
        n_runs=Count("runs", distinct=True),
    )
    context: dict[str, object] = {"collections": collections}
    if is_organiser(request.user):
        context.update(organiser_home(user=request.user))
    return render(request, "annotation/home.html", context)


@login_required
def collection_detail(request: HttpRequest, name: str) -> HttpResponse:
    collection = get_object_or_404(Collection, name=name)
    judges = Judge.objects.filter(relevancejudgments__turn__collection=collection).annotate(
        n=Count("relevancejudgments")
    )
    return render(
        request,
        "annotation/collection_detail.html",
        {
            "collection": collection,
            "runs": collection.runs.all(),
            "judges": judges,
            "topics": collection.topics.prefetch_related("ptkb", "turns"),
        },
    )
