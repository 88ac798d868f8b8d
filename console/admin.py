from django.contrib import admin

from console.models import ImportJob


@admin.register(ImportJob)
class ImportJobAdmin(admin.ModelAdmin):
    list_display = ["id", "collection", "kind", "file_name", "status", "created_at"]
    list_filter = ["collection", "kind", "status"]
    search_fields = ["file_name"]
    readonly_fields = ["created_at"]
