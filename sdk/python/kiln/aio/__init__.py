"""kiln's asyncio client: the same surface as :class:`kiln.Kiln`, with
``async def`` methods and async iterators for streams.

    from kiln.aio import AsyncKiln
    async with AsyncKiln() as k:
        async with await k.sandboxes.create(image="minimal") as sb:
            print((await sb.exec("echo hi")).stdout)
"""

from .._async_surface import (AsyncBuildStream, AsyncCheckpoints, AsyncEgress, AsyncEgressPolicy,
                              AsyncEventStream, AsyncFiles, AsyncFirewall, AsyncImages, AsyncKiln, AsyncPorts, AsyncPreviews, AsyncProcess,
                              AsyncProcesses, AsyncSandbox, AsyncSandboxes, AsyncSecrets, AsyncTemplates)

__all__ = [
    "AsyncKiln", "AsyncSandboxes", "AsyncSandbox", "AsyncFiles", "AsyncProcesses", "AsyncProcess",
    "AsyncPorts", "AsyncPreviews", "AsyncCheckpoints", "AsyncFirewall", "AsyncEventStream",
    "AsyncTemplates", "AsyncBuildStream", "AsyncImages", "AsyncSecrets", "AsyncEgress", "AsyncEgressPolicy",
]
