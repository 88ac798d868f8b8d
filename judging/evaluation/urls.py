"""The run-evaluation pages, included under evaluation/ in the judging namespace."""

from django.urls import path

from judging.evaluation import views

urlpatterns = [
    path("", views.evaluation_index, name="evaluation-index"),
    path("<slug:name>/", views.evaluation_runs, name="evaluation-runs"),
    path("<slug:name>/runs/<path:run>/", views.evaluation_run_turns, name="evaluation-run"),
]
