"""Errors a user can act on: printed as one line, exit code 2, never a traceback."""


class UserError(Exception):
    """A problem with what the user gave us (a flag, a file, a value). The message is shown as is."""

    exit_code = 2
