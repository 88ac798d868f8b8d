"""The machine-judge job pages, included under jobs/ in the judging namespace."""

from django.urls import path

from judging.machine import api, views

urlpatterns = [
    path("", views.job_list, name="job-list"),
    path("start/", views.job_start, name="job-start"),
    path("<int:pk>/", views.job_detail, name="job-detail"),
    path("<int:pk>/progress.json", api.JobProgressApi.as_view(), name="job-progress"),
    path("<int:pk>/resume/", views.job_resume, name="job-resume"),
]
