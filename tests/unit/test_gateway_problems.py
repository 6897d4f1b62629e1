"""The gateway's errors and OpenAPI document without a server: every error, whichever part
answers it (a route, FastAPI's validation, the router's 404 and 405, the middlewares), is
RFC 9457 problem details with its stable `type`; the document names its operations, tags
them, states the API keys as a bearer scheme, types the events as `text/event-stream` and
every error as `application/problem+json`; Swagger UI comes from the installed package."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient

from agentkeel.gateway.app import create_app
from agentkeel.gateway.keys import ApiKey, ApiKeys
from agentkeel.schemas.actor import Actor
from agentkeel.schemas.gateway import PROBLEM_TYPES

TOKEN = "k" * 32
AUTH = {"Authorization": f"Bearer {TOKEN}"}


class _NoServers:
    """An `AgentClient` stand-in for routes that refuse before reaching Temporal or Redis."""

    redis = None
    temporal = None


def _gateway() -> TestClient:
    key = ApiKey(token=TOKEN, tenant="acme", actor=Actor(role="staff", name="ops"))
    return TestClient(create_app(_NoServers(), ApiKeys([key])))  # type: ignore[arg-type]


@pytest.fixture(scope="module")
def http() -> TestClient:
    return _gateway()


def _problem(answer: Any, status: int, name: str) -> dict[str, Any]:
    assert answer.status_code == status, answer.text
    assert answer.headers["content-type"] == "application/problem+json"
    body: dict[str, Any] = answer.json()
    assert body["type"] == f"/problems/{name}"
    assert body["title"] == PROBLEM_TYPES[name][0]
    assert body["status"] == status
    assert isinstance(body["detail"], str) and body["detail"]
    return body


def test_every_error_is_problem_details_with_a_stable_type(http: TestClient) -> None:
    missing_key = http.get("/v1/runs/w1")
    _problem(missing_key, 401, "unauthenticated")
    assert missing_key.headers["www-authenticate"] == "Bearer"
    _problem(http.get("/v1/runs/w1", headers={"Authorization": "Bearer nope"}), 401,
             "unauthenticated")  # fmt: skip
    _problem(http.get("/no/such/path", headers=AUTH), 404, "not-found")
    wrong_method = http.delete("/v1/runs", headers=AUTH)
    _problem(wrong_method, 405, "method-not-allowed")
    assert "POST" in wrong_method.headers["allow"]
    invalid = _problem(http.post("/v1/runs", json={"question": " "}, headers=AUTH), 422,
                       "invalid-request")  # fmt: skip
    assert invalid["errors"][0]["loc"] == ["body", "question"]
    assert invalid["detail"].startswith("body.question: ")
    unknown = _problem(http.post("/v1/runs", json={"question": "hi", "colour": "red"},
                                 headers=AUTH), 422, "invalid-request")  # fmt: skip
    assert ["body", "colour"] in [e["loc"] for e in unknown["errors"]]
    plain = http.post("/v1/runs", content=b"hi", headers={**AUTH, "content-type": "text/plain"})
    _problem(plain, 415, "unsupported-media-type")
    huge = http.post("/v1/runs", content=b"x" * 70_000,
                     headers={**AUTH, "content-type": "application/json"})  # fmt: skip
    _problem(huge, 413, "body-too-large")
    other_tenant = http.post("/v1/runs", json={"question": "hi", "tenant": "other"}, headers=AUTH)
    _problem(other_tenant, 403, "forbidden")
    for bad, says in (('"\\ud800"', "lone surrogate U+D800"), ('"a\\u0000"', "U+0000"),
                      ("1e400", "finite"), (str(2**70), "64-bit")):  # fmt: skip
        body = (
            '{"question": "hi", "plan": {"steps": [{"id": "s1", "tool": "search_kb", '
            f'"args": {{"query": {bad}}}}}]}}}}'
        )
        plan = http.post("/v1/runs", content=body.encode(),
                         headers={**AUTH, "content-type": "application/json"})  # fmt: skip
        assert says in _problem(plan, 422, "invalid-request")["detail"], bad
    # A value the audit's query model refuses is answered as FastAPI's own refusals are: a
    # line naming the parameter, every error in `errors`, nothing of the input echoed.
    for query, where in (("limit=-1", "limit"), (f"limit={10**30}", "limit"),
                         ("actor=%00", "actor"), ("actor=" + "a" * 600, "actor")):  # fmt: skip
        audit = _problem(http.get(f"/v1/audit?{query}", headers=AUTH), 422, "invalid-request")
        assert audit["detail"].startswith(f"query.{where}: ") and "\n" not in audit["detail"]
        assert audit["errors"][0]["loc"] == ["query", where], query
        assert "input" not in audit["errors"][0] and "a" * 600 not in str(audit), query


def test_each_problem_type_is_described_where_its_uri_points(http: TestClient) -> None:
    for name, (title, meaning) in PROBLEM_TYPES.items():
        described = http.get(f"/problems/{name}")
        assert described.json() == {"type": f"/problems/{name}", "title": title,
                                     "description": meaning}  # fmt: skip
    _problem(http.get("/problems/no-such-kind"), 404, "not-found")


def test_the_openapi_document_is_one_generators_can_use(http: TestClient) -> None:
    doc = http.get("/openapi.json").json()
    operations = {
        op["operationId"]: (method, path, op)
        for path, methods in doc["paths"].items()
        for method, op in methods.items()
    }
    assert set(operations) == {
        "startRun", "getRun", "streamRunEvents", "cancelRun", "approveRun", "listAudit",
    }  # fmt: skip
    assert doc["components"]["securitySchemes"]["apiKey"] == {
        **doc["components"]["securitySchemes"]["apiKey"], "type": "http", "scheme": "bearer",
    }  # fmt: skip
    for _, path, op in operations.values():
        assert op["tags"] and op["security"] == [{"apiKey": []}, {}], path
        assert "authorization" not in {p["name"].lower() for p in op.get("parameters", [])}
        for status, answer in op["responses"].items():
            if status[0] in "45":
                assert list(answer["content"]) == ["application/problem+json"], (path, status)
    _, _, events = operations["streamRunEvents"]
    assert list(events["responses"]["200"]["content"]) == ["text/event-stream"]
    _, _, start = operations["startRun"]
    assert start["responses"]["422"]["content"]["application/problem+json"]["schema"] == {
        "$ref": "#/components/schemas/ValidationProblem"
    }
    assert "HTTPValidationError" not in doc["components"]["schemas"]


def test_swagger_ui_is_served_from_the_package_not_a_cdn(http: TestClient) -> None:
    page = http.get("/docs")
    assert page.status_code == 200
    assert "cdn" not in page.text.lower()
    assert '"/docs/swagger-ui-bundle.js"' in page.text
    script = http.get("/docs/swagger-ui-bundle.js")
    assert script.status_code == 200 and len(script.content) > 500_000
    assert http.get("/docs/swagger-ui.css").headers["content-type"].startswith("text/css")
    _problem(http.get("/docs/other.js"), 404, "not-found")


def test_metrics_count_requests_by_route_template_method_and_status() -> None:
    http = _gateway()  # a gateway of this test's own: its counts start at zero
    http.get("/v1/runs/some-run")  # 401: no key
    http.get("/v1/runs/other-run")
    http.get("/no/such/path")
    page = http.get("/metrics")
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/plain")
    text = page.text
    assert (
        'agentkeel_gateway_requests_total{method="GET",route="/v1/runs/{workflow_id}",'
        'status="401"} 2.0'
    ) in text
    assert 'route="unmatched",status="404"' in text
    assert "some-run" not in text, "ids are not labels"
    assert "agentkeel_gateway_request_duration_seconds_bucket" in text
    assert "agentkeel_gateway_event_streams 0.0" in text
