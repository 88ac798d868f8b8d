from django.urls import path

from core.lazy_views import lazy_views

views = lazy_views("annotation.support.views")


urlpatterns = [
    path("support/", views.support_assignments, name="support-assignments"),
    path("support/<int:assignment_id>/<int:position>/", views.support_unit, name="support-unit"),
    path("support/organise/<slug:name>/", views.support_organise, name="support-organise"),
]
