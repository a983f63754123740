"""Installing cedarlite's OpenClaw plugin: ``cedarlite hook openclaw --print-settings``.

The plugin (``openclaw_plugin/``: ``openclaw.plugin.json``, ``package.json``, ``index.js``) is
package data of the wheel. :func:`print_settings` checks the configuration and rules as the
decision service will load them, then prints the ``plugins`` settings to deep-merge into
``openclaw.json``: the plugin's folder in ``plugins.load.paths``, and
``plugins.entries.cedarlite`` enabled with the service's command line (``cedarlite serve
--stdio``, the interpreter by absolute path: OpenClaw runs plugins with a reduced ``PATH``).
The files are read when the service starts, not now: a gateway restart picks up edits, and
the running service reloads them when they change.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Mapping
from typing import Any, NamedTuple, TextIO

from ..errors import CedarliteError
from .openclaw_config import OpenClawError, default_config_path

#: The plugin's id (``plugins.entries.<id>``) and its folder inside the installed package.
PLUGIN_ID = "cedarlite"
PLUGIN_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "openclaw_plugin")

#: Seconds the plugin gives one decision, the service's start included (OpenClaw gives a
#: ``before_tool_call`` handler 15 s and fails the call closed after that).
DEFAULT_DEADLINE = 10.0
MAX_DEADLINE = 12.0


class Settings(NamedTuple):
    """The command line of ``cedarlite hook openclaw --print-settings``."""

    rules: tuple[str, ...]
    config: str | None = None
    state_dir: str | None = None
    decision_log: str | None = None
    deadline: float = DEFAULT_DEADLINE

    def config_path(self) -> str:
        """``--config``, else OpenClaw's own configuration file."""
        return os.path.abspath(self.config) if self.config else default_config_path()


def service_command(settings: Settings) -> list[str]:
    """The service's command line (interpreter by absolute path, files absolute)."""
    words = [os.path.abspath(sys.executable), "-m", "cedarlite", "serve", "--stdio"]
    words += ["--config", settings.config_path()]
    for rules in settings.rules:
        words += ["--rules", rules if rules.startswith("cedarlite:") else os.path.abspath(rules)]
    if settings.state_dir is not None:
        words += ["--state-dir", os.path.abspath(settings.state_dir)]
    if settings.decision_log is not None:
        words += ["--decision-log", os.path.abspath(settings.decision_log)]
    return words


def plugin_settings(settings: Settings, openclaw: Mapping[str, Any] | None = None) -> dict:
    """The ``plugins`` settings that load and enable the shipped plugin: to be deep-merged into
    ``openclaw.json`` (objects key by key, arrays concatenated). ``openclaw`` is the
    configuration it goes into: when it has a ``plugins.allow`` list, the plugin's id is added
    to it (a list that did not exist is not created: it would turn other plugins off)."""
    plugins: dict[str, Any] = {
        "load": {"paths": [PLUGIN_DIR]},
        "entries": {
            PLUGIN_ID: {
                "enabled": True,
                "config": {
                    "command": service_command(settings),
                    "deadlineMs": round(settings.deadline * 1000),
                },
            }
        },
    }
    present = openclaw.get("plugins") if isinstance(openclaw, Mapping) else None
    allow = present.get("allow") if isinstance(present, Mapping) else None
    if isinstance(allow, list) and PLUGIN_ID not in allow:
        plugins["allow"] = [PLUGIN_ID]
    return {"plugins": plugins}


def validate(settings: Settings) -> None:
    """Load the configuration and rules as the service will when it starts (strictly): raises
    a located :class:`~cedarlite.errors.CedarliteError`."""
    # lazy on purpose: a command loads only the stages it runs (the command line's start time)
    from .serve.guards import GuardSet, ServeOptions

    GuardSet(ServeOptions(settings.config_path(), settings.rules)).close()


def print_settings(settings: Settings, stdout: TextIO, stderr: TextIO) -> int:
    """``cedarlite hook openclaw --print-settings``: validate the files (a mistake is printed,
    located, exit 3: the service would refuse to start), then print the settings (exit 0)."""
    path = settings.config_path()
    if not 0 < settings.deadline <= MAX_DEADLINE:
        print(f"cedarlite: --deadline must be more than 0 and at most {MAX_DEADLINE:g} s "
              "(OpenClaw fails a handler closed after 15 s)", file=stderr)  # fmt: skip
        return 2
    try:
        validate(settings)
    except CedarliteError as err:
        print(err.render(), file=stderr)
        return 3
    openclaw: Any = None
    if settings.config is None:  # the settings go into the file the service reads
        # lazy on purpose: only without --config (the file the settings go into is read)
        from ..data.jsonvalue import load_json

        try:
            with open(path, encoding="utf-8") as f:
                openclaw = load_json(f.read(), path, OpenClawError)
        except (OSError, UnicodeDecodeError, CedarliteError):  # validated above: not expected
            openclaw = None
    snippet = plugin_settings(settings, openclaw)
    print(json.dumps(snippet, indent=2), file=stdout)
    words = snippet["plugins"]["entries"][PLUGIN_ID]["config"]["command"]
    import shlex

    print(f"cedarlite: the plugin will run: {shlex.join(words)}", file=stderr)
    return 0
