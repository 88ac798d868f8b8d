from django.urls import path

import core.converters  # noqa: F401  registers <text:...> and <textpath:...>
from core.lazy_views import lazy_views

console = lazy_views("crowd.views.console")
worker = lazy_views("crowd.views.worker")

app_name = "crowd"
urlpatterns: list = [
    path("", worker.crowd_home, name="home"),
    path("batches/<int:batch_id>/", worker.batch_take, name="batch-take"),
    path("take/<text:token>/", worker.link_take, name="link-take"),
    path("hit/<text:token>/", worker.hit_page, name="hit"),
    path("study/<slug:key>/", worker.study_take, name="study"),
    path("campaigns/", console.campaign_list, name="campaigns"),
    path("campaigns/new/", console.campaign_new, name="campaign-new"),
    # Names are slugs since composing checks them; `text` still reaches a campaign named before that check.
    path("campaigns/<text:name>/", console.campaign_detail, name="campaign"),
    path("campaigns/<text:name>/links/", console.campaign_links, name="campaign-links"),
    path("campaigns/<text:name>/aggregate/", console.campaign_aggregate, name="campaign-aggregate"),
    path("campaigns/<text:name>/studies/", console.campaign_study, name="campaign-study"),
    path(
        "campaigns/<text:name>/qualification/",
        console.campaign_qualification_view,
        name="campaign-qualification",
    ),
    path("campaigns/<text:name>/publish/", console.campaign_publish_view, name="campaign-publish"),
    path("campaigns/<text:name>/sync/", console.campaign_sync_view, name="campaign-sync"),
    path("campaigns/<text:name>/review/", console.campaign_review_view, name="campaign-review"),
    path("campaigns/<text:name>/bonus/", console.campaign_bonus_view, name="campaign-bonus"),
    path("campaigns/<text:name>/extend/", console.campaign_extend_view, name="campaign-extend"),
    path("campaigns/<text:name>/expire/", console.campaign_expire_view, name="campaign-expire"),
]
