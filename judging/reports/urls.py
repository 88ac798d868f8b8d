"""The stored reports' own action, included under reports/ in the judging namespace."""

from django.urls import path

from core.lazy_views import lazy_views

views = lazy_views("judging.reports.views")

urlpatterns = [
    path("<int:pk>/again/", views.report_again_view, name="report-again"),
]
