"""The support measure pages, included under support/ beside annotation's support pages (no namespace, as
theirs)."""

from django.urls import path

from judging.support import views

urlpatterns = [
    path("leaderboard/<slug:name>/", views.support_leaderboard, name="support-leaderboard"),
    path("disagreements/<slug:name>/", views.support_disagreement_page, name="support-disagreements"),
]
