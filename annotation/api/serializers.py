from __future__ import annotations

from rest_framework import serializers

from annotation.models import (
    Collection,
    Condition,
    Judge,
    Passage,
    PtkbStatement,
    RelevanceGrade,
    RelevanceJudgment,
    Response,
    ResponseSentence,
    Run,
    SupportJudgment,
    SupportLabel,
    Topic,
    Turn,
)
from core.api_input import IntegerField


class CollectionOutput(serializers.ModelSerializer):
    class Meta:
        model = Collection
        fields = ["id", "name", "description", "created_at"]


class PtkbOutput(serializers.ModelSerializer):
    class Meta:
        model = PtkbStatement
        fields = ["statement_id", "text"]


class TopicOutput(serializers.ModelSerializer):
    ptkb = PtkbOutput(many=True, read_only=True)
    collection: serializers.SlugRelatedField[Collection] = serializers.SlugRelatedField(
        slug_field="name", read_only=True
    )

    class Meta:
        model = Topic
        fields = ["id", "collection", "number", "title", "ptkb"]


class TurnOutput(serializers.ModelSerializer):
    topic: serializers.SlugRelatedField[Topic] = serializers.SlugRelatedField(
        slug_field="number", read_only=True
    )

    class Meta:
        model = Turn
        fields = [
            "id",
            "turn_id",
            "topic",
            "position",
            "utterance",
            "resolved_utterance",
            "response",
            "response_provenance",
            "ptkb_provenance",
        ]


class PassageOutput(serializers.ModelSerializer):
    class Meta:
        model = Passage
        fields = ["id", "passage_id", "title", "text"]


class PassageQuery(serializers.Serializer):
    id = serializers.ListField(
        child=serializers.CharField(allow_blank=True),
        required=False,
        help_text="Only these passages (by passage id; the parameter may repeat).",
    )


class RunOutput(serializers.ModelSerializer):
    collection: serializers.SlugRelatedField[Collection] = serializers.SlugRelatedField(
        slug_field="name", read_only=True
    )

    class Meta:
        model = Run
        fields = ["id", "collection", "name", "group", "kind", "source_format", "created_at"]


class SentenceOutput(serializers.ModelSerializer):
    class Meta:
        model = ResponseSentence
        fields = ["index", "text", "citations"]


class ResponseOutput(serializers.ModelSerializer):
    run: serializers.SlugRelatedField[Run] = serializers.SlugRelatedField(slug_field="name", read_only=True)
    turn: serializers.SlugRelatedField[Turn] = serializers.SlugRelatedField(
        slug_field="turn_id", read_only=True
    )
    sentences = SentenceOutput(many=True, read_only=True)

    class Meta:
        model = Response
        fields = ["id", "run", "turn", "rank", "text", "references", "sentences"]


class JudgeOutput(serializers.ModelSerializer):
    class Meta:
        model = Judge
        fields = ["id", "name", "kind", "model", "prompt_version", "description"]


class RelevanceJudgmentOutput(serializers.ModelSerializer):
    judge: serializers.SlugRelatedField[Judge] = serializers.SlugRelatedField(
        slug_field="name", read_only=True
    )
    turn: serializers.SlugRelatedField[Turn] = serializers.SlugRelatedField(
        slug_field="turn_id", read_only=True
    )

    class Meta:
        model = RelevanceJudgment
        fields = ["id", "judge", "turn", "passage_id", "grade", "time_spent_ms", "created_at", "updated_at"]


class RelevanceJudgmentInput(serializers.Serializer):
    collection = serializers.CharField()
    judge = serializers.CharField(
        required=False,
        help_text="An existing machine or imported-file judge; the organiser's own by default.",
    )
    turn_id = serializers.CharField()
    passage_id = serializers.CharField(max_length=255)
    grade = serializers.ChoiceField(choices=RelevanceGrade.choices)
    time_spent_ms = IntegerField(
        column=RelevanceJudgment._meta.get_field("time_spent_ms"), required=False, allow_null=True
    )


class RelevanceJudgmentQuery(serializers.Serializer):
    judge = serializers.CharField(
        required=False, allow_blank=True, help_text="Organisers: only this judge's grades (by name)."
    )


# --- Support labels ----------------------------------------------------------------------


class SupportJudgmentOutput(serializers.ModelSerializer):
    """A support label named the way the label files name it: run, topic, 0-based sentence, passage."""

    judge: serializers.SlugRelatedField[Judge] = serializers.SlugRelatedField(
        slug_field="name", read_only=True
    )
    run_id = serializers.CharField(source="sentence.response.run.name", read_only=True)
    topic_id = serializers.CharField(source="sentence.response.turn.turn_id", read_only=True)
    sentence_index = serializers.IntegerField(source="sentence.index", read_only=True)
    # A plain string: the same FS/PS/NS choices as `label` would otherwise get a second enum name.
    shown_label = serializers.CharField(
        read_only=True, help_text="Post-editing: the machine label shown (FS, PS or NS); empty otherwise."
    )

    class Meta:
        model = SupportJudgment
        fields = [
            "id",
            "judge",
            "run_id",
            "topic_id",
            "sentence_index",
            "citation_index",
            "passage_id",
            "label",
            "condition",
            "shown_label",
            "changed",
            "time_spent_ms",
            "created_at",
            "updated_at",
        ]


class SupportJudgmentInput(serializers.Serializer):
    run_id = serializers.CharField()
    topic_id = serializers.CharField()
    sentence_index = IntegerField(column=ResponseSentence._meta.get_field("index"))
    citation_index = IntegerField(
        column=SupportJudgment._meta.get_field("citation_index"),
        required=False,
        help_text="Which citation of the sentence; 0 (the first) by default.",
    )
    passage_id = serializers.CharField(
        required=False, help_text="Instead of citation_index: the cited passage (its first position counts)."
    )
    # The serializer's metaclass moves declared fields off the class, so this never shadows Field.label;
    # the stubs cannot know that, and the field keeps the name the label files and clients use.
    label = serializers.ChoiceField(choices=SupportLabel.choices)  # type: ignore[assignment]
    time_spent_ms = IntegerField(
        column=SupportJudgment._meta.get_field("time_spent_ms"), required=False, allow_null=True
    )


class SupportJudgmentQuery(serializers.Serializer):
    judge = serializers.CharField(
        required=False, allow_blank=True, help_text="Organisers: only this judge's labels (by name)."
    )
    run = serializers.CharField(required=False, allow_blank=True, help_text="Only labels of this run.")
    topic = serializers.CharField(required=False, allow_blank=True, help_text="Only labels of this topic id.")
    condition = serializers.ChoiceField(choices=Condition.choices, required=False, allow_blank=True)


class TokenInput(serializers.Serializer):
    username = serializers.CharField(max_length=150)
    password = serializers.CharField(max_length=4096, trim_whitespace=False, style={"input_type": "password"})


class TokenOutput(serializers.Serializer):
    token = serializers.CharField(help_text="Send it as `Authorization: Token <token>`.")
