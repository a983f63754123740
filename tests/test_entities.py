"""Entities and requests: JSON decoding, hierarchy, overlays, schema-based parsing."""

from __future__ import annotations

import pytest

import cedarlite
from cedarlite import Entities, EntitiesError, EntityUID, Request, RequestError, Schema
from cedarlite.data.entities import Entity
from cedarlite.data.ext import Decimal, IPAddr
from cedarlite.data.request import make_request
from cedarlite.data.values import CedarSet, Record

U = EntityUID


def ent(type_, id_, parents=(), **attrs):
    return {
        "uid": {"type": type_, "id": id_},
        "attrs": attrs,
        "parents": [{"type": t, "id": i} for t, i in parents],
    }


def test_ancestors_are_transitive_and_parents_may_be_missing():
    ents = Entities.from_json([ent("User", "a", [("Team", "t")]), ent("Team", "t", [("Org", "o")])])
    assert ents[U("User", "a")].ancestors == {U("Team", "t"), U("Org", "o")}
    assert U("Org", "o") not in ents


def test_a_cycle_is_an_error():
    with pytest.raises(EntitiesError, match="cycle"):
        Entities.from_json([ent("G", "a", [("G", "b")]), ent("G", "b", [("G", "a")])])


def test_deep_hierarchies_do_not_recurse():
    chain = [ent("G", str(i), [("G", str(i + 1))]) for i in range(5000)]
    ents = Entities.from_json(chain)
    assert len(ents[U("G", "0")].ancestors) == 5000


def test_values_and_escapes():
    ents = Entities.from_json(
        [
            ent(
                "User",
                "a",
                n=1,
                s="x",
                flags=[True, 1],
                boss={"__entity": {"type": "User", "id": "b"}},
                ip={"__extn": {"fn": "ip", "arg": "10.0.0.1"}},
                plain={"type": "User", "id": "b"},
            )
        ]
    )
    attrs = ents[U("User", "a")].attrs
    assert attrs["flags"] == CedarSet([True, 1]) and len(attrs["flags"]) == 2
    assert attrs["boss"] == U("User", "b")
    assert isinstance(attrs["ip"], IPAddr)
    assert attrs["plain"] == Record({"type": "User", "id": "b"})  # no schema: just a record


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ('[{"uid": {"type": "User", "id": "a"}, "attrs": {}}]', "missing field `parents`"),
        ('[{"uid": {"type": "User ", "id": "a"}, "attrs": {}, "parents": []}]', "entity type"),
        ('[{"uid": {"type": "U", "id": "a"}, "attrs": {"x": 1.5}, "parents": []}]', "floating"),
        ('[{"uid": {"type": "U", "id": "a"}, "attrs": {"x": null}, "parents": []}]', "null"),
        ('[{"uid": {"type": "U", "id": "a"}, "attrs": {"x": 1, "x": 2}, "parents": []}]', "dup"),
        ('{"uid": 1}', "JSON array"),
        ("[", "invalid JSON"),
    ],
)
def test_bad_entity_json_is_a_clear_error(data, message):
    with pytest.raises(EntitiesError, match=message):
        Entities.from_json(data)


@pytest.mark.parametrize(
    ("text", "line", "column", "message"),
    [
        # a repeated key: the repeated key itself, however deep
        (
            '[{"uid": {"type": "U", "id": "a"},\n  "attrs": {"x": 1, "x": 2}, "parents": []}]',
            2,
            21,
            "duplicate key `x`",
        ),
        (
            '[{"uid": {"type": "U", "id": "a"}, "attrs": {"r": {"a": [{"b": 1}], "a": 2}},'
            ' "parents": []}]',
            1,
            69,
            "duplicate key `a`",
        ),
        # same keys in sibling objects are not duplicates; the error is elsewhere
        (
            '[{"uid": {"type": "U", "id": "a"}, "attrs": {}, "parents": []},\n'
            ' {"uid": {"type": "U", "id": "b"}, "attrs": {"x": {"__extn": {"fn": "decimal",'
            ' "arg": "1.23456"}}}, "parents": []}]',
            2,
            2,
            "too many digits",
        ),
    ],
)
def test_entity_file_errors_have_line_and_column(text, line, column, message):
    with pytest.raises(EntitiesError, match=message) as info:
        Entities.from_json(text, source="e.json")
    err = info.value
    assert (err.span.line, err.span.column) == (line, column)
    assert str(err).startswith(f"e.json:{line}:{column}: ")


def test_overlay_adds_per_request_entities_without_copying():
    base = Entities.from_json([ent("Team", "t", [("Org", "o")])])
    call = base.overlay([cedarlite.Entity(U("Call", "1"), parents=frozenset({U("Team", "t")}))])
    assert call[U("Call", "1")].ancestors == {U("Team", "t"), U("Org", "o")}
    assert U("Team", "t") in call and U("Call", "1") not in base


SCHEMA = Schema.from_str(
    """
    entity Team;
    entity Color enum ["red", "blue"];
    entity User in [Team] = { boss?: User, ip: ipaddr, score: decimal, color?: Color }
        tags String;
    action view appliesTo { principal: User, resource: User, context: { src: ipaddr } };
    """
)


def test_schema_based_parsing_reads_values_by_type_and_adds_actions():
    ents = Entities.from_json(
        [
            {
                "uid": {"type": "User", "id": "a"},
                "attrs": {"boss": {"type": "User", "id": "b"}, "ip": "1.2.3.4", "score": "0.5"},
                "parents": [{"type": "Team", "id": "t"}],
                "tags": {"k": "v"},
            }
        ],
        schema=SCHEMA,
    )
    attrs = ents[U("User", "a")].attrs
    assert attrs["boss"] == U("User", "b")
    assert isinstance(attrs["ip"], IPAddr) and isinstance(attrs["score"], Decimal)
    assert U("Action", "view") in ents


@pytest.mark.parametrize(
    ("item", "message"),
    [
        ({"uid": {"type": "Nope", "id": "a"}, "attrs": {}, "parents": []}, "not declared"),
        (
            {
                "uid": {"type": "User", "id": "a"},
                "attrs": {"ip": "x", "score": "0.5"},
                "parents": [],
            },
            "invalid IP address",
        ),
        (
            {"uid": {"type": "User", "id": "a"}, "attrs": {"ip": "1.1.1.1"}, "parents": []},
            "required attribute `score` is missing",
        ),
        (
            {
                "uid": {"type": "User", "id": "a"},
                "attrs": {"ip": "1.1.1.1", "score": "1.0", "color": {"type": "Color", "id": "x"}},
                "parents": [],
            },
            "not a valid `Color`",
        ),
        (
            {
                "uid": {"type": "User", "id": "a"},
                "attrs": {"ip": "1.1.1.1", "score": "1.0"},
                "parents": [{"type": "User", "id": "b"}],
            },
            "cannot be members of `User`",
        ),
        (
            {
                "uid": {"type": "User", "id": "a"},
                "attrs": {"ip": "1.1.1.1", "score": "1.0"},
                "parents": [],
                "tags": None,
            },
            "tags: expected a JSON object",
        ),
        (
            {"uid": {"type": "Action", "id": "view"}, "attrs": {"x": 1}, "parents": []},
            "does not match its schema declaration",
        ),
    ],
)
def test_schema_conformance_errors(item, message):
    with pytest.raises(EntitiesError, match=message):
        Entities.from_json([item], schema=SCHEMA)


def test_requests_are_checked_and_read_by_the_schema():
    req = {
        "principal": 'User::"a"',
        "action": 'Action::"view"',
        "resource": 'User::"b"',
        "context": {"src": "10.0.0.1"},
    }
    assert isinstance(make_request(req, schema=SCHEMA).context["src"], IPAddr)
    with pytest.raises(RequestError, match="not valid for action"):
        make_request({**req, "resource": 'Team::"t"'}, schema=SCHEMA)
    with pytest.raises(RequestError, match="not declared"):
        make_request({**req, "action": 'Action::"edit"'}, schema=SCHEMA)
    assert make_request({**req, "resource": 'Team::"t"'}, schema=SCHEMA, validate=False)


@pytest.mark.parametrize(
    ("request_", "message"),
    [
        ({"principal": 'User::"a"', "action": 'Action::"v"'}, "missing `resource`"),
        ({"principal": "alice", "action": 'A::"v"', "resource": 'R::"r"'}, "not an entity uid"),
        ({"principal": 'U::"a"', "action": 'A::"v"', "resource": 'R::"r"', "context": 5}, "JSON"),
        ("not a request", "must be a mapping"),
    ],
)
def test_bad_requests_are_clear_errors(request_, message):
    with pytest.raises(RequestError, match=message):
        make_request(request_)


@pytest.mark.parametrize("engine", ["compiled", "reference"])
def test_hand_built_requests_are_normalized_before_any_engine_sees_them(engine):
    policy = "permit (principal, action, resource) when { context.admin };"
    req = Request(U("User", "a"), U("Action", "v"), U("Doc", "d"), {"admin": True})  # type: ignore[arg-type]
    assert cedarlite.is_authorized(req, policy, engine=engine).allowed
    bad = Request(U("User", "a"), U("Action", "v"), U("Doc", "d"), {"admin": 1})  # type: ignore[arg-type]
    resp = cedarlite.is_authorized(bad, policy, engine=engine)
    assert not resp.allowed and resp.errors[0].message == "type error: expected bool, got long"


def test_valid_types_says_whether_every_uid_is_well_formed() -> None:
    """A store knows whether all its uids have str fields and valid type names (the
    compiled engine then reads a request naming a stored entity without checking it)."""

    def store(*uids: EntityUID) -> Entities:
        return Entities([Entity(uid) for uid in uids])

    assert store().valid_types
    assert store(EntityUID("A", "a"), EntityUID("NS::B", "")).valid_types
    assert not store(EntityUID("A", "a"), EntityUID("A b", "a")).valid_types
    assert not store(EntityUID(1, "a")).valid_types  # type: ignore[arg-type]
    assert not store(EntityUID("A", 2)).valid_types  # type: ignore[arg-type]
    assert not store(EntityUID("A", "a")).overlay([Entity(EntityUID("__cedar", "x"))]).valid_types


def test_enumerated_ids_are_checked_for_entities_and_parents() -> None:
    schema = Schema.from_str(
        'entity Color enum ["red", "blue"]; entity User in [Color];'
        "action a appliesTo { principal: User, resource: User };"
    )

    def entity(type_: str, id_: str, *parents: tuple[str, str]) -> dict[str, object]:
        links = [{"type": t, "id": i} for t, i in parents]
        return {"uid": {"type": type_, "id": id_}, "attrs": {}, "parents": links}

    with pytest.raises(EntitiesError) as err:
        Entities.from_json([entity("Color", "green")], schema=schema)
    assert err.value.message == (
        '`Color::"green"`: `Color::"green"` is not a valid `Color`; '
        "the enumerated ids are `red`, `blue`"
    )
    with pytest.raises(EntitiesError) as err:
        Entities.from_json([entity("User", "u", ("Color", "pink"))], schema=schema)
    assert err.value.message == (
        '`User::"u"`.parents: `Color::"pink"` is not a valid `Color`; '
        "the enumerated ids are `red`, `blue`"
    )
    store = Entities.from_json([entity("User", "u", ("Color", "red"))], schema=schema)
    assert store[EntityUID("User", "u")].ancestors == {EntityUID("Color", "red")}


def test_an_entity_with_other_attributes_is_the_entity_built_with_them():
    from dataclasses import FrozenInstanceError, fields

    from cedarlite.data.entities import with_attrs

    parent = EntityUID("Tool", "exec")
    proto = Entity(EntityUID("Call", "c"), Record(), frozenset({parent}), Record(t="x"))
    proto = Entity(proto.uid, proto.attrs, proto.parents, proto.tags, frozenset({parent}))
    copy = with_attrs(proto, Record(command="ls"))
    expected = Entity(proto.uid, Record(command="ls"), proto.parents, proto.tags, proto.ancestors)
    assert copy == expected and copy.ancestors == expected.ancestors
    assert [getattr(copy, f.name) for f in fields(Entity)] == [
        getattr(expected, f.name) for f in fields(Entity)
    ]
    assert proto.attrs == Record()  # the prototype is left as it was
    with pytest.raises(FrozenInstanceError):
        copy.attrs = Record()  # type: ignore[misc]


def test_overlays_are_freed_by_reference_counting_not_left_to_the_collector():
    # A store that kept a bound method of its own (`lookup`) was a reference cycle: a guard
    # making one overlay per call left one cycle per call for the garbage collector.
    import gc

    from cedarlite.data.entities import overlay_closed

    base = Entities([Entity(EntityUID("Tool", "t"))])
    proto = base.overlay(
        [Entity(EntityUID("Call", "c"), parents=frozenset({EntityUID("Tool", "t")}))]
    )
    entity = proto[EntityUID("Call", "c")]
    gc.collect()
    gc.disable()
    try:
        for _ in range(100):
            store = overlay_closed(base, entity)
            assert store.lookup(EntityUID("Tool", "t")) is base[EntityUID("Tool", "t")]
            again = base.overlay([entity])
            assert again.lookup(entity.uid).ancestors == entity.ancestors
        del store, again
        assert gc.collect() == 0
    finally:
        gc.enable()
