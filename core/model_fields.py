"""Model fields of Assay's own."""

from __future__ import annotations

from typing import Any

from django.db import models

from core.ordering import natural_order_bytes


class NaturalOrderField(models.BinaryField[bytes, bytes]):
    """The natural order of another field of the row (`core.ordering.natural_order_bytes` of it), kept
    beside it so that PostgreSQL sorts rows as people read their ids and an index reads a page of them.

    Filled from the source field whenever the ORM writes the row (create, save, bulk_create, the admin),
    as `auto_now` fills a time: no writer has to remember it. Writes that bypass the fields (`update()`,
    `bulk_update`, `save(update_fields=...)` without this field, raw SQL) must not change the source field.
    """

    def __init__(self, *args: Any, source: str, **kwargs: Any) -> None:
        self.source = source
        super().__init__(*args, **kwargs)

    def deconstruct(self) -> Any:
        name, path, args, kwargs = super().deconstruct()
        kwargs["source"] = self.source
        return name, path, args, kwargs

    def pre_save(self, model_instance: models.Model, add: bool) -> bytes:
        value = natural_order_bytes(getattr(model_instance, self.source))
        setattr(model_instance, self.attname, value)
        return value
