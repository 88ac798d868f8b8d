"""The support measure pages, included under support/ beside annotation's support pages (no namespace, as
theirs)."""

from django.urls import path

from core.lazy_views import lazy_views

views = lazy_views("judging.support.views")


urlpatterns = [
    path("leaderboard/<slug:name>/", views.support_leaderboard, name="support-leaderboard"),
    path("disagreements/<slug:name>/", views.support_disagreement_page, name="support-disagreements"),
]
