"""Form fields that refuse, with the form's own error, what Django's would send to the database.

Django's ModelMultipleChoiceField looks the chosen primary keys up with one `pk__in` query. Django keeps an
out-of-range integer out of an `exact` lookup, but not out of `in`: a posted `999999999999999999999999999999`
reached the database driver, which cannot bind it (OverflowError), and every form with such a field answered 500.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from django import forms
from django.core.exceptions import ValidationError
from django.db import connections, models, router

_M = TypeVar("_M", bound=models.Model)

# Django's form fields are generic in django-stubs only: subscripted at run time they raise TypeError.
if TYPE_CHECKING:
    _DjangoField = forms.ModelMultipleChoiceField
else:

    class _DjangoField(forms.ModelMultipleChoiceField, Generic[_M]):
        pass


class ModelMultipleChoiceField(_DjangoField[_M]):
    """Django's field, with keys outside the key column's integer range refused as invalid values."""

    def clean(self, value: Any) -> Any:
        if isinstance(value, list | tuple) and self.queryset is not None:
            self._refuse_out_of_range(self.queryset.model, value)
        return super().clean(value)

    def _refuse_out_of_range(self, model: type[models.Model], value: Iterable[Any]) -> None:
        key = model._meta.pk if self.to_field_name is None else model._meta.get_field(self.to_field_name)
        if not isinstance(key, models.IntegerField):
            return
        low, high = connections[router.db_for_read(model)].ops.integer_field_range(key.get_internal_type())
        for item in value:
            try:
                number = int(item)
            except (TypeError, ValueError):
                continue  # not a number at all: Django's own check refuses it
            if (low is not None and number < low) or (high is not None and number > high):
                raise ValidationError(
                    self.error_messages["invalid_pk_value"], code="invalid_pk_value", params={"pk": item}
                )
