"""The tools configuration of spec §4.1 as pydantic models.

The spec reads configurations leniently: a missing key and ``null`` are the same, a list field
that is not an array counts as not set, an object field that is not an object is absent, entries
that are not strings match nothing. :func:`load_config` reads exactly that way (never rejecting
what the spec reads) and reports every such value as a :class:`ConfigIssue` naming its JSON
path; ``strict=True`` turns the issues into a :class:`ConfigError` (a linter's view).

One set of models serves both readings: every field is declared with its proper type, and a
wrap validator falls back to the spec's reading (``None``, or the raw array) when validation
runs in lenient mode.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Annotated, Any

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    ValidatorFunctionWrapHandler,
    WrapValidator,
)

from ..entities import check_json_limits, load_json
from ..errors import CedarliteError
from ..schema.model import json_path_text
from ..values import I64_MAX


class ConfigError(CedarliteError):
    """A tools configuration that cannot be read (or, in strict mode, has ill-typed values).

    ``issues`` lists every problem found, each naming its JSON path.
    """

    code = "E0800"

    def __init__(self, message: str, *, issues: tuple[ConfigIssue, ...] = (), **kwargs: Any):
        super().__init__(message, **kwargs)
        self.issues = issues


@dataclass(frozen=True, slots=True)
class ConfigIssue:
    """A value the spec reads as "not set" (or as matching nothing): its path and why."""

    path: str
    message: str

    def __str__(self) -> str:
        return f"`{self.path}`: {self.message}"


# ---------------------------------------------------------------------------------------------
# Lenient fallbacks


def _lenient(info: ValidationInfo) -> bool:
    return bool(info.context and info.context.get("lenient"))


def _entries(v: Any, handler: ValidatorFunctionWrapHandler, info: ValidationInfo) -> Any:
    """A list field: an array of strings; leniently, any array (else not set)."""
    try:
        return handler(v)
    except ValidationError:
        if not _lenient(info):
            raise
        return list(v) if isinstance(v, list) else None


def _object(v: Any, handler: ValidatorFunctionWrapHandler, info: ValidationInfo) -> Any:
    """An object field: leniently, anything that is not a well-formed object is absent."""
    try:
        return handler(v)
    except ValidationError:
        if not _lenient(info):
            raise
        return None


def _raw(v: Any, handler: ValidatorFunctionWrapHandler, info: ValidationInfo) -> Any:
    """A scalar field the spec compares exactly: leniently, the raw value is kept."""
    try:
        return handler(v)
    except ValidationError:
        if not _lenient(info):
            raise
        return v


def _provider_entry(v: Any, handler: ValidatorFunctionWrapHandler, info: ValidationInfo) -> Any:
    """A byProvider value: ``null`` is absent, a non-object still matches but sets nothing."""
    try:
        return handler(v)
    except ValidationError:
        if not _lenient(info):
            raise
        return None if v is None else ProviderEntry.model_validate({})


def _number(v: Any) -> Any:
    """``maxSpawnDepth`` must be a number (booleans and strings are not)."""
    if v is None or (isinstance(v, int | float) and not isinstance(v, bool)):
        return v
    raise ValueError("expected a number")


Entries = Annotated[list[str] | None, WrapValidator(_entries)]
Profile = Annotated[str | None, WrapValidator(_raw)]
AnyJSON = Annotated[Any, Field(default=None)]


class _Model(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True, populate_by_name=True)


class PolicyLists(_Model):
    """``{allow?, alsoAllow?, deny?}``: the lists of one policy source (``None`` = not set)."""

    allow: Entries = None
    also_allow: Entries = Field(None, alias="alsoAllow")
    deny: Entries = None


class ProviderEntry(PolicyLists):
    """One ``byProvider`` entry: a profile and allow/alsoAllow/deny lists."""

    profile: Profile = None


ProviderMap = Annotated[
    dict[str, Annotated[ProviderEntry | None, WrapValidator(_provider_entry)]] | None,
    WrapValidator(_object),
]


class SandboxSection(_Model):
    """``{tools: {allow, alsoAllow, deny}}`` (``tools.sandbox``, ``tools.subagents``)."""

    tools: Annotated[PolicyLists | None, WrapValidator(_object)] = None


_Section = Annotated[SandboxSection | None, WrapValidator(_object)]


class AgentTools(PolicyLists):
    """``agents.list[].tools``."""

    profile: Profile = None
    by_provider: ProviderMap = Field(None, alias="byProvider")
    sandbox: _Section = None
    loop_detection: AnyJSON = Field(None, alias="loopDetection")


class ToolsSection(AgentTools):
    """``tools``: the global section (adds the sub-agent policy)."""

    subagents: _Section = None


class AgentEntry(_Model):
    """One ``agents.list[]`` entry. ``default`` counts when JavaScript-truthy."""

    id: Profile = None
    default: AnyJSON = None
    tools: Annotated[AgentTools | None, WrapValidator(_object)] = None


class SubagentDefaults(_Model):
    """``agents.defaults.subagents``."""

    max_spawn_depth: AnyJSON = Field(None, alias="maxSpawnDepth")


class AgentDefaults(_Model):
    """``agents.defaults``."""

    subagents: Annotated[SubagentDefaults | None, WrapValidator(_object)] = None


class AgentsSection(_Model):
    """``agents``: defaults and the agent list ``list`` (entries not objects are ``None``)."""

    defaults: Annotated[AgentDefaults | None, WrapValidator(_object)] = None
    entries: Annotated[
        list[Annotated[AgentEntry | None, WrapValidator(_object)]] | None, WrapValidator(_object)
    ] = Field(None, alias="list")


class GroupEntry(_Model):
    """``channels.<id>.groups.<group id>``: only ``tools`` is read (present = an object)."""

    tools: Annotated[PolicyLists | None, WrapValidator(_object)] = None


class ChannelEntry(_Model):
    """``channels.<id>``: only ``groups`` is read."""

    groups: Annotated[
        dict[str, Annotated[GroupEntry | None, WrapValidator(_object)]] | None,
        WrapValidator(_object),
    ] = None


class ToolsConfig(_Model):
    """The whole configuration the tool-policy layer reads (spec §4.1)."""

    tools: Annotated[ToolsSection | None, WrapValidator(_object)] = None
    agents: Annotated[AgentsSection | None, WrapValidator(_object)] = None
    channels: Annotated[
        dict[str, Annotated[ChannelEntry | None, WrapValidator(_object)]] | None,
        WrapValidator(_object),
    ] = None

    @property
    def max_spawn_depth(self) -> int:
        """``max(1, floor(maxSpawnDepth))`` for a finite number, else 1 (spec §5.8).

        Capped at the largest Cedar Long, as run depths are.
        """
        defaults = self.agents.defaults if self.agents else None
        sub = defaults.subagents if defaults else None
        value = sub.max_spawn_depth if sub else None
        if isinstance(value, bool) or not isinstance(value, int | float):
            return 1
        if value != value or value in (float("inf"), float("-inf")):
            return 1
        return min(max(1, int(value // 1)), I64_MAX)


# ---------------------------------------------------------------------------------------------
# Loading

_MESSAGES = {
    "list_type": "expected an array of strings; the spec reads this value as not set",
    "string_type": "expected a string",
    "model_type": "expected an object; the spec reads this value as absent",
    "dict_type": "expected an object; the spec reads this value as absent",
    "model_attributes_type": "expected an object; the spec reads this value as absent",
}


def _issues(err: ValidationError) -> tuple[ConfigIssue, ...]:
    out = []
    for e in err.errors():
        loc = tuple(x for x in e["loc"] if not (isinstance(x, str) and x.startswith("function-")))
        message = _MESSAGES.get(e["type"], str(e["msg"]).lower())
        if e["type"] == "string_type" and loc and isinstance(loc[-1], int):
            message = "expected a string; the spec reads this entry as matching nothing"
        out.append(ConfigIssue(json_path_text(loc) or "<config>", message))
    return tuple(out)


def _check_numbers(config: ToolsConfig) -> tuple[ConfigIssue, ...]:
    defaults = config.agents.defaults if config.agents else None
    sub = defaults.subagents if defaults else None
    value = sub.max_spawn_depth if sub else None
    try:
        _number(value)
    except ValueError:
        path = "agents.defaults.subagents.maxSpawnDepth"
        return (ConfigIssue(path, "expected a number; the spec reads the default 1"),)
    return ()


def load_config(
    config: Mapping[str, Any] | str | None, *, strict: bool = False
) -> tuple[ToolsConfig, tuple[ConfigIssue, ...]]:
    """Read a tools configuration (a dict, JSON text or ``None``) the way the spec reads it.

    Returns the model and the issues (values the spec reads as not set). With ``strict=True``
    any issue raises :class:`ConfigError`. A configuration that is not a JSON object always
    raises.
    """
    if isinstance(config, str | bytes):
        config = load_json(config, "config", ConfigError)
    if config is None:
        config = {}
    if not isinstance(config, Mapping):
        raise ConfigError(f"the tools configuration must be a JSON object, not `{_kind(config)}`")
    check_json_limits(config, "the tools configuration", ConfigError)
    issues: tuple[ConfigIssue, ...] = ()
    try:
        model = ToolsConfig.model_validate(config)
    except ValidationError as err:
        issues = _issues(err)
        try:
            model = ToolsConfig.model_validate(config, context={"lenient": True})
        except ValidationError as inner:  # pragma: no cover - the lenient reading accepts all
            raise ConfigError(f"cannot read the tools configuration: {inner}") from None
    issues += _check_numbers(model)
    if strict and issues:
        first = issues[0]
        more = f" (and {len(issues) - 1} more)" if len(issues) > 1 else ""
        raise ConfigError(f"invalid tools configuration at {first}{more}", issues=issues)
    return model, issues


def check_config(config: Mapping[str, Any] | str | None) -> tuple[ConfigIssue, ...]:
    """The issues of a configuration: every value the spec silently reads as not set."""
    return load_config(config)[1]


def js_truthy(value: Any) -> bool:
    """JavaScript truthiness of a JSON value (``0``, ``""``, ``false``, ``null`` are falsy)."""
    if value is None or value is False:
        return False
    if isinstance(value, int | float) and not isinstance(value, bool):
        return value != 0 and value == value
    if isinstance(value, str):
        return value != ""
    return True


def _kind(value: Any) -> str:
    return {list: "array", bool: "boolean", int: "number", float: "number"}.get(
        type(value), type(value).__name__
    )
