"""The policy-test runner: Cedar CLI's run-tests format, the conformance format, coverage."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from corpus import DATA_ROOT

from cedarlite import Decision, PolicySet, Schema
from cedarlite.runtests import TestError, load_tests, run_tests

POLICY = (
    "permit (\n"
    '  principal == User::"alice",\n'
    '  action == Action::"view",\n'
    '  resource in Album::"jane_vacation"\n'
    ");\n"
    '@id("no-bob")\n'
    'forbid (principal == User::"bob", action, resource);\n'
)
SCHEMA = (
    "entity User in [UserGroup]; entity UserGroup;\n"
    "entity Photo in [Album]; entity Album in [Album];\n"
    "action view appliesTo { principal: [User], resource: [Photo] };\n"
)
ENTITIES = [
    {"uid": {"type": "User", "id": "alice"}, "attrs": {}, "parents": []},
    {
        "uid": {"type": "Photo", "id": "p"},
        "attrs": {},
        "parents": [{"type": "Album", "id": "jane_vacation"}],
    },
]


def _case(principal: str, decision: str, reason: list[str], **extra: object) -> dict[str, object]:
    return {
        "request": {
            "principal": f'User::"{principal}"',
            "action": 'Action::"view"',
            "resource": 'Photo::"p"',
            "context": {},
        },
        "entities": ENTITIES,
        "decision": decision,
        "reason": reason,
        "num_errors": 0,
        **extra,
    }


@pytest.fixture()
def sandbox(tmp_path: Path) -> Path:
    (tmp_path / "policy.cedar").write_text(POLICY)
    (tmp_path / "schema.cedarschema").write_text(SCHEMA)
    (tmp_path / "entities.json").write_text(json.dumps(ENTITIES))
    return tmp_path


def test_cedar_format_passes_and_fails_like_cedar(sandbox: Path) -> None:
    tests = [
        _case("alice", "allow", ["policy0"], name="alice views"),
        _case("bob", "deny", ["no-bob"]),  # the `@id`, as Cedar's CLI names policies
        _case("bob", "deny", ["policy1"]),
        {**_case("alice", "allow", []), "entities": "entities.json"},
        _case("alice", "deny", [], name="wrong decision"),
        _case("alice", "allow", ["missing-policy"], name="missing reason"),
        _case("alice", "allow", ["policy0"], name="wrong error count", num_errors=1),
    ]
    (sandbox / "tests.json").write_text(json.dumps(tests))
    ps = PolicySet.from_file(sandbox / "policy.cedar")
    report = run_tests([load_tests(sandbox / "tests.json", ps)])
    assert (report.passed, report.failed) == (4, 3)
    failures = {r.name: r.failure for r in report.results if not r.passed}
    assert failures == {
        "wrong decision": "expected Deny, got Allow",
        "missing reason": "missing reason(s): `missing-policy`",
        "wrong error count": "expected 1 error(s), got 0",
    }
    assert report.results[0].response is not None
    assert report.results[0].response.decision is Decision.ALLOW


def test_a_schema_checks_requests_and_policies(sandbox: Path) -> None:
    schema = Schema.from_str(SCHEMA)
    bad_request = _case("alice", "allow", [])
    bad_request["request"]["resource"] = 'User::"alice"'  # type: ignore[index]
    (sandbox / "tests.json").write_text(json.dumps([_case("alice", "allow", []), bad_request]))
    ps = PolicySet.from_file(sandbox / "policy.cedar")
    report = run_tests([load_tests(sandbox / "tests.json", ps, schema)])
    assert [r.passed for r in report.results] == [True, False]
    assert report.results[1].failure.startswith("error: ")
    invalid = PolicySet.from_str("permit (principal, action, resource) when { principal.nope };")
    report = run_tests([load_tests(sandbox / "tests.json", invalid, schema)])
    assert all(r.failure.startswith("policy set validation failed") for r in report.results)


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ('{"wrong-format": true}', "expected a JSON array of test cases"),
        ("[1]", "test 0: expected a test object"),
        ('[{"request": {}}]', "test 0: missing `entities`, `decision`, `reason`, `num_errors`"),
        ("[", "invalid JSON"),
    ],
)
def test_malformed_test_files(sandbox: Path, content: str, message: str) -> None:
    (sandbox / "bad.json").write_text(content)
    with pytest.raises(TestError) as info:
        load_tests(sandbox / "bad.json", PolicySet())
    assert message in info.value.message and info.value.source == str(sandbox / "bad.json")


def test_cedar_format_needs_policies(sandbox: Path) -> None:
    (sandbox / "tests.json").write_text("[]")
    with pytest.raises(TestError, match="give the policies it tests"):
        load_tests(sandbox / "tests.json")


def test_coverage_lists_policies_no_case_made_determining(sandbox: Path) -> None:
    (sandbox / "tests.json").write_text(json.dumps([_case("alice", "allow", [])]))
    ps = PolicySet.from_file(sandbox / "policy.cedar")
    coverage = run_tests([load_tests(sandbox / "tests.json", ps)]).coverage()
    assert (coverage.covered, coverage.total, coverage.percent) == (1, 2, 50.0)
    assert coverage.uncovered == ((str(sandbox / "policy.cedar"), "policy1", 6, "no-bob"),)
    assert coverage.meets(50) and not coverage.meets(50.1)


@pytest.mark.skipif(DATA_ROOT is None, reason="cedar-conformance data not found")
def test_the_handwritten_conformance_tests_pass() -> None:
    assert DATA_ROOT is not None
    files = sorted((DATA_ROOT / "tests").glob("*/*.json"))
    report = run_tests(load_tests(f) for f in files)
    assert len(files) == 22
    assert (report.passed, report.failed) == (96, 0)  # 74 requests and 22 validation flags


@pytest.mark.skipif(DATA_ROOT is None, reason="cedar-conformance data not found")
def test_a_wrong_conformance_expectation_fails(tmp_path: Path) -> None:
    assert DATA_ROOT is not None
    root = tmp_path / "conformance"
    shutil.copytree(DATA_ROOT / "tests", root / "tests")
    shutil.copytree(DATA_ROOT / "sample-data", root / "sample-data")
    path = root / "tests" / "ip" / "1.json"
    doc = json.loads(path.read_text())
    doc["requests"][0]["decision"] = (
        "deny" if doc["requests"][0]["decision"] == "allow" else "allow"
    )
    doc["requests"][1]["reason"] = [*doc["requests"][1]["reason"], "policy9"]
    path.write_text(json.dumps(doc))
    report = run_tests([load_tests(path)])
    failed = [r for r in report.results if not r.passed]
    assert len(failed) == 2
    assert failed[0].failure.startswith("expected ")
    assert "missing reason(s): `policy9`" in failed[1].failure
