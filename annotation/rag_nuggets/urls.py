from django.urls import path

from core.lazy_views import lazy_views

api = lazy_views("annotation.rag_nuggets.api")
views = lazy_views("annotation.rag_nuggets.views")


urlpatterns = [
    path("rag-nuggets/", views.work_list, name="rag-nuggets-work"),
    path("rag-nuggets/<int:work_id>/<int:index>/", views.work_page, name="rag-nuggets-page"),
    path(
        "rag-nuggets/<int:work_id>/<int:index>/edits/", api.NuggetEditApi.as_view(), name="rag-nuggets-edit"
    ),
    path("rag-nuggets/organise/<slug:name>/", views.organise, name="rag-nuggets-organise"),
]
