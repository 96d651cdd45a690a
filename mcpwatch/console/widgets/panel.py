"""Static text areas that repaint only when what they show has changed.

`show()` is called on every tick; callers pass a `key` (the view data the renderable was made from) so an
unchanged panel costs one comparison, and a changed one repaints its own region without a layout pass.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar
from weakref import WeakKeyDictionary

from rich.console import RenderableType
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.widget import Widget
from textual.widgets import Static

Make = Callable[[], RenderableType]
_UNSET = object()
_TITLES: WeakKeyDictionary[Widget, str] = WeakKeyDictionary()


def set_title(widget: Widget, title: str) -> None:
    """Set a border title as plain text: ids, tool and model names come from the wire and may look like markup
    (`[/x]`), which Textual would parse and fail on. Setting it repaints, so an unchanged title is left alone."""
    if _TITLES.get(widget) != title:
        _TITLES[widget] = title
        widget.border_title = Text(title)


class Line(Static):
    """A borderless area (a bar, a hint line); `layout=True` when its height can change."""

    def __init__(self, *, id: str | None = None, classes: str | None = None, layout: bool = False) -> None:
        super().__init__("", id=id, classes=classes)
        self._key: Any = _UNSET
        self._layout = layout
        self._renderable: RenderableType = ""

    @property
    def shown(self) -> bool:
        """Whether anything has been shown yet."""
        return self._key is not _UNSET

    def show(self, make: Make | RenderableType, key: Any = None, title: str | None = None) -> None:
        if title is not None:
            set_title(self, title)
        if key is not None and key == self._key:
            return
        self._key = key if key is not None else object()
        self._renderable = make() if callable(make) else make
        # A layout pass only when the height can change: asked for, or as tall as its content (a stacked panel).
        height = self.styles.height
        self.update(self._renderable, layout=self._layout or (height is not None and height.is_auto))

    @property
    def plain(self) -> str:
        """What the area shows, as plain text at its current width (for tests and logs)."""
        import io

        from rich.console import Console

        out = io.StringIO()
        Console(file=out, width=max(20, self.content_region.width or 80), color_system=None).print(self._renderable)
        return out.getvalue()


class Panel(Line):
    """A bordered, titled area of the main or detail screen."""

    DEFAULT_CSS = """
    Panel {
        border: round $panel-border;
        border-title-color: $text-muted;
        padding: 0 1;
        height: 1fr;
        overflow: hidden hidden;
    }
    """

    def __init__(
        self, title: str = "", *, id: str | None = None, classes: str | None = None, layout: bool = False
    ) -> None:
        super().__init__(id=id, classes=classes, layout=layout)
        set_title(self, title)


class ScrollPanel(VerticalScroll):
    """A bordered, titled list that takes focus and scrolls (j/k, arrows, g/G): a list longer than its space is
    never hidden. Shown like a `Panel` (`show`, `plain`, `shown`); its text is laid out again on every change."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("j", "scroll_down", "Down", show=False),
        Binding("k", "scroll_up", "Up", show=False),
        Binding("g", "scroll_home", "Top", show=False),
        Binding("G", "scroll_end", "Bottom", show=False),
    ]
    DEFAULT_CSS = """
    ScrollPanel {
        border: round $panel-border;
        border-title-color: $text-muted;
        height: 1fr;
        scrollbar-size-vertical: 1;
    }
    ScrollPanel:focus {
        border: round $primary;
        border-title-color: $text;
    }
    ScrollPanel > Line {
        padding: 0 1;
        height: auto;
    }
    """

    def __init__(self, title: str = "", *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        set_title(self, title)
        self.body = Line(layout=True)

    def compose(self) -> ComposeResult:
        yield self.body

    def show(self, make: Make | RenderableType, key: Any = None, title: str | None = None) -> None:
        if title is not None:
            set_title(self, title)
        self.body.show(make, key)

    @property
    def shown(self) -> bool:
        return self.body.shown

    @property
    def plain(self) -> str:
        return self.body.plain
