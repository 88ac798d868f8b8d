from django.urls import path

import core.converters  # noqa: F401  registers <text:...> and <textpath:...>
from core.lazy_views import lazy_views

api = lazy_views("annotation.nuggets.api")
views = lazy_views("annotation.nuggets.views")

urlpatterns = [
    path("nuggets/", views.nugget_index, name="nuggets-index"),
    path("nuggets/<slug:name>/", views.nugget_turns, name="nuggets-turns"),
    path("nuggets/<slug:name>/stats/", views.nugget_stats_page, name="nuggets-stats"),
    path("nuggets/<slug:name>/<text:turn_id>/", views.nugget_turn, name="nuggets-turn"),
    path("nuggets/<slug:name>/<text:turn_id>/gold/", views.gold_response, name="nuggets-gold"),
    path("nuggets/<slug:name>/<text:turn_id>/nuggets/", api.NuggetCreateApi.as_view(), name="nuggets-create"),
    path(
        "nuggets/<slug:name>/<text:turn_id>/nuggets/<int:pk>/",
        api.NuggetUpdateApi.as_view(),
        name="nuggets-update",
    ),
    path(
        "nuggets/<slug:name>/<text:turn_id>/nuggets/<int:pk>/delete/",
        api.NuggetDeleteApi.as_view(),
        name="nuggets-delete",
    ),
    path(
        "nuggets/<slug:name>/<text:turn_id>/nuggets/<int:pk>/duplicate/",
        api.NuggetDuplicateApi.as_view(),
        name="nuggets-duplicate",
    ),
]
