from django.urls import path  # noqa: F401  (the crowd capability adds its pages below)

app_name = "mturk"
urlpatterns: list = []
