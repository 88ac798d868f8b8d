"""The quality dashboard, included under quality/ in the judging namespace."""

from django.urls import path

from judging.quality import views

urlpatterns = [
    path("<slug:name>/", views.dashboard, name="quality-dashboard"),
    path("<slug:name>/pause/<str:username>", views.pause, name="quality-pause"),
    path("<slug:name>/resume/<str:username>", views.resume, name="quality-resume"),
]
