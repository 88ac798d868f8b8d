"""The calibration page, included under agreement/ in the judging namespace."""

from django.urls import path

from core.lazy_views import lazy_views

views = lazy_views("judging.rag_nuggets.calibration.views")


urlpatterns = [
    path("<slug:name>/nuggets/", views.calibration_page, name="nugget-calibration"),
]
