"""The JSON endpoints the site's pages call (spans, post-edits, progress polls) are in the OpenAPI schema,
each with its answer's shape and the refusals it can give, so a script and the schema fuzzer know them as
they know the rest of the API."""

from __future__ import annotations

import pytest
from drf_spectacular.generators import SchemaGenerator

SPANS = "/nuggets/{name}/{turn_id}/nuggets/"
# (method, path): (operation id, the status of its answer)
PAGE_ENDPOINTS = {
    ("post", SPANS): ("nuggets_create", "201"),
    ("post", f"{SPANS}{{id}}/"): ("nuggets_update", "200"),
    ("post", f"{SPANS}{{id}}/delete/"): ("nuggets_delete", "200"),
    ("post", f"{SPANS}{{id}}/duplicate/"): ("nuggets_duplicate", "200"),
    ("post", "/rag-nuggets/{work_id}/{index}/edits/"): ("rag_nuggets_edit", "200"),
    ("get", "/console/collections/{name}/imports/{id}/status.json"): ("console_import_status", "200"),
    ("get", "/judging/jobs/{id}/progress.json"): ("jobs_progress", "200"),
    ("get", "/judging/agreement/{name}/live.json"): ("agreement_live", "200"),
}


@pytest.fixture(scope="module")
def paths() -> dict:
    return SchemaGenerator().get_schema(request=None, public=True)["paths"]


@pytest.mark.parametrize(("method", "path"), PAGE_ENDPOINTS)
def test_each_page_endpoint_is_in_the_schema_with_its_answer_and_refusals(paths, method, path):
    operation_id, success = PAGE_ENDPOINTS[(method, path)]

    operation = paths[path][method]

    assert operation["operationId"] == operation_id
    assert "$ref" in operation["responses"][success]["content"]["application/json"]["schema"]
    assert {"403", "404", "429"} <= set(operation["responses"])
    if method == "post":
        assert {"400", "413", "415"} <= set(operation["responses"])
