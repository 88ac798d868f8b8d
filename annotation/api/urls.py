from django.urls import path

import core.converters  # noqa: F401  registers <text:...> and <textpath:...>
from core.lazy_views import lazy_views

views = lazy_views("annotation.api.views")

urlpatterns = [
    path("token/", views.TokenObtain.as_view(), name="api-token"),
    path("collections/", views.CollectionList.as_view(), name="api-collections"),
    path("collections/<slug:collection>/", views.CollectionDetail.as_view(), name="api-collection"),
    path("collections/<slug:collection>/topics/", views.TopicList.as_view(), name="api-topics"),
    path("collections/<slug:collection>/turns/", views.TurnList.as_view(), name="api-turns"),
    path("collections/<slug:collection>/passages/", views.PassageList.as_view(), name="api-passages"),
    path("collections/<slug:collection>/runs/", views.RunList.as_view(), name="api-runs"),
    path(
        "collections/<slug:collection>/runs/<text:run>/responses/",
        views.ResponseList.as_view(),
        name="api-responses",
    ),
    path(
        "collections/<slug:collection>/judgments/relevance/",
        views.RelevanceJudgmentList.as_view(),
        name="api-relevance",
    ),
    path(
        "collections/<slug:collection>/judgments/support/",
        views.SupportJudgmentList.as_view(),
        name="api-support",
    ),
    path("judges/", views.JudgeList.as_view(), name="api-judges"),
]
