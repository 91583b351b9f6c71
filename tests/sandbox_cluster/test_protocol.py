"""Wire format v1: encode/decode round trips, blob references, reply validation."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sandbox_cluster.api import Limits, Status, TestCase, TestResult
from sandbox_cluster.content_store import sha256_hex
from sandbox_cluster.protocol import (
    MissingBlobs,
    ProtocolError,
    RequestError,
    RunRequest,
    decode_run_request,
    decode_run_response,
    encode_run_request,
    encode_run_response,
)


def blob_references(body: dict) -> set[str]:
    """The digests a RunRequest body references (written from the wire format: the `DATA`
    fields of the tests and the checker)."""
    fields = [field for test in body["tests"] for field in (test["input"], test.get("expected"))]
    return {field["sha256"] for field in [*fields, body.get("checker")]
            if isinstance(field, dict) and "sha256" in field}


data = st.one_of(st.text(max_size=40), st.binary(max_size=40))
cases = st.builds(TestCase, data, st.one_of(st.none(), data))


@given(st.lists(cases, min_size=1, max_size=8), st.integers(0, 50),
       st.sampled_from([None, "min", "median"]))
def test_requests_round_trip_inline_or_by_blob(tests, inline_limit, aggregate):
    request = RunRequest("print(1)", tuple(tests), Limits(time_s=2, repeats=3), "stdio", None,
                         0.5, aggregate, request_id="rid-1")
    body, blobs = encode_run_request(request, inline_limit)
    assert blob_references(body) == set(blobs)
    assert all(sha256_hex(v) == k and len(v) > inline_limit for k, v in blobs.items())
    assert decode_run_request(body, blobs.get, max_tests=100) == request


def test_missing_blobs_are_all_reported_once():
    big = "x" * 100
    request = RunRequest("p", (TestCase(big, big), TestCase("y" * 100)), Limits(),
                         request_id="r")
    body, blobs = encode_run_request(request, inline_limit=10)
    with pytest.raises(MissingBlobs) as caught:
        decode_run_request(body, lambda digest: None, max_tests=10)
    assert caught.value.missing == list(blobs) and len(blobs) == 2
    assert caught.value.http_status == 409


def test_text_blob_must_be_utf8():
    raw = b"\xff\xfe"
    body = {"request_id": "r", "program": "p",
            "tests": [{"input": {"sha256": sha256_hex(raw), "type": "text"}}]}
    with pytest.raises(RequestError, match=r"tests\[0\].input: blob .* not UTF-8"):
        decode_run_request(body, {sha256_hex(raw): raw}.get, max_tests=10)
    body["tests"][0]["input"]["type"] = "bytes"
    assert decode_run_request(body, {sha256_hex(raw): raw}.get, 10).tests[0].input == raw


def test_repeat_aggregate_is_validated():
    body = {"request_id": "r", "program": "p", "tests": [{"input": "1"}],
            "repeat_aggregate": "mean"}
    with pytest.raises(RequestError, match="repeat_aggregate: must be one of"):
        decode_run_request(body, lambda d: None, 10)


def test_replies_are_checked_against_the_request():
    results = [TestResult(Status.SUCCESS, 0.1, stdout=b"1"), TestResult.infra_error("x")]
    reply = encode_run_response("r", "node:1", results)
    assert decode_run_response(reply, "r", 2) == results
    with pytest.raises(ProtocolError, match="for request 'r'"):
        decode_run_response(reply, "other", 2)
    with pytest.raises(ProtocolError, match="2 results for 3 tests"):
        decode_run_response(reply, "r", 3)
    broken = {**reply, "results": [{"status": "exploded", "duration_s": 1}, reply["results"][1]]}
    with pytest.raises(ProtocolError, match=r"results\[0\] unparseable"):
        decode_run_response(broken, "r", 2)
    with pytest.raises(ProtocolError, match="not an object"):
        decode_run_response([], "r", 2)


def test_one_run_request_type_with_one_validator():
    """The client's job, the wire's request and the slot's batch are one type, and every
    path refuses a bad request with the same message."""
    from sandbox_cluster import api, client, protocol
    from sandbox_cluster.jails import batch

    assert client.Job is protocol.RunRequest is batch.BatchJob is api.RunRequest
    bad = {"interface": "grpc"}
    with pytest.raises(ValueError, match="interface: must be one of") as direct:
        api.RunRequest("print(1)", (TestCase("1"),), Limits(), **bad)
    body, _ = encode_run_request(RunRequest("print(1)", (TestCase("1"),), request_id="r"), 10**9)
    body["tests"] = [{"input": "[1]"}]
    body["interface"] = "function"
    with pytest.raises(protocol.RequestError, match=r"tests\[0\]\.input: must be a JSON object"):
        decode_run_request(body, {}.get, max_tests=10)
    with pytest.raises(ValueError, match=r"test_kinds: 1 kinds for 2 tests"):
        api.RunRequest("p", (TestCase("1"), TestCase("2")), test_kinds=("T0",))
    request = api.RunRequest("p", (TestCase("1"), TestCase("2")), test_kinds=("T0", "TO"))
    assert request.subset([1]).tests == (TestCase("2"),) and request.subset([1]).test_kinds == (
        "TO",)
    assert "interface" in str(direct.value)
