"""kiln: a client for kilnd, kiln's microVM sandbox daemon (docs/api.md).

    from kiln import Kiln
    with Kiln() as k, k.sandboxes.create(image="minimal") as sb:
        print(sb.exec(["echo", "hi"]).stdout)

The asyncio client is :class:`kiln.aio.AsyncKiln`. Exceptions are in
:mod:`kiln.errors`.
"""

from . import egress, errors
from ._surface import (BuildStream, Checkpoints, Egress, EgressPolicy, EventStream, Files, Firewall, Images,
                       Kiln, Ports, Previews, Process, Processes, Sandbox, Sandboxes, Secrets, Templates)
from .errors import (ClientTimeoutError, KilnConnectionError, KilnError, KilnProtocolError,
                     RequestTimeoutError, TimeoutError)
from .models import (AttachedEvent, CodeError, Event, ExecResult, ExitEvent, FileInfo, GapEvent,
                     OutputEvent, ResultEvent, RunResult, WatchEvent)

__version__ = "0.1.0"

__all__ = [
    "Kiln", "Sandboxes", "Sandbox", "Files", "Processes", "Process", "Ports", "Previews",
    "Checkpoints", "Firewall", "EventStream", "Templates", "BuildStream", "Images", "Secrets", "Egress",
    "EgressPolicy", "ExecResult", "RunResult", "CodeError", "Event",
    "OutputEvent", "ExitEvent", "ResultEvent", "AttachedEvent", "GapEvent", "WatchEvent", "FileInfo",
    "KilnError", "KilnConnectionError", "KilnProtocolError", "TimeoutError", "RequestTimeoutError",
    "ClientTimeoutError", "egress", "errors", "__version__",
]
