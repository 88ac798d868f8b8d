from django.urls import path

from annotation import views

urlpatterns = [
    path("", views.home, name="home"),
    path("collections/<slug:name>/", views.collection_detail, name="collection-detail"),
]
