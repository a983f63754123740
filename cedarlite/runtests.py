"""Policy tests: the Cedar CLI's ``run-tests`` format, Cedar's conformance format, and coverage.

**Cedar CLI format** (what ``cedar run-tests --tests FILE`` reads): a JSON array of cases run
against the policies given on the command line.

```json
[{"name": "alice may view her photo",
  "request": {"principal": "User::\\"alice\\"", "action": "Action::\\"view\\"",
              "resource": "Photo::\\"p1\\"", "context": {}},
  "entities": [{"uid": {"type": "User", "id": "alice"}, "attrs": {}, "parents": []}],
  "decision": "allow", "reason": ["policy0"], "num_errors": 0}]
```

``name`` is optional; uids may also be ``{"type", "id"}`` objects; ``entities`` may also be the
path of an entity file, relative to the test file. As in Cedar, a case passes when the decision
is the expected one, every policy in ``reason`` is among the determining policies (named by id,
or by ``@id`` annotation as Cedar's CLI names them), and exactly ``num_errors`` policies failed
to evaluate.

**Conformance format** (Cedar's integration tests): an object naming its own ``policies``,
``entities`` and ``schema`` files, ``shouldValidate`` (checked with the strict validator) and
``requests`` (``description``, ``principal``/``action``/``resource`` as ``{"type", "id"}``,
``context``, optional ``validateRequest``, and the expected ``decision``, ``reason`` and
``errors``, the last two compared as sets). Paths are resolved against the test file's directory,
then its ancestors (the conformance data names them from its root).

**Coverage**: a policy is covered when some passing or failing case had it among its
determining policies (the reasons of the decision), as ``opa test --coverage`` counts lines a
test evaluated. :meth:`TestReport.coverage` lists the policies no case made determining.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, NamedTuple

from .authorizer import Decision, Response, is_authorized
from .data.entities import Entities
from .data.jsonvalue import load_json
from .errors import CedarliteError
from .policyset import PolicySet

if TYPE_CHECKING:
    from .schema.model import Schema

__all__ = [
    "Coverage",
    "PolicyTest",
    "TestError",
    "TestReport",
    "TestResult",
    "TestSuite",
    "Uncovered",
    "load_tests",
    "run_tests",
]


class TestError(CedarliteError):
    """A test file that is not in either test format (or names files that cannot be read)."""

    __test__ = False  # not a pytest test class
    code = "E0900"


@dataclass(frozen=True)
class PolicyTest:
    """One expected decision: a request, its entities and what the answer must be.

    ``reason`` lists policies that must be determining; ``exact`` (the conformance format) makes
    it the whole set. ``num_errors`` (Cedar format) is the number of erroring policies;
    ``errors`` (conformance format) their ids.
    """

    __test__ = False

    name: str
    request: Mapping[str, Any]
    entities: Any
    decision: Decision
    reason: tuple[str, ...] = ()
    exact: bool = False
    num_errors: int | None = None
    errors: tuple[str, ...] | None = None
    validate_request: bool = True


@dataclass(frozen=True)
class TestSuite:
    """A test file read: its cases, the policies and schema they run against.

    ``should_validate`` (conformance format) is the expected result of validating the policies
    against the schema; ``entities`` the store shared by every case when the file names one.
    """

    __test__ = False

    source: str
    policies: PolicySet
    tests: tuple[PolicyTest, ...]
    schema: Schema | None = None
    entities: Entities | None = None
    should_validate: bool | None = None


@dataclass(frozen=True)
class TestResult:
    """How one case (or a suite's validation check) fared: ``failure`` is ``""`` on success."""

    __test__ = False

    suite: TestSuite
    name: str
    failure: str = ""
    response: Response | None = None

    @property
    def passed(self) -> bool:
        """The case met every expectation."""
        return not self.failure


class Uncovered(NamedTuple):
    """A policy no case made determining: where it is, its id and its ``@id`` (if any)."""

    source: str | None
    policy_id: str
    line: int | None
    name: str | None


@dataclass(frozen=True)
class Coverage:
    """Policies made determining by some case, out of the policies that take part in decisions.

    ``uncovered`` lists the others.
    """

    covered: int
    total: int
    uncovered: tuple[Uncovered, ...] = ()

    @property
    def percent(self) -> float:
        """Covered share in percent, rounded down to 0.1 (100.0 only when all are covered)."""
        if self.total == 0:
            return 100.0
        return (self.covered * 1000 // self.total) / 10

    def meets(self, threshold: float) -> bool:
        """``covered / total >= threshold%``, exactly (no rounding in the comparison)."""
        return self.covered * 100 >= threshold * self.total


@dataclass(frozen=True)
class TestReport:
    """The results of running suites, in order."""

    __test__ = False

    results: tuple[TestResult, ...]
    suites: tuple[TestSuite, ...] = field(default=())

    @property
    def passed(self) -> int:
        """Cases that passed."""
        return sum(r.passed for r in self.results)

    @property
    def failed(self) -> int:
        """Cases that failed or could not run."""
        return len(self.results) - self.passed

    def coverage(self) -> Coverage:
        """Which active policies of the suites' sets some case made determining."""
        determining: set[tuple[int, str]] = set()
        for r in self.results:
            if r.response is not None:
                determining.update((id(r.suite.policies), pid) for pid in r.response.reasons)
        total = covered = 0
        uncovered: list[Uncovered] = []
        seen: set[int] = set()
        for suite in self.suites:
            ps = suite.policies
            if id(ps) in seen:
                continue
            seen.add(id(ps))
            for p in ps.active:
                total += 1
                if (id(ps), p.id) in determining:
                    covered += 1
                else:
                    origin = ps.origin(p.id if p.template_id is None else p.template_id)
                    line = p.span.line if p.span is not None else None
                    uncovered.append(Uncovered(origin.source, p.id, line, p.annotations.get("id")))
        return Coverage(covered, total, tuple(uncovered))


# ---------------------------------------------------------------------------------------------
# Loading


def load_tests(
    path: str | os.PathLike[str],
    policies: PolicySet | None = None,
    schema: Schema | None = None,
) -> TestSuite:
    """Read a test file in either format.

    A Cedar-format file runs against ``policies`` (required for it) and ``schema``; a
    conformance-format file names its own. Raises :class:`TestError` (or the parse error of a
    file it names) with the file and position of the problem.
    """
    source = os.fspath(path)
    doc = _read_json(source, "test")
    if isinstance(doc, list):
        if policies is None:
            raise TestError(
                "this test file is in the Cedar CLI format: give the policies it tests",
                source=source,
                help="cedarlite run-tests --policies POLICIES --tests FILE",
            )
        return TestSuite(source, policies, _cedar_cases(doc, source), schema)
    if isinstance(doc, dict) and "requests" in doc:
        return _conformance_suite(doc, source)
    raise TestError(
        "expected a JSON array of test cases (Cedar CLI format) or an object with `requests` "
        "(conformance format)",
        source=source,
    )


def _cedar_cases(doc: list[Any], source: str) -> tuple[PolicyTest, ...]:
    base = os.path.dirname(source)
    out = []
    for i, case in enumerate(doc):
        where = f"test {i}"
        if not isinstance(case, dict):
            raise TestError(f"{where}: expected a test object", source=source)
        _require(case, ("request", "entities", "decision", "reason", "num_errors"), where, source)
        name = case.get("name")
        name = name if isinstance(name, str) else "(unnamed)"
        if name != "(unnamed)":
            where = f"test `{name}`"
        request = case["request"]
        if not isinstance(request, dict):
            raise TestError(f"{where}: `request` must be an object", source=source)
        entities = case["entities"]
        if isinstance(entities, str):
            entities = _read_json(_resolve(entities, base, source, where), where)
        reason = case["reason"]
        if not (isinstance(reason, list) and all(isinstance(r, str) for r in reason)):
            raise TestError(f"{where}: `reason` must be an array of policy ids", source=source)
        num_errors = case["num_errors"]
        if not isinstance(num_errors, int) or isinstance(num_errors, bool) or num_errors < 0:
            raise TestError(f"{where}: `num_errors` must be a count", source=source)
        out.append(
            PolicyTest(
                name=name,
                request=request,
                entities=entities,
                decision=_decision(case["decision"], where, source),
                reason=tuple(reason),
                num_errors=num_errors,
            )
        )
    return tuple(out)


def _conformance_suite(doc: dict[str, Any], source: str) -> TestSuite:
    # lazy on purpose: only test files that name a schema need the schema stage
    from .schema.model import Schema

    _require(doc, ("policies", "entities", "schema", "requests"), "test file", source)
    base = os.path.dirname(source)
    for key in ("policies", "entities", "schema"):
        if not isinstance(doc[key], str):
            raise TestError(f"`{key}` must be the path of a file", source=source)
    schema_path = _resolve(doc["schema"], base, source, "schema")
    schema_text = _read_text(schema_path, "schema")
    schema = (
        Schema.from_json(schema_text, schema_path)
        if schema_path.endswith(".json")
        else Schema.from_str(schema_text, schema_path)
    )
    policies = PolicySet.from_file(_resolve(doc["policies"], base, source, "policies"))
    entities_path = _resolve(doc["entities"], base, source, "entities")
    entities = Entities.from_json(
        _read_text(entities_path, "entities"), schema=schema, source=entities_path
    )
    cases = []
    requests = doc["requests"]
    if not isinstance(requests, list):
        raise TestError("`requests` must be an array", source=source)
    for i, req in enumerate(requests):
        where = f"request {i}"
        if not isinstance(req, dict):
            raise TestError(f"{where}: expected an object", source=source)
        _require(
            req, ("principal", "action", "resource", "decision", "reason", "errors"), where, source
        )
        for key in ("reason", "errors"):
            if not (isinstance(req[key], list) and all(isinstance(x, str) for x in req[key])):
                raise TestError(f"{where}: `{key}` must be an array of policy ids", source=source)
        cases.append(
            PolicyTest(
                name=str(req.get("description") or where),
                request={
                    k: req[k] for k in ("principal", "action", "resource", "context") if k in req
                },
                entities=None,
                decision=_decision(req["decision"], where, source),
                reason=tuple(req["reason"]),
                exact=True,
                errors=tuple(req["errors"]),
                validate_request=req.get("validateRequest", True) is not False,
            )
        )
    should = doc.get("shouldValidate")
    return TestSuite(
        source,
        policies,
        tuple(cases),
        schema,
        entities,
        should if isinstance(should, bool) else None,
    )


def _require(obj: Mapping[str, Any], keys: Sequence[str], where: str, source: str) -> None:
    missing = [k for k in keys if k not in obj]
    if missing:
        names = ", ".join(f"`{k}`" for k in missing)
        raise TestError(f"{where}: missing {names}", source=source)


def _decision(value: Any, where: str, source: str) -> Decision:
    if isinstance(value, str) and value.lower() in ("allow", "deny"):
        return Decision.ALLOW if value.lower() == "allow" else Decision.DENY
    raise TestError(f'{where}: `decision` must be "allow" or "deny"', source=source)


def _resolve(rel: str, base: str, source: str, what: str) -> str:
    """``rel`` against ``base`` and then its ancestors: the first that exists."""
    if os.path.isabs(rel):
        return rel
    here = os.path.abspath(base or ".")
    while True:
        candidate = os.path.join(here, rel)
        if os.path.exists(candidate):
            return candidate
        parent = os.path.dirname(here)
        if parent == here:
            raise TestError(f"{what}: cannot find `{rel}` next to the test file", source=source)
        here = parent


def _read_text(path: str, what: str) -> str:
    try:
        with open(path, encoding="utf-8") as f:
            return f.read()
    except (OSError, UnicodeDecodeError) as err:
        raise TestError(f"cannot read {what} file: {err}", source=path) from None


def _read_json(path: str, what: str) -> Any:
    return load_json(_read_text(path, what), path, TestError)


# ---------------------------------------------------------------------------------------------
# Running


def run_tests(suites: Iterable[TestSuite]) -> TestReport:
    """Run every case of every suite (the compiled engine) and report each result."""
    suites = tuple(suites)
    results: list[TestResult] = []
    for suite in suites:
        results += _run_suite(suite)
    return TestReport(tuple(results), suites)


def _run_suite(suite: TestSuite) -> list[TestResult]:
    out: list[TestResult] = []
    blocked = ""
    if suite.schema is not None:
        # lazy on purpose: only test files that name a schema need the schema stage
        from .schema.validator import validate

        result = validate(suite.policies, suite.schema)
        if suite.should_validate is not None:
            failure = ""
            if result.passed != suite.should_validate:
                failure = f"validation {'passed' if result.passed else 'failed'}, expected it to "
                failure += "pass" if suite.should_validate else "fail"
            out.append(TestResult(suite, "validation", failure))
        elif not result.passed or result.warnings:
            # As Cedar: tests against a schema need policies that validate without warnings.
            first = (*result.errors, *result.warnings)[0].to_error()
            blocked = f"policy set validation failed: {first.location()}: {first.message}"
    for case in suite.tests:
        if blocked:
            out.append(TestResult(suite, case.name, blocked))
            continue
        out.append(_run_case(suite, case))
    return out


def _run_case(suite: TestSuite, case: PolicyTest) -> TestResult:
    try:
        entities = suite.entities
        if entities is None:
            entities = Entities.from_json(case.entities, schema=suite.schema, source=suite.source)
        resp = is_authorized(
            case.request,
            suite.policies,
            entities,
            schema=suite.schema,
            validate=case.validate_request,
        )
    except CedarliteError as err:
        return TestResult(suite, case.name, f"error: {err.message}")
    return TestResult(suite, case.name, _compare(case, resp, suite.policies), resp)


def _compare(case: PolicyTest, resp: Response, policies: PolicySet) -> str:
    if resp.decision is not case.decision:
        return f"expected {case.decision.value}, got {resp.decision.value}"
    problems = []
    reasons = set(resp.reasons)
    if not case.exact:
        # Cedar's CLI names policies by their `@id`: a reason may use either name.
        for pid in resp.reasons:
            policy = policies.get(pid)
            if policy is not None and policy.annotations.get("id"):
                reasons.add(policy.annotations["id"])
    missing = [r for r in case.reason if r not in reasons]
    if missing:
        problems.append("missing reason(s): " + ", ".join(f"`{r}`" for r in missing))
    if case.exact:
        extra = sorted(reasons - set(case.reason))
        if extra:
            problems.append("unexpected reason(s): " + ", ".join(f"`{r}`" for r in extra))
    erring = [e.policy_id for e in resp.errors]
    if case.num_errors is not None and len(erring) != case.num_errors:
        detail = "; ".join(
            str(replace(e, policy_id=policies.label(e.policy_id))) for e in resp.errors
        )
        problems.append(
            f"expected {case.num_errors} error(s), got {len(erring)}"
            + (f": {detail}" if detail else "")
        )
    if case.errors is not None and set(erring) != set(case.errors):
        problems.append(f"expected errors in {sorted(case.errors)}, got {sorted(set(erring))}")
    return "; ".join(problems)
