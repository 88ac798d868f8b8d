from django.urls import include, path

urlpatterns = [
    path("", include("annotation.relevance.urls")),
    path("", include("annotation.nuggets.urls")),
    path("", include("annotation.support.urls")),
    path("", include("annotation.rag_nuggets.urls")),
]
