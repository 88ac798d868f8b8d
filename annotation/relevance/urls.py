from django.urls import include, path

from core.lazy_views import lazy_views

views = lazy_views("annotation.relevance.views")

# The assessor JSON API (relevance-api-next, relevance-api-grade) is routed first, in assay/urls.py.
urlpatterns = [
    path("", include("annotation.relevance.adjudication.urls")),
    path("relevance/", views.queue, name="relevance-queue"),
    path("relevance/organise/", views.organise, name="relevance-organise"),
    path("relevance/<int:assignment_pk>/next/", views.next_unit, name="relevance-next"),
    path("relevance/work/<int:slot_pk>/", views.resume, name="relevance-resume"),
    path("relevance/work/<int:slot_pk>/<int:turn_pk>/<int:index>/", views.passage, name="relevance-passage"),
    path("relevance/work/<int:slot_pk>/<int:turn_pk>/ptkb/", views.ptkb, name="relevance-ptkb"),
]
