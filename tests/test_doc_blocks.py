"""Every fenced code block of README.md and docs/*.md is run, and every relative link resolves.

What each info string means (the contract every page follows):

* ```python: the page's Python blocks run in order in one namespace, from the repository root.
  A top-level expression whose last line ends in a comment that is a Python literal
  (``res.allowed  # ['read']``) is checked: the value must equal the literal (a tuple or list
  ending in ``...`` checks a prefix).
* ```bash: each block runs with ``bash -euo pipefail`` from the repository root, with ``HOME`` a
  fresh temporary directory (shared by the page's blocks, which run in order) and ``PATH``
  starting with this interpreter's ``bin`` (so ``cedarlite`` and ``python3`` are the tested
  ones); it must exit 0.
* ```bash no-run: a command that needs a host program or runs a long-lived service; the line
  above it must say ``<!-- run by tests/test_x.py::name -->``, naming a test that exists.
* ```json must parse (```jsonc too, after its ``//`` comments); ```cedar must parse as policies;
  ```cedarschema as a schema; ```text and ```console are shown output and are not run.
* Every `cedarlite.x.y` a page names in inline code imports, and every repository path it names
  (`tests/test_x.py`) exists, so that pages follow the code when modules move.
* README's first block holds exactly the two commands of the project: the first is run here
  without its ``pip install``, the second is the test command that ``.ci/run`` runs.
"""

from __future__ import annotations

import ast
import importlib
import io
import json
import os
import re
import subprocess
import sys
import tokenize
from dataclasses import dataclass
from pathlib import Path

import pytest

import cedarlite

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


LANGUAGES = {"python", "bash", "json", "jsonc", "cedar", "cedarschema", "text", "console"}
FENCE = re.compile(r"^( *)(`{3,})(.*)$")
RUN_BY = re.compile(r"<!-- run by (tests/[\w/]+\.py)::(\w+) -->")


@dataclass(frozen=True)
class Block:
    page: Path
    line: int  # 1-based line of the opening fence
    language: str
    flags: tuple[str, ...]
    code: str
    before: str  # the nearest non-blank line above the fence

    @property
    def name(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"


def blocks(page: Path) -> list[Block]:
    """The page's fenced blocks, with their indentation removed."""
    lines = page.read_text(encoding="utf-8").splitlines()
    out: list[Block] = []
    i = 0
    while i < len(lines):
        opening = FENCE.match(lines[i])
        if opening is None:
            i += 1
            continue
        indent, fence, info = opening.groups()
        words = info.split()
        start, body = i, []
        i += 1
        while i < len(lines) and lines[i].strip() != fence:
            body.append(lines[i][len(indent) :] if lines[i].startswith(indent) else lines[i])
            i += 1
        assert i < len(lines), f"{page.name}:{start + 1}: the block is not closed"
        before = next((s for s in reversed(lines[:start]) if s.strip()), "")
        out.append(
            Block(
                page=page,
                line=start + 1,
                language=words[0] if words else "",
                flags=tuple(words[1:]),
                code="\n".join(body) + "\n",
                before=before.strip(),
            )
        )
        i += 1
    return out


ALL = [b for page in PAGES for b in blocks(page)]


def first_block_commands() -> list[str]:
    """README's first block: exactly two commands, the second the test command CI runs."""
    first = blocks(ROOT / "README.md")[0]
    assert first.language == "bash" and not first.flags
    commands = [line for line in first.code.splitlines() if line and not line.startswith("#")]
    assert len(commands) == 2
    assert commands[0].startswith("python3 -m pip install . && python3 -m cedarlite ")
    assert "python3 -m pytest" in commands[1]
    assert commands[1] in (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert os.access(ROOT / ".ci" / "run", os.X_OK)
    return commands


# ---------------------------------------------------------------------------------------------
# Python


def _checked(code: str, filename: str) -> tuple[ast.Module, int]:
    """The block's syntax tree, each top-level ``expr  # literal`` line turned into a check."""
    tree = ast.parse(code, filename)
    comments = {
        tok.start[0]: tok.string[1:].strip()
        for tok in tokenize.generate_tokens(io.StringIO(code).readline)
        if tok.type == tokenize.COMMENT
    }
    count = 0
    for n, stmt in enumerate(tree.body):
        if not isinstance(stmt, ast.Expr):
            continue
        comment = comments.get(stmt.end_lineno or stmt.lineno)  # after the expression's last line
        if comment is None:
            continue
        try:
            ast.literal_eval(comment)
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            continue  # prose, not a value
        expected = ast.parse(comment, mode="eval").body  # a literal: safe to evaluate
        call = ast.Call(
            func=ast.Name("__doc_check__", ast.Load()),
            args=[stmt.value, expected, ast.Constant(stmt.lineno)],
            keywords=[],
        )
        tree.body[n] = ast.copy_location(ast.Expr(ast.copy_location(call, stmt)), stmt)
        count += 1
    return ast.fix_missing_locations(tree), count


def _doc_check(filename: str):
    def check(value: object, expected: object, line: int) -> None:
        if isinstance(expected, (tuple, list)) and expected and expected[-1] is Ellipsis:
            value = type(expected)(value)[: len(expected) - 1]  # type: ignore[call-arg]
            expected = expected[:-1]
        assert value == expected, f"{filename}:{line}: shown {expected!r}, got {value!r}"

    return check


def run_python_page(page: Path, monkeypatch: pytest.MonkeyPatch) -> int:
    """Run the page's Python blocks in one namespace; the number of values checked."""
    monkeypatch.chdir(ROOT)  # the examples use repository paths (policies/...)
    namespace: dict[str, object] = {"__name__": "docs"}
    checked = 0
    for block in (b for b in blocks(page) if b.language == "python"):
        namespace["__doc_check__"] = _doc_check(block.name)
        tree, count = _checked(block.code, block.name)
        exec(compile(tree, block.name, "exec"), namespace)
        checked += count
    return checked


PYTHON_PAGES = [p for p in PAGES if any(b.language == "python" for b in blocks(p))]


@pytest.mark.parametrize("page", PYTHON_PAGES, ids=[p.name for p in PYTHON_PAGES])
def test_python_blocks(page: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    run_python_page(page, monkeypatch)


def test_shown_values_are_checked() -> None:
    """The comment convention is live: the pages show values that the tests compare."""
    total = sum(_checked(b.code, b.name)[1] for b in ALL if b.language == "python")
    assert total >= 15, total


# ---------------------------------------------------------------------------------------------
# Shell


def _bash_env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("XDG_CACHE_HOME", "PYTHONPATH")}
    env["HOME"] = str(home)
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    return env


def run_bash(code: str, home: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", "-euo", "pipefail", "-c", code],
        cwd=ROOT,
        env=_bash_env(home),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


# README's first block installs the project and runs the whole suite: test_readme_first_block
# runs its main job instead.
FIRST = blocks(ROOT / "README.md")[0]
BASH = [b for b in ALL if b.language == "bash" and b != FIRST and "no-run" not in b.flags]
NO_RUN = [b for b in ALL if b.language == "bash" and "no-run" in b.flags]


BASH_PAGES = sorted({b.page for b in BASH})


@pytest.mark.parametrize("page", BASH_PAGES, ids=[p.name for p in BASH_PAGES])
def test_bash_blocks(page: Path, tmp_path: Path) -> None:
    """A page's shell blocks run in order with one HOME, as a reader follows the page."""
    for block in (b for b in BASH if b.page == page):
        proc = run_bash(block.code, tmp_path)
        assert proc.returncode == 0, (
            f"{block.name}: exit {proc.returncode}\n{proc.stdout}{proc.stderr}"
        )


@pytest.mark.parametrize("block", NO_RUN, ids=[b.name for b in NO_RUN])
def test_no_run_blocks_name_the_test_that_runs_them(block: Block) -> None:
    found = RUN_BY.fullmatch(block.before)
    assert found, f"{block.name}: a `bash no-run` block needs <!-- run by tests/x.py::name -->"
    path, name = found.groups()
    assert re.search(rf"^(async )?def {name}\(", (ROOT / path).read_text(), re.M), found.group(0)


def test_readme_first_block(tmp_path: Path) -> None:
    """The main job of the first command runs (its `pip install` is the environment's)."""
    job = first_block_commands()[0].split(" && ", 1)[1]
    proc = run_bash(job, tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[-1] == "13/13 calls decided as expected"


# ---------------------------------------------------------------------------------------------
# Data and policies


def _strip_jsonc(text: str) -> str:
    """``//`` comments removed, outside strings."""
    out, in_string, i = [], False, 0
    while i < len(text):
        c = text[i]
        if in_string:
            out.append(c)
            if c == "\\":
                out.append(text[i + 1])
                i += 1
            elif c == '"':
                in_string = False
        elif c == '"':
            in_string = True
            out.append(c)
        elif text.startswith("//", i):
            while i < len(text) and text[i] != "\n":
                i += 1
            continue
        else:
            out.append(c)
        i += 1
    return "".join(out)


DATA = [b for b in ALL if b.language in ("json", "jsonc", "cedar", "cedarschema")]


@pytest.mark.parametrize("block", DATA, ids=[b.name for b in DATA])
def test_data_blocks_parse(block: Block) -> None:
    if block.language == "json":
        json.loads(block.code)
    elif block.language == "jsonc":
        json.loads(_strip_jsonc(block.code))
    elif block.language == "cedar":
        cedarlite.PolicySet.from_str(block.code, source=block.name)
    else:
        cedarlite.Schema.from_str(block.code)


def test_every_block_has_a_known_language() -> None:
    unknown = [f"{b.name}: {b.language!r}" for b in ALL if b.language not in LANGUAGES]
    assert not unknown, unknown
    flagged = [b.name for b in ALL if b.flags and (b.language, b.flags) != ("bash", ("no-run",))]
    assert not flagged, flagged


# ---------------------------------------------------------------------------------------------
# Links

LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)")


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: markup and punctuation dropped, lower case, `-` for spaces."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)
    return re.sub(r"[^\w\- ]", "", text.lower()).replace(" ", "-")


def anchors(page: Path) -> set[str]:
    seen: dict[str, int] = {}
    out = set()
    for line in _prose(page).splitlines():
        if m := re.match(r"#{1,6} (.*)", line):
            base = slug(m.group(1).strip())
            n = seen.get(base, 0)
            seen[base] = n + 1
            out.add(base if n == 0 else f"{base}-{n}")
    return out


def _prose(page: Path) -> str:
    """The page without its code blocks and inline code."""
    kept: list[str] = []
    inside = None
    for line in page.read_text(encoding="utf-8").splitlines():
        fence = FENCE.match(line)
        if inside is None and fence:
            inside = fence.group(2)
        elif inside is not None and line.strip() == inside:
            inside = None
        elif inside is None:
            kept.append(re.sub(r"`+[^`]*`+", "", line) if not line.startswith("#") else line)
    return "\n".join(kept)


def check_link(page: Path, target: str) -> str | None:
    """Why the link is broken, or None."""
    if re.match(r"[a-z][a-z0-9+.-]*:", target):
        return None  # http:, https:, mailto:
    path, _, anchor = target.partition("#")
    file = (page.parent / path).resolve() if path else page
    if not file.exists():
        return f"no file {path}"
    if anchor and file.suffix == ".md" and anchor not in anchors(file):
        return f"no heading #{anchor} in {file.relative_to(ROOT)}"
    return None


@pytest.mark.parametrize("page", PAGES, ids=[p.name for p in PAGES])
def test_links_resolve(page: Path) -> None:
    broken = [
        f"{target}: {why}"
        for target in LINK.findall(_prose(page))
        if (why := check_link(page, target)) is not None
    ]
    assert not broken, broken


# ---------------------------------------------------------------------------------------------
# Names of code

DOTTED = re.compile(r"`(cedarlite(?:\.\w+)+)`")
FILES = re.compile(r"`((?:cedarlite|tests|benchmarks|policies|examples|grammar)/[\w./-]*\w)`")
# The wheel's copies of the shipped directories (not in a checkout)
IN_THE_WHEEL = {"cedarlite/policies", "cedarlite/examples", "cedarlite/grammar"}


def _resolves(dotted: str) -> bool:
    """A module, or an attribute of the longest module prefix."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj: object = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for name in parts[cut:]:
            if not hasattr(obj, name):
                return False
            obj = getattr(obj, name)
        return True
    return False


@pytest.mark.parametrize("page", PAGES, ids=[p.name for p in PAGES])
def test_named_code_exists(page: Path) -> None:
    """Every `cedarlite.x.y` the page names imports, and every repository path it names exists."""
    text = page.read_text(encoding="utf-8")
    missing = [d for d in sorted(set(DOTTED.findall(text))) if not _resolves(d)]
    paths = set(FILES.findall(text)) - IN_THE_WHEEL
    missing += [f for f in sorted(paths) if not (ROOT / f).exists()]
    assert not missing, missing


CITE = re.compile(r"docs/([\w-]+\.md)(?: §(\d+(?:\.\d+)*))?")


def test_the_code_cites_pages_and_sections_that_exist() -> None:
    """A comment's ``docs/guard.md §11.4.8`` names a page that exists, with a
    heading for that section or the section it belongs to (``§11.4``)."""
    broken = []
    sources = [*(ROOT / "cedarlite").rglob("*.py"), *(ROOT / "grammar").glob("*.lark")]
    for source in sorted(sources):
        for page, section in set(CITE.findall(source.read_text(encoding="utf-8"))):
            path = ROOT / "docs" / page
            if not path.exists():
                broken.append(f"{source.relative_to(ROOT)}: docs/{page}")
                continue
            headings = re.findall(r"^#+ .*?§([\d.]+)", _prose(path), re.M)
            parts = section.split(".") if section else []
            if parts and not any(".".join(parts[:n]) in headings for n in range(len(parts), 0, -1)):
                broken.append(f"{source.relative_to(ROOT)}: docs/{page} §{section}")
    assert not broken, broken
