"""The one module that talks to Amazon Mechanical Turk (the only importer of boto3).

The sandbox is the default; the live marketplace needs an explicit `live=True` (or MTURK_LIVE). Setting
MTURK_ENDPOINT_URL points the client at any MTurk-compatible endpoint, such as devtools/mturk_server.py.
Throttling and transient errors (MTurk's `ServiceFault`, any 5xx, connection failures) are retried here
with exponential backoff rather than by botocore, so the schedule is one place and tests can observe it.
"""

from __future__ import annotations

import re
import time
import xml.etree.ElementTree as ET
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from urllib.parse import urlsplit

from django.conf import settings

SANDBOX_ENDPOINT = "https://mturk-requester-sandbox.us-east-1.amazonaws.com"
LIVE_ENDPOINT = "https://mturk-requester.us-east-1.amazonaws.com"
SANDBOX_SUBMIT = "https://workersandbox.mturk.com"
LIVE_SUBMIT = "https://www.mturk.com"

# The study's qualification requirements (iKAT 2024 crowd study).
QUAL_APPROVAL_RATE = "000000000000000000L0"
QUAL_APPROVED_HITS = "00000000000000000040"
QUAL_LOCALE = "00000000000000000071"

DEFAULT_QUALIFICATIONS: list[dict[str, Any]] = [
    {"QualificationTypeId": QUAL_APPROVAL_RATE, "Comparator": "GreaterThan", "IntegerValues": [98]},
    {"QualificationTypeId": QUAL_APPROVED_HITS, "Comparator": "GreaterThan", "IntegerValues": [5000]},
    {
        "QualificationTypeId": QUAL_LOCALE,
        "Comparator": "In",
        "LocaleValues": [{"Country": "US"}, {"Country": "GB"}, {"Country": "AU"}],
    },
]

RETRIED_CODES = {"ServiceFault", "ServiceUnavailable", "ThrottlingException", "Throttling"}
# How MTurk words a refused repeat of a request whose UniqueRequestToken it has already served.
USED_TOKEN = re.compile(r"UniqueRequestToken|idempotency token|already been processed", re.I)
# The assignmentId MTurk passes to an ExternalQuestion page while a worker only previews the HIT.
NOT_AVAILABLE = "ASSIGNMENT_ID_NOT_AVAILABLE"


class MTurkError(Exception):
    """A request MTurk refused or that kept failing after retries."""

    def __init__(self, message: str, code: str = "") -> None:
        super().__init__(message)
        self.code = code


class MTurkNotFound(MTurkError):
    """MTurk does not know the HIT or assignment (deleted, or disposed of after its retention period)."""


class MTurkAnswerError(MTurkError):
    """An assignment's answer document that is not QuestionFormAnswers XML."""


@dataclass(frozen=True)
class AssignmentInfo:
    assignment_id: str
    worker_id: str
    hit_id: str
    status: str
    accept_time: datetime | None
    submit_time: datetime | None
    answer_xml: str

    def answers(self) -> dict[str, str]:
        return parse_answer_xml(self.answer_xml)


@dataclass(frozen=True)
class QualificationTypeInfo:
    qualification_type_id: str
    name: str
    status: str
    has_test: bool

    @classmethod
    def from_response(cls, response: dict[str, Any]) -> QualificationTypeInfo:
        qual = response["QualificationType"]
        return cls(
            qualification_type_id=qual["QualificationTypeId"],
            name=qual.get("Name", ""),
            status=qual.get("QualificationTypeStatus", ""),
            has_test=bool(qual.get("Test")),
        )


def external_question_xml(url: str, frame_height: int = 0) -> str:
    """The ExternalQuestion document that makes MTurk show our worker page in a frame."""
    from xml.sax.saxutils import escape

    return (
        '<ExternalQuestion xmlns="http://mechanicalturk.amazonaws.com/'
        'AWSMechanicalTurkDataSchemas/2006-07-14/ExternalQuestion.xsd">'
        f"<ExternalURL>{escape(url)}</ExternalURL><FrameHeight>{frame_height}</FrameHeight>"
        "</ExternalQuestion>"
    )


def parse_answer_xml(xml: str) -> dict[str, str]:
    """MTurk's QuestionFormAnswers document as {QuestionIdentifier: FreeText}."""
    if not xml:
        return {}
    try:
        root = ET.fromstring(xml.encode())
    except ET.ParseError as exc:
        raise MTurkAnswerError(f"answer XML does not parse: {exc}") from None
    fields: dict[str, str] = {}
    for answer in root.iter():
        if answer.tag.rsplit("}", 1)[-1] != "Answer":
            continue
        ident = text = None
        for child in answer:
            tag = child.tag.rsplit("}", 1)[-1]
            if tag == "QuestionIdentifier":
                ident = (child.text or "").strip()
            elif tag == "FreeText":
                text = child.text or ""
        if ident:
            fields[ident] = text or ""
    return fields


def endpoint_for(*, live: bool, endpoint_url: str | None = None) -> str:
    if endpoint_url:
        return endpoint_url
    return LIVE_ENDPOINT if live else SANDBOX_ENDPOINT


def submit_hosts() -> list[str]:
    """Origins allowed to frame the worker page and to receive `externalSubmit`."""
    origins = [SANDBOX_SUBMIT, LIVE_SUBMIT]
    endpoint = getattr(settings, "MTURK_ENDPOINT_URL", "") or ""
    if endpoint:
        parts = urlsplit(endpoint)
        origins.append(f"{parts.scheme}://{parts.netloc}")
    return origins


class MTurkClient:
    """Typed wrapper over boto3's `mturk` client, created lazily."""

    def __init__(
        self,
        *,
        live: bool | None = None,
        endpoint_url: str | None = None,
        region: str | None = None,
        max_attempts: int = 6,
        backoff_base: float = 0.5,
        boto_client: Any = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.live = bool(getattr(settings, "MTURK_LIVE", False)) if live is None else live
        configured = getattr(settings, "MTURK_ENDPOINT_URL", "") or None
        self.endpoint_url = endpoint_for(live=self.live, endpoint_url=endpoint_url or configured)
        self.region = region or getattr(settings, "MTURK_REGION", "us-east-1")
        self.max_attempts = max_attempts
        self.backoff_base = backoff_base
        self._client = boto_client
        self._sleep = sleep

    @property
    def is_local(self) -> bool:
        host = urlsplit(self.endpoint_url).hostname or ""
        return host in {"127.0.0.1", "localhost", "::1"}

    @property
    def submit_origin(self) -> str:
        if self.is_local:
            parts = urlsplit(self.endpoint_url)
            return f"{parts.scheme}://{parts.netloc}"
        return LIVE_SUBMIT if self.live else SANDBOX_SUBMIT

    @property
    def boto(self) -> Any:
        if self._client is None:
            # boto3 is imported by the first client that talks to MTurk, not by every process that loads
            # the crowd app (a tenth of a second at start-up for each command and worker).
            import boto3
            from botocore.config import Config

            kwargs: dict[str, Any] = {
                "region_name": self.region,
                "endpoint_url": self.endpoint_url,
                # botocore's own retries are off: _call retries, and counts ServiceFault as transient too.
                "config": Config(retries={"total_max_attempts": 1, "mode": "standard"}, connect_timeout=10),
            }
            if self.is_local:
                # The loopback fake checks request shapes, not signatures.
                kwargs.update(aws_access_key_id="local", aws_secret_access_key="local")
            self._client = boto3.client("mturk", **kwargs)
        return self._client

    def _call(self, operation: str, **params: Any) -> dict[str, Any]:
        # botocore's errors, imported here with boto3 (above) rather than at start-up.
        from botocore.exceptions import (
            BotoCoreError,
            ClientError,
            ConnectionClosedError,
            EndpointConnectionError,
            ReadTimeoutError,
        )

        for attempt in range(1, self.max_attempts + 1):
            try:
                return getattr(self.boto, operation)(**params)
            except ClientError as exc:
                error = exc.response.get("Error", {})
                code = error.get("Code", "")
                status = exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode", 0)
                if (code in RETRIED_CODES or status >= 500) and attempt < self.max_attempts:
                    self._sleep(self.backoff_base * 2 ** (attempt - 1))
                    continue
                message = f"{operation}: {code}: {error.get('Message', '')}"
                if code == "RequestError" and "does not exist" in error.get("Message", ""):
                    raise MTurkNotFound(message, code) from exc
                raise MTurkError(message, code) from exc
            except (EndpointConnectionError, ConnectionClosedError, ReadTimeoutError) as exc:
                if attempt < self.max_attempts:
                    self._sleep(self.backoff_base * 2 ** (attempt - 1))
                    continue
                raise MTurkError(f"{operation}: {exc}") from exc
            except BotoCoreError as exc:
                raise MTurkError(f"{operation}: {exc}") from exc
        raise AssertionError("unreachable")

    # --- operations -------------------------------------------------------------------------------

    def account_balance(self) -> str:
        return self._call("get_account_balance").get("AvailableBalance", "")

    def hit_type_create(
        self,
        *,
        title: str,
        description: str,
        reward: str,
        duration_seconds: int,
        auto_approval_delay_seconds: int,
        keywords: str = "",
        qualification_requirements: list[dict[str, Any]] | None = None,
    ) -> str:
        params: dict[str, Any] = {
            "Title": title,
            "Description": description,
            "Reward": reward,
            "AssignmentDurationInSeconds": duration_seconds,
            "AutoApprovalDelayInSeconds": auto_approval_delay_seconds,
            "QualificationRequirements": (
                DEFAULT_QUALIFICATIONS if qualification_requirements is None else qualification_requirements
            ),
        }
        if keywords:
            params["Keywords"] = keywords
        return self._call("create_hit_type", **params)["HITTypeId"]

    def hit_create(
        self,
        *,
        hit_type_id: str,
        question_url: str,
        max_assignments: int,
        lifetime_seconds: int,
        annotation: str = "",
        unique_token: str = "",
    ) -> str:
        params: dict[str, Any] = {
            "HITTypeId": hit_type_id,
            "MaxAssignments": max_assignments,
            "LifetimeInSeconds": lifetime_seconds,
            "Question": external_question_xml(question_url),
        }
        if annotation:
            params["RequesterAnnotation"] = annotation
        if unique_token:
            # MTurk refuses a second HIT with the same token, so a retried publish cannot double-post.
            params["UniqueRequestToken"] = unique_token
        try:
            return self._call("create_hit_with_hit_type", **params)["HIT"]["HITId"]
        except MTurkError as exc:
            if not unique_token or not USED_TOKEN.search(str(exc)):
                raise
            # The HIT exists: an earlier attempt was created but its answer was lost on the way back
            # (a dropped connection, a timeout). MTurk never answers the token again, so the HIT is
            # found by what this request gave it: its annotation and HIT type.
            found = self._hit_created_before(str(exc), hit_type_id=hit_type_id, annotation=annotation)
            if found is None:
                raise MTurkError(
                    f"{exc}; no HIT of type {hit_type_id} with annotation {annotation!r} was found to "
                    "recover it",
                    exc.code,
                ) from exc
            return found

    def _hit_created_before(self, message: str, *, hit_type_id: str, annotation: str) -> str | None:
        if not annotation:
            return None
        named = re.search(r"HIT with ID \"?([A-Z0-9]+)", message)
        if named:
            try:
                hit = self._call("get_hit", HITId=named.group(1))["HIT"]
            except MTurkNotFound:
                hit = {}
            if hit.get("RequesterAnnotation") == annotation and hit.get("HITTypeId") == hit_type_id:
                return str(hit["HITId"])
        for hit in self.hits_list():
            if hit.get("RequesterAnnotation") == annotation and hit.get("HITTypeId") == hit_type_id:
                return str(hit["HITId"])
        return None

    def hits_list(self, *, page_size: int = 100) -> Iterator[dict[str, Any]]:
        """Every HIT of the requester account (ListHITs, paginated), newest pages as MTurk orders them."""
        token: str | None = None
        while True:
            params: dict[str, Any] = {"MaxResults": page_size}
            if token:
                params["NextToken"] = token
            page = self._call("list_hits", **params)
            yield from page.get("HITs", [])
            token = page.get("NextToken")
            if not token:
                return

    def assignments_list(self, *, hit_id: str, page_size: int = 100) -> Iterator[AssignmentInfo]:
        token: str | None = None
        while True:
            params: dict[str, Any] = {"HITId": hit_id, "MaxResults": page_size}
            if token:
                params["NextToken"] = token
            page = self._call("list_assignments_for_hit", **params)
            for a in page.get("Assignments", []):
                yield AssignmentInfo(
                    assignment_id=a["AssignmentId"],
                    worker_id=a["WorkerId"],
                    hit_id=a["HITId"],
                    status=a.get("AssignmentStatus", ""),
                    accept_time=a.get("AcceptTime"),
                    submit_time=a.get("SubmitTime"),
                    answer_xml=a.get("Answer", ""),
                )
            token = page.get("NextToken")
            if not token:
                return

    def assignment_approve(self, *, assignment_id: str, feedback: str = "") -> None:
        params: dict[str, Any] = {"AssignmentId": assignment_id}
        if feedback:
            params["RequesterFeedback"] = feedback
        self._call("approve_assignment", **params)

    def assignment_reject(self, *, assignment_id: str, feedback: str) -> None:
        if not feedback:
            raise MTurkError("MTurk requires feedback to reject an assignment")
        self._call("reject_assignment", AssignmentId=assignment_id, RequesterFeedback=feedback)

    def qualification_type_create(self, *, name: str, description: str) -> str:
        response = self._call(
            "create_qualification_type", Name=name, Description=description, QualificationTypeStatus="Active"
        )
        return response["QualificationType"]["QualificationTypeId"]

    def qualification_test_create(
        self,
        *,
        name: str,
        description: str,
        test_xml: str,
        answer_key_xml: str,
        test_duration_seconds: int,
        keywords: str = "",
        retry_delay_seconds: int | None = None,
    ) -> QualificationTypeInfo:
        """A qualification type workers earn by taking a test that MTurk grades with the answer key."""
        params: dict[str, Any] = {
            "Name": name,
            "Description": description,
            "QualificationTypeStatus": "Active",
            "Test": test_xml,
            "AnswerKey": answer_key_xml,
            "TestDurationInSeconds": test_duration_seconds,
        }
        if keywords:
            params["Keywords"] = keywords
        if retry_delay_seconds is not None:
            params["RetryDelayInSeconds"] = retry_delay_seconds
        return QualificationTypeInfo.from_response(self._call("create_qualification_type", **params))

    def qualification_type_get(self, *, qualification_type_id: str) -> QualificationTypeInfo:
        response = self._call("get_qualification_type", QualificationTypeId=qualification_type_id)
        return QualificationTypeInfo.from_response(response)

    def qualification_assign(self, *, qualification_type_id: str, worker_id: str, value: int = 1) -> None:
        self._call(
            "associate_qualification_with_worker",
            QualificationTypeId=qualification_type_id,
            WorkerId=worker_id,
            IntegerValue=value,
            SendNotification=False,
        )

    def bonus_send(
        self, *, worker_id: str, assignment_id: str, amount: str, reason: str, unique_token: str = ""
    ) -> None:
        params: dict[str, Any] = {
            "WorkerId": worker_id,
            "AssignmentId": assignment_id,
            "BonusAmount": amount,
            "Reason": reason,
        }
        if unique_token:
            # MTurk pays a bonus with a token once, so a retried or repeated command cannot pay twice.
            params["UniqueRequestToken"] = unique_token
        self._call("send_bonus", **params)

    def hit_expire(self, *, hit_id: str) -> None:
        # A time in the past expires the HIT at once (documented for UpdateExpirationForHIT).
        self._call("update_expiration_for_hit", HITId=hit_id, ExpireAt=datetime(2015, 1, 1))

    def hit_add_assignments(self, *, hit_id: str, count: int, unique_token: str = "") -> None:
        params: dict[str, Any] = {"HITId": hit_id, "NumberOfAdditionalAssignments": count}
        if unique_token:
            params["UniqueRequestToken"] = unique_token
        self._call("create_additional_assignments_for_hit", **params)
