from django.urls import include, path

from annotation import views

urlpatterns = [
    path("", views.home, name="home"),
    path("collections/<slug:name>/", views.collection_detail, name="collection-detail"),
    path("", include("annotation.relevance.urls")),
    path("", include("annotation.nuggets.urls")),
    path("", include("annotation.support.urls")),
    path("", include("annotation.rag_nuggets.urls")),
    path("", include("annotation.console.urls")),
]
