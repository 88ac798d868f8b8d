"""The run report pages, included under quality/ in the judging namespace."""

from django.urls import path

from core.lazy_views import lazy_views

views = lazy_views("judging.quality.runs.views")


urlpatterns = [
    path("<slug:name>/runs/", views.runs_page, name="quality-runs"),
    path("<slug:name>/runs/judged.csv", views.runs_download, name="quality-runs-download"),
]
