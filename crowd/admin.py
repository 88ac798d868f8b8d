from django.contrib import admin

from core.admin import KeptByDatabaseAdmin
from crowd import models


@admin.register(models.CrowdCampaign)
class CrowdCampaignAdmin(admin.ModelAdmin):
    list_display = ["name", "provider", "collection", "label_judge", "batch_size", "assignments_per_batch"]
    list_filter = ["provider", "collection"]
    filter_horizontal = ["turns", "runs"]


@admin.register(models.TestQuestion)
class TestQuestionAdmin(admin.ModelAdmin):
    list_display = ["id", "nugget_text", "answer", "support", "source", "collection"]
    list_filter = ["collection", "answer", "support", "source"]
    search_fields = ["nugget_text", "response_text"]
    raw_id_fields = ["origin"]


class BatchItemInline(admin.TabularInline):
    model = models.BatchItem
    extra = 0
    raw_id_fields = ["response", "nugget", "test_question"]


@admin.register(models.CrowdBatch)
class CrowdBatchAdmin(admin.ModelAdmin):
    list_display = ["campaign", "index", "status", "hit_id", "max_assignments"]
    list_filter = ["campaign", "status"]
    inlines = [BatchItemInline]


@admin.register(models.CrowdWorker)
class CrowdWorkerAdmin(admin.ModelAdmin):
    list_display = ["worker_id", "user", "blocked"]
    search_fields = ["worker_id"]


class CrowdAnswerInline(admin.TabularInline):
    model = models.CrowdAnswer
    extra = 0
    raw_id_fields = ["item"]


@admin.register(models.CrowdAssignment)
class CrowdAssignmentAdmin(admin.ModelAdmin):
    list_display = ["assignment_id", "batch", "worker", "status", "passed_tests", "submit_time"]
    list_filter = ["status", "passed_tests", "batch__campaign"]
    search_fields = ["assignment_id", "worker__worker_id"]
    inlines = [CrowdAnswerInline]


@admin.register(models.BatchItem)
class BatchItemAdmin(admin.ModelAdmin):
    list_display = ["batch", "position", "response", "nugget", "test_question"]
    list_filter = ["batch__campaign"]
    search_fields = ["nugget__text", "response__turn__turn_id"]
    raw_id_fields = ["batch", "response", "nugget", "test_question"]


@admin.register(models.CrowdAnswer)
class CrowdAnswerAdmin(admin.ModelAdmin):
    list_display = ["assignment", "item", "matched", "support", "time_spent_ms"]
    list_filter = ["matched", "assignment__batch__campaign"]
    search_fields = ["assignment__worker__worker_id"]
    raw_id_fields = ["assignment", "item"]


@admin.register(models.CrowdStudy)
class CrowdStudyAdmin(admin.ModelAdmin):
    list_display = ["key", "campaign", "panel", "external_study_id"]
    list_filter = ["panel", "campaign"]
    search_fields = ["key", "external_study_id"]


@admin.register(models.CrowdFitJob)
class CrowdFitJobAdmin(admin.ModelAdmin):
    list_display = ["campaign", "method", "min_votes", "status", "created_at", "finished_at"]
    list_filter = ["status", "method"]
    raw_id_fields = ["campaign"]
    readonly_fields = ["created_at", "started_at", "finished_at"]


@admin.register(models.CrowdQualification)
class CrowdQualificationAdmin(admin.ModelAdmin):
    list_display = ["campaign", "qualification_type_id", "status", "threshold", "questions", "created_at"]
    raw_id_fields = ["campaign"]
    # The test is what MTurk has: changing the copy here would not change what workers take.
    readonly_fields = [
        "qualification_type_id",
        "test_xml",
        "answer_key_xml",
        "test_duration_seconds",
        "created_at",
    ]


# The campaign page's figures, written by PostgreSQL with the answers (crowd/figures/triggers.py).


@admin.register(models.CampaignFigures)
class CampaignFiguresAdmin(KeptByDatabaseAdmin):
    list_display = ["campaign", "batches", "places", "answered", "paid", "bonus"]


@admin.register(models.BatchFigures)
class BatchFiguresAdmin(KeptByDatabaseAdmin):
    list_display = ["batch", "campaign_id", "max_assignments", "submitted", "passed", "accepted", "paid"]


@admin.register(models.WorkerFigures)
class WorkerFiguresAdmin(KeptByDatabaseAdmin):
    list_display = ["worker", "campaign_id", "assignments", "answers", "tests", "tests_right"]
    search_fields = ["worker__worker_id"]


@admin.register(models.ItemVotes)
class ItemVotesAdmin(KeptByDatabaseAdmin):
    list_display = ["item", "campaign_id", "v0", "v1", "v2"]


@admin.register(models.VoteProfile)
class VoteProfileAdmin(KeptByDatabaseAdmin):
    list_display = ["campaign_id", "v0", "v1", "v2", "units"]
