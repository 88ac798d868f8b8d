"""The machine-judge job pages, included under jobs/ in the judging namespace."""

from django.urls import path

from core.lazy_views import lazy_views

api = lazy_views("judging.machine.api")
views = lazy_views("judging.machine.views")


urlpatterns = [
    path("", views.job_list, name="job-list"),
    path("start/", views.job_start, name="job-start"),
    path("<int:pk>/", views.job_detail, name="job-detail"),
    path("<int:pk>/progress.json", api.JobProgressApi.as_view(), name="job-progress"),
    path("<int:pk>/resume/", views.job_resume, name="job-resume"),
]
