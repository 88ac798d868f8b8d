"""The run report pages, included under quality/ in the judging namespace."""

from django.urls import path

from judging.quality.runs import views

urlpatterns = [
    path("<slug:name>/runs/", views.runs_page, name="quality-runs"),
    path("<slug:name>/runs/judged.csv", views.runs_download, name="quality-runs-download"),
]
