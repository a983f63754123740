"""The policy-author commands: several policy files, evaluate, run-tests, translate-policy, link,
equiv, and --error-format json. Each is run through ``main(argv)`` and once as a subprocess."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from corpus import DATA_ROOT

from cedarlite.cli import main

ROOT = Path(__file__).resolve().parents[1]
REQ = ["-l", 'User::"alice"', "-a", 'Action::"view"', "-r", 'Doc::"d"']


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def cli(*argv: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "cedarlite", *argv],
        capture_output=True,
        text=True,
        check=False,
        cwd=cwd,
    )


@pytest.fixture()
def work(tmp_path: Path) -> Path:
    (tmp_path / "a.cedar").write_text(
        '@id("adults")\npermit (principal, action == Action::"view", resource)\n'
        "when { principal.age >= 18 };\n"
    )
    (tmp_path / "b.cedar").write_text('forbid (principal == User::"bob", action, resource);\n')
    (tmp_path / "t.cedar").write_text("permit (principal == ?principal, action, resource);\n")
    (tmp_path / "e.json").write_text(
        json.dumps(
            [
                {"uid": {"type": "User", "id": "alice"}, "attrs": {"age": 30}, "parents": []},
                {"uid": {"type": "User", "id": "bob"}, "attrs": {"age": 40}, "parents": []},
            ]
        )
    )
    return tmp_path


def test_repeated_policies_and_directories_load_every_file(work: Path, capsys) -> None:
    a, b, e = str(work / "a.cedar"), str(work / "b.cedar"), str(work / "e.json")
    base = ["authorize", "-p", a, "-p", b, "--entities", e, "-a", 'Action::"view"', "-r", 'D::"d"']
    code, out, _ = run(capsys, *base, "-l", 'User::"bob"', "-v")
    assert code == 2 and f"{b}:policy0" in out  # the forbid of the second file applies
    code, out, _ = run(capsys, *base, "-l", 'User::"alice"', "-v")
    assert code == 0 and "adults" in out  # reported by its @id
    (work / "rules").mkdir()
    (work / "rules" / "b.cedar").write_text((work / "b.cedar").read_text())
    code, out, _ = run(capsys, "check-parse", "-p", str(work / "rules"), "-p", a)
    assert code == 0 and "2 policies parse" in out
    code, out, _ = run(
        capsys, *base[:3], "-p", str(work / "rules"), *base[5:], "-l", 'User::"bob"', "-v"
    )
    assert code == 2 and "b.cedar:policy0" in out


def test_evaluate(work: Path, capsys) -> None:
    e = ["--entities", str(work / "e.json")]
    code, out, _ = run(
        capsys, "evaluate", 'principal.age >= 18 && [3, "x", 1].contains(1)', *e, *REQ
    )
    assert (code, out) == (0, "true\n")
    code, out, _ = run(capsys, "evaluate", '{z: [3, 1], a: "s"}', *REQ)
    assert (code, out) == (0, '{"a": "s", "z": [1, 3]}\n')
    code, out, err = run(capsys, "evaluate", "principal.nope", *e, *REQ)
    assert code == 1 and out == ""
    assert (
        'failed to evaluate the expression: `User::"alice"` does not have the attribute `nope`'
        in err
    )
    code, _, err = run(capsys, "evaluate", "1 +", *REQ)
    assert code == 1 and "<expression>:1:4: error[E0100]: unexpected end of input" in err
    assert "^" in err


def test_error_format_json(work: Path, capsys) -> None:
    (work / "bad.cedar").write_text("permit (principal, action, resource)\nwhen { 1 + };")
    for argv in (
        ["--error-format", "json", "check-parse", "-p", str(work / "bad.cedar")],
        ["check-parse", "--error-format", "json", "-p", str(work / "bad.cedar")],
    ):
        code, out, err = run(capsys, *argv)
        assert code == 1 and out == ""
        diag = json.loads(err)
        assert diag == {
            "severity": "error",
            "code": "E0100",
            "message": "unexpected token `}`; expected `!`, `(`, `-`, `[`, `false`, `true`, `{`, "
            "identifier, integer literal, string literal",
            "source": str(work / "bad.cedar"),
            "line": 2,
            "column": 12,
            "help": None,
        }
    code, _, err = run(capsys, "--error-format", "json", "evaluate", "principal.x", *REQ)
    assert code == 1 and json.loads(err)["code"] == "E0700"
    code, _, err = run(capsys, "tools", "check", str(work / "nope.json"), "--error-format", "json")
    assert code == 1 and "cannot read scenario" in json.loads(err)["message"]
    (work / "s.cedarschema").write_text(
        "entity User = {name: String};\naction view appliesTo { principal: User, resource: User };"
    )
    (work / "v.cedar").write_text(
        'permit (principal, action == Action::"view", resource)\nwhen { principal.nmae == "a" };'
    )
    code, out, _ = run(
        capsys, "validate", "--error-format", "json", "-p", str(work / "v.cedar"),
        "-s", str(work / "s.cedarschema"),
    )  # fmt: skip
    issue = json.loads(out.splitlines()[0])
    assert code == 3 and issue["code"] == "unknown-attribute" and issue["line"] == 2
    assert issue["help"] == "did you mean `name`?"


def _tests_file(work: Path, cases: list[dict[str, object]]) -> str:
    path = work / "tests.json"
    path.write_text(json.dumps(cases))
    return str(path)


def _case(
    principal: str, decision: str, reason: list[str], name: str | None = None
) -> dict[str, object]:
    case: dict[str, object] = {
        "request": {"principal": f'User::"{principal}"', "action": 'Action::"view"',
                    "resource": 'Doc::"d"', "context": {}},
        "entities": "e.json", "decision": decision, "reason": reason, "num_errors": 0,
    }  # fmt: skip
    if name:
        case["name"] = name
    return case


def test_run_tests_cedar_format(work: Path, capsys) -> None:
    policies = ["-p", str(work / "a.cedar"), "-p", str(work / "b.cedar")]
    tests = _tests_file(
        work, [_case("alice", "allow", ["adults"], "alice"), _case("bob", "deny", [])]
    )
    code, out, _ = run(capsys, "run-tests", *policies, "--tests", tests)
    assert code == 0 and out.splitlines() == ["running 2 tests", "results: 2 passed, 0 failed"]
    code, out, _ = run(capsys, "run-tests", *policies, "--tests", tests, "-v", "--coverage")
    assert "  test alice ... ok" in out and "  test (unnamed) ... ok" in out
    assert "coverage: 2/2 policies determining in some test (100.0%)" in out
    tests = _tests_file(work, [_case("alice", "deny", [], "wrong")])
    code, out, _ = run(capsys, "run-tests", *policies, "--tests", tests, "--threshold", "60")
    assert code == 1
    assert "  test wrong ... fail: expected Deny, got Allow" in out
    assert out.splitlines()[-4:] == [
        "coverage: 1/2 policies determining in some test (50.0%)",
        f"  not covered: {work / 'b.cedar'}:policy0  ({work / 'b.cedar'}:1)",
        "coverage is under the threshold of 60%",
        "results: 0 passed, 1 failed",
    ]
    code, _, err = run(capsys, "run-tests", "--tests", tests)
    assert code == 1 and "give the policies it tests" in err


@pytest.mark.skipif(DATA_ROOT is None, reason="cedar-conformance data not found")
def test_run_tests_conformance_format(capsys) -> None:
    assert DATA_ROOT is not None
    files = sorted((DATA_ROOT / "tests").glob("*/*.json"))
    args = [arg for f in files for arg in ("--tests", str(f))]
    code, out, _ = run(capsys, "run-tests", *args)
    assert code == 0 and out.splitlines()[-1] == "results: 96 passed, 0 failed"


def test_translate_policy(work: Path, capsys) -> None:
    code, out, _ = run(
        capsys, "translate-policy", "--direction", "cedar-to-json", "-p", str(work / "a.cedar")
    )
    doc = json.loads(out)
    assert code == 0 and list(doc["staticPolicies"]) == ["adults"]  # named by @id, as Cedar's CLI
    (work / "a.json").write_text(out)
    code, out, _ = run(
        capsys, "translate-policy", "--direction", "json-to-cedar", "-p", str(work / "a.json")
    )
    assert code == 0 and out.startswith('@id("adults")\npermit (')
    assert "when { principal.age >= 18 };" in out
    doc["templateLinks"] = [{"templateId": "t", "newId": "l", "values": {}}]
    (work / "bad.json").write_text(json.dumps(doc, indent=1))
    code, _, err = run(
        capsys, "translate-policy", "--direction", "json-to-cedar", "-p", str(work / "bad.json")
    )
    assert code == 1 and "`templateLinks[0]`: no template with id `t`" in err
    assert f"{work / 'bad.json'}:" in err


def test_link(work: Path, capsys) -> None:
    links = work / "links.json"
    argv = ["link", "-p", str(work / "t.cedar"), "--template-id", "policy0", "--new-id", "alice",
            "--arguments", '{"?principal": "User::\\"alice\\""}', "-k", str(links)]  # fmt: skip
    code, out, _ = run(capsys, *argv)
    assert code == 0 and out.startswith("Template-linked policy added: alice\npermit (")
    assert 'principal == User::"alice"' in out
    assert json.loads(links.read_text()) == [
        {"template_id": "policy0", "link_id": "alice", "args": {"?principal": 'User::"alice"'}}
    ]
    code, out, _ = run(
        capsys, "authorize", "-p", str(work / "t.cedar"), "-k", str(links), *REQ, "-v"
    )
    assert code == 0 and "  alice" in out
    code, _, err = run(capsys, *argv)  # the same link id again
    assert code == 1 and "duplicate policy id `alice`" in err
    code, _, err = run(capsys, *argv[:-4], "--arguments", '{"?resource": "Doc::\\"d\\""}')
    assert code == 1 and "missing `?principal`; unexpected `?resource`" in err


def test_equiv(work: Path, capsys) -> None:
    (work / "ge.cedar").write_text("permit (principal, action, resource) when { context.n >= 18 };")
    (work / "gt.cedar").write_text("permit (principal, action, resource) when { context.n > 18 };")
    (work / "same.cedar").write_text(
        "permit (principal, action, resource) when { !(context.n < 18) };"
    )
    code, out, _ = run(capsys, "equiv", str(work / "ge.cedar"), str(work / "same.cedar"))
    assert code == 0 and out.startswith("equivalent (exhaustive over ")
    out_dir = work / "ce"
    code, out, _ = run(
        capsys, "equiv", str(work / "ge.cedar"), str(work / "gt.cedar"), "--out", str(out_dir)
    )
    assert code == 2 and "the policy sets decide differently" in out
    assert 'context:  {"n": 18}' in out
    request = json.loads((out_dir / "request.json").read_text())
    assert request["context"] == {"n": 18}
    decided = []
    for policies in ("ge.cedar", "gt.cedar"):
        decided.append(
            main(["authorize", "-p", str(work / policies), "--request-json",
                  str(out_dir / "request.json"), "--entities", str(out_dir / "entities.json")])
        )  # fmt: skip
    assert decided == [0, 2]
    code, _, err = run(capsys, "equiv", str(work / "ge.cedar"), str(work / "nope.cedar"))
    assert code == 1 and "cannot read policies" in err


def test_each_command_as_a_subprocess(work: Path) -> None:
    proc = cli("evaluate", "[2, 1].contains(1)", *REQ)
    assert (proc.returncode, proc.stdout) == (0, "true\n")
    tests = _tests_file(work, [_case("alice", "allow", ["adults"])])
    proc = cli("run-tests", "-p", "a.cedar", "--tests", tests, cwd=work)
    assert proc.returncode == 0 and proc.stdout.endswith("results: 1 passed, 0 failed\n")
    proc = cli("translate-policy", "--direction", "cedar-to-json", "-p", "a.cedar", cwd=work)
    assert proc.returncode == 0 and "adults" in json.loads(proc.stdout)["staticPolicies"]
    proc = cli("link", "-p", "t.cedar", "--template-id", "policy0", "-n", "x",
               "--arguments", '{"?principal": "User::\\"x\\""}', cwd=work)  # fmt: skip
    assert proc.returncode == 0 and 'principal == User::"x"' in proc.stdout
    proc = cli("equiv", "a.cedar", "b.cedar", cwd=work)
    assert proc.returncode == 2 and "reproduce:" in proc.stdout and proc.stderr == ""


def test_the_readme_run_tests_example_is_true() -> None:
    """docs/testing.md shows what `run-tests` prints."""
    page = (ROOT / "docs" / "testing.md").read_text(encoding="utf-8")
    block = page.split("$ cedarlite run-tests --policies examples/policy-tests/photos.cedar")[1]
    expected = block.split("```")[0].split("\n", 2)[2]  # after the command's two lines
    proc = cli(
        "run-tests", "--policies", "examples/policy-tests/photos.cedar",
        "--tests", "examples/policy-tests/tests.json", "--coverage", "--threshold", "90",
        cwd=ROOT,
    )  # fmt: skip
    assert proc.returncode == 1
    assert proc.stdout == expected
