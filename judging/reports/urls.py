"""The stored reports' own action, included under reports/ in the judging namespace."""

from django.urls import path

from judging.reports import views

urlpatterns = [
    path("<int:pk>/again/", views.report_again_view, name="report-again"),
]
