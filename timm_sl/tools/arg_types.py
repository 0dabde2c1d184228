"""Value types of the harness's argparse options (standard library only: ``timm-sl --help`` imports them): a bad
value is an ``argparse.ArgumentTypeError`` whose one line says what was given and what is allowed. The ``timm-sl``
command and the benchmarks share them."""
import argparse
import os
from pathlib import Path

from .files import kind_of

__all__ = ['MAX_SEED', 'check_file_place', 'output_file', 'positive_float', 'positive_int', 'seed', 'shift_ratio']


def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f'{text!r} is not allowed; expected an integer >= 1') from None
    if value < 1:
        raise argparse.ArgumentTypeError(f'{value} is not allowed; expected an integer >= 1')
    return value


MAX_SEED = 2 ** 32 - 1  # numpy's (random_seed seeds python, numpy and torch alike)


def seed(text: str) -> int:
    """A seed numpy takes: 0 to 2**32 - 1 (``-1`` reached numpy as 'Seed must be between ...', naming no option)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f'{text!r} is not allowed; expected an integer from 0 to {MAX_SEED}') from None
    if not 0 <= value <= MAX_SEED:
        raise argparse.ArgumentTypeError(f'{value} is not allowed; expected an integer from 0 to {MAX_SEED}')
    return value


def positive_float(text: str) -> float:
    """A finite number above 0 (a learning rate): ``nan``, ``inf`` and ``-1`` reached torch as 'Invalid learning
    rate: nan', naming no option."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f'{text!r} is not allowed; expected a number > 0, e.g. 1e-3') from None
    if not 0 < value < float('inf'):
        raise argparse.ArgumentTypeError(f'{text} is not allowed; expected a finite number > 0, e.g. 1e-3')
    return value


def shift_ratio(text: str) -> float:
    """A number for ``--shift-ratio`` (its range is checked with the patch size): argparse's own error for a word
    ("invalid float value: ''") said nothing of what is allowed."""
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f'{text!r} is not a number; allowed: a number in (0, 1], e.g. 0.5') from None


def check_file_place(text: str, what: str) -> None:
    """Refuse, before any work, a file ``text`` that could not be written: its folder missing or a file, a link that
    loops or whose folder is missing, or a folder the system will not write into. ``what`` (``a chart file name``)
    is what the line says is allowed.

    Raises:
        argparse.ArgumentTypeError: one line naming ``text``, what was wrong and what is allowed.
    """
    path = Path(text)
    if not path.parent.is_dir():
        existing = next(p for p in path.parents if p.exists())
        if not existing.is_dir():
            raise argparse.ArgumentTypeError(f'{str(existing)!r} of {text!r} is a file, not a folder; allowed: a path '
                                             f'in a folder')
        raise argparse.ArgumentTypeError(f'folder {str(path.parent)!r} of {text!r} does not exist; create it first')
    folder = path.parent
    if path.is_symlink():  # the file is written where the link points: that folder is the one to check
        try:
            folder = path.resolve().parent
        except (RuntimeError, OSError):
            raise argparse.ArgumentTypeError(f'{text!r} is a link that loops; allowed: {what}, or a link to a '
                                             f'file in a folder') from None
        if not folder.is_dir():
            raise argparse.ArgumentTypeError(f'{text!r} is a link to {os.readlink(path)!r}, whose folder does not '
                                             f'exist; allowed: {what}, or a link to a file in a folder')
    import tempfile
    try:  # a folder the system will not write into (read-only, /proc) is found now, not after the work
        handle, probe = tempfile.mkstemp(dir=folder, prefix='.timm-sl-probe-')
        os.close(handle)
        os.unlink(probe)
    except OSError as e:
        raise argparse.ArgumentTypeError(f'cannot write into folder {str(folder)!r} of {text!r} '
                                         f'({e.strerror or e}); allowed: a path in a folder you can write to') from None


def output_file(text: str) -> str:
    """A file an option writes (a table, a CSV): not a folder, not a FIFO, socket or device, in a folder that exists
    and takes a new file (:func:`check_file_place`); checked before any work."""
    path = Path(text)
    if path.is_dir():
        raise argparse.ArgumentTypeError(f'{text!r} is a folder; allowed: a file name, e.g. {str(path / "out.txt")!r}')
    if path.exists() and not path.is_file():
        raise argparse.ArgumentTypeError(f'{text!r} is {kind_of(path)}, not a regular file; allowed: a file name')
    check_file_place(text, 'a file name')
    return text
