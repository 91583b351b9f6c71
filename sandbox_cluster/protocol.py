"""HTTP API v1 of a sandbox node: the JSON shapes of requests and replies, and their validation.

The server and the client both use this module, so the two ends cannot drift apart.

Routes (all JSON unless noted; `Authorization: Bearer <token>` on every route but `/health`
when the node has a token):

    POST /v1/run                  run one program on a batch of tests   -> 200 RunResponse
    PUT  /v1/blobs/<sha256>       upload raw bytes (octet-stream)       -> 201 new / 200 known
    HEAD /v1/blobs/<sha256>       is the blob on this node?             -> 200 / 404
    GET  /health                  readiness + pool summary              -> 200 / 503 draining
    GET  /metrics                 Prometheus text exposition

RunRequest (unknown fields are rejected so a typo never silently changes a run):

    {"request_id": "c0ffee.1",             # [A-Za-z0-9][A-Za-z0-9._:-]{0,127}; idempotency key
     "program": "print(input())",
     "tests": [{"input": DATA, "expected": DATA | null}, ...],
     "limits": {"time_s": 10, "memory_mb": 1024, "output_mb": 64, "repeats": 1},  # optional
     "interface": "stdio" | "function",    # optional, default stdio
     "checker": DATA | null,               # optional checker source
     "float_tolerance": number | null,     # optional
     "repeat_aggregate": "min" | "median" | null,  # optional; how Limits.repeats combine
     "test_kinds": ["T0" | "T+" | "TO" | "correctness" | "optimization", ...] | null,  # optional
     "stop_after_failure": false}          # optional; true needs test_kinds (RunRequest)

    DATA = "text" | {"b64": "..."} | {"sha256": "<64 hex>", "type": "text" | "bytes"}

A `{"sha256": ...}` reference names a blob uploaded before; if the node does not hold it the
reply is 409 with `{"error": "missing_blobs", "missing": [...]}` and the client uploads them and
sends the same request again. RunResponse:

    {"api": "v1", "request_id": "...", "node": "host:port", "results": [TestResult.to_json()]}

Errors are `{"error": CODE, "message": "tests[3].input: ..."}`; the message names the field.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import re
from collections.abc import Callable, Sequence
from typing import Any

from sandbox_cluster.api import INTERFACES, REPEAT_AGGREGATES, Limits, TestCase, TestResult
from sandbox_cluster.api import RunRequest as _RunRequest
from sandbox_cluster.content_store import SHA256_RE

API_VERSION = "v1"
REQUEST_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$")
_RUN_FIELDS = {"request_id", "program", "tests", "limits", "interface", "checker",
               "float_tolerance", "repeat_aggregate", "test_kinds", "stop_after_failure"}
_LIMIT_FIELDS = {"time_s": float, "memory_mb": int, "output_mb": int, "repeats": int}


class RequestError(ValueError):
    """A request the server must refuse; `http_status` and `code` shape the reply."""

    def __init__(self, message: str, http_status: int = 400, code: str = "bad_request"):
        super().__init__(message)
        self.http_status = http_status
        self.code = code


class MissingBlobs(RequestError):
    def __init__(self, missing: list[str]):
        super().__init__(f"{len(missing)} referenced blob(s) are not on this node; upload them "
                         "with PUT /v1/blobs/<sha256> and send the request again",
                         http_status=409, code="missing_blobs")
        self.missing = missing


class ProtocolError(Exception):
    """A node's reply does not follow the protocol (it is treated as an 'unknown' result)."""


# The one run request of the sandbox (`api.RunRequest`); on the wire it carries its
# `request_id`.
RunRequest = _RunRequest


# -- client side ---------------------------------------------------------------------------------
def _encode_data(value: str | bytes, inline_limit: int, blobs: dict[str, bytes]) -> Any:
    raw = value.encode("utf-8") if isinstance(value, str) else value
    if len(raw) > inline_limit:
        digest = hashlib.sha256(raw).hexdigest()
        blobs[digest] = raw
        return {"sha256": digest, "type": "text" if isinstance(value, str) else "bytes"}
    if isinstance(value, str):
        return value
    return {"b64": base64.b64encode(value).decode("ascii")}


def encode_run_request(request: RunRequest, inline_limit: int) -> tuple[dict, dict[str, bytes]]:
    """The JSON body of `request` and the blobs it references (digest -> bytes).

    Test data (and checker source) longer than `inline_limit` bytes travels as a blob
    reference; pass a huge `inline_limit` to send everything inline.
    """
    blobs: dict[str, bytes] = {}
    tests = []
    for test in request.tests:
        expected = (None if test.expected is None
                    else _encode_data(test.expected, inline_limit, blobs))
        tests.append({"input": _encode_data(test.input, inline_limit, blobs),
                      "expected": expected})
    body = {
        "request_id": request.request_id,
        "program": request.program,
        "tests": tests,
        "limits": request.limits.to_json(),
        "interface": request.interface,
        "checker": (None if request.checker is None
                    else _encode_data(request.checker, inline_limit, blobs)),
        "float_tolerance": request.float_tolerance,
        "repeat_aggregate": request.repeat_aggregate,
    }
    if request.stop_after_failure:  # older nodes keep accepting requests without the option
        body |= {"test_kinds": list(request.test_kinds), "stop_after_failure": True}
    return body, blobs


def decode_run_response(body: Any, request_id: str, n_tests: int) -> list[TestResult]:
    """Parse a RunResponse; anything off-protocol raises ProtocolError."""
    if not isinstance(body, dict):
        raise ProtocolError(f"reply is {type(body).__name__}, not an object")
    if body.get("request_id") != request_id:
        raise ProtocolError(f"reply is for request {body.get('request_id')!r}, "
                            f"not {request_id!r}")
    results = body.get("results")
    if not isinstance(results, list) or len(results) != n_tests:
        got = len(results) if isinstance(results, list) else type(results).__name__
        raise ProtocolError(f"reply has {got} results for {n_tests} tests")
    parsed = []
    for i, item in enumerate(results):
        try:
            parsed.append(TestResult.from_json(item))
        except (KeyError, ValueError, TypeError, AttributeError, binascii.Error) as err:
            raise ProtocolError(f"results[{i}] unparseable: {err!r}") from err
    return parsed


# -- server side ---------------------------------------------------------------------------------
def request_fingerprint(body: dict) -> str:
    """Identity of a request's content, to detect a request id reused for different work."""
    canonical = json.dumps(body, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()


def _type_name(value: Any) -> str:
    return "null" if value is None else type(value).__name__


def _refuse_constant(name: str) -> float:
    raise ValueError(f"{name} is not a JSON number")


def parse_json_body(raw: bytes) -> Any:
    """A request body as JSON; RequestError (400, bad_json) naming what the node cannot read:
    bad syntax or encoding, nesting deeper than the parser's recursion limit, an integer
    beyond CPython's digit limit for int conversion, NaN or Infinity."""
    try:
        return json.loads(raw, parse_constant=_refuse_constant)
    except RecursionError:
        raise RequestError("body: JSON nested too deeply to parse", code="bad_json") from None
    except (UnicodeDecodeError, ValueError) as err:  # JSONDecodeError, int digit limit, NaN
        raise RequestError(f"body: not valid JSON ({err})", code="bad_json") from None


def _valid_text(value: str, where: str) -> str:
    """Text must be encodable as UTF-8: a lone surrogate (legal in a JSON string) is not."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as err:
        raise RequestError(f"{where}: text holds a lone surrogate at index {err.start}, which "
                           "is not valid Unicode; send bytes as {\"b64\": ...}") from None
    return value


def _decode_data(value: Any, where: str, fetch_blob: Callable[[str], bytes | None],
                 missing: list[str]) -> str | bytes:
    if isinstance(value, str):
        return _valid_text(value, where)
    if isinstance(value, dict):
        if set(value) == {"b64"} and isinstance(value["b64"], str):
            try:
                return base64.b64decode(value["b64"], validate=True)
            except binascii.Error as err:
                raise RequestError(f"{where}.b64: not valid base64 ({err})") from err
        if set(value) == {"sha256", "type"}:
            digest, kind = value["sha256"], value["type"]
            if not isinstance(digest, str) or not SHA256_RE.match(digest):
                raise RequestError(f"{where}.sha256: must be 64 lowercase hex characters")
            if kind not in ("text", "bytes"):
                raise RequestError(f"{where}.type: must be 'text' or 'bytes', got {kind!r}")
            data = fetch_blob(digest)
            if data is None:
                if digest not in missing:
                    missing.append(digest)
                return b""
            if kind == "bytes":
                return data
            try:
                return data.decode("utf-8")
            except UnicodeDecodeError as err:
                raise RequestError(f"{where}: blob {digest} is declared text but is not "
                                   f"UTF-8 ({err.reason} at byte {err.start})") from err
    raise RequestError(f"{where}: expected a string, {{\"b64\": ...}} or "
                       f"{{\"sha256\": ..., \"type\": ...}}, got {_type_name(value)}")


def _decode_limits(value: Any) -> Limits:
    if value is None:
        return Limits()
    if not isinstance(value, dict):
        raise RequestError(f"limits: expected an object, got {_type_name(value)}")
    unknown = sorted(set(value) - set(_LIMIT_FIELDS))
    if unknown:
        raise RequestError(f"limits.{unknown[0]}: unknown field (known: "
                           f"{', '.join(_LIMIT_FIELDS)})")
    kwargs = {}
    for name, kind in _LIMIT_FIELDS.items():
        if name not in value:
            continue
        item = value[name]
        ok = (isinstance(item, int | float) if kind is float else isinstance(item, int))
        if isinstance(item, bool) or not ok:
            raise RequestError(f"limits.{name}: expected {kind.__name__}, got "
                               f"{_type_name(item)}")
        kwargs[name] = item
    try:
        return Limits(**kwargs)
    except ValueError as err:
        raise RequestError(f"limits: {err}") from err


def decode_run_request(body: Any, fetch_blob: Callable[[str], bytes | None],
                       max_tests: int) -> RunRequest:
    """Validate a RunRequest body and resolve its blob references.

    Raises RequestError (400) naming the first bad field, or MissingBlobs (409) listing every
    referenced blob the node lacks.
    """
    if not isinstance(body, dict):
        raise RequestError(f"body: expected a JSON object, got {_type_name(body)}")
    unknown = sorted(set(body) - _RUN_FIELDS)
    if unknown:
        raise RequestError(f"{unknown[0]}: unknown field (API {API_VERSION} fields: "
                           f"{', '.join(sorted(_RUN_FIELDS))})")
    for name in ("request_id", "program", "tests"):
        if name not in body:
            raise RequestError(f"{name}: missing required field")
    request_id = body["request_id"]
    if not isinstance(request_id, str) or not REQUEST_ID_RE.match(request_id):
        raise RequestError("request_id: must match [A-Za-z0-9][A-Za-z0-9._:-]{0,127}")
    program = body["program"]
    if not isinstance(program, str):
        raise RequestError(f"program: expected a string, got {_type_name(program)}")
    if not program.strip():
        raise RequestError("program: is empty")
    tests_json = body["tests"]
    if not isinstance(tests_json, list):
        raise RequestError(f"tests: expected a list, got {_type_name(tests_json)}")
    if not tests_json:
        raise RequestError("tests: is empty (send at least one test)")
    if len(tests_json) > max_tests:
        raise RequestError(f"tests: {len(tests_json)} tests exceed this node's limit of "
                           f"{max_tests} per request; split the batch", http_status=413,
                           code="too_many_tests")
    interface = body.get("interface", "stdio")
    if interface not in INTERFACES:
        raise RequestError(f"interface: must be one of {list(INTERFACES)}, got {interface!r}")
    tolerance = body.get("float_tolerance")
    if tolerance is not None and (isinstance(tolerance, bool)
                                  or not isinstance(tolerance, int | float) or tolerance < 0):
        raise RequestError(f"float_tolerance: expected a number >= 0 or null, got {tolerance!r}")
    aggregate = body.get("repeat_aggregate")
    if aggregate is not None and aggregate not in REPEAT_AGGREGATES:
        raise RequestError(f"repeat_aggregate: must be one of {list(REPEAT_AGGREGATES)} or null, "
                           f"got {aggregate!r}")
    limits = _decode_limits(body.get("limits"))
    kinds = body.get("test_kinds")
    if kinds is not None and not (isinstance(kinds, list)
                                  and all(isinstance(k, str) for k in kinds)):
        raise RequestError(f"test_kinds: expected a list of strings or null, got "
                           f"{_type_name(kinds)}")
    stop = body.get("stop_after_failure", False)
    if not isinstance(stop, bool):
        raise RequestError(f"stop_after_failure: expected true or false, got {_type_name(stop)}")

    missing: list[str] = []
    tests = []
    for i, test in enumerate(tests_json):
        where = f"tests[{i}]"
        if not isinstance(test, dict):
            raise RequestError(f"{where}: expected an object, got {_type_name(test)}")
        extra = sorted(set(test) - {"input", "expected"})
        if extra:
            raise RequestError(f"{where}.{extra[0]}: unknown field (input, expected)")
        if "input" not in test:
            raise RequestError(f"{where}.input: missing required field")
        data_in = _decode_data(test["input"], f"{where}.input", fetch_blob, missing)
        expected = test.get("expected")
        data_out = (None if expected is None
                    else _decode_data(expected, f"{where}.expected", fetch_blob, missing))
        tests.append(TestCase(data_in, data_out))
    checker = body.get("checker")
    if checker is not None:
        checker = _decode_data(checker, "checker", fetch_blob, missing)
        if isinstance(checker, bytes):
            raise RequestError("checker: must be text (a Python source)")
    if missing:
        raise MissingBlobs(missing)
    try:  # the request's own validator (what the JSON checks above cannot see)
        return RunRequest(program, tuple(tests), limits, interface, checker,
                          None if tolerance is None else float(tolerance), aggregate,
                          None if kinds is None else tuple(kinds), request_id=request_id,
                          stop_after_failure=stop)
    except (TypeError, ValueError) as err:
        raise RequestError(str(err)) from None


def encode_run_response(request_id: str, node: str,
                        results: Sequence[TestResult]) -> dict[str, Any]:
    return {"api": API_VERSION, "request_id": request_id, "node": node,
            "results": [r.to_json() for r in results]}


def error_body(code: str, message: str, **extra: Any) -> dict[str, Any]:
    return {"error": code, "message": message, **extra}
