"""Policy sets from several files and directories: ids, merging, and errors in the right file."""

from __future__ import annotations

from pathlib import Path

import pytest

import cedarlite
from cedarlite import ParseError, PolicySet, PolicySetError

ROOT = Path(__file__).resolve().parents[1]
REQUEST = {"principal": 'User::"a"', "action": 'Action::"exec"', "resource": 'R::"r"'}


@pytest.fixture()
def tree(tmp_path: Path) -> Path:
    (tmp_path / "b.cedar").write_text('permit (principal, action == Action::"exec", resource);\n')
    (tmp_path / "a.cedar").write_text(
        '@id("no-root")\nforbid (principal == User::"root", action, resource);\n'
        "permit (principal, action, resource) when { context.ok };\n"
    )
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "c.cedar").write_text(
        "forbid (principal, action, resource in ?resource);\n"
    )
    (tmp_path / ".hidden").mkdir()
    (tmp_path / ".hidden" / "x.cedar").write_text("this is not cedar")
    (tmp_path / "notes.txt").write_text("not a policy")
    return tmp_path


def test_from_dir_loads_every_cedar_file_sorted_with_qualified_ids(tree: Path) -> None:
    ps = PolicySet.from_dir(tree)
    assert [p.id for p in ps] == [
        "a.cedar:policy0",
        "a.cedar:policy1",
        "b.cedar:policy0",
        "sub/c.cedar:policy0",
    ]
    assert ps.origin("b.cedar:policy0").source == str(tree / "b.cedar")
    resp = cedarlite.is_authorized(REQUEST, ps)
    assert resp.allowed and resp.reasons == ("b.cedar:policy0",)
    linked = ps.link("sub/c.cedar:policy0", "c-link", {"?resource": 'R::"r"'})
    assert linked.origin("c-link").source == str(tree / "sub" / "c.cedar")


def test_ids_stay_stable_when_another_file_changes(tree: Path) -> None:
    before = {p.id for p in PolicySet.from_dir(tree) if "b.cedar" in p.id}
    (tree / "a.cedar").write_text("permit (principal, action, resource);\n" * 5)
    after = {p.id for p in PolicySet.from_dir(tree) if "b.cedar" in p.id}
    assert before == after == {"b.cedar:policy0"}


def test_id_annotations_on_request(tree: Path) -> None:
    ps = PolicySet.from_dir(tree, id_annotations=True)
    assert "no-root" in ps and "a.cedar:policy1" in ps
    single = PolicySet.from_file(tree / "a.cedar", id_annotations=True)
    assert [p.id for p in single] == ["no-root", "policy1"]
    (tree / "d.cedar").write_text('\n\n@id("no-root")\npermit (principal, action, resource);')
    with pytest.raises(PolicySetError) as info:
        PolicySet.from_dir(tree, id_annotations=True)
    err = info.value
    assert err.message == "duplicate policy id `no-root`"
    assert (err.source, err.line, err.column) == (str(tree / "d.cedar"), 3, 1)
    assert err.help == f"the first policy with this id is at {tree / 'a.cedar'}:1:1"


def test_from_files_and_merge_agree(tree: Path) -> None:
    paths = [str(tree / "b.cedar"), str(tree / "a.cedar")]
    ps = PolicySet.from_files(paths)
    merged = PolicySet.from_file(paths[0]).merge(PolicySet.from_file(paths[1]))
    assert (
        [p.id for p in ps]
        == [p.id for p in merged]
        == [
            f"{paths[0]}:policy0",
            f"{paths[1]}:policy0",
            f"{paths[1]}:policy1",
        ]
    )
    assert merged == ps


def test_merging_the_shipped_rule_files() -> None:
    rules = [ROOT / "policies" / "exec-commands.cedar", ROOT / "policies" / "paths.cedar"]
    merged = PolicySet.from_file(rules[0]).merge(PolicySet.from_file(rules[1]))
    assert len(merged) == sum(len(PolicySet.from_file(p)) for p in rules)
    assert all(p.id.startswith(str(rules[0]) + ":") for p in list(merged)[:3])


def test_merge_keeps_chosen_ids_and_refuses_unnamed_collisions() -> None:
    base = PolicySet.from_str("permit (principal, action, resource);")
    extra = PolicySet.from_json({"staticPolicies": {"mine": {
        "effect": "forbid", "principal": {"op": "All"}, "action": {"op": "All"},
        "resource": {"op": "All"}}}})  # fmt: skip
    assert [p.id for p in base.merge(extra)] == ["policy0", "mine"]
    with pytest.raises(PolicySetError, match="duplicate policy id `policy0`"):
        base.merge(PolicySet.from_str("forbid (principal, action, resource);"))
    named = base.merge(PolicySet.from_str("forbid (principal, action, resource);", "x.cedar"))
    assert [p.id for p in named] == ["policy0", "x.cedar:policy0"]


def test_templates_and_links_follow_qualification(tmp_path: Path) -> None:
    (tmp_path / "t.cedar").write_text("permit (principal == ?principal, action, resource);")
    ps = PolicySet.from_file(tmp_path / "t.cedar").link(
        "policy0", "alice", {"?principal": 'U::"a"'}
    )
    merged = ps.merge(PolicySet.from_str("forbid (principal, action, resource);", "f.cedar"))
    assert merged["alice"].template_id == f"{tmp_path / 't.cedar'}:policy0"


def test_errors_name_the_right_file_line_and_column(tree: Path) -> None:
    (tree / "sub" / "bad.cedar").write_text("permit (principal, action, resource)\nwhen { 1 + };")
    with pytest.raises(ParseError) as info:
        PolicySet.from_dir(tree)
    assert (info.value.source, info.value.line) == (str(tree / "sub" / "bad.cedar"), 2)


def test_validation_messages_point_into_each_file(tmp_path: Path) -> None:
    schema = cedarlite.Schema.from_str(
        "entity User = {name: String};\naction view appliesTo { principal: User, resource: User };"
    )
    (tmp_path / "one.cedar").write_text("permit (principal, action, resource) when { true };\n")
    (tmp_path / "two.cedar").write_text(
        'permit (principal, action, resource)\nwhen { principal.nmae == "a" };\n'
    )
    result = cedarlite.validate(PolicySet.from_dir(tmp_path), schema)
    (issue,) = result.errors
    assert issue.policy_id == "two.cedar:policy0"
    assert issue.render().startswith(f"{tmp_path / 'two.cedar'}:2:8: error[unknown-attribute]")


def test_empty_or_missing_directories_are_errors(tmp_path: Path) -> None:
    with pytest.raises(PolicySetError, match=r"no `\*.cedar` policy files"):
        PolicySet.from_dir(tmp_path)
    with pytest.raises(PolicySetError, match="is not a directory"):
        PolicySet.from_dir(tmp_path / "nope")
    with pytest.raises(PolicySetError, match="no policy files given"):
        PolicySet.from_files([])
    with pytest.raises(PolicySetError, match="cannot read policy file"):
        PolicySet.from_files([tmp_path / "missing.cedar"])
