from django.urls import path  # noqa: F401  (the crowd capability adds its pages below)

from crowd import views

app_name = "mturk"
urlpatterns: list = [
    path("", views.crowd_home, name="home"),
    path("batches/<int:batch_id>/", views.batch_take, name="batch-take"),
    path("take/<str:token>/", views.link_take, name="link-take"),
    path("hit/<str:token>/", views.hit_page, name="hit"),
    path("campaigns/<slug:name>/", views.campaign_detail, name="campaign"),
]
