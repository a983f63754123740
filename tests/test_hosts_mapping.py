"""Host tools as OpenClaw tools: Claude Code's names and arguments (cedarlite.hosts.mapping)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cedarlite import ValidationError
from cedarlite.hosts.mapping import (
    CLAUDE_CODE_BUILTINS,
    CLAUDE_CODE_TOOLS,
    MAX_EACH,
    HostMapping,
    MappingError,
    absolute_form,
    absolute_path,
    clean_path,
    find_paths,
    in_workspace,
    mcp_name,
    path_calls,
    resolve_path,
)
from cedarlite.tools import ToolPolicy

CLAUDE = HostMapping.claude_code()


def mapped(tool: str, tool_input: object, **kw: object) -> tuple[str, str | None, tuple]:
    call = CLAUDE.map_call(tool, tool_input, **kw)
    return call.tool, call.plugin_id, call.params


def test_contract_rows_of_the_spec() -> None:
    """agent-hosts.md §4: the contract rows, names and arguments."""
    assert mapped("Bash", {"command": "git status", "description": "Show status"}) == (
        "exec",
        None,
        ({"command": "git status", "description": "Show status"},),
    )
    # Bash's timeout is milliseconds: never exec's `timeout` (seconds).
    assert mapped("Bash", {"command": "make", "timeout": 120000, "run_in_background": True})[2] == (
        {"command": "make", "timeoutMs": 120000, "background": True},
    )
    assert mapped("Read", {"file_path": "/w/app/a.py", "offset": 10, "limit": 5}, cwd="/w/app")[
        :3
    ] == (
        "read",
        None,
        (
            {
                "path": "/w/app/a.py",
                "offset": 10,
                "limit": 5,
                "absolutePath": "/w/app/a.py",
                "inWorkspace": True,
            },
        ),
    )
    assert mapped("Write", {"file_path": "/w/app/b.txt", "content": "x"}, cwd="/w/app")[2] == (
        {
            "path": "/w/app/b.txt",
            "content": "x",
            "absolutePath": "/w/app/b.txt",
            "inWorkspace": True,
        },
    )
    edit = {"file_path": "/w/app/c.py", "old_string": "a", "new_string": "b", "replace_all": True}
    assert mapped("Edit", edit, cwd="/w/app") == (
        "edit",
        None,
        (
            {
                "path": "/w/app/c.py",
                "oldText": "a",
                "newText": "b",
                "replace_all": True,
                "absolutePath": "/w/app/c.py",
                "inWorkspace": True,
            },
        ),
    )
    assert mapped("WebFetch", {"url": "https://x.dev", "prompt": "p"})[:2] == ("web_fetch", None)
    assert mapped("WebSearch", {"query": "cedar"})[:2] == ("web_search", None)


AT_C = {"absolutePath": "/w/app/c.py", "inWorkspace": True}


def test_multi_edit_is_one_edit_per_edit() -> None:
    tool_input = {
        "file_path": "/w/app/c.py",
        "edits": [{"old_string": "a", "new_string": "b"}, {"old_string": "c", "new_string": "d"}],
    }
    tool, _, params = mapped("MultiEdit", tool_input, cwd="/w/app")
    assert tool == "edit"
    assert params == (
        {"path": "/w/app/c.py", "oldText": "a", "newText": "b", **AT_C},
        {"path": "/w/app/c.py", "oldText": "c", "newText": "d", **AT_C},
    )
    for bad in ({"file_path": "x"}, {"file_path": "x", "edits": []}, {"edits": [1]}):
        with pytest.raises(MappingError):
            CLAUDE.map_call("MultiEdit", bad)
    with pytest.raises(MappingError, match="more than 256"):
        CLAUDE.map_call("MultiEdit", {"file_path": "x", "edits": [{}] * (MAX_EACH + 1)})
    with pytest.raises(MappingError, match="repeats"):
        CLAUDE.map_call("MultiEdit", {"file_path": "x", "edits": [{"file_path": "y"}]})


def test_mcp_tools_are_named_as_spec_6_4() -> None:
    assert mapped("mcp__github__create_issue", {"repo": "a/b"}) == (
        "github__create_issue",
        "bundle-mcp",
        ({"repo": "a/b"},),
    )
    assert mcp_name("mcp__brave-search__web_search") == "brave-search__web_search"
    # A server name with `__` in it: the hook input's mcp_server says where it ends.
    assert mcp_name("mcp__my__srv__get_x", {"name": "my__srv"}) == "my__srv__get_x"
    assert mcp_name("mcp__my__srv__get_x") == "my__srv__get_x"  # first `__`: same name here
    assert mcp_name("mcp__a_b__tool", {"name": "a b"}) == "a_b__tool"  # Claude's cleaning
    # §6.4: the server part is cut to 30 characters.
    assert mcp_name("mcp__" + "s" * 40 + "__t") == "s" * 30 + "__t"
    for not_mcp in ("mcp__", "mcp__x", "mcp____t", "Mcp__a__b"):
        assert mcp_name(not_mcp) is None


def test_other_tools_by_lower_cased_name() -> None:
    assert mapped("TodoWrite", {"todos": []}) == ("todowrite", None, ({"todos": []},))
    assert mapped("Agent", {"prompt": "p"})[0] == "agent"
    assert mapped("Task", {"prompt": "p"})[0] == "task"
    assert mapped("SomeFutureTool", [1, 2])[:3] == ("somefuturetool", None, ([1, 2],))
    # Arguments that are not an object pass as they are: the guard refuses them.
    assert mapped("Bash", "ls")[2] == ("ls",)


def test_bad_names_and_colliding_arguments() -> None:
    for name in (None, 5, "", "  ", "x" * 300):
        with pytest.raises(MappingError):
            CLAUDE.map_call(name, {})
    with pytest.raises(MappingError, match="`file_path` and `path` are both `path`"):
        CLAUDE.map_call("Read", {"file_path": "a", "path": "b"})


def test_paths_keep_the_meaning_the_host_sent() -> None:
    """Issue 23 item 5: `path` is never made relative; `absolutePath` is resolved against the
    call's cwd; `inWorkspace` says whether it lies in the workspace (default: the cwd)."""
    assert in_workspace("/w/app/src/a.py", "/w/app")
    assert in_workspace("/w/app", "/w/app/")
    assert not in_workspace("/w/application/a", "/w/app")
    assert not in_workspace("/etc/passwd", "/w/app")
    assert not in_workspace("/etc/passwd", "/")  # `/` is no workspace
    assert in_workspace("a.py", None) and not in_workspace("../a.py", None)
    assert not in_workspace("~/.bashrc", None)
    assert absolute_form("a/../.env", None) == ".env"
    assert absolute_form("../../x", None) == "../../x"
    assert absolute_form("~/.ssh/id_rsa/", "/w") == "~/.ssh/id_rsa"
    calls = path_calls({"file": "/w/app/../../etc/shadow"}, "/w/app")
    assert calls == ({"file": "/w/app/../../etc/shadow", "absolutePath": "/etc/shadow",
                      "inWorkspace": False},)  # fmt: skip


def test_paths_are_cleaned_before_they_are_matched_or_made_relative() -> None:
    """`//`, `/./` and trailing slashes go; `..` stays where the path is, for the rules that
    refuse it, and is resolved in the absolute form."""
    assert clean_path("//etc/./shadow") == "/etc/shadow"
    assert clean_path("///proc//self/root/etc/shadow/") == "/proc/self/root/etc/shadow"
    assert clean_path("./a//b/.") == "a/b"
    assert clean_path(".") == clean_path("./") == "."
    assert clean_path("/") == clean_path("//.") == "/"
    assert clean_path("a/../b") == "a/../b" and clean_path("") == ""
    assert resolve_path("/usr/../etc") == "/etc"
    assert resolve_path("/../../etc/./shadow") == "/etc/shadow"  # never above `/`
    assert absolute_path("shadow", "/etc") == "/etc/shadow"
    assert absolute_path("../../etc/shadow", "/w/app") == "/etc/shadow"
    assert absolute_path("//etc/shadow", None) == "/etc/shadow"
    for none in (("a", None), ("a", "rel"), ("~/.ssh/id_rsa", "/w"), ("", "/w")):
        assert absolute_path(*none) is None
    # Linear: a long path of empty segments and dots is cleaned in one pass.
    assert clean_path("/" + "./" * 100_000 + "etc") == "/etc"
    assert resolve_path("/a" * 50_000 + "/.." * 60_000 + "/etc") == "/etc"


PATHS = st.lists(st.sampled_from(["", ".", "..", "a", "b.c", "..."]), max_size=8).map("/".join)


@given(PATHS)
def test_path_cleaning_agrees_with_posixpath(path: str) -> None:
    """Textually, as `posixpath.normpath` (which keeps a leading `//`, POSIX's choice; Linux
    reads it as `/`): `resolve_path` for absolute paths, `clean_path` when no `..` is left to
    keep."""
    import posixpath

    absolute = "/" + path
    assert resolve_path(absolute) == posixpath.normpath("/" + absolute.lstrip("/"))
    relative = path.lstrip("/") or "."
    if ".." not in relative.split("/"):
        assert clean_path(relative) == posixpath.normpath(relative)
    assert clean_path(clean_path(absolute)) == clean_path(absolute)


def test_the_absolute_path_sits_beside_the_path_on_every_call() -> None:
    """The absolute form keeps rules on absolute locations true whatever the working
    directory; `path` stays what the host sent, cleaned."""
    assert mapped("Read", {"file_path": "/etc/shadow"}, cwd="/etc")[2] == (
        {"path": "/etc/shadow", "absolutePath": "/etc/shadow", "inWorkspace": True},
    )
    assert mapped("Grep", {"pattern": "x", "path": "/usr/../etc"}, cwd="/w")[2] == (
        {"pattern": "x", "path": "/usr/../etc", "absolutePath": "/etc", "inWorkspace": False},
    )
    # A search without a root searches the working directory: that is its `path`.
    assert mapped("Glob", {"pattern": "*"}, cwd="/w")[2] == (
        {"pattern": "*", "path": "/w", "absolutePath": "/w", "inWorkspace": True},
        {"pattern": "*", "path": "/w", "absolutePath": "/w/*", "inWorkspace": True},
    )
    # What a caller sends under the adapters' names is replaced by theirs.
    assert (
        mapped("Read", {"file_path": "/w/a", "absolutePath": "/x"}, cwd="/w")[2][0]["absolutePath"]
        == "/w/a"
    )
    assert mapped("Read", {"file_path": "//etc/./shadow/."}, cwd="/w")[2] == (
        {"path": "/etc/shadow", "absolutePath": "/etc/shadow", "inWorkspace": False},
    )
    # Tools outside the table: the same principle.
    assert mapped("mcp__fs__read_file", {"path": "//etc//shadow", "n": 1}, cwd="/w")[2] == (
        {"path": "/etc/shadow", "n": 1, "absolutePath": "/etc/shadow", "inWorkspace": False},
    )
    assert mapped("LS", {"path": "/w/./x/../.."}, cwd="/w")[2] == (
        {"path": "/w/x/../..", "absolutePath": "/", "inWorkspace": False},
    )
    url = {"url": "https://x.dev//a/./b"}  # a URL is no path
    assert mapped("mcp__web__fetch", url)[2] == (url,)


def test_every_argument_that_names_a_file_at_any_depth() -> None:
    """Issue 23 Build: nested objects, arrays, glob filters; one decision per path."""
    args = {
        "files": [{"path": "/w/.claude/settings.local.json", "content": "{}"}],
        "paths": ["a.txt", "/home/u/.ssh/id_rsa"],
        "options": {"rootDir": "/srv", "profile": "dev", "url": "https://x"},
        "source": "s", "destination": "d", "notebook_path": "n.ipynb", "glob": "**/.env",
    }  # fmt: skip
    assert find_paths(args) == [
        ("files[0].path", "/w/.claude/settings.local.json"),
        ("paths[0]", "a.txt"),
        ("paths[1]", "/home/u/.ssh/id_rsa"),
        ("options.rootDir", "/srv"),
        ("source", "s"),
        ("destination", "d"),
        ("notebook_path", "n.ipynb"),
        ("glob", "**/.env"),
    ]
    absolute = [c["absolutePath"] for c in path_calls(args, "/w")]
    assert absolute == [
        "/w/.claude/settings.local.json", "/w/a.txt", "/home/u/.ssh/id_rsa", "/srv", "/w/s",
        "/w/d", "/w/n.ipynb", "/w/**/.env",
    ]  # fmt: skip
    # Deep nesting: no recursion, linear.
    deep: object = "/etc/shadow"
    for _ in range(50_000):
        deep = {"path": deep} if isinstance(deep, str) else [deep]
    ((where, text),) = find_paths({"x": deep})
    assert text == "/etc/shadow" and where.startswith("x[0][0]") and where.endswith("...")
    # Garbage is denied: NUL and other control characters name no file.
    for bad in ("/home/u/.ssh\x00/config", ".env\x00.txt", "a\nb"):
        with pytest.raises(MappingError, match="control character"):
            path_calls({"path": bad}, "/w")
        with pytest.raises(MappingError, match="control character"):
            CLAUDE.map_call("Read", {"file_path": bad}, cwd="/w")
    with pytest.raises(MappingError, match="more than"):
        path_calls({"paths": [f"f{i}" for i in range(MAX_EACH + 1)]}, "/w")
    # A program's code under `source` is text, not a path: no path, no garbage.
    assert path_calls({"source": "print(1)\nprint(2)"}, "/w") == ({"source": "print(1)\nprint(2)"},)
    with pytest.raises(MappingError, match="control character"):
        path_calls({"source": "/etc/\x00shadow"}, "/w")


def test_overrides_are_data_and_checked() -> None:
    custom = HostMapping.claude_code(
        {
            "NotebookEdit": {
                "tool": "write",
                "arguments": {"notebook_path": "path", "new_source": "content", "cell_id": None},
                "paths": ["path"],
            },
            "Bash": None,  # back to the lower-cased name (`bash`, which normalizes to exec)
        }
    )
    call = custom.map_call(
        "NotebookEdit",
        {"notebook_path": "/w/n.ipynb", "new_source": "x", "cell_id": "c1"},
        cwd="/w",
    )
    assert (call.tool, call.params) == (
        "write",
        (
            {
                "path": "/w/n.ipynb",
                "content": "x",
                "absolutePath": "/w/n.ipynb",
                "inWorkspace": True,
            },
        ),
    )
    assert custom.map_call("Bash", {"command": "ls"}).tool == "bash"
    names = [t["name"] for t in custom.catalog()]
    assert "notebookedit" not in names and "write" in names
    bad = [
        ([], "expected an object of host tool names"),
        ({"Bash": 1}, "must be an object"),
        ({"Bash": {"tool": ""}}, "OpenClaw tool name"),
        ({"Bash": {"tool": "exec", "argumens": {}}}, "unknown key `argumens`"),
        ({"Bash": {"tool": "exec", "arguments": {"a": 1}}}, "argument names"),
        ({"Bash": {"tool": "exec", "paths": "path"}}, "array of argument names"),
        ({"Bash": {"tool": "exec", "each": 3}}, "argument name"),
    ]
    for overrides, message in bad:
        with pytest.raises(MappingError, match=message):
            HostMapping.claude_code(overrides)


def test_catalog_of_the_built_ins_validates_argument_rules() -> None:
    """Every OpenClaw tool of the table is in the catalog, glob and grep typed (so that
    `resource.path` rules check against them; a misspelled attribute does not)."""
    tools = CLAUDE.catalog()
    names = [t["name"] for t in tools]
    assert len(names) == len(set(names))
    assert {m["tool"] for m in CLAUDE_CODE_TOOLS.values()} <= set(names)
    assert {b.lower() for b in CLAUDE_CODE_BUILTINS} <= set(names)
    policy = ToolPolicy({"tools": {"profile": "coding"}}, tools, strict=True)
    rule = """forbid (principal, action in [Action::"grep", Action::"glob"], resource)
              when { resource has path && resource.path like "*.ssh*" };"""
    policy.load_rules(rule)
    with pytest.raises(ValidationError, match="can never apply"):
        policy.load_rules(rule.replace("path", "pth"))


@given(st.text(max_size=80), st.dictionaries(st.text(max_size=10), st.integers(), max_size=5))
def test_any_name_maps_or_raises_a_mapping_error(name: str, args: dict) -> None:
    try:
        call = CLAUDE.map_call(name, args, cwd="/w")
    except MappingError:
        return
    assert call.tool and len(call.params) == 1


def test_the_paths_page_examples_run() -> None:
    """docs/paths.md's Python blocks hold (its table's rows are the asserts)."""
    import re
    from pathlib import Path

    page = Path(__file__).resolve().parent.parent / "docs" / "paths.md"
    blocks = re.findall(r"```python\n(.*?)```", page.read_text(encoding="utf-8"), re.S)
    assert blocks
    namespace: dict[str, object] = {}
    for block in blocks:
        exec(block, namespace)  # our own documentation's example


def test_the_adapters_attributes_pass_a_closed_schema() -> None:
    """`absolutePath` and `inWorkspace` are no parameters: a tool whose schema refuses
    undeclared arguments still sees them (typed), and refuses what else is undeclared."""
    from cedarlite.tools.arguments import ToolArgumentError
    from cedarlite.tools.catalog import ToolCatalog
    from cedarlite.tools.params import argument_plan

    tool = {"name": "fs__read", "pluginId": "bundle-mcp", "parameters": {
        "type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"],
        "additionalProperties": False}}  # fmt: skip
    info = ToolCatalog.from_tools([tool]).find("fs__read")
    assert info is not None
    plan = argument_plan(info)
    (params,) = path_calls({"path": "../x/"}, "/w/app")
    record = plan.convert(params)
    assert dict(record) == {"path": "../x", "absolutePath": "/w/x", "inWorkspace": False}
    with pytest.raises(ToolArgumentError, match="not a parameter"):
        plan.convert({**params, "other": "y"})
    with pytest.raises(ToolArgumentError, match="not a parameter"):  # mistyped: not ours
        plan.convert({"path": "a", "absolutePath": 3})


def test_path_calls_judge_each_path_text_once(monkeypatch: pytest.MonkeyPatch) -> None:
    # Judging a path costs the length of cwd: a repeated path must not cost it again, and
    # many spellings of one file are refused (linear in the arguments' size).
    import cedarlite.hosts.mapping as mapping

    judged: list[str] = []
    real = mapping.absolute_form

    def counting(path: str, cwd: object) -> str:
        judged.append(path)
        return real(path, cwd)

    monkeypatch.setattr(mapping, "absolute_form", counting)
    cwd = "/" + "d/" * 2000
    (call,) = path_calls({"paths": ["a"] * 50_000}, cwd)
    assert call["absolutePath"] == cwd + "a" and judged == ["a"]
    aliases = ["./" * i + "a" for i in range(4 * MAX_EACH + 1)]
    with pytest.raises(MappingError, match="different paths"):
        path_calls({"paths": aliases}, cwd)
    assert len(judged) <= 1 + 4 * MAX_EACH
