from django.urls import path

from annotation import views, views_support
from annotation import views_nuggets as nuggets
from annotation import views_relevance as relevance

# The assessor JSON API (relevance-api-next, relevance-api-grade) is routed first, in assay/urls.py.
urlpatterns = [
    path("", views.home, name="home"),
    path("collections/<slug:name>/", views.collection_detail, name="collection-detail"),
    path("support/", views_support.support_assignments, name="support-assignments"),
    path("support/<int:assignment_id>/<int:position>/", views_support.support_unit, name="support-unit"),
    path("support/organise/<slug:name>/", views_support.support_organise, name="support-organise"),
    path("support/leaderboard/<slug:name>/", views_support.support_leaderboard, name="support-leaderboard"),
    path(
        "support/disagreements/<slug:name>/",
        views_support.support_disagreement_page,
        name="support-disagreements",
    ),
    path("relevance/", relevance.queue, name="relevance-queue"),
    path("relevance/organise/", relevance.organise, name="relevance-organise"),
    path("relevance/<int:assignment_pk>/next/", relevance.next_unit, name="relevance-next"),
    path("relevance/work/<int:slot_pk>/", relevance.resume, name="relevance-resume"),
    path("relevance/work/<int:slot_pk>/<int:turn_pk>/<int:index>/", relevance.passage, name="relevance-passage"),
    path("relevance/work/<int:slot_pk>/<int:turn_pk>/ptkb/", relevance.ptkb, name="relevance-ptkb"),
    path("nuggets/", nuggets.nugget_index, name="nuggets-index"),
    path("nuggets/<slug:name>/", nuggets.nugget_turns, name="nuggets-turns"),
    path("nuggets/<slug:name>/stats/", nuggets.nugget_stats_page, name="nuggets-stats"),
    path("nuggets/<slug:name>/<str:turn_id>/", nuggets.nugget_turn, name="nuggets-turn"),
    path("nuggets/<slug:name>/<str:turn_id>/gold/", nuggets.gold_response, name="nuggets-gold"),
    path("nuggets/<slug:name>/<str:turn_id>/nuggets/", nuggets.nugget_create_view, name="nuggets-create"),
    path("nuggets/<slug:name>/<str:turn_id>/nuggets/<int:pk>/", nuggets.nugget_update_view, name="nuggets-update"),
    path("nuggets/<slug:name>/<str:turn_id>/nuggets/<int:pk>/delete/", nuggets.nugget_delete_view, name="nuggets-delete"),
    path(
        "nuggets/<slug:name>/<str:turn_id>/nuggets/<int:pk>/duplicate/",
        nuggets.nugget_duplicate_view,
        name="nuggets-duplicate",
    ),
]
