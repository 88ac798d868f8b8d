from django.contrib import admin

from judging import models

# --- LLM judge jobs -------------------------------------------------------------


@admin.register(models.JudgeJob)
class JudgeJobAdmin(admin.ModelAdmin):
    list_display = [
        "id",
        "task",
        "judge",
        "model",
        "status",
        "units_done",
        "units_total",
        "calls_made",
        "cost_usd",
    ]
    list_filter = ["task", "status", "collection"]
    search_fields = ["judge__name", "model"]
    readonly_fields = ["created_at", "updated_at", "started_at", "finished_at"]


@admin.register(models.LlmCall)
class LlmCallAdmin(admin.ModelAdmin):
    list_display = [
        "key",
        "model",
        "prompt_version",
        "input_tokens",
        "output_tokens",
        "cost_usd",
        "created_at",
    ]
    list_filter = ["model", "prompt_version"]
    search_fields = ["key", "prompt", "answer"]


@admin.register(models.LlmFailure)
class LlmFailureAdmin(admin.ModelAdmin):
    list_display = ["job", "unit", "reason"]
    list_filter = ["job"]


@admin.register(models.UnmatchedSpan)
class UnmatchedSpanAdmin(admin.ModelAdmin):
    list_display = ["turn", "passage_id", "judge", "text"]
    list_filter = ["judge"]


@admin.register(models.HumanSample)
class HumanSampleAdmin(admin.ModelAdmin):
    list_display = ["name", "collection", "task", "unit", "strategy", "budget", "population", "machine_judge"]
    list_filter = ["collection", "task", "strategy"]
    search_fields = ["name"]


@admin.register(models.SampleUnit)
class SampleUnitAdmin(admin.ModelAdmin):
    list_display = ["sample", "key", "inclusion_probability"]
    list_filter = ["sample"]
    search_fields = ["key"]


@admin.register(models.BudgetSimulation)
class BudgetSimulationAdmin(admin.ModelAdmin):
    list_display = ["id", "collection", "status", "created_by", "created_at", "finished_at"]
    list_filter = ["status", "collection"]
    raw_id_fields = ["collection", "created_by"]
    readonly_fields = ["params_key", "fingerprint", "task_id", "created_at", "started_at", "finished_at"]


@admin.register(models.ReportResult)
class ReportResultAdmin(admin.ModelAdmin):
    """Stored reports, to look at and delete: a row is the figures of one fingerprint, written only by
    its task, so nothing here is edited by hand."""

    list_display = ["id", "kind", "collection", "status", "created_at", "finished_at"]
    list_filter = ["kind", "status", "collection"]
    raw_id_fields = ["collection"]
    readonly_fields = [
        "kind",
        "params",
        "params_key",
        "key",
        "compute",
        "progress_done",
        "progress_total",
        "progress_word",
        "result",
        "error",
        "status",
        "task_id",
        "created_at",
        "started_at",
        "finished_at",
        "updated_at",
    ]
