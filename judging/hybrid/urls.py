"""The hybrid pages, included under evaluation/<collection>/hybrid/ in the judging namespace."""

from django.urls import path

from core.lazy_views import lazy_views

views = lazy_views("judging.hybrid.views")


urlpatterns = [
    path("", views.hybrid_estimate_page, name="hybrid-estimate"),
    path("budget/", views.hybrid_budget_page, name="hybrid-budget"),
    path("budget/<int:pk>/", views.hybrid_budget_simulation, name="hybrid-budget-simulation"),
    path("budget/<int:pk>/again/", views.hybrid_budget_again, name="hybrid-budget-again"),
    path("sample/", views.hybrid_sample_draw, name="hybrid-sample"),
]
