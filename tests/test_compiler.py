"""The compiled engine against its reference twin, and the compiled form's invariants."""

from __future__ import annotations

import pickle
import random
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import cedarlite
from cedarlite import testing
from cedarlite.engine.compiler import CompiledPolicySet, compiled
from cedarlite.engine.compiler.cache import cache_key
from cedarlite.lang.ast import Effect, Policy, Scope, Var

# Example counts scale with the Hypothesis profile (100 by default, 1000 under `thorough`).
N = settings.default.max_examples


def both(sc: testing.Scenario) -> tuple[cedarlite.Response, cedarlite.Response]:
    ents = cedarlite.Entities.from_json(sc.entities)
    ref = cedarlite.is_authorized(sc.request, sc.policy_set, ents, engine="reference")
    comp = cedarlite.is_authorized(sc.request, sc.policy_set, ents)
    return ref, comp


@settings(max_examples=4 * N)
@given(testing.scenarios())
def test_compiled_equals_reference(sc):
    """Decision, reasons and errors (messages included) are identical."""
    ref, comp = both(sc)
    assert comp == ref


@settings(max_examples=3 * N // 2)
@given(testing.scenarios(), st.randoms(use_true_random=False))
def test_shuffling_policies_changes_nothing(sc, rnd):
    policies = list(sc.policy_set)
    rnd.shuffle(policies)
    shuffled = cedarlite.PolicySet(policies)
    ents = cedarlite.Entities.from_json(sc.entities)
    a = cedarlite.is_authorized(sc.request, sc.policy_set, ents)
    b = cedarlite.is_authorized(sc.request, shuffled, ents)
    assert a.decision is b.decision
    assert set(a.reasons) == set(b.reasons)
    assert set(a.errors) == set(b.errors)


@settings(max_examples=3 * N // 2)
@given(testing.scenarios(), testing.policies())
def test_adding_a_forbid_never_allows(sc, extra):
    if extra.is_template:
        return
    forbid = Policy(
        "extra-forbid",
        Effect.FORBID,
        extra.principal,
        extra.action,
        extra.resource,
        extra.conditions,
    )
    ents = cedarlite.Entities.from_json(sc.entities)
    before = cedarlite.is_authorized(sc.request, sc.policy_set, ents)
    after = cedarlite.is_authorized(
        sc.request, sc.policy_set.merge(cedarlite.PolicySet([forbid])), ents
    )
    if not before.allowed:
        assert not after.allowed


@settings(max_examples=N)
@given(testing.scenarios())
def test_pickled_compiled_form_decides_the_same(sc):
    index = compiled(sc.policy_set)
    clone = pickle.loads(pickle.dumps(index))
    ents = cedarlite.Entities.from_json(sc.entities)
    req = cedarlite.data.request.make_request(sc.request)
    assert clone.authorize(req, ents, cache=False) == index.authorize(req, ents, cache=False)


@settings(max_examples=N)
@given(testing.scenarios())
def test_a_walk_made_once_decides_like_the_reference(sc):
    """`reach` (the scope walk alone) then `authorize_reached` answers as the reference does,
    and reaches the groups that `groups` (Node.match at every node) finds."""
    ref, _ = both(sc)
    index = compiled(sc.policy_set)
    ents = cedarlite.Entities.from_json(sc.entities)
    p, a, r, context = cedarlite.data.request.make_request(sc.request)
    reached = index.reach(p, a, r, ents)
    assert sorted(map(id, reached)) == sorted(
        map(id, index.groups(cedarlite.Request(p, a, r, context), ents))
    )
    assert index.authorize_reached(reached, p, a, r, context, ents) == ref
    # the same walk decides another context of the same entities
    empty = cedarlite.data.values.Record()
    other = cedarlite.Request(p, a, r, empty)
    expected = cedarlite.is_authorized(other, sc.policy_set, ents, engine="reference")
    assert index.authorize_reached(reached, p, a, r, empty, ents) == expected


def test_index_only_evaluates_matching_scopes():
    text = "\n".join(
        f'permit (principal == User::"u{i}", action == Action::"read", resource) '
        f"when {{ context.n == {i} }};"
        for i in range(1000)
    )
    ps = cedarlite.PolicySet.from_str(text)
    index = compiled(ps)
    req = cedarlite.data.request.make_request(
        {
            "principal": 'User::"u7"',
            "action": 'Action::"read"',
            "resource": 'Doc::"d"',
            "context": {"n": 7},
        }
    )
    assert set_bits(index.candidates(req, cedarlite.Entities())) == [7]
    assert index.authorize(req, cedarlite.Entities()).reasons == ("policy7",)


def set_bits(mask: int) -> list[int]:
    return [i for i in range(mask.bit_length()) if mask >> i & 1]


def test_action_groups_and_ancestors_are_followed():
    ps = cedarlite.PolicySet.from_str(
        'permit (principal in Org::"acme", action in Action::"readOnly", '
        'resource is Doc in Folder::"f");'
    )
    ents = cedarlite.Entities.from_json(
        [
            {
                "uid": {"type": "User", "id": "a"},
                "attrs": {},
                "parents": [{"type": "Team", "id": "t"}],
            },
            {
                "uid": {"type": "Team", "id": "t"},
                "attrs": {},
                "parents": [{"type": "Org", "id": "acme"}],
            },
            {
                "uid": {"type": "Action", "id": "view"},
                "attrs": {},
                "parents": [{"type": "Action", "id": "readOnly"}],
            },
            {
                "uid": {"type": "Doc", "id": "d"},
                "attrs": {},
                "parents": [{"type": "Folder", "id": "f"}],
            },
        ]
    )
    req = {"principal": 'User::"a"', "action": 'Action::"view"', "resource": 'Doc::"d"'}
    assert cedarlite.is_authorized(req, ps, ents).allowed
    assert not cedarlite.is_authorized({**req, "resource": 'Folder::"f"'}, ps, ents).allowed


def test_decision_cache_is_never_stale():
    ps = cedarlite.PolicySet.from_str('permit (principal in Group::"g", action, resource);')
    req = {"principal": 'User::"a"', "action": 'Action::"x"', "resource": 'R::"r"'}
    member = cedarlite.Entities.from_json(
        [
            {
                "uid": {"type": "User", "id": "a"},
                "attrs": {},
                "parents": [{"type": "Group", "id": "g"}],
            }
        ]
    )
    stranger = cedarlite.Entities.from_json([])
    for _ in range(3):
        assert cedarlite.is_authorized(req, ps, member, cache=True).allowed
        assert not cedarlite.is_authorized(req, ps, stranger, cache=True).allowed
    ctx_a = cedarlite.PolicySet.from_str(
        "permit (principal, action, resource) when { context.ok };"
    )
    for _ in range(2):
        assert cedarlite.is_authorized({**req, "context": {"ok": True}}, ctx_a, cache=True).allowed
        ok_false = {**req, "context": {"ok": False}}
        assert not cedarlite.is_authorized(ok_false, ctx_a, cache=True).allowed
        assert cedarlite.is_authorized({**req, "context": {"ok": 1}}, ctx_a, cache=True).errors


def test_batch_equals_single_requests():
    ps = cedarlite.PolicySet.from_str(
        'permit (principal, action == Action::"read", resource) when { context.n > 1 };'
        'forbid (principal == User::"eve", action, resource);'
    )
    reqs = [
        {
            "principal": f'User::"{who}"',
            "action": 'Action::"read"',
            "resource": 'R::"r"',
            "context": {"n": n},
        }
        for who in ("bob", "eve")
        for n in (0, 5)
    ]
    assert cedarlite.is_authorized_batch(reqs, ps) == [cedarlite.is_authorized(r, ps) for r in reqs]


def test_unlinked_templates_never_apply_but_links_do():
    ps = cedarlite.PolicySet.from_str("permit (principal == ?principal, action, resource);")
    req = {"principal": 'User::"a"', "action": 'Action::"x"', "resource": 'R::"r"'}
    assert not cedarlite.is_authorized(req, ps).allowed
    linked = ps.link("policy0", "alice", {"?principal": 'User::"a"'})
    resp = cedarlite.is_authorized(req, linked)
    assert resp.allowed and resp.reasons == ("alice",)


# ---------------------------------------------------------------------------------------------
# The compile cache


def test_compile_cache_round_trip(tmp_path):
    rng = random.Random(1)
    text = "\n".join(
        f'permit (principal in Team::"t{rng.randrange(50)}", action == Action::"read", '
        f'resource in Folder::"f{i}") when {{ context.level >= {i % 5} }};'
        for i in range(200)
    )
    path = tmp_path / "p.cedar"
    path.write_text(text)
    cache = tmp_path / "cache"
    cold = cedarlite.PolicySet.from_file(path, cache_dir=cache)
    entries = list(cache.iterdir())
    assert [e.name for e in entries] == [cache_key(text, False) + ".pickle"]
    warm = cedarlite.PolicySet.from_file(path, cache_dir=cache)
    assert isinstance(warm._cache["compiled"], CompiledPolicySet)
    assert warm._pending is not None  # the policies are not parsed until asked for
    ents = cedarlite.Entities.from_json(
        [
            {
                "uid": {"type": "User", "id": f"u{t}"},
                "attrs": {},
                "parents": [{"type": "Team", "id": f"t{t}"}],
            }
            for t in range(50)
        ]
    )
    for i in range(200):
        req = {
            "principal": f'User::"u{i % 50}"',
            "action": 'Action::"read"',
            "resource": f'Folder::"f{i}"',
            "context": {"level": i % 7},
        }
        assert cedarlite.is_authorized(req, warm, ents) == cedarlite.is_authorized(req, cold, ents)
    assert warm == cold  # materializes the policies on demand
    assert warm._pending is None


def test_corrupt_cache_entry_is_rebuilt(tmp_path):
    path = tmp_path / "p.cedar"
    path.write_text("permit (principal, action, resource);")
    cache = tmp_path / "cache"
    cache.mkdir()
    (cache / (cache_key(path.read_text(), False) + ".pickle")).write_bytes(b"not a pickle")
    ps = cedarlite.PolicySet.from_file(path, cache_dir=cache)
    req = {"principal": 'U::"a"', "action": 'A::"b"', "resource": 'R::"c"'}
    assert cedarlite.is_authorized(req, ps).allowed
    again = cedarlite.PolicySet.from_file(path, cache_dir=cache)
    assert again._pending is not None and cedarlite.is_authorized(req, again).allowed


def test_a_cached_entry_is_only_used_for_its_own_text(tmp_path):
    cache = tmp_path / "cache"
    a, b = tmp_path / "a.cedar", tmp_path / "b.cedar"
    a.write_text("permit (principal, action, resource);")
    b.write_text("forbid (principal, action, resource);")
    req = {"principal": 'U::"a"', "action": 'A::"b"', "resource": 'R::"c"'}
    assert cedarlite.is_authorized(req, cedarlite.PolicySet.from_file(a, cache_dir=cache)).allowed
    assert not cedarlite.is_authorized(
        req, cedarlite.PolicySet.from_file(b, cache_dir=cache)
    ).allowed


def test_policy_set_without_policies_denies():
    resp = cedarlite.is_authorized(
        {"principal": 'U::"a"', "action": 'A::"b"', "resource": 'R::"c"'}, cedarlite.PolicySet()
    )
    assert resp.decision is cedarlite.Decision.DENY and resp.reasons == () and resp.errors == ()


@pytest.mark.parametrize("engine", ["compiled", "reference"])
def test_unknown_engine_is_rejected(engine):
    req = {"principal": 'U::"a"', "action": 'A::"b"', "resource": 'R::"c"'}
    cedarlite.is_authorized(req, "permit(principal, action, resource);", engine=engine)
    with pytest.raises(ValueError, match="unknown engine"):
        cedarlite.is_authorized(req, "permit(principal, action, resource);", engine="fast")


def test_scope_objects_are_hashable_and_shared():
    s = Scope(Var.PRINCIPAL)
    assert hash(s) == hash(Scope(Var.PRINCIPAL))


def test_a_cache_entry_of_the_wrong_shape_is_rebuilt(tmp_path):
    path = tmp_path / "p.cedar"
    path.write_text("permit (principal, action, resource);")
    cache = tmp_path / "cache"
    cache.mkdir()
    entry = cache / (cache_key(path.read_text(), False) + ".pickle")
    entry.write_bytes(_pickle_with_state({"version": 1}))
    ps = cedarlite.PolicySet.from_file(path, cache_dir=cache)
    req = {"principal": 'U::"a"', "action": 'A::"b"', "resource": 'R::"c"'}
    assert cedarlite.is_authorized(req, ps).allowed


def _pickle_with_state(state: dict) -> bytes:
    """A pickle that rebuilds a CompiledPolicySet from ``state`` (as a foreign entry would)."""

    class Forged:
        def __reduce__(self):
            return (object.__new__, (CompiledPolicySet,), state)

    return pickle.dumps(Forged())


def test_pickled_compiled_sets_keep_their_code_for_the_same_python_only(monkeypatch):
    text = "\n".join(
        f'permit (principal, action == Action::"a{i}", resource) when {{ context.n > {i} }};'
        for i in range(20)
    )
    ps = cedarlite.PolicySet.from_str(text)
    data = pickle.dumps(compiled(ps))
    requests = [
        {
            "principal": 'U::"u"',
            "action": f'Action::"a{i}"',
            "resource": 'R::"r"',
            "context": {"n": n},
        }
        for i in range(20)
        for n in (0, 10, 30)
    ]
    expected = [cedarlite.is_authorized(r, ps) for r in requests]
    from cedarlite.engine.compiler import runtime

    compiles = []
    real = runtime.make_leaf_factory
    monkeypatch.setattr(
        runtime, "make_leaf_factory", lambda body: compiles.append(body) or real(body)
    )
    same = pickle.loads(data)  # the same interpreter: the stored code is used, nothing compiled
    assert compiles == []
    monkeypatch.setattr(sys, "version", sys.version + " (another build)")
    other = pickle.loads(data)  # another interpreter: compiled again from the source
    assert len(compiles) == 20
    for index in (same, other):
        ents = cedarlite.Entities()
        reqs = [cedarlite.data.request.make_request(r) for r in requests]
        assert [index.authorize(r, ents) for r in reqs] == expected


# ---------------------------------------------------------------------------------------------
# Request dicts decided without a Request, leaves of many policies, shared reads


def _reference_or_error(req, ps, ents):
    """The reference engine's answer, or the type and message of the error it raises."""
    try:
        return cedarlite.is_authorized(req, ps, ents, engine="reference")
    except cedarlite.CedarliteError as err:
        return type(err), str(err)


def _compiled_or_error(req, ps, ents):
    try:
        return cedarlite.is_authorized(req, ps, ents)
    except cedarlite.CedarliteError as err:
        return type(err), str(err)


_UID = {"type": "User", "id": "a"}
_ACT = {"type": "Action", "id": "x"}
_RES = {"type": "R", "id": "r"}


@pytest.mark.parametrize(
    "changes",
    [
        {},
        {"context": None},
        {"context": {}},
        {"context": []},
        {"context": ""},
        {"context": 0},
        {"context": '{"n": 3}'},
        {"context": {"n": 2**63}},
        {"context": {"n": -(2**63)}},
        {"context": {"n": 1.5}},
        {"context": {"n": None}},
        {"context": {"tags": ["a", "b"], "meta": {"k": "v", "n": 4}}},
        {"context": {"tags": ["a", 1]}},
        {"context": {"meta": {"deep": {"x": 1}}}},
        {"context": {"meta": {"__entity": {"type": "User", "id": "a"}}}},
        {"context": {"meta": {"__entity": 3}}},
        {"context": {"__entity": {"type": "User", "id": "a"}}},
        {"context": {"__extn": {"fn": "ip", "arg": "10.0.0.1"}}},
        {"principal": 'User::"a"'},
        {"principal": {"type": "User", "id": 3}},
        {"principal": {"type": "Not A Type", "id": "a"}},
        {"principal": {"type": "User", "id": "a", "extra": 1}},
        {"principal": {"type": "User"}},
        {"principal": None},
        {"resource": {"type": "Doc", "id": "unknown"}},
        {"action": {"type": "Action", "id": "y"}},
        {"extra": "ignored"},
        {"principal": {"type": "User", "id": ["a"]}},
        {"principal": {"type": ["User"], "id": "a"}},
        {"principal": {"id": "a", "other": "User"}},
        {"principal": {"type": "User", "__entity": {"type": "User", "id": "a"}}},
        {"principal": {"__entity": {"type": "User", "id": "a"}, "id": "b"}},
        {"resource": {"type": "Not A Type", "id": "r"}},
        {"resource": {"type": "R", "id": 7}},
        {"resource": 'R::"r"'},
        {"action": {"type": "Action", "id": None}},
        {"principal": __import__("types").MappingProxyType({"type": "User", "id": "a"})},
        {"context": {"tags": ["a"] * 1000}},
        {"context": {"meta": {f"k{i}": i for i in range(1000)}}},
        {"context": {f"k{i}": i for i in range(1000)}},
        {"context": {"tags": [f"t{i}" for i in range(999)], "n": 3}},
    ],
)
def test_request_dicts_decide_like_the_reference(changes):
    """The compiled engine reads a request dict itself (no Request built) for the usual
    shape and hands any other shape to make_request: answers and errors match either way."""
    ps = cedarlite.PolicySet.from_str(
        'permit (principal in Group::"g", action == Action::"x", resource) '
        "when { context has n && context.n > 1 };"
        "permit (principal, action, resource) when { context has tags && "
        'context.tags.contains("a") };'
        "forbid (principal, action, resource) when { context has meta && context.meta.n == 4 };"
        "permit (principal, action, resource) when { context has meta && context.meta is User };"
    )
    ents = cedarlite.Entities.from_json(
        [{"uid": _UID, "attrs": {}, "parents": [{"type": "Group", "id": "g"}]}]
    )
    req = {"principal": _UID, "action": _ACT, "resource": _RES, "context": {"n": 3}, **changes}
    assert _compiled_or_error(req, ps, ents) == _reference_or_error(req, ps, ents)
    index = compiled(ps)
    try:
        expected = index.authorize(cedarlite.data.request.make_request(req), ents)
    except cedarlite.CedarliteError as err:
        with pytest.raises(type(err), match="^" + __import__("re").escape(str(err)) + "$"):
            index.decide(req, ents)
    else:
        assert index.decide(req, ents) == expected


def test_request_dicts_with_str_subclass_fields_decide_like_the_reference():
    """A uid whose fields are str subclasses (Python callers) equals the stored uid: the
    dict reader, which finds it in the store without testing its fields, agrees."""

    class Name(str):
        pass

    ps = cedarlite.PolicySet.from_str(
        'permit (principal in Group::"g", action, resource) when { principal == User::"a" };'
    )
    ents = cedarlite.Entities.from_json(
        [{"uid": _UID, "attrs": {}, "parents": [{"type": "Group", "id": "g"}]}]
    )
    for uid in ({"type": Name("User"), "id": Name("a")}, {"type": "User", "id": Name("a")}):
        req = {"principal": uid, "action": _ACT, "resource": _RES}
        assert _compiled_or_error(req, ps, ents) == _reference_or_error(req, ps, ents)
        assert cedarlite.is_authorized(req, ps, ents).allowed


def test_request_dicts_against_a_store_of_malformed_uids_decide_like_the_reference():
    """A store built in Python may hold a uid with an invalid type name: a request naming it
    is read by make_request (which refuses it), not found and decided."""
    from cedarlite.data.entities import Entity
    from cedarlite.data.values import EntityUID

    bad = EntityUID("Not A Type", "a")
    ents = cedarlite.Entities([Entity(bad), Entity(cedarlite.EntityUID("User", "a"))])
    assert not ents.valid_types
    ps = cedarlite.PolicySet.from_str("permit (principal, action, resource);")
    for principal in ({"type": "Not A Type", "id": "a"}, _UID):
        req = {"principal": principal, "action": _ACT, "resource": _RES}
        assert _compiled_or_error(req, ps, ents) == _reference_or_error(req, ps, ents)


def test_large_groups_of_one_scope_split_into_leaves():
    """More policies with one scope than a leaf holds: split, with reasons and errors still
    in policy order, forbids overriding across leaves."""
    from cedarlite.engine.compiler.index import LEAF_SIZE

    n = 3 * LEAF_SIZE + 7

    def policy(i: int) -> str:
        effect = "forbid" if i % 50 == 49 else "permit"
        if i % 5 == 0:
            return f"{effect} (principal, action, resource);"
        if i % 5 == 1:  # errors when `context.s` is missing
            return f'{effect} (principal, action, resource) when {{ context.s like "*{i}*" }};'
        return f"{effect} (principal, action, resource) when {{ context.n >= {i} }};"

    text = "\n".join(policy(i) for i in range(n))
    ps = cedarlite.PolicySet.from_str(text)
    assert len(compiled(ps).leaves) >= 3
    for context in ({"n": 0, "s": "x31x"}, {"n": 60, "s": "x"}, {"s": "9"}, {"n": 500}, {}):
        req = {"principal": _UID, "action": _ACT, "resource": _RES, "context": context}
        ref = cedarlite.is_authorized(req, ps, engine="reference")
        assert cedarlite.is_authorized(req, ps) == ref


@pytest.mark.parametrize(
    "command",
    ["git status", "rm -rf /", "curl x | sh", "ls", "", 3, True, None, ["ls"], {"a": "b"}],
)
def test_string_tests_on_one_shared_read_match_the_reference(command):
    """Runs of `like`/`==` tests on one attribute read once and tested together: the same
    answer and, when the attribute is missing or not a string, the same error."""
    patterns = ["git *", "*rm -rf*", "*| sh", "ls", "*", "curl*x*", "*.env"]
    tests = " || ".join(f'resource.command like "{p}"' for p in patterns)
    ps = cedarlite.PolicySet.from_str(
        f"forbid (principal, action, resource) when {{ {tests} }};"
        'permit (principal, action, resource) when { resource.command == "ls" || '
        'resource.command == "pwd" || resource.command like "git s*" };'
        "permit (principal, action, resource) when { context.x == 1 || "
        'resource.command like "*status" || resource.command like "git*" };'
    )
    attrs = {} if command is None else {"command": command}
    if isinstance(command, dict):
        attrs = {"command": command}
    ents = cedarlite.Entities.from_json([{"uid": _RES, "attrs": attrs, "parents": []}])
    for context in ({}, {"x": 1}):
        req = {"principal": _UID, "action": _ACT, "resource": _RES, "context": context}
        ref = cedarlite.is_authorized(req, ps, ents, engine="reference")
        assert cedarlite.is_authorized(req, ps, ents) == ref


def test_unconstrained_paths_of_the_tree_end_in_a_flat_group_also_after_pickling():
    """A node with nothing but `any` below it knows its leaf group (Node.flat), so that a
    decision stops there; the flat groups are rebuilt when a compiled set is unpickled."""
    ps = cedarlite.PolicySet.from_str(
        "permit (principal, action, resource) when { context.n == 1 };"
        'forbid (principal, action == Action::"x", resource);'
        'permit (principal == User::"a", action == Action::"y", resource);'
    )
    for index in (compiled(ps), pickle.loads(pickle.dumps(compiled(ps)))):
        root = index.root
        assert root.flat is None  # `==` children beside `any`
        assert root.any.flat is not None and root.any.flat is root.any.any.any
        assert root.eq[cedarlite.EntityUID("Action", "x")].flat is not None
        assert root.eq[cedarlite.EntityUID("Action", "y")].flat is None  # principal ==
        for ctx in ({"n": 1}, {}):
            for act in ("x", "y", "z"):
                req = {
                    "principal": _UID,
                    "action": {"type": "Action", "id": act},
                    "resource": _RES,
                    "context": ctx,
                }
                ref = cedarlite.is_authorized(req, ps, engine="reference")
                assert index.decide(req, cedarlite.Entities()) == ref


def test_request_uids_not_in_the_store_are_remembered_within_bounds():
    """uid_of remembers the uids it makes (a hook's resource is read once per process), at
    most 4,096 and only short ones, and refuses what is not a uid."""
    from cedarlite.data.request import SEEN_UIDS, uid_of

    uid = uid_of("Session", "s-remembered")
    assert (
        uid == cedarlite.EntityUID("Session", "s-remembered") and type(uid) is cedarlite.EntityUID
    )
    assert SEEN_UIDS[("Session", "s-remembered")] is uid
    assert uid_of("Session", "x" * 300) is not None
    assert ("Session", "x" * 300) not in SEEN_UIDS
    assert uid_of("Not A Type", "a") is None
    assert uid_of("Session", 3) is None
    for i in range(5000):
        uid_of("Session", f"many-{i}")
    assert len(SEEN_UIDS) <= 4096


def test_a_leaf_that_runs_out_of_stack_reports_the_policy_and_goes_on():
    """The generated `except RecursionError` names a global of the leaf's namespace (which
    has no builtins): a policy that runs out of stack is reported, never a NameError."""
    from cedarlite.engine.compiler.runtime import DEEP_MESSAGE, build_leaf

    def deep() -> bool:
        raise RecursionError

    source = leaf_source_of(["K[0]()", "True"])
    leaf = build_leaf((source, (deep,)), (7, 8))
    errors: list[tuple[int, str]] = []
    assert leaf(None, None, None, None, None, errors) == 2
    assert errors == [(7, DEEP_MESSAGE)]


def leaf_source_of(conditions: list[str]) -> str:
    """A leaf body in the code generator's layout, one policy per condition source."""
    lines = ["  _s = 0"]
    for j, condition in enumerate(conditions):
        lines += [
            "  try:",
            f"   if {condition}:",
            f"    _s |= {1 << j}",
            "  except EvaluationError as _e:",
            f"   errs.append((G[{j}], _e.message))",
            "  except RecursionError:",
            f"   errs.append((G[{j}], _DEEP))",
        ]
    return "\n".join([*lines, "  return _s"]) + "\n"


# ---------------------------------------------------------------------------------------------
# Long chains: operands of one shape become loops (codegen.RUN_MIN), shared reads are read once


# Operand shapes, `{n}` a literal drawn per operand: integer tests on shared reads, string
# tests, set membership, nested reads, errors (a missing attribute, a non-Bool), branches.
_OPERANDS = [
    "context.x == {n}",
    "context.x < {n}",
    "{n} == context.x",
    '["c{n}", "d{n}"].contains(context.s)',
    'context.s like "*{n}"',
    'context.s == "d{n}"',
    "context.r.a == {n}",
    "context.r.a.b > {n}",
    "context.t",
    "context.nope == {n}",
    "(context.x + {n} > 5)",
    "(if context.t then context.x == {n} else context.r.a == {n})",
    "(context has r && context.r.a == {n})",
    '(context.x == {n} || context.s == "d{n}" || context.x == {n} || context.x == {n} '
    "|| context.x == {n} || context.x == {n} || context.x == {n} || context.x == {n})",
    "principal.level == {n}",
    "context.y",
]
_TERMS = ["context.x", "{n}", "context.r.a", "context.y", "(context.x * {n})", "context.s"]


@st.composite
def _chain(draw, parts: list[str], joiners: list[str], longest: int = 30) -> str:
    """A chain of up to ``longest`` operands, in runs of one shape (long runs are likely)."""
    out: list[str] = []
    length = draw(st.integers(1, longest))
    while len(out) < length:
        shape = draw(st.sampled_from(parts))
        same_n = draw(st.booleans())
        n0 = draw(st.integers(-2, 12))
        for _ in range(draw(st.sampled_from([1, 2, 8, 9, 12]))):
            n = n0 if same_n else draw(st.integers(-2, 12))
            out.append(shape.format(n=n))
    glue = [draw(st.sampled_from(joiners)) for _ in out[1:]]
    return out[0] + "".join(f" {g} {o}" for g, o in zip(glue, out[1:], strict=False))


@st.composite
def _chain_policies(draw) -> str:
    texts = []
    for i in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(["||", "&&", "arith", "nested"]))
        if kind == "arith":
            ops = draw(st.sampled_from([["+", "-"], ["+"], ["*"]]))
            body = f"({draw(_chain(_TERMS, ops))}) {draw(st.sampled_from(['==', '<']))} 9"
        elif kind == "nested":
            inner = draw(_chain(_OPERANDS, ["||"], 12))
            body = draw(_chain([f"({inner})", *_OPERANDS[:3]], ["&&"], 12))
        else:
            body = draw(_chain(_OPERANDS, [kind]))
        effect = draw(st.sampled_from(["permit", "forbid"]))
        clause = draw(st.sampled_from(["when", "unless"]))
        texts.append(f'@id("p{i}") {effect} (principal, action, resource) {clause} {{ {body} }};')
    return "\n".join(texts)


_CHAIN_VALUES = st.one_of(
    st.integers(-3, 12), st.sampled_from(["d3", "x5", "c0", ""]), st.booleans()
)


@settings(max_examples=N, deadline=None)
@given(
    _chain_policies(),
    st.dictionaries(
        st.sampled_from(["x", "y", "s", "t", "r"]),
        st.one_of(_CHAIN_VALUES, st.fixed_dictionaries({"a": _CHAIN_VALUES})),
    ),
    st.one_of(st.none(), st.integers(0, 3)),
)
def test_long_chains_equal_the_reference(text, context, level):
    """Chains long enough for loops over operands of one shape, shared reads known to be
    read, and errors anywhere in them: decision, reasons and errors equal the reference's."""
    ps = cedarlite.PolicySet.from_str(text)
    attrs = {} if level is None else {"level": level}
    ents = cedarlite.Entities.from_json([{"uid": _UID, "attrs": attrs, "parents": []}])
    req = {"principal": _UID, "action": _ACT, "resource": _RES, "context": context}
    ref = cedarlite.is_authorized(req, ps, ents, engine="reference")
    assert cedarlite.is_authorized(req, ps, ents) == ref
    clone = pickle.loads(pickle.dumps(compiled(ps)))  # the loops' constants pickle too
    assert clone.decide(req, ents) == ref


@pytest.mark.parametrize(
    "body",
    ["true.a", "(1 == 1).a", "false.a == 1", "(true || false).a", "true.a.b", "true has a"],
)
def test_attributes_of_boolean_literals_compile_without_warnings(body: str) -> None:
    """A folded Bool operand is bound to a temporary like any value (``True`` is a keyword,
    not a name: ``True['a']`` made Python warn at compile time); the decision and error are
    the reference's."""
    import warnings

    ps = cedarlite.PolicySet.from_str(f"permit(principal, action, resource) when {{ {body} }};")
    req = {"principal": 'User::"a"', "action": 'Action::"a"', "resource": 'R::"r"', "context": {}}
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        comp = cedarlite.is_authorized(req, ps)
    ref = cedarlite.is_authorized(req, ps, engine="reference")
    assert comp == ref and comp.errors


_NEEDLE_CHARS = "ab .-/~$;Z\n"


@settings(max_examples=2 * N)
@given(
    st.lists(st.text(_NEEDLE_CHARS, min_size=1, max_size=4), min_size=1, max_size=40),
    st.text(_NEEDLE_CHARS, max_size=30),
)
def test_a_substring_index_finds_what_searching_each_substring_finds(needles, text):
    from cedarlite.engine.compiler.codegen import substring_index
    from cedarlite.engine.compiler.runtime import contains_any

    index = substring_index(needles)
    assert contains_any(text, index) == any(n in text for n in needles)
    keys, groups = index
    assert set(keys) == set(groups) and {n for g in groups.values() for n in g} <= set(needles)


@settings(max_examples=N)
@given(
    st.lists(st.text(_NEEDLE_CHARS + "*", min_size=1, max_size=5), min_size=16, max_size=40),
    st.one_of(st.text(_NEEDLE_CHARS, max_size=30), st.integers(-9, 9), st.none()),
)
def test_many_substring_tests_on_one_read_match_the_reference(middles, command):
    """Sixteen or more `like "*s*"` tests on one read are searched through a substring index
    (`_has_any`): the same answers and errors as the reference, the other tests of the run
    (prefixes, exact strings) kept."""
    from cedarlite.data.values import quote_string
    from cedarlite.engine.compiler.codegen import leaf_source

    tests = [f"resource.command like {quote_string('*' + m.strip('*') + '*')}" for m in middles]
    tests += ['resource.command like "ab*"', 'resource.command == "~"']
    ps = cedarlite.PolicySet.from_str(
        f"forbid (principal, action, resource) when {{ {' || '.join(tests)} }};"
        "permit (principal, action, resource);"
    )
    source = leaf_source([p for p in ps if p.conditions])
    assert source is not None
    if sum(1 for m in middles if m.strip("*") and "*" not in m.strip("*")) >= 16:
        assert "_has_any(" in source[0]
    attrs = {} if command is None else {"command": command}
    ents = cedarlite.Entities.from_json([{"uid": _RES, "attrs": attrs, "parents": []}])
    req = {"principal": _UID, "action": _ACT, "resource": _RES, "context": {}}
    ref = cedarlite.is_authorized(req, ps, ents, engine="reference")
    assert cedarlite.is_authorized(req, ps, ents) == ref


@pytest.mark.parametrize("pattern", ["*/proc/*/environ", "a*b", "*a*b*", "a*b*", "*a*b", "a*b*c"])
def test_patterns_no_str_method_matches_are_tested_behind_their_literals(pattern):
    """A `like` pattern that no str method matches alone runs the matcher only when the
    string has the pattern's last (else first, else middle) literal: the same answers, alone
    or in a run of tests, and the same error for a value that is not a string."""
    from cedarlite.engine.compiler.codegen import leaf_source

    alone = f'context.s like "{pattern}"'
    run = f'context.s like "{pattern}" || context.s == "zz" || context.s like "q*"'
    for condition in (alone, run):
        ps = cedarlite.PolicySet.from_str(
            f"permit (principal, action, resource) when {{ {condition} }};"
        )
        source = leaf_source(list(ps))
        assert source is not None and "_like_str(" in source[0]
        for value in ["", "ab", "ba", "abc", "a-b-c", "/proc/1/environ", "/proc/environ", "q", 3]:
            req = {"principal": _UID, "action": _ACT, "resource": _RES, "context": {"s": value}}
            ref = cedarlite.is_authorized(req, ps, engine="reference")
            assert cedarlite.is_authorized(req, ps) == ref, (condition, value)
