"""The calibration page, included under agreement/ in the judging namespace."""

from django.urls import path

from judging.agreement.calibration import views

urlpatterns = [
    path("<slug:name>/nuggets/", views.calibration_page, name="nugget-calibration"),
]
