"""Impact of a policy change: replay the guard's decision logs against a new policy.

```python
import cedarlite

report = cedarlite.replay("logs/*.jsonl.gz", {"tools": {"profile": "coding"}},
                          rules=["policies/exec-commands.cedar"])
print(report.transitions)  # {"allow->block": 1204, "block->allow": 3}
```

* :func:`replay` decides every logged call again with a :class:`~cedarlite.hooks.Guard` built
  from the new configuration, tools and rules, on Dask (the local scheduler, or a
  ``dask.distributed`` cluster), and returns a :class:`ReplayReport`;
* :mod:`~cedarlite.impact.logline` reads one log line as hostile input;
* :mod:`~cedarlite.impact.reads` finds the calls whose new decision may depend on a value the
  log redacted ("undecidable from the log");
* :mod:`~cedarlite.impact.worker` is what a Dask worker runs on one partition.

Dask is an optional dependency (``pip install 'cedarlite[replay]'``): this package imports it
only when a replay runs.
"""

from .driver import ReplayError, replay
from .report import ReplayReport

__all__ = ["ReplayError", "ReplayReport", "replay"]
