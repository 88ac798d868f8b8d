"""The judges page, included under quality/ in the judging namespace."""

from django.urls import path

from judging.quality.judges import views

urlpatterns = [
    path("<slug:name>/judges/", views.judges_page, name="quality-judges"),
]
