"""The local MTurk fake's state and operations, without HTTP: devtools/mturk_server.py serves them.

`FakeMTurk.handle` checks every requester call against botocore's own service model for MTurk (unknown
parameters, missing required ones and wrong types answer 400 as MTurk does) before serving it from
`FakeState`, which tests read and tweak directly. The worker side (accept, preview, externalSubmit, and
taking a qualification test, graded with its AnswerKey) stands in for the MTurk website; accepting a HIT
checks the worker against its requirements on the qualification types made here.
"""

from __future__ import annotations

import json
import operator
import re
import threading
import time
import uuid
import xml.etree.ElementTree as ET
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any
from urllib.parse import urlencode
from xml.sax.saxutils import escape

import botocore.session
from botocore.validate import ParamValidator

TARGET_PREFIX = "MTurkRequesterServiceV20170117."
ANSWER_NS = (
    "http://mechanicalturk.amazonaws.com/AWSMechanicalTurkDataSchemas/2005-10-01/QuestionFormAnswers.xsd"
)
NOT_AVAILABLE = "ASSIGNMENT_ID_NOT_AVAILABLE"


class FakeError(Exception):
    def __init__(self, code: str, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.code, self.message, self.status = code, message, status


def _new_id(prefix: str) -> str:
    return (prefix + uuid.uuid4().hex.upper())[:30]


def _epoch(value: object) -> float:
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
    raise FakeError("ValidationException", f"bad timestamp {value!r}")


def answer_xml(fields: dict[str, str]) -> str:
    answers = "".join(
        f"<Answer><QuestionIdentifier>{escape(k)}</QuestionIdentifier><FreeText>{escape(v)}</FreeText></Answer>"
        for k, v in fields.items()
    )
    return f'<?xml version="1.0" encoding="UTF-8"?><QuestionFormAnswers xmlns="{ANSWER_NS}">{answers}</QuestionFormAnswers>'


COMPARATORS: dict[str, Callable[[int, int], bool]] = {
    "LessThan": operator.lt,
    "LessThanOrEqualTo": operator.le,
    "GreaterThan": operator.gt,
    "GreaterThanOrEqualTo": operator.ge,
    "EqualTo": operator.eq,
    "NotEqualTo": operator.ne,
}


def _local(tag: str) -> str:
    return tag.rsplit("}", 1)[-1]


def _parse(xml: str, what: str) -> ET.Element:
    try:
        return ET.fromstring(xml.encode())
    except ET.ParseError as exc:
        raise FakeError("ParameterValidationError", f"{what} is not well-formed XML: {exc}") from None


def _child_text(element: ET.Element, name: str) -> str:
    for child in element:
        if _local(child.tag) == name:
            return (child.text or "").strip()
    return ""


def _test_questions(test_xml: str) -> set[str]:
    """The QuestionIdentifiers of a QuestionForm test."""
    root = _parse(test_xml, "Test")
    if _local(root.tag) != "QuestionForm":
        raise FakeError("ParameterValidationError", "Test must be a QuestionForm document")
    asked = {_child_text(q, "QuestionIdentifier") for q in root if _local(q.tag) == "Question"}
    if not asked:
        raise FakeError("ParameterValidationError", "Test has no Question")
    return asked


def _answer_key(key_xml: str) -> tuple[dict[str, dict[str, int]], int | None]:
    """An AnswerKey as {question: {selection: score}} and its PercentageMapping's MaximumSummedScore."""
    root = _parse(key_xml, "AnswerKey")
    if _local(root.tag) != "AnswerKey":
        raise FakeError("ParameterValidationError", "AnswerKey must be an AnswerKey document")
    scores: dict[str, dict[str, int]] = {}
    maximum: int | None = None
    for part in root:
        if _local(part.tag) == "Question":
            options = scores.setdefault(_child_text(part, "QuestionIdentifier"), {})
            for option in part:
                if _local(option.tag) == "AnswerOption":
                    score = int(_child_text(option, "AnswerScore") or 0)
                    for selection in option:
                        if _local(selection.tag) == "SelectionIdentifier":
                            options[(selection.text or "").strip()] = score
        elif _local(part.tag) == "QualificationValueMapping":
            for mapping in part.iter():
                if _local(mapping.tag) == "MaximumSummedScore":
                    maximum = int((mapping.text or "0").strip())
    return scores, maximum


def grade_test(key_xml: str, answers: dict[str, str]) -> int:
    """The qualification value of a test's answers: the summed AnswerScores of the selections given, as a
    whole percentage of MaximumSummedScore when the key maps it so."""
    scores, maximum = _answer_key(key_xml)
    total = sum(options.get(answers.get(question, ""), 0) for question, options in scores.items())
    if maximum:
        return total * 100 // maximum
    return total


@dataclass
class FakeState:
    """Everything the fake remembers; tests read and tweak it directly."""

    hit_types: dict[str, dict[str, Any]] = field(default_factory=dict)
    hits: dict[str, dict[str, Any]] = field(default_factory=dict)
    assignments: dict[str, dict[str, Any]] = field(default_factory=dict)
    qualification_types: dict[str, dict[str, Any]] = field(default_factory=dict)
    worker_qualifications: dict[tuple[str, str], int] = field(default_factory=dict)
    unique_tokens: dict[str, str] = field(default_factory=dict)
    bonuses: list[dict[str, Any]] = field(default_factory=list)
    calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    # operation -> list of error codes to answer with before serving the call (throttling drills)
    faults: dict[str, list[str]] = field(default_factory=dict)
    # Whether a repeated UniqueRequestToken's error names the HIT already made (real MTurk may not).
    token_error_names_hit: bool = True
    balance: str = "10000.00"
    lock: threading.RLock = field(default_factory=threading.RLock)

    def inject_faults(self, operation: str, *codes: str) -> None:
        with self.lock:
            self.faults.setdefault(operation, []).extend(codes)


class FakeMTurk:
    """The requester operations Assay calls, on in-memory state."""

    def __init__(self, state: FakeState | None = None) -> None:
        self.state = state or FakeState()
        self.model = botocore.session.get_session().get_service_model("mturk")
        self.validator = ParamValidator()
        self.submit_origin = ""

    def handle(self, operation: str, params: dict[str, Any]) -> dict[str, Any]:
        if operation not in self.model.operation_names:
            raise FakeError("UnknownOperationException", f"unknown operation {operation}")
        shape = self.model.operation_model(operation).input_shape
        report = self.validator.validate(params, shape) if shape is not None else None
        if report is not None and report.has_errors():
            raise FakeError("ValidationException", report.generate_report())
        handler = getattr(self, "op_" + operation, None)
        if handler is None:
            raise FakeError("RequestError", f"{operation} is valid MTurk but not served by the local fake")
        with self.state.lock:
            self.state.calls.append((operation, params))
            pending = self.state.faults.get(operation)
            if pending:
                code = pending.pop(0)
                status = 400 if code.startswith("Throttl") else 500
                raise FakeError(code, "injected fault", status)
            return handler(params)

    # --- helpers --------------------------------------------------------------------------------

    def _hit(self, hit_id: str) -> dict[str, Any]:
        try:
            return self.state.hits[hit_id]
        except KeyError:
            raise FakeError("RequestError", f"Hit {hit_id} does not exist.") from None

    def _assignment(self, assignment_id: str) -> dict[str, Any]:
        try:
            return self.state.assignments[assignment_id]
        except KeyError:
            raise FakeError("RequestError", f"Assignment {assignment_id} does not exist.") from None

    def _hit_view(self, hit: dict[str, Any]) -> dict[str, Any]:
        hit_type = self.state.hit_types[hit["HITTypeId"]]
        mine = [a for a in self.state.assignments.values() if a["HITId"] == hit["HITId"]]
        pending = sum(1 for a in mine if a["AssignmentStatus"] == "Accepted")
        done = sum(1 for a in mine if a["AssignmentStatus"] in {"Submitted", "Approved", "Rejected"})
        expired = hit["Expiration"] <= time.time()
        status = "Reviewable" if expired or done >= hit["MaxAssignments"] else "Assignable"
        view = {k: v for k, v in hit.items() if not k.startswith("_")}
        view.update(
            Title=hit_type["Title"],
            Description=hit_type["Description"],
            Reward=hit_type["Reward"],
            AssignmentDurationInSeconds=hit_type["AssignmentDurationInSeconds"],
            AutoApprovalDelayInSeconds=hit_type.get("AutoApprovalDelayInSeconds", 2592000),
            QualificationRequirements=hit_type.get("QualificationRequirements", []),
            HITStatus=status,
            NumberOfAssignmentsPending=pending,
            NumberOfAssignmentsCompleted=done,
            NumberOfAssignmentsAvailable=0 if expired else max(0, hit["MaxAssignments"] - pending - done),
        )
        return view

    def external_url(self, hit_id: str) -> str:
        match = re.search(r"<ExternalURL>(.*?)</ExternalURL>", self._hit(hit_id)["Question"], re.S)
        if not match:
            raise FakeError("RequestError", "HIT has no ExternalQuestion")
        from xml.sax.saxutils import unescape

        return unescape(match.group(1).strip())

    # --- requester operations -------------------------------------------------------------------

    def op_GetAccountBalance(self, params: dict[str, Any]) -> dict[str, Any]:
        return {"AvailableBalance": self.state.balance}

    def op_CreateHITType(self, params: dict[str, Any]) -> dict[str, Any]:
        for name in ("Reward",):
            if not re.fullmatch(r"\d+(\.\d{1,2})?", params[name]):
                raise FakeError("ParameterValidationError", f"{name} must be a dollar amount")
        # MTurk answers the same id for the same properties.
        key = json.dumps(params, sort_keys=True)
        for hit_type_id, stored in self.state.hit_types.items():
            if stored["_key"] == key:
                return {"HITTypeId": hit_type_id}
        hit_type_id = _new_id("HT")
        self.state.hit_types[hit_type_id] = {**params, "_key": key}
        return {"HITTypeId": hit_type_id}

    def op_CreateHITWithHITType(self, params: dict[str, Any]) -> dict[str, Any]:
        if params["HITTypeId"] not in self.state.hit_types:
            raise FakeError("RequestError", f"HITType {params['HITTypeId']} does not exist.")
        if "Question" not in params:
            raise FakeError("ParameterValidationError", "Question or HITLayoutId is required")
        if "<ExternalQuestion" in params["Question"] and "<ExternalURL>https://" not in params["Question"]:
            # MTurk only frames HTTPS pages; the local demo may still use http on loopback.
            if not re.search(r"<ExternalURL>http://(127\.0\.0\.1|localhost)[:/]", params["Question"]):
                raise FakeError("ParameterValidationError", "ExternalURL must use HTTPS")
        token = params.get("UniqueRequestToken")
        if token and token in self.state.unique_tokens:
            named = f"The HIT with ID {self.state.unique_tokens[token]}"
            raise FakeError(
                "RequestError",
                f"{named if self.state.token_error_names_hit else 'A HIT'} already exists with the same "
                "UniqueRequestToken.",
            )
        hit_id = _new_id("3H")
        now = time.time()
        self.state.hits[hit_id] = {
            "HITId": hit_id,
            "HITTypeId": params["HITTypeId"],
            "HITGroupId": params["HITTypeId"],
            "CreationTime": now,
            "Question": params["Question"],
            "MaxAssignments": params.get("MaxAssignments", 1),
            "Expiration": now + params["LifetimeInSeconds"],
            "RequesterAnnotation": params.get("RequesterAnnotation", ""),
            "HITReviewStatus": "NotReviewed",
        }
        if token:
            self.state.unique_tokens[token] = hit_id
        return {"HIT": self._hit_view(self.state.hits[hit_id])}

    def op_CreateHIT(self, params: dict[str, Any]) -> dict[str, Any]:
        # CreateHIT is CreateHITType and CreateHITWithHITType in one request, as MTurk documents it.
        type_fields = (
            "AutoApprovalDelayInSeconds",
            "AssignmentDurationInSeconds",
            "Reward",
            "Title",
            "Keywords",
            "Description",
            "QualificationRequirements",
        )
        hit_type_id = self.op_CreateHITType({k: params[k] for k in type_fields if k in params})["HITTypeId"]
        hit_fields = {k: v for k, v in params.items() if k not in type_fields}
        return self.op_CreateHITWithHITType({**hit_fields, "HITTypeId": hit_type_id})

    def op_GetHIT(self, params: dict[str, Any]) -> dict[str, Any]:
        return {"HIT": self._hit_view(self._hit(params["HITId"]))}

    def op_ListAssignmentsForHIT(self, params: dict[str, Any]) -> dict[str, Any]:
        self._hit(params["HITId"])
        statuses = set(params.get("AssignmentStatuses") or ["Submitted", "Approved", "Rejected"])
        rows = [
            {k: v for k, v in a.items() if not k.startswith("_")}
            for a in self.state.assignments.values()
            if a["HITId"] == params["HITId"] and a["AssignmentStatus"] in statuses
        ]
        start = int(params.get("NextToken") or 0)
        size = params.get("MaxResults", 10)
        page = rows[start : start + size]
        answer: dict[str, Any] = {"NumResults": len(page), "Assignments": page}
        if start + size < len(rows):
            answer["NextToken"] = str(start + size)
        return answer

    def op_ApproveAssignment(self, params: dict[str, Any]) -> dict[str, Any]:
        assignment = self._assignment(params["AssignmentId"])
        allowed = {"Submitted"} | ({"Rejected"} if params.get("OverrideRejection") else set())
        if assignment["AssignmentStatus"] == "Approved":
            raise FakeError("RequestError", "This operation can be called with a status of: Submitted")
        if assignment["AssignmentStatus"] not in allowed:
            raise FakeError("RequestError", "This operation can be called with a status of: Submitted")
        assignment.update(AssignmentStatus="Approved", ApprovalTime=time.time())
        if "RequesterFeedback" in params:
            assignment["RequesterFeedback"] = params["RequesterFeedback"]
        return {}

    def op_RejectAssignment(self, params: dict[str, Any]) -> dict[str, Any]:
        assignment = self._assignment(params["AssignmentId"])
        if assignment["AssignmentStatus"] != "Submitted":
            raise FakeError("RequestError", "This operation can be called with a status of: Submitted")
        assignment.update(
            AssignmentStatus="Rejected",
            RejectionTime=time.time(),
            RequesterFeedback=params["RequesterFeedback"],
        )
        return {}

    def op_SendBonus(self, params: dict[str, Any]) -> dict[str, Any]:
        assignment = self._assignment(params["AssignmentId"])
        if assignment["WorkerId"] != params["WorkerId"]:
            raise FakeError("RequestError", "The worker did not do this assignment.")
        if assignment["AssignmentStatus"] not in {"Approved", "Submitted"}:
            raise FakeError("RequestError", "A bonus needs a submitted or approved assignment.")
        token = params.get("UniqueRequestToken")
        if token and any(b.get("UniqueRequestToken") == token for b in self.state.bonuses):
            raise FakeError("RequestError", f"The request token {token} has already been used.", status=400)
        self.state.bonuses.append(dict(params))
        return {}

    def op_CreateQualificationType(self, params: dict[str, Any]) -> dict[str, Any]:
        for stored in self.state.qualification_types.values():
            if stored["Name"] == params["Name"]:
                raise FakeError(
                    "RequestError", "You have already created a QualificationType with this name."
                )
        test, key = params.get("Test"), params.get("AnswerKey")
        if test is not None:
            if "TestDurationInSeconds" not in params:
                raise FakeError("ParameterValidationError", "A Test needs TestDurationInSeconds.")
            if params.get("AutoGranted"):
                raise FakeError(
                    "ParameterValidationError", "A QualificationType with a Test is not AutoGranted."
                )
            asked = _test_questions(test)
            if key is not None:
                unknown = set(_answer_key(key)[0]) - asked
                if unknown:
                    raise FakeError(
                        "ParameterValidationError",
                        f"AnswerKey names questions the Test does not have: {', '.join(sorted(unknown))}",
                    )
        elif key is not None:
            raise FakeError("ParameterValidationError", "An AnswerKey needs a Test.")
        qual_id = _new_id("3Q")
        qual: dict[str, Any] = {
            "QualificationTypeId": qual_id,
            "CreationTime": time.time(),
            "Name": params["Name"],
            "Description": params["Description"],
            "QualificationTypeStatus": params["QualificationTypeStatus"],
            # Workers ask for a type with a test by taking the test.
            "IsRequestable": test is not None,
            "AutoGranted": bool(params.get("AutoGranted", False)),
        }
        for name in ("Keywords", "Test", "AnswerKey", "TestDurationInSeconds", "RetryDelayInSeconds"):
            if name in params:
                qual[name] = params[name]
        if qual["AutoGranted"]:
            qual["AutoGrantedValue"] = params.get("AutoGrantedValue", 1)
        self.state.qualification_types[qual_id] = qual
        return {"QualificationType": dict(qual)}

    def _qualification_type(self, qual_id: str) -> dict[str, Any]:
        try:
            return self.state.qualification_types[qual_id]
        except KeyError:
            raise FakeError("RequestError", f"QualificationType {qual_id} does not exist.") from None

    def op_GetQualificationType(self, params: dict[str, Any]) -> dict[str, Any]:
        return {"QualificationType": dict(self._qualification_type(params["QualificationTypeId"]))}

    def op_ListQualificationTypes(self, params: dict[str, Any]) -> dict[str, Any]:
        # Only the requester's own types: the fake knows no one else's.
        query = (params.get("Query") or "").lower()
        rows = [
            dict(q)
            for q in self.state.qualification_types.values()
            if (not query or query in q["Name"].lower() or query in q.get("Keywords", "").lower())
            and (not params["MustBeRequestable"] or q["IsRequestable"])
        ]
        start = int(params.get("NextToken") or 0)
        size = params.get("MaxResults", 10)
        page = rows[start : start + size]
        answer: dict[str, Any] = {"NumResults": len(page), "QualificationTypes": page}
        if start + size < len(rows):
            answer["NextToken"] = str(start + size)
        return answer

    def op_AssociateQualificationWithWorker(self, params: dict[str, Any]) -> dict[str, Any]:
        if params["QualificationTypeId"] not in self.state.qualification_types:
            raise FakeError("RequestError", "QualificationType does not exist.")
        key = (params["QualificationTypeId"], params["WorkerId"])
        self.state.worker_qualifications[key] = params.get("IntegerValue", 1)
        return {}

    def op_UpdateExpirationForHIT(self, params: dict[str, Any]) -> dict[str, Any]:
        hit = self._hit(params["HITId"])
        hit["Expiration"] = _epoch(params["ExpireAt"])
        return {}

    def op_CreateAdditionalAssignmentsForHIT(self, params: dict[str, Any]) -> dict[str, Any]:
        hit = self._hit(params["HITId"])
        hit["MaxAssignments"] += params["NumberOfAdditionalAssignments"]
        return {}

    def op_ListHITs(self, params: dict[str, Any]) -> dict[str, Any]:
        hits = [self._hit_view(h) for h in self.state.hits.values()]
        start = int(params.get("NextToken") or 0)
        size = params.get("MaxResults", 10)
        page = hits[start : start + size]
        answer: dict[str, Any] = {"NumResults": len(page), "HITs": page}
        if start + size < len(hits):
            answer["NextToken"] = str(start + size)
        return answer

    def op_DeleteHIT(self, params: dict[str, Any]) -> dict[str, Any]:
        hit_id = params["HITId"]
        self._hit(hit_id)
        del self.state.hits[hit_id]
        for assignment_id in [a for a, row in self.state.assignments.items() if row["HITId"] == hit_id]:
            del self.state.assignments[assignment_id]
        return {}

    # --- worker side ----------------------------------------------------------------------------

    def worker_accept(self, hit_id: str, worker_id: str) -> str:
        """Accept a HIT for a worker and answer the URL MTurk would frame."""
        with self.state.lock:
            hit = self._hit(hit_id)
            view = self._hit_view(hit)
            for a in self.state.assignments.values():
                if a["HITId"] == hit_id and a["WorkerId"] == worker_id:
                    raise FakeError("RequestError", "worker already took this HIT", 409)
            if view["NumberOfAssignmentsAvailable"] <= 0:
                raise FakeError("RequestError", "HIT is not available", 409)
            for requirement in view["QualificationRequirements"]:
                if not self._meets(requirement, worker_id):
                    raise FakeError(
                        "RequestError", "worker does not meet the qualification requirements", 403
                    )
            assignment_id = _new_id("3A")
            now = time.time()
            hit_type = self.state.hit_types[hit["HITTypeId"]]
            self.state.assignments[assignment_id] = {
                "AssignmentId": assignment_id,
                "WorkerId": worker_id,
                "HITId": hit_id,
                "AssignmentStatus": "Accepted",
                "AcceptTime": now,
                "Deadline": now + hit_type["AssignmentDurationInSeconds"],
                "AutoApprovalTime": now + hit_type.get("AutoApprovalDelayInSeconds", 2592000),
            }
            query = {
                "assignmentId": assignment_id,
                "hitId": hit_id,
                "workerId": worker_id,
                "turkSubmitTo": self.submit_origin,
            }
            return self._with_query(self.external_url(hit_id), query)

    def _meets(self, requirement: dict[str, Any], worker_id: str) -> bool:
        """Whether a worker meets one requirement; the system qualifications (approval rate, locale...)
        are MTurk's own records of a worker, which the fake does not keep, so every worker meets them."""
        qual_id = requirement["QualificationTypeId"]
        if qual_id not in self.state.qualification_types:
            return True
        value = self.state.worker_qualifications.get((qual_id, worker_id))
        comparator = requirement["Comparator"]
        if comparator == "DoesNotExist":
            return value is None
        if value is None:
            return False
        if comparator == "Exists":
            return True
        wanted = requirement.get("IntegerValues") or []
        if comparator == "In":
            return value in wanted
        if comparator == "NotIn":
            return value not in wanted
        compare = COMPARATORS.get(comparator)
        if compare is None or len(wanted) != 1:
            raise FakeError("ParameterValidationError", f"bad requirement {requirement!r}")
        return compare(value, wanted[0])

    def worker_take_test(self, qualification_type_id: str, worker_id: str, answers: dict[str, str]) -> int:
        """A worker takes a qualification type's test: graded with its AnswerKey as MTurk does, the score
        becomes the worker's qualification value. `answers` maps QuestionIdentifier to SelectionIdentifier."""
        with self.state.lock:
            qual = self._qualification_type(qualification_type_id)
            if "Test" not in qual:
                raise FakeError("RequestError", "this QualificationType has no test", 409)
            if "AnswerKey" not in qual:
                raise FakeError("RequestError", "the fake grades only tests with an AnswerKey", 409)
            if qual["QualificationTypeStatus"] != "Active":
                raise FakeError("RequestError", "this QualificationType is not active", 409)
            value = grade_test(qual["AnswerKey"], answers)
            self.state.worker_qualifications[(qualification_type_id, worker_id)] = value
            return value

    def worker_preview(self, hit_id: str) -> str:
        with self.state.lock:
            return self._with_query(
                self.external_url(hit_id), {"assignmentId": NOT_AVAILABLE, "hitId": hit_id}
            )

    @staticmethod
    def _with_query(url: str, query: dict[str, str]) -> str:
        return url + ("&" if "?" in url else "?") + urlencode(query)

    def external_submit(self, fields: dict[str, str]) -> str:
        with self.state.lock:
            assignment_id = fields.pop("assignmentId", "")
            if not assignment_id or assignment_id == NOT_AVAILABLE:
                raise FakeError("RequestError", "externalSubmit needs the assignmentId")
            assignment = self._assignment(assignment_id)
            if assignment["AssignmentStatus"] != "Accepted":
                raise FakeError("RequestError", "assignment was already submitted", 409)
            if assignment["Deadline"] < time.time():
                raise FakeError("RequestError", "assignment is past its deadline", 409)
            assignment.update(AssignmentStatus="Submitted", SubmitTime=time.time(), Answer=answer_xml(fields))
            return assignment_id
