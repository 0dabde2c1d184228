"""Reading a file a user's folder holds: what is there but is no regular file (a FIFO, a device) refused in one line
instead of a hang, text in whatever encoding a run or an editor left it, and a walk of a folder through its links
that leaves out no folder it cannot read without a word. Below every other harness module."""
import codecs
import errno
import os
from pathlib import Path
from typing import Callable, Dict, Iterator, List, Optional, Tuple, Union

from .errors import first_line, name_text, shown

__all__ = ['ANALYSED_IMAGE_SUFFIXES', 'IMAGE_SUFFIXES', 'UNREAD_IMAGE_SUFFIXES', 'check_link_target', 'check_not_link',
           'check_regular_file', 'flag_arg', 'folder_arg', 'kind_of', 'name_text', 'read_text', 'unreadable_folder',
           'walk']

# the files timm's folder reader takes for images, in any case (timm's get_img_extensions(); a test holds them equal):
# other files it passes by
IMAGE_SUFFIXES = ('.png', '.jpg', '.jpeg')
# images of other formats, in any case, which timm's folder reader passes by as it passes by a text file: a folder of
# images saved from the web holds them beside its JPEGs (a browser's .webp and .jfif); older data sets' PGM / PPM
UNREAD_IMAGE_SUFFIXES = ('.webp', '.jfif', '.jpe', '.gif', '.bmp', '.tif', '.tiff', '.heic', '.heif', '.avif', '.jp2',
                         '.pgm', '.ppm', '.pbm', '.pnm')
# the files the analyses (kld, attention) read in a folder, in any case: every image suffix, as a file named directly
# is read whatever its suffix (PIL decides; one it cannot decode is refused, named, as when named directly)
ANALYSED_IMAGE_SUFFIXES = IMAGE_SUFFIXES + UNREAD_IMAGE_SUFFIXES


def kind_of(path: Path) -> str:
    """What is at ``path`` that is no folder, as an error names it: 'a file', or what is not a regular file."""
    if path.is_file():
        return 'a file'
    return 'a FIFO (named pipe)' if path.is_fifo() else 'a socket' if path.is_socket() else 'a device'


def check_not_link(path: Path, who: str) -> None:
    """Refuse a link where ``who`` (``timm-sl export``) writes a file: written through, the file the link names (a
    user's, elsewhere) would be replaced, not the link.

    Raises:
        ValueError: naming the link, where it points and what is allowed.
    """
    if path.is_symlink():
        raise ValueError(f'{shown(path)} is a link to {shown(os.readlink(path))} where {who} writes a file, which '
                         f'would replace the file it links to; allowed: remove the link')


def check_link_target(path: Path, what: str) -> None:
    """Refuse a link to nothing where ``what`` is read: not taken for no file (what the file records passed over).

    Raises:
        FileNotFoundError: naming the link, where it points and what is allowed.
    """
    if path.is_symlink() and not path.exists():
        raise FileNotFoundError(f'{shown(path)} is a link to {shown(os.readlink(path))}, which does not exist; '
                                f'expected {what} (allowed: the file, a link to one, or none)')


def check_regular_file(path: Path, what: str) -> None:
    """Refuse what is there but is neither a folder nor a regular file (a FIFO, whose reading waits for a writer
    forever; a socket; a device such as /dev/zero, endless): not 'does not exist', not a hang.

    Raises:
        ValueError: naming ``path``, what it is and ``what`` was expected there.
    """
    if path.exists() and not path.is_dir() and not path.is_file():
        raise ValueError(f'{shown(path)} is {kind_of(path)}, not a regular file; expected {what}')


# byte-order marks and the codec that reads past them (UTF-32's little-endian mark begins with UTF-16's: first)
_BOMS = ((codecs.BOM_UTF32_LE, 'utf-32'), (codecs.BOM_UTF32_BE, 'utf-32'), (codecs.BOM_UTF8, 'utf-8-sig'),
         (codecs.BOM_UTF16_LE, 'utf-16'), (codecs.BOM_UTF16_BE, 'utf-16'))


def read_text(path: Union[str, Path], what: str = 'a text file') -> str:
    """A text file of a run (every text file this package reads): by its byte-order mark (UTF-8, UTF-16, UTF-32; the
    mark is not part of the text), else UTF-8, else Latin-1 (every byte is a character: a path written in another
    encoding is read, not refused); zero bytes that end a file (a crash while it was written) are not text.

    Raises:
        FileNotFoundError / IsADirectoryError / PermissionError: naming ``path`` and ``what`` was expected there.
        ValueError: bytes that a byte-order mark's codec cannot read, NUL bytes without a mark (UTF-16 / UTF-32
            without one, or not text), or not a regular file (a FIFO, socket or device); naming the file.
    """
    path = Path(path)
    if path.is_dir():
        raise IsADirectoryError(f'{path} is a folder; expected {what}')
    if not path.exists():
        raise FileNotFoundError(f'{path} does not exist; expected {what}')
    check_regular_file(path, what)
    try:
        data = path.read_bytes()
    except OSError as e:
        raise type(e)(f'{path} cannot be read ({e.strerror or first_line(e)}); expected {what}') from e
    codec = next((codec for bom, codec in _BOMS if data.startswith(bom)), None)
    allowed = 'allowed: UTF-8, or UTF-16 / UTF-32 with a byte-order mark'
    if codec is not None:
        try:
            return data.decode(codec)
        except UnicodeDecodeError as e:
            raise ValueError(f'{path} begins with the byte-order mark of {codec} but is not {codec} from byte '
                             f'{e.start} on; expected {what}; {allowed}') from None
    data = data.rstrip(b'\x00')  # what a crash leaves at the end of a file being written: zero bytes
    if b'\x00' in data:
        raise ValueError(f'{path} holds NUL bytes (UTF-16 or UTF-32 without a byte-order mark, or not text); expected '
                         f'{what}; {allowed}')
    try:
        return data.decode('utf-8')
    except UnicodeDecodeError:
        return data.decode('latin-1')


def folder_arg(value: Union[str, Path], name: str, who: str, what: str = 'a folder path') -> Path:
    """``value`` as a Path; ``TypeError`` naming ``who``'s argument ``name`` unless it is a str or an os.PathLike
    (``None`` made Python's 'expected str, bytes or os.PathLike object, not NoneType', naming no argument)."""
    if isinstance(value, bytes) or not isinstance(value, (str, os.PathLike)):
        raise TypeError(f'{who}: {name}={value!r} is invalid; allowed: {what} (str or os.PathLike)')
    return Path(value)


def flag_arg(value: bool, name: str, who: str) -> bool:
    """``value`` unless it is no bool: ``TypeError`` naming ``who``'s argument ``name`` (``overwrite='no'`` is true
    to Python, and replaced what the user meant to keep)."""
    if not isinstance(value, bool):
        raise TypeError(f'{who}: {name}={value!r} is invalid; allowed: True or False')
    return value


def unreadable_folder(skipped: Optional[List[Tuple[Path, str]]]) -> Callable[[OSError], None]:
    """``os.walk``'s handler of a folder it cannot list, which it would leave out without a word: refused, or, with
    ``skipped``, added there with the system's reason. One gone meanwhile is none."""
    def handle(e: OSError) -> None:
        if e.errno in (errno.ENOENT, errno.ENOTDIR):
            return
        reason = (e.strerror or str(e)).lower()
        if skipped is not None:
            skipped.append((Path(e.filename), reason))
            return
        raise type(e)(f'{e.filename}: cannot read this folder ({reason}), so what it holds would be left out; allowed: '
                      f'a folder this user may read and enter, or move it away') from None
    return handle


def walk(folder: Union[str, Path], every_path: bool = False, reader: str = "timm's folder reader",
         skipped: Optional[List[Tuple[Path, str]]] = None) -> Iterator[Tuple[Path, List[str], List[str]]]:
    """``os.walk`` of ``folder`` through linked folders too (``Path.rglob`` skips those before Python 3.13), each real
    folder once: a link back up does not loop. Yields ``(folder, folder names, file names)``.

    ``every_path``: each path instead, as ``reader`` (timm's folder reader, torchvision's ImageFolder) walks: a folder
    linked twice is visited twice. ``skipped``: a list that takes ``(folder, reason)`` of each folder below
    ``folder`` this user may not read, for a search that may pass them (a disk's lost+found, another user's runs).

    Raises:
        ValueError: with ``every_path``, a link back to a folder it is in (``reader`` would walk it without end),
            naming it.
        PermissionError / OSError: without ``skipped``, a folder below ``folder`` this user may not read (``os.walk``
            leaves it out, and with it every file it holds: a class, images), naming it.
    """
    seen = set()
    above: Dict[str, frozenset] = {}  # with every_path: each folder's real folders from ``folder`` down to it
    for root, folders, names in os.walk(folder, onerror=unreadable_folder(skipped), followlinks=True):
        real = os.path.realpath(root)
        if every_path:
            chain = above.pop(root, frozenset())
            if real in chain:
                raise ValueError(f'{root} links back to {real}, a folder it is in: {reader} would walk it without '
                                 f'end; allowed: folders without such links (remove it)')
            above.update({os.path.join(root, name): chain | {real} for name in folders})
        elif real in seen:
            folders[:] = []
            continue
        seen.add(real)
        yield Path(root), folders, names
