from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path

from core.lazy_views import lazy_views
from judging.support import urls as support_measure_urls

# Each module of views is imported by its first request, not by every command that loads the URL conf
# (core/lazy_views.py).
relevance_api = lazy_views("annotation.relevance.api")
favicon = lazy_views("assay.favicon")
health = lazy_views("assay.health")
login = lazy_views("assay.login")
spectacular = lazy_views("drf_spectacular.views")

urlpatterns = [
    # The assessor JSON loop comes first: the resolver tries patterns in order on every request, and
    # these two are most of the requests of a relevance campaign.
    path(
        "relevance/api/<int:assignment_pk>/next/",
        relevance_api.NextPassageApi.as_view(),
        name="relevance-api-next",
    ),
    path(
        "relevance/api/work/<int:slot_pk>/grade/",
        relevance_api.GradeApi.as_view(),
        name="relevance-api-grade",
    ),
    path("favicon.ico", favicon.favicon, name="favicon"),
    path("healthz", health.healthz, name="healthz"),
    path("readyz", health.readyz, name="readyz"),
    path("admin/", admin.site.urls),
    path("accounts/login/", login.LandingLoginView.as_view(), name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("api/schema/", spectacular.SpectacularAPIView.as_view(), name="api-schema"),
    path(
        "api/docs/", spectacular.SpectacularSwaggerSplitView.as_view(url_name="api-schema"), name="api-docs"
    ),
    path("api/", include("annotation.api.urls")),
    path("judging/", include("judging.urls")),
    path("crowd/", include("crowd.urls")),
    # Support measures (judging) are shown beside the support pages, under their paths.
    path("support/", include(support_measure_urls.urlpatterns)),
    # The home page, collections and the organiser's console, then the label families' pages.
    path("", include("console.urls")),
    path("", include("annotation.urls")),
]

handler403 = "annotation.permissions.permission_denied"

handler404 = "assay.not_found.not_found"
