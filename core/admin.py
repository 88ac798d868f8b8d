"""What the apps' admin sites share."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.http import HttpRequest


class KeptByDatabaseAdmin(admin.ModelAdmin[Any]):
    """Read only: rows PostgreSQL's triggers write with the data they count (core/triggers.py lists them).
    A row added, changed or deleted by hand would make a page say other than what the data says."""

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False
