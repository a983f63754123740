"""``python -m cedarlite``: the command line (see :mod:`cedarlite.cli`).

``cedarlite hook claude-code ...`` runs once per tool call of an agent: it asks the per-user
decision service first (:func:`~cedarlite.hosts.serve.client.ask_service`), then its plain
command line (:meth:`~cedarlite.hosts.claude_code.HookOptions.from_argv`) goes straight to the
hook process (:func:`~cedarlite.hosts.claude_code.run_process`), without importing the rest of
the command line; any other goes to :func:`cedarlite.cli.main`.
"""

from __future__ import annotations

import sys

TYPE_CHECKING = False  # (not typing's: see cedarlite/__init__.py)
if TYPE_CHECKING:
    from collections.abc import Sequence


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit code (the ``cedarlite`` command's entry). A
    hook command line ends the process once it has answered."""
    words = sys.argv[1:] if argv is None else list(argv)
    if words[:1] == ["hook"]:
        # lazy on purpose: only a hook command line switches the collector off
        import gc

        gc.disable()  # a hook process lives for one event (see run_process), imports included
        # lazy on purpose: a hook process loads the service's client, then (when no
        # service answers) the hook, never the command line
        from .hosts.serve.client import ask_service

        # The per-user decision service answers (and this process ends), or the hook decides
        # in-process (after at most min(2 s, 0.4 x deadline) spent on the service: within the
        # `timeout` that `--print-settings` gives, 5 s over the deadline).
        words = ["hook", *ask_service(words[1:])]
        from .hosts.claude_code import HookOptions, run_process

        options = HookOptions.from_argv(words[1:])
        if options is not None:
            run_process(options)
        gc.enable()
    # lazy on purpose: the command line loads only for a call that is not a hook
    from .cli.main import main as cli_main

    return cli_main(words)


if __name__ == "__main__":
    sys.exit(main())
