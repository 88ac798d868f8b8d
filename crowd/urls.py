from django.urls import path

from crowd.views import console, worker

app_name = "crowd"
urlpatterns: list = [
    path("", worker.crowd_home, name="home"),
    path("batches/<int:batch_id>/", worker.batch_take, name="batch-take"),
    path("take/<str:token>/", worker.link_take, name="link-take"),
    path("hit/<str:token>/", worker.hit_page, name="hit"),
    path("study/<slug:key>/", worker.study_take, name="study"),
    path("campaigns/", console.campaign_list, name="campaigns"),
    path("campaigns/new/", console.campaign_new, name="campaign-new"),
    # Names are slugs since composing checks them; `str` still reaches a campaign named before that check.
    path("campaigns/<str:name>/", console.campaign_detail, name="campaign"),
    path("campaigns/<str:name>/links/", console.campaign_links, name="campaign-links"),
    path("campaigns/<str:name>/aggregate/", console.campaign_aggregate, name="campaign-aggregate"),
    path("campaigns/<str:name>/studies/", console.campaign_study, name="campaign-study"),
    path("campaigns/<str:name>/publish/", console.campaign_publish_view, name="campaign-publish"),
    path("campaigns/<str:name>/sync/", console.campaign_sync_view, name="campaign-sync"),
    path("campaigns/<str:name>/review/", console.campaign_review_view, name="campaign-review"),
    path("campaigns/<str:name>/bonus/", console.campaign_bonus_view, name="campaign-bonus"),
    path("campaigns/<str:name>/extend/", console.campaign_extend_view, name="campaign-extend"),
    path("campaigns/<str:name>/expire/", console.campaign_expire_view, name="campaign-expire"),
]
