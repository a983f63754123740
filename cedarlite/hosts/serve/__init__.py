"""``cedarlite serve``: a long-lived decision service, so that no host pays for a Python start
per tool call.

One protocol (:mod:`.protocol`: the operations and their JSON shapes) over three transports,
one module each: :mod:`.stdio` (JSON lines on the standard streams, for a host that spawns the
service as its child), :mod:`.unix` (the same lines over a Unix socket in a private
directory, peers checked by uid) and :mod:`.http` (``POST /v1/<operation>``, on uvicorn).
:mod:`.guards` holds the guard set the answers come from and reloads it, validated, when its
files change; :mod:`.service` runs the transports and the process (signals, idle exit).
:mod:`.client` is the Claude Code hook's side: it asks the per-user service and imports
almost nothing (``python -X importtime``), so that a hook process costs little more than
Python's own start.

Nothing is imported here: the client must stay light.
"""
