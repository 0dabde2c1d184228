"""The error every ``timm-sl`` command raises for bad input (torch-free: ``timm-sl --help`` imports it)."""
from typing import Optional

__all__ = ['CliError']


class CliError(SystemExit):
    """A command's error, raised anywhere below :func:`main`: ``main`` prints it as one line on stderr
    (``timm-sl COMMAND: message``) and the exit status is 2, argparse's for a usage error. A ``SystemExit``, so that
    it never ends in a traceback."""

    def __init__(self, message: str) -> None:
        super().__init__(2)
        self.message = message
        self.command: Optional[str] = None

    def __str__(self) -> str:
        return f'timm-sl {self.command}: {self.message}' if self.command else self.message
