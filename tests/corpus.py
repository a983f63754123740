"""Access to the official Cedar conformance data (vendored in tests/data/cedar-conformance).

The generated corpus ships as a tarball, read into memory once per process
(:func:`corpus_files`). Test files reference their policies, entities and schema by paths
relative to the data root; the loaders resolve them.
"""

from __future__ import annotations

import json
import os
import tarfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

_HERE = Path(__file__).resolve().parent


def _find_data_root() -> Path | None:
    candidates = [
        os.environ.get("CEDAR_CONFORMANCE_DIR"),
        str(_HERE / "data" / "cedar-conformance"),  # vendored copy (Apache-2.0 data)
        str(_HERE.parent.parent / "shared" / "cedar-conformance"),
    ]
    for c in candidates:
        if c and (Path(c) / "README.md").is_file():
            return Path(c)
    return None


DATA_ROOT = _find_data_root()
"""The conformance data directory (env ``CEDAR_CONFORMANCE_DIR`` overrides), or None."""


@cache
def corpus_files() -> dict[str, bytes]:
    """The generated corpus, read from its tarball into memory once per process.

    Extracting its 31,236 small files into a temporary directory costs 15-40 s of file-system
    time on the shared CI machines, reading them from the tarball about 2 s; nothing is ever
    written next to the repository either way.
    """
    assert DATA_ROOT is not None
    files: dict[str, bytes] = {}
    with tarfile.open(DATA_ROOT / "corpus-tests.tar.gz") as tar:
        for member in tar:
            if member.isfile():
                files[member.name] = tar.extractfile(member).read()  # type: ignore[union-attr]
    return files


@dataclass(frozen=True)
class ConformanceTest:
    """One test file: policies, entities, schema, the validation flag and the requests."""

    name: str
    policies_text: str
    entities_json: Any
    schema_text: str
    schema_path: str
    should_validate: bool
    requests: list[dict[str, Any]]
    policies_path: str


def _load(name: str, spec: dict[str, Any], read: Callable[[str], str]) -> ConformanceTest:
    return ConformanceTest(
        name=name,
        policies_text=read(spec["policies"]),
        entities_json=json.loads(read(spec["entities"])),
        schema_text=read(spec["schema"]),
        schema_path=spec["schema"],
        should_validate=spec["shouldValidate"],
        requests=spec["requests"],
        policies_path=spec["policies"],
    )


def handwritten_tests() -> Iterator[ConformanceTest]:
    """The 22 hand-written tests (``tests/*/*.json``)."""
    assert DATA_ROOT is not None
    root = DATA_ROOT

    def read(rel: str) -> str:
        return (root / rel).read_text(encoding="utf-8")

    for path in sorted((root / "tests").glob("*/*.json")):
        yield _load(f"{path.parent.name}/{path.stem}", json.loads(read(str(path))), read)


def corpus_tests() -> Iterator[ConformanceTest]:
    """The 7,809 generated corpus tests."""
    files = corpus_files()

    def read(rel: str) -> str:
        return files[rel].decode("utf-8")

    for name in sorted(files):
        if name.endswith(".json") and not name.endswith(".entities.json"):
            yield _load(Path(name).stem, json.loads(files[name]), read)


@dataclass(frozen=True)
class Outcome:
    """How cedarlite fared on one conformance test: its requests and its validation flag."""

    requests: int
    matched: int
    mismatches: list[str]
    validation_agrees: bool


def run_test(test: ConformanceTest, engine: str = "compiled") -> Outcome:
    """Validate the policies against the schema (compare with ``shouldValidate``) and run every
    request through cedarlite (compare decision, reasons and errors)."""
    import cedarlite
    from cedarlite.schema import Schema

    mismatches: list[str] = []
    try:
        schema = Schema.from_str(test.schema_text, test.schema_path)
        policies = cedarlite.PolicySet.from_str(test.policies_text, test.policies_path)
        entities = cedarlite.Entities.from_json(test.entities_json, schema=schema)
    except cedarlite.CedarliteError as err:
        failure = f"{test.name}: setup failed: {err.message}"
        return Outcome(len(test.requests), 0, [failure], False)
    passed = cedarlite.validate(policies, schema).passed
    if passed != test.should_validate:
        mismatches.append(f"{test.name}: validate passed={passed}, want {test.should_validate}")
    matched = 0
    for req in test.requests:
        try:
            resp = cedarlite.is_authorized(
                req,
                policies,
                entities,
                schema=schema,
                validate=req.get("validateRequest", True),
                engine=engine,
            )
        except cedarlite.CedarliteError as err:
            mismatches.append(f"{test.name} / {req['description']}: raised {err.message}")
            continue
        got = (resp.decision.value.lower(), set(resp.reasons), {e.policy_id for e in resp.errors})
        want = (req["decision"], set(req["reason"]), set(req["errors"]))
        if got == want:
            matched += 1
        else:
            mismatches.append(f"{test.name} / {req['description']}: got {got}, want {want}")
    return Outcome(len(test.requests), matched, mismatches, passed == test.should_validate)
