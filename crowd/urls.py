from django.urls import path

from crowd import views

app_name = "mturk"
urlpatterns: list = [
    path("", views.crowd_home, name="home"),
    path("batches/<int:batch_id>/", views.batch_take, name="batch-take"),
    path("take/<str:token>/", views.link_take, name="link-take"),
    path("hit/<str:token>/", views.hit_page, name="hit"),
    path("study/<slug:key>/", views.study_take, name="study"),
    path("campaigns/", views.campaign_list, name="campaigns"),
    path("campaigns/new/", views.campaign_new, name="campaign-new"),
    # Names are slugs since composing checks them; `str` still reaches a campaign named before that check.
    path("campaigns/<str:name>/", views.campaign_detail, name="campaign"),
    path("campaigns/<str:name>/links/", views.campaign_links, name="campaign-links"),
    path("campaigns/<str:name>/aggregate/", views.campaign_aggregate, name="campaign-aggregate"),
    path("campaigns/<str:name>/studies/", views.campaign_study, name="campaign-study"),
    path("campaigns/<str:name>/publish/", views.campaign_publish_view, name="campaign-publish"),
    path("campaigns/<str:name>/sync/", views.campaign_sync_view, name="campaign-sync"),
    path("campaigns/<str:name>/review/", views.campaign_review_view, name="campaign-review"),
    path("campaigns/<str:name>/bonus/", views.campaign_bonus_view, name="campaign-bonus"),
    path("campaigns/<str:name>/extend/", views.campaign_extend_view, name="campaign-extend"),
    path("campaigns/<str:name>/expire/", views.campaign_expire_view, name="campaign-expire"),
]
