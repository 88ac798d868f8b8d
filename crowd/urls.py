from django.urls import path

from crowd import views, views_console

app_name = "crowd"
urlpatterns: list = [
    path("", views.crowd_home, name="home"),
    path("batches/<int:batch_id>/", views.batch_take, name="batch-take"),
    path("take/<str:token>/", views.link_take, name="link-take"),
    path("hit/<str:token>/", views.hit_page, name="hit"),
    path("study/<slug:key>/", views.study_take, name="study"),
    path("campaigns/", views_console.campaign_list, name="campaigns"),
    path("campaigns/new/", views_console.campaign_new, name="campaign-new"),
    # Names are slugs since composing checks them; `str` still reaches a campaign named before that check.
    path("campaigns/<str:name>/", views_console.campaign_detail, name="campaign"),
    path("campaigns/<str:name>/links/", views_console.campaign_links, name="campaign-links"),
    path("campaigns/<str:name>/aggregate/", views_console.campaign_aggregate, name="campaign-aggregate"),
    path("campaigns/<str:name>/studies/", views_console.campaign_study, name="campaign-study"),
    path("campaigns/<str:name>/publish/", views_console.campaign_publish_view, name="campaign-publish"),
    path("campaigns/<str:name>/sync/", views_console.campaign_sync_view, name="campaign-sync"),
    path("campaigns/<str:name>/review/", views_console.campaign_review_view, name="campaign-review"),
    path("campaigns/<str:name>/bonus/", views_console.campaign_bonus_view, name="campaign-bonus"),
    path("campaigns/<str:name>/extend/", views_console.campaign_extend_view, name="campaign-extend"),
    path("campaigns/<str:name>/expire/", views_console.campaign_expire_view, name="campaign-expire"),
]
