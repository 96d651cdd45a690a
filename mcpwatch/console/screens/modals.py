"""Modal dialogs: prompts that keep keys typed ahead, a validated seconds prompt, a yes/no confirmation."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import ClassVar, TypeVar

from textual import events, on
from textual.app import ComposeResult
from textual.await_complete import AwaitComplete
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.dom import DOMNode
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Label, Static
from textual.widgets.input import Selection

from mcpwatch.console.headless.validate import InvalidValue, parse_seconds
from mcpwatch.operator import OperatorError

_NOTHING = object()


_Result = TypeVar("_Result")


class TypedAheadPrompt(ModalScreen[_Result]):
    """A dialog with one text field that takes every key typed while it is on top, in order.

    The app's key router hands each key to the prompt on top (`take_key`) and delivers the next only once this one
    has done what it does: Enter has checked the value, sent it and closed the prompt (or kept it open saying why),
    so keys typed right after it reach the screen beneath, never this closing prompt. The prompt closes only on its
    own Enter or Escape (or its buttons) and only ever takes itself off the screen stack (`dismiss`), never the
    screen beneath. Subclasses compose one `Input` and say what Enter does (`submit`).
    """

    def __init__(self) -> None:
        super().__init__(classes="dialog-screen")
        self._dismissed = False  # dismissed already: a second Enter or Escape must not pop the screen beneath
        self._kept: tuple[_Result | None] | None = None  # a result to close with once back on top
        self._submitting = False

    def on_mount(self) -> None:
        field = self.query_one(Input)
        self.set_focus(field)  # focus now, before the loop hands over the next key
        field.selection = Selection(0, len(field.value))  # typing replaces the current value

    def take_key(self, event: events.Key) -> Awaitable[None] | None:
        """Act on one key typed while the prompt is on top; returns what is still to finish (Enter's send)."""
        if not self.is_mounted:
            return self._take_when_mounted(event)
        field = self.query_one(Input)
        on_field = self.focused in (field, None)
        if on_field and event.key == "enter":
            return self._submit_once()
        if on_field and event.is_printable and event.character:
            selection = field.selection
            if selection.is_empty:
                field.insert_text_at_cursor(event.character)
            else:
                field.replace(event.character, *selection)
            return None
        active = self.active_bindings.get(event.key)
        if active is not None and active.enabled:
            return self._run(active.binding.action, active.node)
        return None

    async def _run(self, action: str, node: DOMNode) -> None:
        await self.app.run_action(action, node)

    async def _take_when_mounted(self, event: events.Key) -> None:
        await self._mounted_event.wait()
        pending = self.take_key(event)
        if pending is not None:
            await pending

    async def _submit_once(self) -> None:
        if self._submitting or self._dismissed:
            return
        self._submitting = True
        try:
            await self.submit()
        finally:
            self._submitting = False

    async def submit(self) -> None:
        """Enter: check the value and act on it; close with `dismiss`, or stay open saying what is wrong."""
        raise NotImplementedError

    def action_cancel(self) -> None:
        self.dismiss(None)

    def dismiss(self, result: _Result | None = None) -> AwaitComplete:
        """Close this prompt, once; while another screen is over it (the palette), once it is back on top."""
        if self._dismissed or self not in self.app.screen_stack:
            return AwaitComplete()
        if not self.is_current:
            self._kept = (result,)
            return AwaitComplete()
        self._dismissed = True
        return super().dismiss(result)

    def on_screen_resume(self) -> None:
        if self._kept is not None:
            (result,) = self._kept
            self._kept = None
            self.dismiss(result)


class SecondsPrompt(TypedAheadPrompt[str | None]):
    """Asks for seconds, checks them, sends them with `submit`, and stays open (explaining) until one works.

    `submit` returns the success message the caller shows; an `OperatorError` it raises (the wrapper refused,
    or is unreachable) is shown in the dialog and nothing changes. Dismisses with the message, or None on escape.
    """

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "cancel", "Cancel", id="prompt.cancel")]

    def __init__(
        self,
        title: str,
        explanation: str,
        submit: Callable[[float | None], Awaitable[str]],
        *,
        initial: str = "",
        allow_empty: bool = False,
        allow_zero: bool = True,
        budget: bool = False,
        what: str = "the value",
        placeholder: str = "seconds",
        caution: Callable[[float | None], str | None] | None = None,
        effect: Callable[[float | None], str] | None = None,
    ) -> None:
        super().__init__()
        self._title = title
        self._explanation = explanation
        self._submit = submit
        self._initial = initial
        self._allow_empty = allow_empty
        self._allow_zero = allow_zero
        self._budget = budget
        self._what = what
        self._placeholder = placeholder
        self._caution = caution
        self._effect = effect  # what the value would have done to the recent calls (same figures as `whatif`)
        self._cautioned: object = _NOTHING  # the value last warned about: enter again sends it

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog"):
            yield Label(self._title, classes="dialog-title", markup=False)
            yield Static(self._explanation, classes="dialog-text", markup=False)
            yield Input(self._initial, placeholder=self._placeholder, id="value", select_on_focus=False)
            if self._effect is not None:
                yield Static(self._effect_text(self._initial), id="effect", classes="dialog-text", markup=False)
            yield Static("", id="problem", classes="dialog-problem", markup=False)
            with Horizontal(classes="dialog-buttons"):
                yield Button("Set", variant="primary", id="ok")
                yield Button("Cancel", id="cancel")

    def _problem(self, text: str) -> None:
        self.query_one("#problem", Static).update(text)
        self.set_class(bool(text), "-has-problem")

    @on(Input.Changed)
    def _typing(self, event: Input.Changed) -> None:
        self._problem("")
        self._cautioned = _NOTHING
        if self._effect is not None:
            self.query_one("#effect", Static).update(self._effect_text(event.value))

    def _effect_text(self, text: str) -> str:
        """The what-if line for the value typed so far; nothing while it is not a valid value."""
        assert self._effect is not None
        try:
            value = parse_seconds(text, allow_empty=self._allow_empty, allow_zero=self._allow_zero)
        except InvalidValue:
            return ""
        return self._effect(value)

    @on(Input.Submitted)
    @on(Button.Pressed, "#ok")
    def _accept(self) -> None:
        """The Set button (Enter comes through `take_key`, which waits for the answer)."""
        self.run_worker(self._submit_once(), group="prompt", exit_on_error=False)

    async def submit(self) -> None:
        text = self.query_one(Input).value
        try:
            value = parse_seconds(
                text, what=self._what, allow_empty=self._allow_empty, allow_zero=self._allow_zero, budget=self._budget
            )
        except InvalidValue as exc:
            self._problem(str(exc))
            return
        warning = self._caution(value) if self._caution else None
        if warning and self._cautioned != value:
            self._cautioned = value
            self._problem(f"{warning} — press enter again to set it anyway")
            return
        await self._send(value)

    @on(Button.Pressed, "#cancel")
    def _cancel(self) -> None:
        self.dismiss(None)

    async def _send(self, value: float | None) -> None:
        self._problem("")
        ok = self.query_one("#ok", Button)
        ok.disabled = True
        try:
            message = await self._submit(value)
        except OperatorError as exc:
            self._problem(f"refused: {exc}")
            return
        finally:
            ok.disabled = False
        self.dismiss(message)


class Confirm(ModalScreen[bool]):
    """Yes or no, with the consequences spelled out; `y` / `n` work too."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("y", "answer(True)", "Yes", id="confirm.yes"),
        Binding("n,escape", "answer(False)", "No", id="confirm.no"),
    ]

    def __init__(self, title: str, text: str, yes: str = "Yes") -> None:
        super().__init__(classes="dialog-screen")
        self._title, self._text, self._yes = title, text, yes

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog"):
            yield Label(self._title, classes="dialog-title", markup=False)
            yield Static(self._text, classes="dialog-text", markup=False)
            with Horizontal(classes="dialog-buttons"):
                yield Button(f"{self._yes} (y)", variant="error", id="yes")
                yield Button("No (n)", id="no")

    def on_mount(self) -> None:
        self.query_one("#no", Button).focus()

    def action_answer(self, answer: bool) -> None:
        self.dismiss(answer)

    @on(Button.Pressed)
    def _pressed(self, event: Button.Pressed) -> None:
        self.dismiss(event.button.id == "yes")
