from django.contrib import admin

import annotation.relevance.adjudication.admin  # noqa: F401  adjudication keeps its admin beside its models
import annotation.relevance.quality.admin  # noqa: F401  relevance quality control keeps its admin beside its models
from annotation import models
from core.admin import KeptByDatabaseAdmin


@admin.register(models.Collection)
class CollectionAdmin(admin.ModelAdmin):
    list_display = ["name", "created_at"]
    search_fields = ["name", "description"]


class PtkbInline(admin.TabularInline):
    model = models.PtkbStatement
    extra = 0


@admin.register(models.Topic)
class TopicAdmin(admin.ModelAdmin):
    list_display = ["number", "title", "collection"]
    list_filter = ["collection"]
    search_fields = ["number", "title"]
    inlines = [PtkbInline]


@admin.register(models.PtkbStatement)
class PtkbStatementAdmin(admin.ModelAdmin):
    list_display = ["topic", "statement_id", "text"]
    list_filter = ["topic__collection"]
    search_fields = ["text", "topic__number"]


@admin.register(models.Turn)
class TurnAdmin(admin.ModelAdmin):
    list_display = ["turn_id", "utterance", "topic", "collection"]
    list_filter = ["collection"]
    search_fields = ["turn_id", "utterance", "resolved_utterance"]
    raw_id_fields = ["topic"]


@admin.register(models.Passage)
class PassageAdmin(admin.ModelAdmin):
    list_display = ["passage_id", "title", "collection"]
    list_filter = ["collection"]
    search_fields = ["passage_id", "title", "text"]


@admin.register(models.PassageCount)
class PassageCountAdmin(KeptByDatabaseAdmin):
    """Read only: PostgreSQL writes the counts with the passages (annotation/collection/passage_count.py)."""

    list_display = ["collection", "passages"]
    list_filter = ["collection"]


@admin.register(models.Run)
class RunAdmin(admin.ModelAdmin):
    list_display = ["name", "group", "kind", "source_format", "collection"]
    list_filter = ["collection", "kind", "source_format"]
    search_fields = ["name", "group"]


@admin.register(models.Ranking)
class RankingAdmin(admin.ModelAdmin):
    list_display = ["run", "turn"]
    list_filter = ["run__collection", "run"]
    search_fields = ["turn__turn_id", "run__name"]
    raw_id_fields = ["run", "turn"]


class SentenceInline(admin.TabularInline):
    model = models.ResponseSentence
    extra = 0


@admin.register(models.Response)
class ResponseAdmin(admin.ModelAdmin):
    list_display = ["run", "turn", "rank"]
    list_filter = ["run__collection", "run"]
    search_fields = ["text", "turn__turn_id"]
    raw_id_fields = ["run", "turn"]
    inlines = [SentenceInline]


@admin.register(models.ResponseSentence)
class ResponseSentenceAdmin(admin.ModelAdmin):
    list_display = ["response", "index", "text"]
    list_filter = ["response__run__collection", "response__run"]
    search_fields = ["text"]
    raw_id_fields = ["response"]


@admin.register(models.Judge)
class JudgeAdmin(admin.ModelAdmin):
    list_display = ["name", "kind", "user", "model", "prompt_version"]
    list_filter = ["kind"]
    search_fields = ["name", "model", "prompt_version"]


class JudgmentAdmin(admin.ModelAdmin):
    list_filter = ["judge"]
    raw_id_fields = ["judge"]
    readonly_fields = ["created_at", "updated_at"]


@admin.register(models.RelevanceJudgment)
class RelevanceJudgmentAdmin(JudgmentAdmin):
    list_display = ["turn", "passage_id", "grade", "judge", "time_spent_ms", "updated_at"]
    list_filter = ["judge", "grade", "turn__collection"]
    search_fields = ["turn__turn_id", "passage_id"]
    raw_id_fields = ["judge", "turn"]


@admin.register(models.PtkbJudgment)
class PtkbJudgmentAdmin(JudgmentAdmin):
    list_display = ["turn", "statement", "relevant", "judge"]
    list_filter = ["judge", "relevant"]
    search_fields = ["turn__turn_id"]
    raw_id_fields = ["judge", "turn", "statement"]


@admin.register(models.Nugget)
class NuggetAdmin(JudgmentAdmin):
    list_display = ["turn", "key", "text", "passage_id", "start", "end", "judge"]
    search_fields = ["text", "turn__turn_id", "passage_id"]
    raw_id_fields = ["judge", "turn", "duplicate_of", "original"]


@admin.register(models.GoldResponse)
class GoldResponseAdmin(JudgmentAdmin):
    list_display = ["turn", "judge", "is_draft", "updated_at"]
    search_fields = ["text", "turn__turn_id"]
    raw_id_fields = ["judge", "turn", "nuggets"]


@admin.register(models.NtrJudgment)
class NtrJudgmentAdmin(JudgmentAdmin):
    list_display = ["response", "nugget", "matched", "judge"]
    list_filter = ["judge", "matched"]
    raw_id_fields = ["judge", "response", "nugget"]


@admin.register(models.NtnJudgment)
class NtnJudgmentAdmin(JudgmentAdmin):
    list_display = ["response_nugget", "gold_nugget", "entails", "score", "judge"]
    list_filter = ["judge", "entails"]
    raw_id_fields = ["judge", "response_nugget", "gold_nugget"]


@admin.register(models.SupportJudgment)
class SupportJudgmentAdmin(JudgmentAdmin):
    list_display = ["sentence", "citation_index", "passage_id", "label", "condition", "changed", "judge"]
    list_filter = ["judge", "label", "condition"]
    search_fields = ["passage_id", "sentence__text"]
    raw_id_fields = ["judge", "sentence"]


@admin.register(models.NuggetImportanceJudgment)
class NuggetImportanceJudgmentAdmin(JudgmentAdmin):
    list_display = ["nugget", "importance", "condition", "changed", "judge"]
    list_filter = ["judge", "importance", "condition"]
    raw_id_fields = ["judge", "nugget"]


@admin.register(models.NuggetAssignment)
class NuggetAssignmentAdmin(JudgmentAdmin):
    list_display = ["response", "nugget", "label", "condition", "changed", "judge"]
    list_filter = ["judge", "label", "condition"]
    raw_id_fields = ["judge", "response", "nugget"]


@admin.register(models.JudgeLabels)
class JudgeLabelsAdmin(KeptByDatabaseAdmin):
    """Read only: PostgreSQL writes these rows with the labels (annotation/labels/judge_labels.py); a row
    changed here would make a menu offer or hide a judge against its labels."""

    list_display = ["judge", "collection", "task", "condition", "label_count"]
    list_filter = ["collection", "task", "condition"]
    search_fields = ["judge__name"]


@admin.register(models.NuggetTurnCount)
class NuggetTurnCountAdmin(KeptByDatabaseAdmin):
    """Read only: PostgreSQL writes the counts with the nuggets (annotation/nuggets/counts.py)."""

    list_display = ["judge", "turn", "covered", "nuggets", "words", "unmarked", "derived", "derived_unmarked"]
    list_filter = ["collection"]
    search_fields = ["judge__name", "turn__turn_id"]


@admin.register(models.NuggetEdit)
class NuggetEditAdmin(admin.ModelAdmin):
    list_display = ["judge", "turn", "action", "user", "created_at"]
    list_filter = ["action", "judge"]
    raw_id_fields = ["judge", "turn"]
    readonly_fields = ["created_at"]


# --- Topic work: support and TREC RAG nugget work handed out per topic ---------------------------


@admin.register(models.TopicWork)
class TopicWorkAdmin(admin.ModelAdmin):
    list_display = [
        "topic",
        "user",
        "kind",
        "condition",
        "source_judge",
        "machine_judge",
        "max_citations",
        "completed_at",
    ]
    list_filter = ["kind", "condition", "topic__collection"]
    search_fields = ["topic__number", "user__username"]


# --- Relevance campaign: pools and work assignment ----------------------------------------------


class PoolEntryInline(admin.TabularInline):
    model = models.PoolEntry
    extra = 0
    raw_id_fields = ["turn", "best_run"]
    show_change_link = True


@admin.register(models.Pool)
class PoolAdmin(admin.ModelAdmin):
    list_display = ["name", "collection", "depth", "adaptive", "always_depth", "filter_judge", "created_at"]
    list_filter = ["collection", "adaptive"]
    search_fields = ["name"]
    raw_id_fields = ["filter_judge"]


@admin.register(models.PoolEntry)
class PoolEntryAdmin(admin.ModelAdmin):
    list_display = ["pool", "turn", "passage_id", "best_rank", "best_run", "via_filter"]
    list_filter = ["pool", "via_filter"]
    search_fields = ["passage_id", "turn__turn_id"]
    raw_id_fields = ["pool", "turn", "best_run"]


@admin.register(models.Assignment)
class AssignmentAdmin(admin.ModelAdmin):
    list_display = ["name", "pool", "unit_kind", "redundancy", "lease_minutes", "with_ptkb", "created_at"]
    list_filter = ["unit_kind", "with_ptkb"]
    search_fields = ["name"]
    filter_horizontal = ["assessors"]


@admin.register(models.WorkUnit)
class WorkUnitAdmin(admin.ModelAdmin):
    list_display = ["label", "assignment", "topic", "position"]
    list_filter = ["assignment"]
    search_fields = ["label"]
    raw_id_fields = ["assignment", "topic"]


@admin.register(models.WorkSlot)
class WorkSlotAdmin(admin.ModelAdmin):
    list_display = ["unit", "copy", "assessor", "leased_until", "started_at", "completed_at"]
    list_filter = ["assignment", "assessor"]
    search_fields = ["unit__label", "assessor__username"]
    raw_id_fields = ["unit", "assessor"]
    # Copies of the unit's, kept for claiming in order: set from the unit, never typed in; and the pair
    # counts work_close keeps for the queue page.
    readonly_fields = ["assignment", "position", "pairs_shown", "pairs_judged"]

    def save_model(self, request, obj, form, change):
        obj.assignment_id, obj.position = obj.unit.assignment_id, obj.unit.position
        super().save_model(request, obj, form, change)


@admin.register(models.NuggetSetTurn)
class NuggetSetTurnAdmin(admin.ModelAdmin):
    list_display = ["judge", "turn", "position"]
    list_filter = ["judge"]
    search_fields = ["turn__turn_id"]
    raw_id_fields = ["judge", "turn"]
