"""The calibration page, included under agreement/ in the judging namespace."""

from django.urls import path

from judging.rag_nuggets.calibration import views

urlpatterns = [
    path("<slug:name>/nuggets/", views.calibration_page, name="nugget-calibration"),
]
