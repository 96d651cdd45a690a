"""Parts of the main screen kept out of its class: placing the top bar and banner (`panels/header.py` says what
they say), the toasts for new error events (`panels/events.py` picks them), the narrow layout's order, and tab
moving through the scrolled body. Each takes the screen and draws into it."""

from __future__ import annotations

from rich.text import Text
from textual.widget import Widget

from mcpwatch.console.headless.panels import events, header
from mcpwatch.console.headless.views import ViewState
from mcpwatch.console.screens.base import NARROW, WatchScreen
from mcpwatch.console.widgets import Line, WindowTable, set_title


def render_bar(screen: WatchScreen, view: ViewState) -> None:
    """The top bar (feed, unread events, wrapper, upstream, host) and the banner (disconnected, session ended)."""
    p = screen.palette
    session = screen.session
    feed = session.status()
    theme = screen.app.theme
    compact = screen.compact_bar
    unread = max(0, view.notable_total - session.events_seen)
    since = session.applied_while_paused if session.paused else 0
    bar_key = (theme, view.header, feed, session.paused, compact, unread, since)

    def bar() -> Text:
        return header.top_bar(
            view.header,
            feed.label,
            feed.connected,
            session.paused,
            p,
            compact=compact,
            unread=unread,
            paused_events=since,
        )

    screen.query_one("#topbar", Line).show(bar, bar_key)
    message, style = header.banner(view.header, feed.connected, feed.text, getattr(screen.app, "fleet_badge", ""))
    banner = screen.query_one("#banner", Line)
    if banner.display != bool(message):
        banner.display = bool(message)
    if message:
        banner.show(lambda: header.banner_line(message, style, p), (theme, message))


def announce(screen: WatchScreen, view: ViewState, toasted: int) -> int:
    """A toast for each new error-level event (an upstream crash…); the Events view keeps them all."""
    texts, toasted = events.toasts(view.notable, view.notable_total, toasted, view.now_mono)
    for text in texts:
        screen.notify(text, severity="error", timeout=15)
    return toasted


def arrange(screen: WatchScreen, width: int) -> None:
    """Stacked (narrow): the calls first, the settings panels after them, so the first screen shows calls."""
    body = screen.query("#body")
    if not width or not body:
        return
    body_widget = body.first()
    top = screen.query_one("#row-top")
    first = body_widget.children.index(top) == 0
    if width < NARROW and first:
        body_widget.move_child(top, after=screen.query_one("#row-bottom"))
    elif width >= NARROW and not first:
        body_widget.move_child(top, before=screen.query_one("#row-mid"))


def focus_step(screen: WatchScreen, step: int) -> None:
    """Tab / shift+tab: the next table or list, its top brought into view when the body is scrolled past it."""
    widget = screen.focus_next() if step > 0 else screen.focus_previous()
    if widget is None:
        return
    box = widget.parent if isinstance(widget, WindowTable) else widget
    body = screen.query_one("#body")
    if not isinstance(box, Widget) or box is body or body not in box.ancestors:
        return
    top = box.region.y - body.region.y + body.scroll_y
    if not (body.scroll_y <= top < body.scroll_y + body.size.height - 3):
        body.scroll_to(y=top, animate=False)


def title(screen: WatchScreen, selector: str, text: str) -> None:
    set_title(screen.query_one(selector), text)  # plain text (a filter or an id may look like markup)


def hint(screen: WatchScreen, selector: str, visible: bool, text: str) -> None:
    line = screen.query_one(selector, Line)
    if line.display != visible:
        line.display = visible
    if visible:
        line.show(text, text)
