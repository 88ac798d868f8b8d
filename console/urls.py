from django.urls import path

import core.converters  # noqa: F401  registers <text:...> and <textpath:...>
from core.lazy_views import lazy_views

views = lazy_views("console.views")
people = lazy_views("console.people.views")
api = lazy_views("console.uploads.api")
uploads = lazy_views("console.uploads.views")

urlpatterns = [
    path("", views.home, name="home"),
    path("collections/<slug:name>/", views.collection_detail, name="collection-detail"),
    path("console/collections/new/", views.collection_new, name="console-collection-new"),
    path("console/collections/<slug:name>/", uploads.collection_page, name="console-collection"),
    path("console/collections/<slug:name>/imports/<int:pk>/", uploads.import_page, name="console-import"),
    path(
        "console/collections/<slug:name>/imports/<int:pk>/status.json",
        api.ImportStatusApi.as_view(),
        name="console-import-status",
    ),
    path(
        "console/collections/<slug:name>/imports/<int:pk>/resume/",
        uploads.import_resume,
        name="console-import-resume",
    ),
    path("console/collections/<slug:name>/pools/", views.pools_page, name="console-pools"),
    path("console/collections/<slug:name>/pools/<slug:pool>/", views.pool_page, name="console-pool"),
    path("console/collections/<slug:name>/work/", views.work_page, name="console-work"),
    path("console/collections/<slug:name>/dashboard/", views.dashboard_page, name="console-dashboard"),
    path("console/collections/<slug:name>/exports/", views.exports_page, name="console-exports"),
    path(
        "console/collections/<slug:name>/exports/<slug:kind>",
        views.export_download,
        name="console-export",
    ),
    path("console/people/", people.people_page, name="console-people"),
    path("console/people/unlock/", people.login_unlock_view, name="console-login-unlock"),
    path(
        "console/people/<text:username>/invitation/renew/",
        people.invitation_renew_view,
        name="console-invitation-renew",
    ),
    path(
        "console/people/<text:username>/invitation/revoke/",
        people.invitation_revoke_view,
        name="console-invitation-revoke",
    ),
    # Slugs: the links' own alphabet (URL-safe base64 and the token's base36-hex), so that nothing else (a
    # NUL, say) reaches the page and the failure it records.
    path("welcome/<slug:uidb64>/<slug:token>/", people.welcome, name="console-welcome"),
    path("account/", views.account_page, name="account"),
    path("account/token/reset/", views.account_token_reset, name="account-token-reset"),
]
