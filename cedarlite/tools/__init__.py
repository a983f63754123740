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
  :func:`normalize_tool_parameters` the provider schema normalization of the spec's §12.
"""

from .catalog import ToolCatalog, ToolsError, mcp_tools
from .compile import ToolPolicySet, compile_config
from .config import ConfigError, ConfigIssue
from .lint import RUN_CONTEXT_KEYS, check_config, lint_config, load_config
from .params import ToolArgumentError, cedar_schema, normalize_tool_parameters
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
