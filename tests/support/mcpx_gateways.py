"""Gateway doubles for the MCPx tests: gateways that behave like other deployments."""

from __future__ import annotations

from mcpx_router.mcpx import Gateway, GatewayConfig
from mcpx_router.mcpx.gateway._gateway import _Connection
from mcpx_router.mcpx.gateway._gateway_state import FrameRejected


class SilentLimitGateway(Gateway):
    """Our gateway, but frames over its rate limit are dropped without a word, as some are."""

    def __init__(self, rate_per_second: float, burst: int) -> None:
        super().__init__(GatewayConfig(rate_per_second=rate_per_second, rate_burst=burst))
        self.dropped = 0

    def _reject(self, conn: _Connection, rejected: FrameRejected) -> None:
        if rejected.error == "rate_limited":
            self.dropped += 1
            return
        super()._reject(conn, rejected)
