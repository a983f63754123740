"""The tools configuration of docs/tool-policy.md §4.1 as pydantic models.

The spec reads configurations leniently: a missing key and ``null`` are the same, a list field
that is not an array counts as not set, an object field that is not an object is absent, entries
that are not strings match nothing. :func:`~cedarlite.tools.load_config` reads exactly that
way (never rejecting what the spec reads); :mod:`cedarlite.tools.lint` finds its errors, each
a :class:`ConfigIssue` naming its JSON path; ``strict=True`` turns them into a
:class:`ConfigError`.

One set of models serves both readings: every field is declared with its proper type, and a
wrap validator falls back to the spec's reading (``None``, or the raw array) when validation
runs in lenient mode.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    ValidatorFunctionWrapHandler,
    WrapValidator,
)

from .._jsonloc import json_path_text
from ..data.values import I64_MAX
from ..errors import CedarliteError
from ..source import Span

#: The first step of the path of a finding on the run's tool list (``tools[0].name``).
TOOL_LIST = "tools"


class ConfigError(CedarliteError):
    """A tools configuration that cannot be read (or, in strict mode, has ill-typed values).

    ``issues`` lists every problem found, each naming its JSON path.
    """

    code = "E0800"

    def __init__(self, message: str, *, issues: tuple[ConfigIssue, ...] = (), **kwargs: Any):
        super().__init__(message, **kwargs)
        self.issues = issues

    def render(self) -> str:
        """The message, then every error finding beyond the first, one per line."""
        errors = [i for i in self.issues if i.severity == "error"]
        more = "".join(f"\n  {issue}" for issue in errors[1:])
        return super().render() + more


Severity = Literal["error", "warning"]


@dataclass(frozen=True, slots=True)
class ConfigIssue:
    """One finding on a configuration or run context (see :func:`cedarlite.tools.lint_config`).

    ``loc`` is its JSON path as a tuple (``("tools", "deny", 0)``), ``path`` the same as text
    (``tools.deny[0]``); ``message`` says what is wrong and how the spec reads it; ``help`` is
    a hint (a did-you-mean); ``severity`` is ``"error"`` (a strict policy refuses it) or
    ``"warning"``; ``code`` is stable (``unknown-key``, ``wrong-type``, ``no-match``...);
    ``on_key`` marks findings about an object key rather than its value.
    """

    loc: tuple[str | int, ...]
    message: str
    help: str | None = None
    severity: Severity = "error"
    code: str = "invalid-value"
    on_key: bool = False

    @property
    def in_tool_list(self) -> bool:
        """Whether the finding is on the run's tool list (``tools[0].name``), not on the
        configuration (whose ``tools`` section is an object)."""
        return len(self.loc) > 1 and self.loc[0] == TOOL_LIST and isinstance(self.loc[1], int)

    @property
    def path(self) -> str:
        """The JSON path as text (``agents.list[1].tools.deny``; ``<config>`` for the root)."""
        return json_path_text(self.loc) or "<config>"

    def to_error(
        self, text: str | None = None, source: str | None = None, span: Span | None = None
    ) -> ConfigError:
        """This finding as a located :class:`ConfigError` (to render with a caret snippet)."""
        return ConfigError(
            f"`{self.path}`: {self.message}",
            span=span,
            text=text,
            source=source,
            help=self.help,
            code=self.code,
        )

    def render(
        self, text: str | None = None, source: str | None = None, span: Span | None = None
    ) -> str:
        """``source:line:column: error[code]: `path`: message``, a caret snippet and the help."""
        rendered = self.to_error(text, source, span).render()
        if self.severity == "warning":
            rendered = rendered.replace(": error[", ": warning[", 1)
        return rendered

    def to_json(self) -> dict[str, Any]:
        """``{"path", "severity", "code", "message", "help"}``."""
        return {
            "path": self.path,
            "severity": self.severity,
            "code": self.code,
            "message": self.message,
            "help": self.help,
        }

    def __str__(self) -> str:
        hint = f" ({self.help})" if self.help else ""
        return f"`{self.path}`: {self.message}{hint}"


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
    """The whole configuration the tool-policy layer reads (docs/tool-policy.md §4.1)."""

    tools: Annotated[ToolsSection | None, WrapValidator(_object)] = None
    agents: Annotated[AgentsSection | None, WrapValidator(_object)] = None
    channels: Annotated[
        dict[str, Annotated[ChannelEntry | None, WrapValidator(_object)]] | None,
        WrapValidator(_object),
    ] = None

    @property
    def max_spawn_depth(self) -> int:
        """``max(1, floor(maxSpawnDepth))`` for a finite number, else 1 (docs/tool-policy.md §5.8).

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


def read_config(raw: Mapping[str, Any]) -> ToolsConfig:
    """The model of a configuration object, read leniently as the spec reads it (no checks)."""
    try:
        return ToolsConfig.model_validate(raw, context={"lenient": True})
    except ValidationError as err:  # pragma: no cover - the lenient reading accepts all
        raise ConfigError(f"cannot read the tools configuration: {err}") from None
