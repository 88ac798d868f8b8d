"""The admin of gold plans, gold pairs and their grades, and pauses (registered by annotation.admin)."""

from django.contrib import admin

from annotation.relevance.quality.models import AssessorPause, GoldGrade, GoldPair, GoldPlan


@admin.register(GoldPlan)
class GoldPlanAdmin(admin.ModelAdmin):
    list_display = ["assignment", "judge", "share", "created_at"]
    list_filter = ["judge", "assignment__pool__collection"]
    search_fields = ["assignment__name", "judge__name"]
    raw_id_fields = ["assignment", "judge"]


@admin.register(GoldPair)
class GoldPairAdmin(admin.ModelAdmin):
    list_display = ["unit", "turn", "passage_id", "order", "grade"]
    list_filter = ["unit__assignment", "grade"]
    search_fields = ["unit__assignment__name", "turn__turn_id", "passage_id"]
    raw_id_fields = ["unit", "turn"]


@admin.register(GoldGrade)
class GoldGradeAdmin(admin.ModelAdmin):
    list_display = ["judgment", "pair"]
    list_filter = ["judgment__judge", "pair__unit__assignment"]
    search_fields = ["pair__passage_id", "judgment__judge__name"]
    raw_id_fields = ["judgment", "pair"]


@admin.register(AssessorPause)
class AssessorPauseAdmin(admin.ModelAdmin):
    list_display = ["collection", "user", "paused_by", "reason", "created_at"]
    list_filter = ["collection"]
    search_fields = ["collection__name", "user__username"]
    raw_id_fields = ["collection", "user", "paused_by"]
