"""The council's MCP face: `consult_council`, `council_health_check` and the `council.*` admin tools.

Results are JSON text content and the same object as structuredContent. Progress goes out as
`notifications/progress` on the caller's token with the council's state in `params._meta`; the SDK's
`report_progress` cannot carry `_meta`, so the notification is built here and sent on the request's own
channel (on Streamable HTTP it rides that request's stream). The caller's deadline, when the wrapper sends
one, arrives as `params._meta["dev.mcpwatch/deadline_ms"]`.
"""

from __future__ import annotations

import contextlib
import json
import logging
import math
from collections.abc import AsyncIterator
from typing import Any, Literal

import mcp_types as types
from mcp.server import MCPServer
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError

from mcpwatch import __version__
from mcpwatch.council.backends.base import Backend
from mcpwatch.council.catalog import UnknownModel
from mcpwatch.council.core import Council, CouncilError
from mcpwatch.council.health import health_check
from mcpwatch.council.progress import SendFn
from mcpwatch.council.settings import CouncilSettings
from mcpwatch.wire import DEADLINE_META, DEFAULT_HEALTH_TOOL

log = logging.getLogger(__name__)

INSTRUCTIONS = (
    "A council of language models. consult_council asks several models, has them rank each other's answers "
    "anonymously and returns a chairman's synthesis, with per-model status and partial results when time runs "
    "out. Call council_health_check once per session before expensive calls."
)
MAX_DEADLINE_MS = 7 * 24 * 3600 * 1000


def make_backend(settings: CouncilSettings) -> Backend:
    if settings.backend == "openai":
        from mcpwatch.council.backends.openai import OpenAIBackend

        return OpenAIBackend(base_url=settings.base_url, api_key=settings.api_key, time_scale=settings.time_scale)
    from mcpwatch.council.backends.simulated import SimulatedBackend

    return SimulatedBackend(
        settings.scenario,
        seed=settings.seed,
        time_scale=settings.time_scale,
        key_configured=settings.api_key is not None,
    )


def caller_deadline_ms(meta: Any) -> int | None:
    """The wrapper's `dev.mcpwatch/deadline_ms`, if present and sane (a non-negative number of ms)."""
    if not meta:
        return None
    try:
        raw = meta.get(DEADLINE_META)
    except AttributeError:
        return None
    if raw is None:
        return None
    if isinstance(raw, bool) or not isinstance(raw, int | float) or not math.isfinite(raw) or raw < 0:
        log.warning("ignoring %s=%r: not a non-negative number of milliseconds", DEADLINE_META, raw)
        return None
    return int(min(raw, MAX_DEADLINE_MS))


def progress_sender(ctx: Context) -> SendFn | None:
    """A sender for progress with `_meta`, or None when the caller asked for no progress."""
    request = ctx.request_context
    meta = request.meta or {}
    token = meta.get("progress_token")
    if token is None:
        return None

    async def send(progress: float, total: float, message: str, extra_meta: dict[str, Any]) -> None:
        params = types.ProgressNotificationParams(
            progress_token=token, progress=progress, total=total, message=message, _meta=extra_meta
        )
        await request.session.send_notification(
            types.ProgressNotification(params=params), related_request_id=request.request_id
        )

    return send


def json_result(data: dict[str, Any], *, is_error: bool = False) -> types.CallToolResult:
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=json.dumps(data, indent=2, ensure_ascii=False))],
        structured_content=data,
        is_error=is_error,
    )


def _roster_view(council: Council) -> dict[str, Any]:
    roster = council.roster
    return {
        "models": [
            {"id": m.id, "name": m.name, "enabled": roster.is_enabled(m.id), "min_tier": m.min_tier, "tiers": m.tiers()}
            for m in roster.all()
        ],
        "enabled": [m.id for m in roster.enabled()],
        "chairman": roster.chairman.id,
        "acting_chairman": roster.acting_chairman.id,  # differs while the chairman is disabled
    }


def build_server(settings: CouncilSettings, backend: Backend | None = None) -> tuple[MCPServer, Council]:
    """The MCPServer with every council tool registered. Configure logging before calling this."""
    council = Council(settings, backend or make_backend(settings))

    @contextlib.asynccontextmanager
    async def lifespan(_server: MCPServer) -> AsyncIterator[dict[str, Any]]:
        try:
            yield {}
        finally:
            await council.backend.aclose()

    level = logging.getLevelName(logging.getLogger().getEffectiveLevel())
    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"] = "WARNING"
    if level in ("DEBUG", "INFO", "ERROR", "CRITICAL"):
        log_level = level  # type: ignore[assignment]  # one of the literals, as the line above checks
    mcp = MCPServer(
        "mcpwatch-council",
        version=__version__,
        instructions=INSTRUCTIONS,
        log_level=log_level,
        lifespan=lifespan,
    )
    read_only = types.ToolAnnotations(read_only_hint=True, idempotent_hint=True, open_world_hint=False)
    admin_write = types.ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=True)

    @mcp.tool(
        name="consult_council",
        annotations=types.ToolAnnotations(read_only_hint=True, open_world_hint=True),
    )
    async def consult_council(
        query: str, ctx: Context, confidence: str | None = "high", include_details: bool = False
    ) -> types.CallToolResult:
        """Ask the council: several models answer, rank each other anonymously, and a chairman synthesizes.

        confidence: "quick" (~30 s, 2 models), "balanced" (~90 s, 3), "high" (~180 s, all; default),
        "reasoning" (~600 s, reasoning models too) or "auto" (the tier the slowest enabled model needs).
        Returns JSON: synthesis, model_responses (status ok/timeout/rate_limited/auth_error/error, latency_ms,
        response), ranking, metadata (status complete/partial/failed, synthesis_type, warning).
        """
        deadline = caller_deadline_ms(ctx.request_context.meta)
        try:
            result, is_error = await council.consult(
                query,
                confidence,
                include_details=include_details,
                caller_deadline_ms=deadline,
                send=progress_sender(ctx),
            )
        except CouncilError as exc:
            raise ToolError(str(exc)) from None
        return json_result(result, is_error=is_error)

    @mcp.tool(name=DEFAULT_HEALTH_TOOL, annotations=read_only)
    async def council_health_check() -> types.CallToolResult:
        """Check the council before expensive calls: key, models, chairman, tier budgets, a connectivity probe."""
        return json_result(await health_check(council))

    @mcp.tool(name="council.models.list", annotations=read_only)
    async def models_list() -> types.CallToolResult:
        """The council's models: enabled or not, and the tiers each one fits."""
        return json_result(_roster_view(council))

    @mcp.tool(name="council.models.enable", annotations=admin_write)
    async def models_enable(model: str) -> types.CallToolResult:
        """Enable a model (by id or name) so consult_council asks it again."""
        try:
            spec, changed = council.roster.enable(model)
        except UnknownModel as exc:
            raise ToolError(str(exc)) from None
        log.info("model %s enabled (changed: %s)", spec.id, changed)
        return json_result({**_roster_view(council), "model": spec.id, "changed": changed})

    @mcp.tool(name="council.models.disable", annotations=admin_write)
    async def models_disable(model: str) -> types.CallToolResult:
        """Disable a model (by id or name): consult_council stops asking it. The last enabled model stays."""
        try:
            spec, changed = council.roster.disable(model)
        except (UnknownModel, ValueError) as exc:
            raise ToolError(str(exc)) from None
        log.info("model %s disabled (changed: %s)", spec.id, changed)
        return json_result({**_roster_view(council), "model": spec.id, "changed": changed})

    @mcp.tool(name="council.chairman.get", annotations=read_only)
    async def chairman_get() -> types.CallToolResult:
        """The model that writes the council's synthesis."""
        chairman, acting = council.roster.chairman, council.roster.acting_chairman
        return json_result({"chairman": chairman.id, "name": chairman.name, "acting_chairman": acting.id})

    @mcp.tool(name="council.chairman.set", annotations=admin_write)
    async def chairman_set(model: str) -> types.CallToolResult:
        """Make another council model (by id or name) the chairman."""
        try:
            spec, previous = council.roster.set_chairman(model)
        except UnknownModel as exc:
            raise ToolError(str(exc)) from None
        log.info("chairman %s -> %s", previous.id, spec.id)
        return json_result(
            {"chairman": spec.id, "name": spec.name, "previous": previous.id, "changed": spec.id != previous.id}
        )

    return mcp, council
