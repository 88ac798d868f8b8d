"""The adjudicator's pages and the organiser's form, included by annotation.relevance.urls."""

from django.urls import path

from core.lazy_views import lazy_views

views = lazy_views("annotation.relevance.adjudication.views")


urlpatterns = [
    path("relevance/adjudication/", views.queue, name="adjudication-queue"),
    path("relevance/adjudication/new/<slug:name>/", views.assign, name="adjudication-assign"),
    path("relevance/adjudication/<int:pk>/", views.start, name="adjudication-start"),
    path("relevance/adjudication/<int:pk>/<int:item_pk>/", views.item, name="adjudication-item"),
]
