"""Forms of the people page: a new account, a log-in lock lifted."""

from __future__ import annotations

from django import forms
from django.core.exceptions import ValidationError
from django.core.validators import validate_ipv46_address


class PersonForm(forms.Form):
    username = forms.RegexField(regex=r"^[\w.@+-]+\Z", max_length=150)
    email = forms.EmailField(required=False)
    role = forms.ChoiceField(choices=[("assessor", "Assessor"), ("organiser", "Organiser")])
    password = forms.CharField(
        required=False,
        widget=forms.PasswordInput,
        min_length=8,
        help_text="Leave empty to invite: you get a one-time link on which they choose their password.",
    )


class LoginUnlockForm(forms.Form):
    kind = forms.ChoiceField(choices=[("name", "user name"), ("address", "address")])
    value = forms.CharField(max_length=255)

    def clean(self) -> dict[str, object]:
        data = super().clean() or {}
        if data.get("kind") == "address" and data.get("value"):
            try:
                validate_ipv46_address(data["value"])
            except ValidationError:
                self.add_error("value", "not an IP address")
        return data
