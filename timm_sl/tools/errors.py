"""The harness's error convention (torch-free: ``timm-sl --help`` imports it).

Library functions of :mod:`timm_sl.tools` raise plain exceptions whose message is one line naming what was wrong (the
file, the value) and what is allowed: ``ValueError`` for a bad value or file content, the ``OSError`` family
(``FileNotFoundError``, ``NotADirectoryError``, ``PermissionError``, ...) for a path, ``ImportError`` for a missing
extra, :class:`ToolError` for an operation refused from outside (the Hub). Only :mod:`timm_sl.tools.cli` turns them
into a line on stderr and an exit status; anything else is a bug and keeps its traceback.
"""
__all__ = ['ToolError', 'USER_ERRORS', 'describe']


class ToolError(RuntimeError):
    """An operation the input was fine for but that could not be done: the Hub refused an upload, a run failed."""


# what the CLI reports as one line (exit status 2) instead of a traceback
USER_ERRORS = (OSError, ValueError, ImportError, ToolError)


def describe(error: BaseException) -> str:
    """The message of a :data:`USER_ERRORS` error; an ``OSError`` raised by the system (``[Errno 13] Permission
    denied: 'x'``) becomes ``x: permission denied``, naming the file."""
    if isinstance(error, OSError) and error.strerror and error.filename is not None and error.args[1:2] == (
            error.strerror,):
        text = f'{error.filename}: {error.strerror[:1].lower()}{error.strerror[1:]}'
        return text + (f' (-> {error.filename2})' if error.filename2 is not None else '')
    return str(error).strip() or type(error).__name__
