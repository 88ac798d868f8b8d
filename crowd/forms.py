"""Forms of the organiser's crowd pages: compose a campaign, make a study address, and the campaign's
actions (qualification test, publish, sync, review, bonus, extend, expire, aggregate). Forms check input; the services in
crowd/campaigns/services.py, crowd/providers/mturk/services.py and crowd/providers/panels/services.py do the work."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from django import forms
from django.core.validators import validate_slug

from annotation.collection.forms import TurnIdsField
from annotation.judge_menus import judges_with_labels
from annotation.models import Collection, Judge, Run, Turn
from annotation.selectors import UnknownTurns, turns_named
from annotation.typed import choice_field
from core.form_fields import ModelMultipleChoiceField
from crowd.campaigns.services import CAMPAIGN_NAME_MAX
from crowd.models import CrowdCampaign, CrowdStudy


class CollectionChoiceForm(forms.Form):
    collection = forms.ModelChoiceField(
        queryset=Collection.objects.order_by("name"), to_field_name="name", empty_label=None
    )


class CampaignComposeForm(forms.Form):
    name = forms.CharField(
        max_length=CAMPAIGN_NAME_MAX,
        validators=[validate_slug],
        help_text="Letters, digits, '-' and '_' (it is part of the campaign's address), e.g. demo-crowd.",
    )
    provider = forms.ChoiceField(
        choices=CrowdCampaign.Provider.choices, initial=CrowdCampaign.Provider.PLATFORM
    )
    kind = forms.ChoiceField(
        choices=CrowdCampaign.Kind.choices,
        initial=CrowdCampaign.Kind.NTR,
        required=False,
        help_text="Yes/no matching (CONE-RAG), or support / partial / not support (TREC RAG nugget assignment).",
    )
    nugget_judge = forms.ModelChoiceField(
        queryset=Judge.objects.none(), to_field_name="name", help_text="Whose gold nuggets are matched."
    )
    turns = TurnIdsField()
    runs = ModelMultipleChoiceField(
        queryset=Run.objects.none(), required=False, help_text="None chosen: every run of the collection."
    )
    # The campaign's seed column is a 32-bit integer: a larger seed failed in the database, a 500.
    seed = forms.IntegerField(
        initial=1,
        min_value=-(2**31),
        max_value=2**31 - 1,
        help_text="The same seed and data give the same batches.",
    )
    batch_size = forms.IntegerField(min_value=1, max_value=100, initial=10, help_text="Pairs per batch.")
    tests_per_batch = forms.IntegerField(min_value=0, max_value=10, initial=1)
    assignments = forms.IntegerField(min_value=1, max_value=50, initial=3, help_text="Workers per batch.")
    generate_tests = forms.IntegerField(
        min_value=0,
        max_value=200,
        initial=4,
        help_text="Test questions to generate from the nuggets (needs nuggets of two conversations).",
    )
    reward = forms.DecimalField(
        min_value=Decimal("0.00"),
        max_digits=6,
        decimal_places=2,
        initial=Decimal("0.50"),
        help_text="USD per batch.",
    )
    keep_duplicates = forms.BooleanField(required=False, help_text="Also match nuggets marked duplicate.")

    def __init__(self, *args: Any, collection: Collection, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.collection = collection
        # Judges with gold nuggets here: the only ones a campaign can match against.
        choice_field(self, "nugget_judge").queryset = judges_with_labels(
            collection=collection, task="nuggets"
        )
        # Without each run's validation report, which grows with the topics.
        choice_field(self, "runs").queryset = collection.runs.order_by("name").defer("report")

    def clean_turns(self) -> list[Turn] | None:
        turn_ids = self.cleaned_data["turns"]
        try:
            return None if turn_ids is None else turns_named(collection=self.collection, turn_ids=turn_ids)
        except UnknownTurns as exc:
            raise forms.ValidationError(str(exc)) from exc

    def clean_name(self) -> str:
        name: str = self.cleaned_data["name"]
        if CrowdCampaign.objects.filter(name=name).exists():
            raise forms.ValidationError(f"a campaign named {name} exists")
        return name

    def compose_arguments(self) -> dict[str, Any]:
        data = self.cleaned_data
        return {
            "collection": self.collection,
            "name": data["name"],
            "nugget_judge": data["nugget_judge"],
            "turns": data["turns"] or self.collection.turns.all(),
            "runs": data["runs"] or self.collection.runs.all(),
            "generate_tests": data["generate_tests"],
            "provider": data["provider"],
            "kind": data["kind"] or CrowdCampaign.Kind.NTR,
            "seed": data["seed"],
            "batch_size": data["batch_size"],
            "tests_per_batch": data["tests_per_batch"],
            "assignments_per_batch": data["assignments"],
            "skip_duplicates": not data["keep_duplicates"],
            "reward": data["reward"],
        }


class TickBox(forms.CheckboxInput):
    """A checkbox that counts as ticked only for what a tick sends (`on`, or `1`, `true`, `yes` from a
    script). Django's reads any other non-empty value, `0`, `off` and `no` among them, as ticked."""

    TICKED = frozenset({"on", "1", "true", "yes"})

    def value_from_datadict(self, data: Any, files: Any, name: str) -> bool:
        value = data.get(name)
        return value is True or (isinstance(value, str) and value.strip().lower() in self.TICKED)


class ConfirmForm(forms.Form):
    """An action that spends money or cannot be undone: the organiser ticks the box to mean it."""

    confirm = forms.BooleanField(required=True, label="I mean it", widget=TickBox)


class AggregateForm(forms.Form):
    min_votes = forms.IntegerField(
        min_value=1,
        max_value=50,
        initial=2,
        help_text="Counted votes a pair needs; fewer leaves it unresolved.",
    )
    # Nugget-support campaigns only; yes/no campaigns are aggregated by majority vote.
    method = forms.ChoiceField(
        choices=[("majority", "majority vote"), ("ds", "Dawid-Skene"), ("mace", "MACE"), ("glad", "GLAD")],
        initial="majority",
        required=False,
    )


class ReviewForm(ConfirmForm):
    reject_failed = forms.BooleanField(
        required=False,
        widget=TickBox,
        help_text="Reject assignments that failed a test question (the HIT says so).",
    )
    block_failed = forms.BooleanField(
        required=False, widget=TickBox, help_text="Keep workers who failed out of this campaign's later HITs."
    )


class BonusForm(ConfirmForm):
    amount = forms.DecimalField(
        min_value=Decimal("0.01"), max_digits=6, decimal_places=2, help_text="USD each."
    )
    reason = forms.CharField(max_length=500, help_text="MTurk shows workers the reason.")


class QualificationForm(forms.Form):
    threshold = forms.IntegerField(
        min_value=0,
        max_value=100,
        initial=80,
        help_text="Least share of the test right x 100 a worker needs to take the HITs.",
    )
    questions = forms.IntegerField(
        min_value=1, max_value=50, initial=5, help_text="Test questions the qualification test asks."
    )


class ExtendForm(ConfirmForm):
    min_votes = forms.IntegerField(min_value=1, max_value=50, initial=2)
    extra = forms.IntegerField(
        min_value=1,
        max_value=20,
        initial=2,
        help_text="More assignments for each batch with unresolved pairs.",
    )


class StudyForm(forms.ModelForm):
    completion_url = forms.URLField(
        required=False,
        max_length=500,
        assume_scheme="https",
        help_text="Where participants go when done, e.g. https://app.prolific.com/submissions/complete?cc=C0DE.",
    )

    class Meta:
        model = CrowdStudy
        fields = [
            "panel",
            "worker_param",
            "study_param",
            "session_param",
            "external_study_id",
            "completion_code",
            "completion_url",
        ]
        labels = {
            "worker_param": "Participant id parameter",
            "study_param": "Study id parameter",
            "session_param": "Session id parameter",
            "external_study_id": "The panel's study id",
        }

    def clean(self) -> dict[str, object]:
        data = super().clean() or {}
        if not data.get("completion_code") and not data.get("completion_url"):
            raise forms.ValidationError("Give a completion code, a completion URL, or both.")
        return data
