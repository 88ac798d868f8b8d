"""The judges page, included under quality/ in the judging namespace."""

from django.urls import path

from core.lazy_views import lazy_views

views = lazy_views("judging.quality.judges.views")


urlpatterns = [
    path("<slug:name>/judges/", views.judges_page, name="quality-judges"),
]
