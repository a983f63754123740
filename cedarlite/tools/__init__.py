"""The agent tool layer: OpenClaw's tool policy (``openclaw-tool-policy.md``) compiled to Cedar.

```python
from cedarlite.tools import resolve_tools
res = resolve_tools({"tools": {"profile": "coding"}}, [{"name": "read"}, {"name": "browser"}], {})
assert res.allowed == ["read"] and res.removed == {"browser": "tools.profile"}
```

* :func:`resolve_tools` decides which tools a run offers the model, through the Cedar policies
  that :func:`compile_config` writes for a configuration and a :class:`ToolCatalog`;
* :func:`explain` traces one tool through the layers;
* :class:`ToolPolicy` is the compiled form to keep when resolving many runs or deciding calls;
  :func:`authorize_call` decides one call, its arguments checked against the tool's parameter
  schema and visible to policies as ``resource.<argument>`` and ``context.input``;
* :func:`lint_config` reports every mistake in a configuration and run context (JSON path,
  did-you-mean); ``ToolPolicy(..., strict=True)`` refuses the errors;
* :func:`cedar_schema` is the Cedar schema of a catalog's calls (to validate argument rules),
  :func:`normalize_tool_parameters` the provider schema normalization of the docs/tool-policy.md
  §12.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the names, for type checkers and IDEs; at run time see __getattr__
    from .arguments import ToolArgumentError
    from .catalog import ToolCatalog, ToolsError, mcp_tools
    from .compile import ToolPolicySet, compile_config
    from .config import ConfigError, ConfigIssue
    from .lint import RUN_CONTEXT_KEYS, check_config, lint_config, load_config
    from .params import cedar_schema, normalize_tool_parameters
    from .resolve import (
        CallDecision,
        EmptyAllowlistError,
        Explanation,
        RulesError,
        RuleSet,
        ToolPolicy,
        ToolResolution,
        authorize_call,
        explain,
        resolve_tools,
    )

# Each public name's module. They load on first use (PEP 562): a hook process that decides
# with a built guard needs the catalog and the parameter checks, not the configuration models
# (pydantic) or the compiler of configurations.
_HOMES = {
    "ToolCatalog": "catalog",
    "ToolsError": "catalog",
    "mcp_tools": "catalog",
    "ToolPolicySet": "compile",
    "compile_config": "compile",
    "ConfigError": "config",
    "ConfigIssue": "config",
    "check_config": "lint",
    "load_config": "lint",
    "RUN_CONTEXT_KEYS": "lint",
    "lint_config": "lint",
    "ToolArgumentError": "arguments",
    "cedar_schema": "params",
    "normalize_tool_parameters": "params",
    "CallDecision": "resolve",
    "EmptyAllowlistError": "resolve",
    "Explanation": "resolve",
    "RulesError": "resolve",
    "RuleSet": "resolve",
    "ToolPolicy": "resolve",
    "ToolResolution": "resolve",
    "authorize_call": "resolve",
    "explain": "resolve",
    "resolve_tools": "resolve",
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(__import__(f"{__name__}.{home}", fromlist=[name]), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})


__all__ = [
    "RUN_CONTEXT_KEYS",
    "CallDecision",
    "ConfigError",
    "ConfigIssue",
    "EmptyAllowlistError",
    "Explanation",
    "RuleSet",
    "RulesError",
    "ToolArgumentError",
    "ToolCatalog",
    "ToolPolicy",
    "ToolPolicySet",
    "ToolResolution",
    "ToolsError",
    "authorize_call",
    "cedar_schema",
    "check_config",
    "compile_config",
    "explain",
    "lint_config",
    "load_config",
    "mcp_tools",
    "normalize_tool_parameters",
    "resolve_tools",
]
