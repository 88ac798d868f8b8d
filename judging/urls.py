from django.urls import path  # noqa: F401  (capabilities add their pages below)

from judging import views_evaluation

app_name = "judging"
urlpatterns: list = [
    path("evaluation/", views_evaluation.evaluation_index, name="evaluation-index"),
    path("evaluation/<slug:name>/", views_evaluation.evaluation_runs, name="evaluation-runs"),
    path("evaluation/<slug:name>/runs/<path:run>/", views_evaluation.evaluation_run_turns, name="evaluation-run"),
]
