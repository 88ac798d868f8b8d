from django.urls import include, path  # noqa: F401  (capabilities add their pages below)

from judging import views_agreement, views_evaluation, views_jobs
from judging.hybrid import urls as hybrid_urls

app_name = "judging"
urlpatterns: list = [
    path("evaluation/", views_evaluation.evaluation_index, name="evaluation-index"),
    path("evaluation/<slug:name>/", views_evaluation.evaluation_runs, name="evaluation-runs"),
    path("evaluation/<slug:name>/hybrid/", include(hybrid_urls.urlpatterns)),
    path(
        "evaluation/<slug:name>/runs/<path:run>/",
        views_evaluation.evaluation_run_turns,
        name="evaluation-run",
    ),
    path("agreement/", views_agreement.agreement_index, name="agreement-index"),
    path("agreement/<slug:name>/", views_agreement.agreement_report, name="agreement-report"),
    path(
        "agreement/<slug:name>/download/<str:kind>",
        views_agreement.agreement_download,
        name="agreement-download",
    ),
    path("agreement/<slug:name>/ranking/", views_agreement.ranking_report, name="agreement-ranking"),
    path(
        "agreement/<slug:name>/ranking/<str:kind>",
        views_agreement.ranking_download,
        name="agreement-ranking-download",
    ),
    path("agreement/<slug:name>/campaign/", views_agreement.campaign, name="agreement-campaign"),
    path("agreement/<slug:name>/live/", views_agreement.live, name="agreement-live"),
    path("agreement/<slug:name>/live.json", views_agreement.live_data, name="agreement-live-data"),
    path("jobs/", views_jobs.job_list, name="job-list"),
    path("jobs/start/", views_jobs.job_start, name="job-start"),
    path("jobs/<int:pk>/", views_jobs.job_detail, name="job-detail"),
    path("jobs/<int:pk>/progress.json", views_jobs.job_progress, name="job-progress"),
    path("jobs/<int:pk>/resume/", views_jobs.job_resume, name="job-resume"),
]
