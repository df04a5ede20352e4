# Copyright: C5C3 Glance operator authors
# Apache License 2.0 (see LICENSE)
"""AdmissionReview in, AdmissionReview out: what the admission webhook answers, without HTTP.

``Admission.review`` takes the path a request came in on and its body, and returns the
``admission.k8s.io/v1`` AdmissionReview to send back plus one log record. It decides with
the validation library, never with rules of its own:

* a mutating path answers the webhook's defaults (``default_glance``,
  ``default_glancebackend``) as an RFC 6902 JSONPatch against the object it was sent;
* a validating path runs ``admission.judge``, the function behind offline render, on the
  object as the API server would judge a create or an update (``oldObject``), and turns
  every error into one Invalid denial worded as the API server words it
  (``apierrors.NewInvalid``): the same input gets the same messages as render.

Cluster lookups (the GlanceBackends of a namespace for the single-default check, whether a
PriorityClass exists) are injected callables; without one the rule is skipped, as the
reference skips it without a client. A lookup that raises answers 500 InternalError.
"""

from __future__ import annotations

import base64
import json
import logging
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

# The webhook evaluates the CEL rules of every object it judges: cel-python is loaded when
# the runner starts, not by the first request (admission imports it when first used, for
# the cold passes that keep their verdicts).
from ansible_collections.c5c3.glance.plugins.module_utils.admission import (  # noqa: F401
    cel_validation,
)
from ansible_collections.c5c3.glance.plugins.module_utils.admission import field_errors as fe
from ansible_collections.c5c3.glance.plugins.module_utils.admission.admission import (
    API_VERSION,
    GROUP,
    VERSION,
    judge,
)
from ansible_collections.c5c3.glance.plugins.module_utils.admission.collection_files import (
    load_catalogs,
    load_crds,
)
from ansible_collections.c5c3.glance.plugins.module_utils.admission.glance_admission import (
    AdmissionContext,
    default_glance,
)
from ansible_collections.c5c3.glance.plugins.module_utils.admission.glancebackend_admission import (
    default_glancebackend,
)

REVIEW_API_VERSION = "admission.k8s.io/v1"
REVIEW_KIND = "AdmissionReview"
JUDGED_OPERATIONS = ("CREATE", "UPDATE")
ALWAYS_ALLOWED_OPERATIONS = ("DELETE", "CONNECT")

DEFAULTERS: dict[str, Callable[[Mapping[str, Any]], dict[str, Any]]] = {
    "Glance": default_glance,
    "GlanceBackend": default_glancebackend,
}

# field.ErrorType as it travels in a StatusCause (k8s.io/apimachinery/.../field/errors.go).
CAUSE_TYPES = {
    fe.NOT_FOUND: "FieldValueNotFound",
    fe.REQUIRED: "FieldValueRequired",
    fe.DUPLICATE: "FieldValueDuplicate",
    fe.INVALID: "FieldValueInvalid",
    fe.UNSUPPORTED: "FieldValueNotSupported",
    fe.FORBIDDEN: "FieldValueForbidden",
    fe.TOO_LONG: "FieldValueTooLong",
    fe.TOO_MANY: "FieldValueTooMany",
    fe.INTERNAL: "InternalError",
    fe.TYPE_INVALID: "FieldValueTypeInvalid",
    # Strict decoding has no field.ErrorType of its own; the field is invalid.
    fe.UNKNOWN_FIELD: "FieldValueInvalid",
}

log = logging.getLogger("runner.webhook")

BackendLister = Callable[[str], Iterable[Mapping[str, Any]]]
PriorityClassLookup = Callable[[str], bool]


@dataclass(frozen=True)
class Route:
    """One webhook path: the kind it admits and whether it mutates or validates."""

    kind: str
    mutating: bool

    @property
    def path(self) -> str:
        verb = "mutate" if self.mutating else "validate"
        return f"/{verb}-{GROUP.replace('.', '-')}-{VERSION}-{self.kind.lower()}"


ROUTES: dict[str, Route] = {
    r.path: r for kind in DEFAULTERS for r in (Route(kind, True), Route(kind, False))
}


class BadReview(ValueError):
    """The body is not an AdmissionReview request this webhook can answer (HTTP 400)."""


class LookupFailed(RuntimeError):
    """A cluster lookup a rule needed failed; the answer is an InternalError."""


@dataclass
class Outcome:
    """The AdmissionReview to send back and what to log about it."""

    review: dict[str, Any]
    record: dict[str, Any] = field(default_factory=dict)

    @property
    def response(self) -> dict[str, Any]:
        return self.review["response"]


# ---------------------------------------------------------------------------------------
# statuses, worded as k8s.io/apimachinery/pkg/api/errors words them


def aggregate_message(messages: Iterable[str]) -> str:
    """``field.ErrorList.ToAggregate().Error()``: duplicates dropped, brackets for several."""
    seen: list[str] = []
    for message in messages:
        if message not in seen:
            seen.append(message)
    if len(seen) == 1:
        return seen[0]
    return "[" + ", ".join(seen) + "]"


def qualified_kind(kind: str) -> str:
    """``schema.GroupKind.String()``: ``Glance.glance.openstack.c5c3.io``."""
    return f"{kind}.{GROUP}"


def invalid_status(kind: str, name: str, errors: list[fe.FieldError]) -> dict[str, Any]:
    """``apierrors.NewInvalid``: code 422, every error a cause, one aggregated message."""
    causes = []
    for error in errors:
        cause = {
            "reason": CAUSE_TYPES.get(error.type, "FieldValueInvalid"),
            "message": str(error) if error.type == fe.UNKNOWN_FIELD else error.body(),
        }
        if error.path:
            cause["field"] = error.path
        causes.append(cause)
    message = f"{qualified_kind(kind)} {fe.go_quote(name)} is invalid"
    if errors:
        message += ": " + aggregate_message(str(e) for e in errors)
    return {
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": "Invalid",
        "details": {"name": name, "group": GROUP, "kind": kind, "causes": causes},
        "code": 422,
    }


def failure_status(code: int, reason: str, message: str) -> dict[str, Any]:
    return {"metadata": {}, "status": "Failure", "message": message, "reason": reason, "code": code}


def internal_status(message: str) -> dict[str, Any]:
    """``apierrors.NewInternalError``."""
    status = failure_status(500, "InternalError", f"Internal error occurred: {message}")
    status["details"] = {"causes": [{"message": message}]}
    return status


def allowed_response(
    warnings: list[str] | None = None, patch: list[dict[str, Any]] | None = None
) -> dict[str, Any]:
    response: dict[str, Any] = {"allowed": True, "status": {"metadata": {}, "code": 200}}
    if patch:
        response["patchType"] = "JSONPatch"
        response["patch"] = base64.b64encode(
            json.dumps(patch, separators=(",", ":"), ensure_ascii=False).encode()
        ).decode()
    if warnings:
        response["warnings"] = list(warnings)
    return response


def denied_response(status: Mapping[str, Any], warnings: list[str] | None = None) -> dict:
    response: dict[str, Any] = {"allowed": False, "status": dict(status)}
    if warnings:
        response["warnings"] = list(warnings)
    return response


# ---------------------------------------------------------------------------------------
# JSONPatch


def _escape(token: str) -> str:
    return token.replace("~", "~0").replace("/", "~1")


def _canonical(value: Any) -> str:
    # JSON equality: true is not 1, and key order does not matter.
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


def json_patch(before: Any, after: Any, path: str = "") -> list[dict[str, Any]]:
    """The RFC 6902 operations that turn ``before`` into ``after`` (objects member-wise)."""
    if isinstance(before, Mapping) and isinstance(after, Mapping):
        ops: list[dict[str, Any]] = []
        for key in before:
            if key not in after:
                ops.append({"op": "remove", "path": f"{path}/{_escape(str(key))}"})
        for key, value in after.items():
            here = f"{path}/{_escape(str(key))}"
            if key not in before:
                ops.append({"op": "add", "path": here, "value": value})
            else:
                ops.extend(json_patch(before[key], value, here))
        return ops
    if _canonical(before) == _canonical(after):
        return []
    return [{"op": "replace", "path": path, "value": after}]


# ---------------------------------------------------------------------------------------
# the review


def parse_review(body: bytes) -> dict[str, Any]:
    """The ``request`` of an AdmissionReview body; ``BadReview`` naming what is wrong."""
    try:
        review = json.loads(body)
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
        raise BadReview(f"the body is not JSON: {exc}") from exc
    if not isinstance(review, dict):
        raise BadReview("the body is not an AdmissionReview: not a JSON object")
    if review.get("kind") != REVIEW_KIND or review.get("apiVersion") != REVIEW_API_VERSION:
        raise BadReview(
            f"the body is not an {REVIEW_API_VERSION} {REVIEW_KIND}: apiVersion "
            f"{review.get('apiVersion')!r}, kind {review.get('kind')!r}"
        )
    request = review.get("request")
    if not isinstance(request, dict):
        raise BadReview(f"the {REVIEW_KIND} has no request")
    uid = request.get("uid")
    if not isinstance(uid, str) or not uid:
        raise BadReview(f"the {REVIEW_KIND} request has no uid")
    return request


def _gvk(api_version: Any, kind: Any) -> str:
    """``schema.GroupVersionKind.String()``."""
    return f"{api_version}, Kind={kind}"


def kind_mismatch(route: Route, request: Mapping[str, Any], obj: Any) -> str | None:
    """Why ``request`` is not for the kind ``route`` admits, or None when it is."""
    want = _gvk(API_VERSION, route.kind)
    requested = request.get("kind")
    if isinstance(requested, Mapping):
        group, version = requested.get("group") or "", requested.get("version")
        got = _gvk(f"{group}/{version}" if group else version, requested.get("kind"))
        if got != want:
            return f"{route.path} admits {want}, but the request is for {got}"
    if isinstance(obj, Mapping):
        api_version, kind = obj.get("apiVersion"), obj.get("kind")
        if (api_version is not None and api_version != API_VERSION) or (
            kind is not None and kind != route.kind
        ):
            return f"{route.path} admits {want}, but the object is {_gvk(api_version, kind)}"
    return None


def _metadata(obj: Any) -> Mapping[str, Any]:
    meta = obj.get("metadata") if isinstance(obj, Mapping) else None
    return meta if isinstance(meta, Mapping) else {}


class Admission:
    """The decisions of the four webhook paths, from the library and the injected lookups."""

    def __init__(
        self,
        crds: Mapping[str, Mapping[str, Any]] | None = None,
        catalogs: Mapping[str, Mapping[str, Any]] | None = None,
        list_glancebackends: BackendLister | None = None,
        priority_class_exists: PriorityClassLookup | None = None,
    ):
        self.crds = crds if crds is not None else load_crds()
        self.catalogs = catalogs if catalogs is not None else load_catalogs()
        self.list_glancebackends = list_glancebackends
        self.priority_class_exists = priority_class_exists

    def review(self, route: Route, body: bytes) -> Outcome:
        """The AdmissionReview answering ``body``; ``BadReview`` when it is not one."""
        request = parse_review(body)
        obj = request.get("object")
        meta = _metadata(obj) or _metadata(request.get("oldObject"))
        requested = request.get("kind")
        record = {
            "uid": request["uid"],
            "kind": requested.get("kind") if isinstance(requested, Mapping) else route.kind,
            "namespace": request.get("namespace") or meta.get("namespace"),
            "name": request.get("name") or meta.get("name"),
            "operation": request.get("operation"),
        }
        response = self._decide(route, request, obj)
        response = {"uid": request["uid"], **response}
        status = response.get("status") or {}
        record.update(
            allowed=response["allowed"],
            code=status.get("code"),
            reason=status.get("reason"),
            patched="patch" in response,
            warnings=len(response.get("warnings") or []),
        )
        if not response["allowed"]:
            record["message"] = status.get("message")
        review = {"apiVersion": REVIEW_API_VERSION, "kind": REVIEW_KIND, "response": response}
        return Outcome(review, record)

    def _decide(self, route: Route, request: Mapping[str, Any], obj: Any) -> dict[str, Any]:
        operation = request.get("operation")
        if operation in ALWAYS_ALLOWED_OPERATIONS:
            return allowed_response()
        if operation not in JUDGED_OPERATIONS:
            return denied_response(
                failure_status(400, "BadRequest", f"unsupported operation {operation!r}")
            )
        mismatch = kind_mismatch(route, request, obj)
        if mismatch:
            return denied_response(failure_status(400, "BadRequest", mismatch))
        if not isinstance(obj, Mapping):
            return denied_response(
                failure_status(400, "BadRequest", f"the {operation} request carries no object")
            )
        try:
            if route.mutating:
                return self._mutate(route, obj)
            return self._validate(route, request, obj)
        except LookupFailed as exc:
            return denied_response(internal_status(str(exc)))
        except Exception as exc:  # a bug must not let an object through: failurePolicy Fail
            log.exception("the webhook failed to judge %s %s", route.kind, request.get("uid"))
            return denied_response(
                internal_status(f"the webhook failed to judge the object: {exc!r}")
            )

    def _mutate(self, route: Route, obj: Mapping[str, Any]) -> dict[str, Any]:
        try:
            defaulted = DEFAULTERS[route.kind](obj)
        except (AttributeError, TypeError):
            # A block of the wrong type cannot be defaulted; the schema (the API server's, or
            # the validating path's) names the field, so the object passes through unchanged.
            return allowed_response()
        return allowed_response(patch=json_patch(obj, defaulted))

    def _validate(
        self, route: Route, request: Mapping[str, Any], obj: Mapping[str, Any]
    ) -> dict[str, Any]:
        operation = request["operation"]
        old = request.get("oldObject")
        if operation == "UPDATE" and not isinstance(old, Mapping):
            return denied_response(
                failure_status(400, "BadRequest", "the UPDATE request carries no oldObject")
            )
        meta = _metadata(obj)
        namespace = request.get("namespace") or meta.get("namespace") or "default"
        ctx = AdmissionContext(
            operation=operation,
            old=old if operation == "UPDATE" else None,
            siblings=self._siblings(route, obj, namespace),
            priority_class_exists=self._priority_class_lookup(),
            catalogs=self.catalogs,
        )
        verdict = judge(self.crds[route.kind], obj, ctx)
        if verdict.allowed:
            return allowed_response(verdict.warnings)
        name = verdict.name or request.get("name") or ""
        return denied_response(invalid_status(route.kind, name, verdict.errors), verdict.warnings)

    def _siblings(
        self, route: Route, obj: Mapping[str, Any], namespace: str
    ) -> list[Mapping[str, Any]] | None:
        """The namespace's GlanceBackends, listed only when the single-default check runs."""
        spec = obj.get("spec")
        if (
            route.kind != "GlanceBackend"
            or self.list_glancebackends is None
            or not isinstance(spec, Mapping)
            or spec.get("isDefault") is not True
        ):
            return None
        try:
            return [o for o in self.list_glancebackends(namespace) if isinstance(o, Mapping)]
        except Exception as exc:
            raise LookupFailed(
                f"listing GlanceBackends for the single-default check: {exc} "
                f"(namespace {namespace!r})"
            ) from exc

    def _priority_class_lookup(self) -> PriorityClassLookup | None:
        lookup = self.priority_class_exists
        if lookup is None:
            return None

        def exists(name: str) -> bool:
            try:
                return bool(lookup(name))
            except Exception as exc:
                raise LookupFailed(
                    f"failed to look up PriorityClass: {exc} (PriorityClass {name!r})"
                ) from exc

        return exists
