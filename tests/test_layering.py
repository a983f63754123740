"""Imports point one way: every module imports only modules of its own layer or below.

``LAYERS`` is the declared order of the stages (STYLE.md's layering), bottom first. Two checks:

* statically, every ``import`` a module can run (at module level or inside a function) names a
  module of its own layer or below, and the graph of those imports has no cycle. Imports under
  ``if TYPE_CHECKING:`` never run (they name types for annotations) and are not counted;
* at run time, importing a module in a fresh interpreter loads, beyond what its parent
  packages load, only cedarlite modules of its own layer or below; and the entry points load no
  more than they need (``import cedarlite`` nothing; a decision no grammar, schema or pydantic).
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
import textwrap
import tomllib
from functools import cache
from pathlib import Path

import pytest

import cedarlite

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "cedarlite"

# Bottom first. A name stands for that module and, unless a longer name is listed, the
# modules below it (``cedarlite.tools`` covers the whole tools package: one stage).
LAYERS: list[list[str]] = [
    # The ground floor: what every stage may use.
    ["cedarlite._version", "cedarlite._log", "cedarlite._sha", "cedarlite._trampoline"],
    ["cedarlite.source", "cedarlite.lexical"],
    ["cedarlite.errors"],
    ["cedarlite._cache_dir", "cedarlite._glob"],
    # data: Cedar's values, the extension types, entities, requests and responses.
    ["cedarlite.data"],  # the package itself imports nothing
    ["cedarlite.data.values"],
    ["cedarlite._jsonloc"],
    ["cedarlite.data.ext._base"],
    ["cedarlite.data.ext.datetime", "cedarlite.data.ext.decimal", "cedarlite.data.ext.ipaddr"],
    ["cedarlite.data.ext"],
    ["cedarlite.data.jsonvalue"],
    ["cedarlite.data.entities", "cedarlite.data.request"],
    ["cedarlite.data.response"],
    # lang: the syntax tree, the parsers (the only modules that import lark: lalr_driver, lalr
    # and schema._human), Cedar's JSON policy format and the printer.
    ["cedarlite.lang"],  # the package itself imports nothing
    ["cedarlite.lang.ast"],
    ["cedarlite.lang.parse.rules"],  # the language's rules both parsers read
    ["cedarlite.lang.parse.fast"],
    ["cedarlite.lang.parse.lalr_driver"],
    ["cedarlite.lang.parse.lalr"],
    ["cedarlite.lang.parse"],
    ["cedarlite.lang.parse.shapes"],
    ["cedarlite.lang.est"],
    ["cedarlite.lang.printer"],
    # engine: the reference interpreter and the compiler to a decision index.
    ["cedarlite.engine"],  # the package itself imports nothing
    ["cedarlite.engine.ops"],
    ["cedarlite.engine.evaluator"],
    ["cedarlite.engine.compiler.index", "cedarlite.engine.compiler.runtime"],
    ["cedarlite.engine.compiler.codegen"],
    ["cedarlite.engine.compiler"],
    ["cedarlite.engine.compiler.cache"],
    # The policy set, the schema and the authorizer: the public face of the language core.
    ["cedarlite.policyset"],
    ["cedarlite.schema.types"],
    ["cedarlite.schema.defs"],
    ["cedarlite.schema.conform"],
    ["cedarlite.schema._human", "cedarlite.schema._json"],  # the formats, read by the model
    ["cedarlite.schema.model"],
    ["cedarlite.schema"],
    ["cedarlite.schema._lattice"],
    ["cedarlite.schema._typecheck"],
    ["cedarlite.schema.validator"],
    ["cedarlite.authorizer"],
    # For policy authors and agents: tests, tool policy, the guard, its hosts, the replay.
    ["cedarlite.runtests"],
    ["cedarlite.shipped"],
    ["cedarlite.tools"],
    ["cedarlite.analysis"],
    ["cedarlite.testing"],
    ["cedarlite.guard"],
    ["cedarlite.hooks"],  # the guard's public names under their first home
    ["cedarlite.hosts"],
    ["cedarlite.impact"],
    ["cedarlite.cli"],
    ["cedarlite.__main__"],
    ["cedarlite"],  # the facade: nothing inside the package imports it
]
LEVEL = {name: i for i, names in enumerate(LAYERS) for name in names}


def modules() -> dict[str, Path]:
    """Every module of the package, by dotted name."""
    out = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


MODULES = modules()


def level(module: str) -> int:
    name = module
    while name not in LEVEL:
        if "." not in name:
            raise AssertionError(f"declare `{module}` in LAYERS of tests/test_layering.py")
        name = name.rsplit(".", 1)[0]
    return LEVEL[name]


# ---------------------------------------------------------------------------------------------
# Static: the imports each module can run


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


@cache
def runtime_imports(module: str) -> frozenset[str]:
    """The cedarlite modules ``module`` can import when it runs (not under TYPE_CHECKING)."""
    path = MODULES[module]
    package = module if path.name == "__init__.py" else module.rsplit(".", 1)[0]
    found: set[str] = set()

    def visit(nodes: list[ast.stmt] | list[ast.AST]) -> None:
        for node in nodes:
            if isinstance(node, ast.If) and _is_type_checking(node.test):
                visit(node.orelse)  # the `else` branch does run
                continue
            if isinstance(node, ast.Import):
                found.update(a.name for a in node.names if a.name.split(".")[0] == "cedarlite")
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.split(".")[: len(package.split(".")) - node.level + 1]
                    target = ".".join(base + ([node.module] if node.module else []))
                else:
                    target = node.module or ""
                if target.split(".")[0] != "cedarlite":
                    continue
                submodules = {f"{target}.{a.name}" for a in node.names} & MODULES.keys()
                found.update(submodules)
                if len(submodules) < len(node.names):  # names defined in `target` itself
                    found.add(target)
            visit(list(ast.iter_child_nodes(node)))

    visit(ast.parse(path.read_text(encoding="utf-8")).body)
    found.discard(module)
    return frozenset(found)


def test_every_module_is_declared_in_a_layer():
    for module in MODULES:
        level(module)


@pytest.mark.parametrize("module", sorted(MODULES))
def test_imports_point_down(module):
    mine = level(module)
    upward = sorted(t for t in runtime_imports(module) if level(t) > mine)
    assert not upward, f"`{module}` (layer {mine}) imports higher layers: {upward}"


def test_no_import_cycles():
    graph = {m: runtime_imports(m) for m in MODULES}
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    for root in graph:
        if root in state:
            continue
        stack = [(root, iter(sorted(graph[root])))]
        state[root] = 1
        while stack:
            node, targets = stack[-1]
            for target in targets:
                if state.get(target) == 1:
                    path = [n for n, _ in stack]
                    cycle = [*path[path.index(target) :], target]
                    raise AssertionError(f"import cycle: {' -> '.join(cycle)}")
                if target not in state:
                    state[target] = 1
                    stack.append((target, iter(sorted(graph[target]))))
                    break
            else:
                state[node] = 2
                stack.pop()


# ---------------------------------------------------------------------------------------------
# At run time, in fresh interpreters


def python(code: str, *args: str) -> str:
    """The output of ``python -c code args`` in a fresh interpreter (which must succeed)."""
    return subprocess.run(
        [sys.executable, "-c", code, *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
        check=True,
    ).stdout


@cache
def loaded(module: str) -> frozenset[str]:
    """Every module in ``sys.modules`` after ``import module`` in a fresh interpreter."""
    return frozenset(
        json.loads(python(f"import sys, json, {module}; print(json.dumps(sorted(sys.modules)))"))
    )


def _parents(module: str) -> list[str]:
    parts = module.split(".")
    return [".".join(parts[:i]) for i in range(1, len(parts))]


# Modules named in LAYERS (the submodules of a one-stage package are checked statically only;
# __main__ runs the command line only as `python -m cedarlite`, not when imported).
@pytest.mark.parametrize("module", sorted(set(MODULES) & set(LEVEL)))
def test_a_fresh_import_loads_only_lower_layers(module):
    if module == "cedarlite.testing":
        pytest.importorskip("hypothesis")
    before = set().union(*(loaded(p) for p in _parents(module)))
    new = {m for m in loaded(module) - before if m.split(".")[0] == "cedarlite"} - {module}
    mine = level(module)
    upward = sorted(m for m in new if level(m) > mine)
    assert not upward, f"importing `{module}` (layer {mine}) loads higher layers: {upward}"


def _heavy(mods: frozenset[str] | set[str]) -> list[str]:
    return sorted(m for m in mods if m.split(".")[0] in ("lark", "pydantic", "hypothesis"))


def test_import_cedarlite_loads_only_the_facade():
    mods = loaded("cedarlite")
    assert {m for m in mods if m.startswith("cedarlite")} == {"cedarlite", "cedarlite._version"}
    assert not _heavy(mods)


_DECIDE = textwrap.dedent(
    """
    import json, sys
    import cedarlite
    ps = cedarlite.PolicySet.from_file(sys.argv[1], cache_dir=sys.argv[2])
    ents = cedarlite.Entities.from_json('[{"uid": {"type": "U", "id": "a"}, "attrs": {}, '
                                        '"parents": [{"type": "G", "id": "g"}]}]')
    resp = cedarlite.is_authorized(
        {"principal": 'U::"a"', "action": {"type": "Action", "id": "read"},
         "resource": 'R::"c"', "context": {"n": 3}},
        ps, ents,
    )
    print(json.dumps([resp.decision.value, sorted(sys.modules)]))
    """
)


def test_a_decision_from_the_compile_cache_loads_no_parser_ast_schema_or_pydantic(tmp_path):
    path = tmp_path / "p.cedar"
    path.write_text(
        'permit (principal in G::"g", action == Action::"read", resource) '
        'when { context.n > 2 && ip("10.0.0.1").isLoopback() == false };\n'
        "forbid (principal, action, resource) when { resource.secret };\n"
    )
    cache_dir = tmp_path / "cache"
    cedarlite.PolicySet.from_file(path, cache_dir=cache_dir)  # warm the compile cache

    decision, mods = json.loads(python(_DECIDE, str(path), str(cache_dir)))
    assert decision == "Allow"
    assert not _heavy(set(mods))
    # Nor the syntax tree, the interpreter or the code generator: the cached form is enough.
    unneeded = (
        "cedarlite.lang.parse",
        "cedarlite.lang.parse.lalr_driver",
        "cedarlite.lang.parse.shapes",
        "cedarlite.lang.printer",
        "cedarlite.lang.ast",
        "cedarlite.engine.evaluator",
        "cedarlite.engine.compiler.codegen",
    )
    assert not [m for m in mods if m.startswith(("cedarlite.schema", "cedarlite.tools"))]
    assert not [m for m in mods if m in unneeded]


def test_a_decision_from_policy_text_loads_the_parser_but_no_lark_schema_or_pydantic(tmp_path):
    code = (
        "import sys, json, cedarlite\n"
        "r = cedarlite.is_authorized({'principal': 'U::\"a\"', 'action': 'A::\"b\"', "
        "'resource': 'R::\"c\"'}, 'permit(principal, action, resource);')\n"
        "print(json.dumps([r.decision.value, sorted(sys.modules)]))"
    )
    decision, mods = json.loads(python(code))
    assert decision == "Allow" and "cedarlite.lang.parse" in mods
    # Valid text is read by the fast parser: Lark and the LALR parser load only for errors.
    assert not [m for m in mods if m.startswith(("lark", "cedarlite.lang.parse.lalr"))]
    assert not [m for m in mods if m.startswith(("pydantic", "cedarlite.schema"))]


def test_a_policy_text_error_loads_the_lalr_parser():
    code = (
        "import sys, json, cedarlite\n"
        "try:\n"
        "    cedarlite.PolicySet.from_str('permit(principal, action, resource) when { 1 < };')\n"
        "except cedarlite.ParseError as err:\n"
        "    print(json.dumps([err.message, sorted(sys.modules)]))"
    )
    message, mods = json.loads(python(code))
    assert message.startswith("unexpected token `}`")
    assert {"lark", "cedarlite.lang.parse.lalr"} <= set(mods)


# A hook process (one per tool call) ends with os._exit once it has answered: the wrapper lists
# the process's modules right then, into the file argv[1], and runs `python -m cedarlite ARGS`.
_HOOK_PROCESS = textwrap.dedent(
    """
    import json, os, sys
    out, exit_now = sys.argv[1], os._exit
    def listed_exit(code):
        with open(out, "w", encoding="utf-8") as f:
            json.dump(sorted(sys.modules), f)
        exit_now(code)
    os._exit = listed_exit
    sys.argv = ["cedarlite", *sys.argv[2:]]
    import runpy
    runpy.run_module("cedarlite", run_name="__main__", alter_sys=True)
    """
)

# What a hook process may load to decide with a built guard: the decision's stages, the
# guard, the Claude Code host, and nothing of the parser, the syntax tree, the schema, the
# configuration models, the compilers, the CLI or logging.
HOOK_MODULES = frozenset(
    {
        "cedarlite", "cedarlite._cache_dir", "cedarlite._glob", "cedarlite._log", "cedarlite._sha",
        "cedarlite._version", "cedarlite.errors", "cedarlite.lexical", "cedarlite.source",
        "cedarlite.data", "cedarlite.data.values", "cedarlite.data.ext", "cedarlite.data.ext._base",
        "cedarlite.data.ext.datetime", "cedarlite.data.ext.decimal", "cedarlite.data.ext.ipaddr",
        "cedarlite.data.entities", "cedarlite.data.jsonvalue", "cedarlite.data.request",
        "cedarlite.data.response",
        "cedarlite.engine", "cedarlite.engine.ops", "cedarlite.engine.compiler",
        "cedarlite.engine.compiler.index", "cedarlite.engine.compiler.runtime",
        "cedarlite.guard", "cedarlite.guard._json", "cedarlite.guard.approvals",
        "cedarlite.guard.approving", "cedarlite.guard.build", "cedarlite.guard.call",
        "cedarlite.guard.decide", "cedarlite.guard.outcome", "cedarlite.guard.pipeline",
        "cedarlite.guard.plugins", "cedarlite.guard.record", "cedarlite.guard.looping",
        "cedarlite.guard.loops", "cedarlite.guard.redact", "cedarlite.guard.sqlite_store",
        "cedarlite.guard.state",
        "cedarlite.hosts", "cedarlite.hosts.claude_code", "cedarlite.hosts.mapping",
        "cedarlite.hosts.serve", "cedarlite.hosts.serve.client",
        "cedarlite.shipped", "cedarlite.tools", "cedarlite.tools.arguments",
        "cedarlite.tools.catalog", "cedarlite.tools.names",
    }
)  # fmt: skip
# Named apart for clear failures; none of them may load either.
HOOK_NEVER = (
    "lark", "pydantic", "cachetools", "logging", "argparse", "hashlib", "_hashlib", "pathlib",
    "importlib.resources", "cedarlite.lang", "cedarlite.schema",
    "cedarlite.policyset", "cedarlite.tools.params", "cedarlite.tools.config", "cedarlite.cli",
    "cedarlite.guard.decision_log",
)  # fmt: skip


NEVER_PACKAGES = tuple(n + "." for n in HOOK_NEVER)


def _hook_process(tmp_path: Path, config: Path, tool_input: dict) -> tuple[str, set[str]]:
    """The decision and the modules of one `cedarlite hook claude-code` process."""
    example = ROOT / "examples" / "claude-code"
    out = tmp_path / "modules.json"
    rules = ["--rules", "cedarlite:exec-commands", "--rules", str(example / "rules.cedar")]
    args = ["hook", "claude-code", "--config", str(config), *rules]
    args += ["--state-dir", str(tmp_path / "state")]
    event = {"session_id": "s", "cwd": "/w", "hook_event_name": "PreToolUse",
             "tool_name": "Bash", "tool_input": tool_input, "tool_use_id": "t"}  # fmt: skip
    proc = subprocess.run(
        [sys.executable, "-c", _HOOK_PROCESS, str(out), *args],
        input=json.dumps(event), capture_output=True, text=True, timeout=120, cwd=ROOT,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    answer = json.loads(proc.stdout)["hookSpecificOutput"]["permissionDecision"]
    return answer, set(json.loads(out.read_text(encoding="utf-8")))


@pytest.mark.parametrize("loops", [True, False])
def test_a_warm_hook_process_loads_only_what_a_decision_needs(tmp_path, loops):
    config = json.loads((ROOT / "examples" / "claude-code" / "cedarlite.json").read_text())
    config["config"]["tools"]["loopDetection"] = {"enabled": loops}
    path = tmp_path / "hook.json"
    path.write_text(json.dumps(config))
    # The first call builds the guard: the parser, the schema and the configuration models
    # load (which shows that the listing sees them; valid rules need no Lark).
    answer, cold = _hook_process(tmp_path, path, {"command": "git status"})
    assert answer == "allow" and {"pydantic", "cedarlite.lang.parse"} <= cold
    # Later calls load the built guard from the state directory.
    for command, expected in (("git status", "allow"), ("rm -rf /", "deny")):
        answer, warm = _hook_process(tmp_path, path, {"command": command})
        assert answer == expected
        extra = sorted(m for m in warm if m.split(".")[0] == "cedarlite" and m not in HOOK_MODULES)
        assert not extra, f"a warm hook process loads modules it does not need: {extra}"
        never = [m for m in warm if m in HOOK_NEVER or m.startswith(NEVER_PACKAGES)]
        assert not never, f"a warm hook process loads {never}"
        assert ("sqlite3" in warm) == loops  # the session state only when loop detection is on


# ---------------------------------------------------------------------------------------------
# The facade


def test_the_facade_exports_what_it_declares():
    tree = ast.parse((PACKAGE / "__init__.py").read_text(encoding="utf-8"))
    typed: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            for stmt in node.body:
                assert isinstance(stmt, ast.ImportFrom)
                typed.update(a.asname or a.name for a in stmt.names)
    exports = cedarlite._EXPORTS
    assert typed == set(exports) == set(cedarlite.__all__)
    for name, module in exports.items():
        target = __import__(f"cedarlite{module}", fromlist=[name])
        assert getattr(cedarlite, name) is getattr(target, name)
    assert set(cedarlite.__all__) <= set(dir(cedarlite))


def test_the_facade_loads_submodules_on_access_and_rejects_unknown_names():
    code = (
        "import cedarlite, sys\n"
        "assert 'cedarlite.tools' not in sys.modules\n"
        "assert cedarlite.tools.resolve_tools is not None\n"
        "assert cedarlite.shipped.resolve is not None\n"
        "try:\n    cedarlite.no_such_thing\nexcept AttributeError as e:\n    print(e)\n"
    )
    assert python(code).strip() == "module 'cedarlite' has no attribute 'no_such_thing'"


def test_version_matches_the_project_metadata():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert cedarlite.__version__ == project["version"]


def test_cedarlite_hooks_keeps_the_guards_public_names():
    import cedarlite.guard
    import cedarlite.hooks

    assert cedarlite.hooks.__all__ == cedarlite.guard.__all__
    for name in cedarlite.guard.__all__:
        assert getattr(cedarlite.hooks, name) is getattr(cedarlite.guard, name)
    assert set(cedarlite.guard.__all__) <= set(dir(cedarlite.hooks))
