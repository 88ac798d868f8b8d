"""The admin of adjudications and their queues (registered by annotation.admin)."""

from django.contrib import admin

from annotation.relevance.adjudication.models import Adjudication, AdjudicationItem


@admin.register(Adjudication)
class AdjudicationAdmin(admin.ModelAdmin):
    list_display = ["judge", "collection", "adjudicator", "min_difference", "across_threshold", "created_at"]
    list_filter = ["collection"]
    search_fields = ["judge__name", "adjudicator__username"]
    raw_id_fields = ["collection", "judge", "adjudicator", "created_by"]
    filter_horizontal = ["sources"]


@admin.register(AdjudicationItem)
class AdjudicationItemAdmin(admin.ModelAdmin):
    list_display = ["adjudication", "turn", "passage_id", "graded_at"]
    list_filter = ["adjudication"]
    search_fields = ["passage_id", "turn__turn_id"]
    raw_id_fields = ["adjudication", "turn"]
