from django.urls import path  # noqa: F401  (capabilities add their pages below)

app_name = "judging"
urlpatterns: list = []
