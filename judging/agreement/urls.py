"""The agreement pages (reports, downloads, campaign and live views), included under agreement/ in the judging namespace."""

from django.urls import path

import core.converters  # noqa: F401  registers <text:...> and <textpath:...>
from core.lazy_views import lazy_views

api = lazy_views("judging.agreement.api")
views = lazy_views("judging.agreement.views")

urlpatterns = [
    path("", views.agreement_index, name="agreement-index"),
    path("<slug:name>/", views.agreement_report, name="agreement-report"),
    path("<slug:name>/download/<text:kind>", views.agreement_download, name="agreement-download"),
    path("<slug:name>/ranking/", views.ranking_report, name="agreement-ranking"),
    path("<slug:name>/ranking/<text:kind>", views.ranking_download, name="agreement-ranking-download"),
    path("<slug:name>/campaign/", views.campaign, name="agreement-campaign"),
    path("<slug:name>/live/", views.live, name="agreement-live"),
    path("<slug:name>/live.json", api.LiveAgreementApi.as_view(), name="agreement-live-data"),
]
