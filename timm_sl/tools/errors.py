"""The harness's error convention (torch-free: ``timm-sl --help`` imports it).

Library functions of :mod:`timm_sl.tools` raise plain exceptions whose message is one line naming what was wrong (the
file, the value) and what is allowed: ``ValueError`` for a bad value or file content, the ``OSError`` family
(``FileNotFoundError``, ``NotADirectoryError``, ``PermissionError``, ...) for a path, ``ImportError`` for a missing
extra, :class:`ToolError` for an operation refused from outside (the Hub) or work that failed (a run). Only
:mod:`timm_sl.tools.cli` turns them into a line on stderr and an exit status; anything else is a bug and keeps its
traceback.
"""
import contextlib
import os
import shutil
import sys
from pathlib import Path
from typing import Callable, Iterator, Optional, Union

__all__ = ['ToolError', 'USER_ERRORS', 'BUILD_ERRORS', 'describe', 'first_line', 'build_failure',
           'check_not_below_a_file', 'held_folder', 'make_folder', 'name_text', 'shown', 'write_atomically']


class ToolError(RuntimeError):
    """An operation the input was fine for but that could not be done: the Hub refused an upload, a run failed.
    ``exit_status``: the command's (2; a sweep whose runs ran and some failed ends with 1, as a test runner does)."""
    exit_status = 2


# what the CLI reports as one line (exit status 2) instead of a traceback
USER_ERRORS = (OSError, ValueError, ImportError, ToolError)

# what timm.create_model raises for user kwargs: besides unknown / bad ones (TypeError, ValueError, RuntimeError) timm
# divides by sizes it does not check (num_heads=0: ZeroDivisionError) and checks some with assert (global_pool)
BUILD_ERRORS = (RuntimeError, TypeError, ValueError, ArithmeticError, AssertionError)


def name_text(name: str) -> str:
    """A file or folder name (as Python read it from the system) as the text it names: its bytes read as UTF-8 where
    they are UTF-8. Under a Latin-1 locale the class folder 'café' (made on any UTF-8 system) reads as 'cafÃ©', which
    no label name read from a UTF-8 file equals; under a UTF-8 locale this is the name itself. Line by line: a line
    naming a path beside one of text ('SL − baseline') is read alone."""
    return '\n'.join(map(_line_text, name.split('\n')))


def _line_text(line: str) -> str:
    try:
        return line.encode(sys.getfilesystemencoding(), 'surrogateescape').decode('utf-8')
    except UnicodeError:  # not UTF-8 (a name made under that locale: its own encoding was right), or unencodable
        return line


def shown(path: Union[str, Path]) -> str:
    """``path`` as a line or a table cell names it: as is, or quoted with its control characters escaped where it
    holds any (a newline in a file name would break the line in two and name neither half)."""
    text = name_text(str(path))  # 'café', not 'cafÃ©' under a Latin-1 locale
    return text if text.isprintable() else repr(text)


def describe(error: BaseException) -> str:
    """The message of a :data:`USER_ERRORS` error; an ``OSError`` raised by the system (``[Errno 13] Permission
    denied: 'x'``) becomes ``x: permission denied``, naming the file."""
    if isinstance(error, OSError) and error.strerror and error.filename is not None and error.args[1:2] == (
            error.strerror,):
        text = f'{shown(error.filename)}: {error.strerror[:1].lower()}{error.strerror[1:]}'
        return text + (f' (-> {shown(error.filename2)})' if error.filename2 is not None else '')
    if isinstance(error, UnicodeEncodeError) and os.sep in error.object:  # a path the system call could not encode
        return (f'{shown(error.object)}: a name the encoding of this locale ({error.encoding}) cannot hold; allowed: '
                f'names in it, or a UTF-8 locale (LC_ALL=C.UTF-8)')
    return str(error).strip() or type(error).__name__


def first_line(error: BaseException) -> str:
    """The first line of an error's message (its type's name when it has none): for a reason quoted in one line."""
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__


def build_failure(error: BaseException) -> str:
    """One line for a :data:`BUILD_ERRORS` error: its first line, led by its type where the message alone says
    nothing of a model (``ZeroDivisionError: integer modulo by zero``)."""
    if isinstance(error, (ArithmeticError, AssertionError)):
        return f'{type(error).__name__}: {first_line(error)}'
    return first_line(error)


def check_not_below_a_file(path: Union[str, Path], option: str = '') -> None:
    """Refuse a ``path`` to be created below a file (``somefile/sub``), which the system would call 'not a directory'
    or, asked whether it exists, 'does not exist', or at or below a link to nothing ('file exists'). ``option``
    (``--out``) names what gave the path.

    Raises:
        NotADirectoryError: naming the file in the way.
        FileNotFoundError: naming the broken link and where it points.
    """
    path = Path(path)
    broken = next((p for p in (path, *path.parents) if p.is_symlink() and not p.exists()), None)
    if broken is not None:  # the system would say 'file exists' when asked to create the folder
        raise FileNotFoundError(f'{option + " " if option else ""}{path}: {broken} is a link to {broken.readlink()}, '
                                f'which does not exist; allowed: a link to a folder, or no link')
    existing = next(p for p in (path, *path.parents) if p.exists())
    if existing != path and not existing.is_dir():
        raise NotADirectoryError(f'{option} {path}: {existing} is a file; cannot create a folder below it' if option
                                 else f'{existing} is a file; cannot create {path} below it')


def make_folder(path: Path, option: str = '--out') -> None:
    """Create the folder ``path`` (and its parents) that ``option`` names where it is not there yet: where the system
    will not (``/proc/x``: 'no such file or directory', as if the input were missing), one line saying so.

    Raises:
        OSError: of the system's kind, naming the path, why and what is allowed.
    """
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        why = (e.strerror or first_line(e)).lower()
        raise type(e)(f'{option} {path} cannot be created as a folder ({why}); allowed: a folder in a place this '
                      f'user may write (not /proc, /sys)') from None


@contextlib.contextmanager
def held_folder(folder: Path, busy: str, shared: bool = False) -> Iterator[Optional[int]]:
    """Hold the existing ``folder`` for this process while the block writes there (``flock`` on the folder itself: no
    file is added to it), released when the process ends, however it ends, and the processes given the descriptor
    yielded (``pass_fds``) ended too. ``shared``: held while the block reads there, by as many readers as hold it so,
    and by no writer. Nothing is held (None) without ``fcntl`` (Windows) or on a file system without locks (some
    network mounts): written as before, unheld.

    Raises:
        BlockingIOError: another process holds it; ``busy`` is the message (what is writing there, what is allowed).
    """
    try:
        import fcntl
    except ImportError:
        yield None
        return
    handle = os.open(folder, os.O_RDONLY)
    try:
        held = True
        try:
            fcntl.flock(handle, (fcntl.LOCK_SH if shared else fcntl.LOCK_EX) | fcntl.LOCK_NB)
        except BlockingIOError:
            raise BlockingIOError(busy) from None
        except OSError:
            held = False
        yield handle if held else None
    finally:
        os.close(handle)


def partial_of(target: Path) -> Path:
    """Where :func:`write_atomically` writes ``target`` before moving it over (its suffix: the format of a chart)."""
    return target.with_name(f'.{target.name}.partial{target.suffix}')


def write_atomically(path: Union[str, Path], write: Callable[[Path], None],
                     before_replace: Optional[Callable[[Path], None]] = None) -> None:
    """``write(file)`` to a new file beside ``path`` (beside where a link at ``path`` points), then moved over it: a
    write cut short (a full disk, the process killed) leaves an earlier file at ``path`` whole, never half-written. A
    ``path`` that is no regular file (``/dev/null``, a pipe) is written directly; a file keeps its mode.
    ``before_replace(file)``: called with the new file once written, before it is moved over ``path`` (a record of
    it saved first); what it raises leaves ``path`` as it was.

    Raises:
        OSError: as the system raised it, naming ``path`` where it named no file or the new file.
    """
    path = Path(path)
    target = path.resolve() if path.is_symlink() else path  # the file the link's owner keeps, not the link
    if target.exists() and not target.is_file():
        partial = target
    else:
        partial = partial_of(target)
    try:
        write(partial)
        if before_replace is not None:
            before_replace(partial)
        if partial != target:
            if target.is_file():  # the mode the user gave the file (chmod 600 results.json) stays
                shutil.copymode(target, partial)
            os.replace(partial, target)
    except OSError as e:
        if e.filename not in (None, str(partial)) or not e.strerror:
            raise
        raise OSError(e.errno, e.strerror, str(path)) from e
    finally:
        if partial != target:
            partial.unlink(missing_ok=True)
