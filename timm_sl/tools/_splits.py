"""What the prepare-* commands share: checking the split folders they write into, writing each split into a hidden
folder first so that an error or an interruption leaves the output as it was, and the JSON file, written last, that
says which splits are finished and from what (a second run with the same source writes nothing)."""
import contextlib
import filecmp
import itertools
import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any, Callable, Collection, Dict, Optional, Sequence, Tuple, TypeVar

from .errors import held_folder, shown
from .files import IMAGE_SUFFIXES, check_regular_file, read_text

__all__ = ['FASHION_MNIST_INFO', 'SVHN_INFO', 'is_source_file', 'check_not_swapped', 'check_split_folders',
           'check_side_files', 'check_no_other_record', 'check_distinct_sources', 'holds_counts', 'file_identity',
           'identifies_contents', 'only_numbered_pngs', 'same_bytes', 'unwritable', 'write_staged', 'read_info']

T = TypeVar('T')

# the record each prepare-* command writes last (its presence says the folder is complete), known to the other
FASHION_MNIST_INFO = 'fashion_mnist.json'
SVHN_INFO = 'svhn.json'


def is_source_file(path: Path, what: str) -> bool:
    """Whether a source file of a prepare-* command is at ``path`` (a link to one too); what is there but no regular
    file is refused by name, not taken for a file that is missing.

    Raises:
        IsADirectoryError / ValueError: a folder, or a FIFO, socket or device (reading it would wait or never end).
    """
    if path.is_dir():
        raise IsADirectoryError(f'{path} is a folder; expected {what}')
    check_regular_file(path, what)
    return path.is_file()


def check_not_swapped(train: Path, test: Path, counts: Tuple[int, int], unit: str, released: Dict[str, int],
                      test_name: str = 'test') -> None:
    """Refuse a training split (``counts``: train, test) smaller than the test split: a release's train and test files
    under each other's names (train.py would train on the test images and evaluate on the training ones)."""
    if counts[0] < counts[1]:
        raise ValueError(f'{train} holds {counts[0]:,} {unit} but {test} {counts[1]:,}: the training split would be '
                         f'the smaller, as with the train and {test_name} files under each other\'s names; allowed: '
                         f'the files as released (train {released["train"]:,}, {test_name} {released["test"]:,} '
                         f'images)')


def check_split_folders(root: Path, splits: Sequence[str], ours: Callable[[Path], bool], what: str,
                        refusal: Optional[str]) -> None:
    """Refuse split folders that are files, that hold anything ``ours`` does not recognise (``what`` names what it
    recognises), or, with ``refusal`` (the rest of the message), any non-empty one.

    Raises:
        FileExistsError: the first split folder refused (a link there too).
    """
    for split in splits:
        out = root / split
        if out.is_symlink():  # the folder is replaced whole: a link would be replaced by a folder, or refuse to be
            raise FileExistsError(f'{out} is a link (to {os.readlink(out)}); the split folder is written whole in its '
                                  f'place; allowed: a real folder or none there (remove the link)')
        if out.is_file():
            raise FileExistsError(f'{out} is a file; the split folder goes there')
        if out.is_dir() and any(out.iterdir()):
            if not ours(out):
                raise FileExistsError(f'{out} holds files other than {what}; move it away first')
            if refusal:
                raise FileExistsError(f'{out} {refusal}')


def check_side_files(files: Sequence[Tuple[Path, bool]], overwrite: bool) -> None:
    """Refuse the files a command writes beside the split folders (``(path, whether it is one this command wrote)``):
    a folder there, or, without ``overwrite``, a file it did not write (a user's, kept) or a link (to a file, or to
    nothing: the user's link, replaced only with ``overwrite``; the file it names is never written).

    Raises:
        FileExistsError: the first refused, one line.
    """
    for path, ours in files:
        if path.is_dir() or ((path.exists() or path.is_symlink()) and not ours and not overwrite):
            raise FileExistsError(f'{path} is already there; ' + ('it is a folder: move it away first' if path.is_dir()
                                                                  else '--overwrite replaces it'))


def check_no_other_record(root: Path, record: Path, dataset: str) -> None:
    """Refuse to write into ``root`` while it holds ``record``, the record of another ``timm-sl prepare-<dataset>``:
    with its split folders replaced, that record would still say the folder holds its dataset (and its command that it
    is already there).

    Raises:
        FileExistsError: naming the record, one line.
    """
    if record.exists() or record.is_symlink():
        raise FileExistsError(f'{record} is there: {root} was written by timm-sl prepare-{dataset}; allowed: another '
                              f'output folder (or move {record.name} away if that data set is gone)')


def check_distinct_sources(files: Dict[str, Path]) -> None:
    """Refuse source files of two splits (``{split: file}``) that hold the same bytes (one file linked or copied under
    both names): train.py would evaluate on the very images it trains on.

    Raises:
        ValueError: naming both files, one line.
    """
    for (a, first), (b, second) in itertools.combinations(files.items(), 2):
        if first.stat().st_size == second.stat().st_size and filecmp.cmp(first, second, shallow=False):
            raise ValueError(f'{first} and {second} hold the same bytes: the {a} and {b} splits would be the same '
                             f'images (train.py would evaluate on images it trains on); allowed: the files of each '
                             f'split as released')


def _read_by_timm(path: Path) -> bool:
    """Whether timm's folder reader reads ``path`` of a split folder: a folder (walked), or an image file."""
    return path.is_dir() or path.suffix.lower() in IMAGE_SUFFIXES


def holds_counts(folder: Path, counts: Any) -> bool:
    """Whether ``folder``, a finished split, still holds what its record says: as many images in each class folder as
    ``counts`` (``{class folder: images}``, zeros too), and nothing else timm reads (a file manager's ``.DS_Store`` or
    ``.directory`` aside). A split folder swapped with another since (``mv train test``), or with images deleted, is
    not the split the record names.

    Raises:
        PermissionError: the split folder, a class folder or an image in it is not readable by this user (train.py
            would stop at it), naming it.
    """
    if not isinstance(counts, dict) or not folder.is_dir():
        return False
    held = {p.name: sum(1 for f in _readable(p).iterdir() if _read_by_timm(_readable(f))) if p.is_dir() else None
            for p in _readable(folder).iterdir() if _read_by_timm(p)}
    return held == counts


def _readable(path: Path) -> Path:
    """``path`` of a finished split, refused where this user may not read it (a folder: list and enter)."""
    if not os.access(path, os.R_OK | (os.X_OK if path.is_dir() else 0)):
        raise PermissionError(f'{shown(path)} is not readable by this user, in a split folder an earlier run wrote '
                              f'(train.py would stop at it); allowed: read permission for it (chmod u+rX), or the '
                              f'split folder moved away')
    return path


def only_numbered_pngs(folder: Path, classes: Collection[str], digits: int) -> bool:
    """Whether ``folder`` holds only class folders named in ``classes`` of PNGs named as a prepare-* command names
    them (the image's index in ``digits`` digits): what an earlier run left, safe to replace. A PNG of another name
    (one the user added to a class) is the user's, and keeps the folder from being replaced."""
    return all(d.is_dir() and d.name in classes and all(
        f.suffix == '.png' and len(f.stem) == digits and f.stem.isdigit() for f in d.iterdir())
        for d in folder.iterdir())


def file_identity(path: Path) -> Dict[str, Any]:
    """What tells a source file from another in a command's record: its resolved path, size and the sha256 of its
    bytes (a file replaced by another of the same size and time, as an archive extracts it, is another file)."""
    from .manifest import sha256
    return dict(file=str(path.resolve()), bytes=path.stat().st_size, sha256=sha256(path))


def same_bytes(old: Any, new: Dict[str, Any]) -> bool:
    """Whether a recorded source file (:func:`file_identity`) held the bytes ``new`` holds: its size and sha256,
    wherever it lay (the same files copied or moved elsewhere write the same images)."""
    return isinstance(old, dict) and old.get('sha256') == new['sha256'] and old.get('bytes') == new['bytes']


def identifies_contents(sources: Any) -> bool:
    """Whether a record's source files (``{name: file_identity}``) say what they held (their sha256): a record of an
    older version identified them by path, size and time at most."""
    return isinstance(sources, dict) and all(isinstance(f, dict) and 'sha256' in f for f in sources.values())


def write_staged(root: Path, splits: Sequence[str], tag: str, write: Callable[[str, Path], T],
                 before_rename: Optional[Callable[[], None]] = None) -> Dict[str, T]:
    """``write(split, folder)`` for each split into ``root/.<split>.<tag>``, then each folder renamed to
    ``root/<split>`` (replacing it); the hidden folders are gone afterwards, also after an error. ``root`` is held
    meanwhile (:func:`_held`): a second command writing there would remove the first's hidden folders mid-write."""
    with _held(root):
        _check_replaceable([root / split for split in splits])
        return _write_staged(root, splits, tag, write, before_rename)


def unwritable(folder: Path) -> Optional[OSError]:
    """Why this user may not add a file to ``folder`` and remove it (a read-only folder, a read-only mount), found by
    doing so with an empty hidden file: ``os.access`` says yes to root everywhere. None where it may."""
    try:
        handle, probe = tempfile.mkstemp(dir=folder, prefix='.timm-sl-probe-')
        os.close(handle)
        os.unlink(probe)
    except OSError as e:
        return e
    return None


def _check_replaceable(folders: Sequence[Path]) -> None:
    """Refuse, before any image is written, a split folder that would be replaced but cannot be: a mount point (it
    cannot be renamed over), or one whose files this user may not remove (found after the images were written, with
    the record already gone).

    Raises:
        OSError: of the system's kind, naming the folder, why and what is allowed, one line.
    """
    for folder in folders:
        if not folder.is_dir() or folder.is_symlink():
            continue
        if os.path.ismount(folder):
            raise OSError(f'{folder} is a mount point: the split folder is written whole in its place, which a mount '
                          f'cannot be; allowed: another output folder')
        for sub in (folder, *sorted(p for p in folder.iterdir() if p.is_dir() and not p.is_symlink())):
            error = unwritable(sub)
            if error is not None:
                raise type(error)(f'{sub}: cannot write into this folder ({(error.strerror or str(error)).lower()}), '
                                  f'whose images would be replaced; allowed: folders this user may write, or another '
                                  f'output folder (nothing was written)') from None


def _held(root: Path) -> contextlib.AbstractContextManager:
    """``root`` held while a ``timm-sl prepare-*`` writes there (:func:`~timm_sl.tools.errors.held_folder`)."""
    return held_folder(root, f'{root} is being written by another timm-sl prepare command, or read by a timm-sl '
                             f'reproduce, still running: written now, its split folders would mix the images of both '
                             f'or change under the runs (a count recorded that is not there); allowed: wait for it '
                             f'to end')


def _write_staged(root: Path, splits: Sequence[str], tag: str, write: Callable[[str, Path], T],
                  before_rename: Optional[Callable[[], None]]) -> Dict[str, T]:
    staged: Dict[str, Path] = {}
    results: Dict[str, T] = {}
    try:
        for split in splits:
            staged[split] = root / f'.{split}.{tag}'
            shutil.rmtree(staged[split], ignore_errors=True)  # left by an interrupted run
            results[split] = write(split, staged[split])
        if before_rename is not None:
            before_rename()
        for split, folder in staged.items():
            shutil.rmtree(root / split, ignore_errors=True)
            folder.rename(root / split)
    finally:
        for folder in staged.values():
            shutil.rmtree(folder, ignore_errors=True)
    return results


def read_info(path: Path) -> Dict[str, Any]:
    """The JSON object a finished run wrote at ``path``; ``{}`` when it is missing or unreadable (nothing finished).

    Raises:
        ValueError: a FIFO, socket or device there (reading it would wait or never end), naming it.
    """
    check_regular_file(path, 'the record a timm-sl prepare-* command writes there; allowed: move it away')
    try:
        info = json.loads(read_text(path, 'the record of a timm-sl prepare-* command'))
    except (OSError, ValueError):  # a folder there, cut short, not UTF-8
        return {}
    return info if isinstance(info, dict) else {}
