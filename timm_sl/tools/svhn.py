"""Write SVHN's MATLAB files as an ImageFolder of PNGs, the layout timm's train.py reads with ``--data-dir``.

SVHN's cropped-digit splits (``train_32x32.mat``, ``test_32x32.mat``, ``extra_32x32.mat``, the names
``torchvision.datasets.SVHN`` downloads into its root) hold ``X``, uint8 of shape (32, 32, 3, N): image ``i`` is
``X[:, :, :, i]`` as height x width x RGB, and ``y``, of shape (N, 1), the digits 1..9 with 10 standing for 0.
``prepare_svhn`` writes image ``i`` of a split to ``<root>/<split>/<digit>/<i>.png`` (``i`` zero-padded to six
places), so class folder ``0`` holds the label-10 images and class index = digit.
"""
import json
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

import numpy as np

from ._splits import (
    FASHION_MNIST_INFO, SVHN_INFO, check_distinct_sources, check_no_other_record, check_not_swapped, check_side_files,
    check_split_folders, file_identity, holds_counts, identifies_contents, is_source_file, only_numbered_pngs,
    read_info, same_bytes, write_staged)
from .errors import check_not_below_a_file, write_atomically
from .files import flag_arg, folder_arg

__all__ = ['SVHN_FILES', 'INFO_FILE', 'prepare_svhn', 'read_svhn_mat']

SVHN_FILES = {'train': 'train_32x32.mat', 'test': 'test_32x32.mat', 'extra': 'extra_32x32.mat'}
INFO_FILE = SVHN_INFO  # written last: the finished splits and the .mat file each came from
_DIGITS = [str(d) for d in range(10)]
_EXPECTED = "'X' uint8 of shape (32, 32, 3, N) and 'y' of shape (N, 1) with labels 1..10 (10 is the digit 0)"


def read_svhn_mat(path: Union[str, Path]) -> Tuple[np.ndarray, np.ndarray]:
    """Images and digits of one SVHN split file.

    Returns:
        ``(images, digits)``: uint8 (N, 32, 32, 3) (a view of the file's array) and int64 (N,) in 0..9.

    Raises:
        ImportError: scipy, which reads MATLAB files, is not installed.
        ValueError: the file is not a MATLAB file scipy reads, or lacks the arrays described in the module docstring.
    """
    try:
        from scipy.io import loadmat, whosmat
    except ImportError:
        raise ImportError("reading SVHN's .mat files needs scipy; install it: pip install scipy") from None
    path = folder_arg(path, 'path', 'read_svhn_mat', what='a .mat file path')
    try:
        mat = loadmat(str(path), variable_names=('X', 'y'))
    except Exception as e:  # scipy raises ValueError, MatReadError, OSError, zlib / struct errors... on a bad file
        raise ValueError(f'{path} is not a readable MATLAB file ({type(e).__name__}: {e}); expected {_EXPECTED}'
                         ) from None
    x, y = mat.get('X'), mat.get('y')
    if x is None or y is None:
        missing = ' or '.join(repr(k) for k, v in (('X', x), ('y', y)) if v is None)
        try:  # loadmat above read only X and y: list what the file holds without reading it
            held = ', '.join(repr(name) for name, _, _ in whosmat(str(path)))
        except Exception:  # noqa: BLE001 (the same reasons as loadmat's)
            held = ''
        raise ValueError(f'{path} holds {held or "no arrays"} but no {missing}; expected {_EXPECTED}')
    if x.dtype != np.uint8 or x.ndim != 4 or x.shape[:3] != (32, 32, 3):
        raise ValueError(f"{path}: 'X' is {x.dtype} of shape {x.shape}; expected {_EXPECTED}")
    # a sparse matrix, a cell array or text: numpy's own error (no file named) or a traceback on the checks below; a
    # complex array: a warning, its imaginary part dropped
    if not isinstance(y, np.ndarray) or y.dtype.kind not in 'uif':
        kinds = {'O': ' (a cell array)', 'U': ' (text)', 'S': ' (text)', 'c': ' (complex numbers)', 'V': ' (a struct)'}
        what = f'{y.dtype}{kinds.get(y.dtype.kind, "")}' if isinstance(y, np.ndarray) else f'a {type(y).__name__}'
        raise ValueError(f"{path}: 'y' is {what}, not an array of numbers; expected {_EXPECTED}")
    labels = y.reshape(-1) if y.ndim == 2 and y.shape[1] == 1 else None
    if labels is None or len(labels) != x.shape[3]:
        raise ValueError(f"{path}: 'y' has shape {y.shape} for {x.shape[3]} images; expected {_EXPECTED}")
    bad = (labels < 1) | (labels > 10) | (labels != np.round(labels))
    if bad.any():
        raise ValueError(f'{path}: label {labels[bad][0].item()!r} of image {int(np.argmax(bad))}; '
                         f'expected {_EXPECTED}')
    return np.moveaxis(x, 3, 0), labels.astype(np.int64) % 10


_RELEASED = {'train': 73257, 'test': 26032}  # images of each split as released


def _images(path: Path) -> Optional[int]:
    """How many images a split file holds by its header (``X``'s last dimension, read without the arrays); None when
    the header does not say (:func:`read_svhn_mat` names what is wrong when the file is read)."""
    try:
        from scipy.io import whosmat
        shape = next((shape for name, shape, _ in whosmat(str(path)) if name == 'X'), None)
    except Exception:  # noqa: BLE001 (scipy missing, or a damaged file: as read_svhn_mat's reasons)
        return None
    return shape[3] if shape is not None and len(shape) == 4 else None


def _check_splits_not_swapped(source: Path) -> None:
    """Refuse a training file of fewer images than the test file: the release's train and test files under each other's
    names (train.py would train on the 26,032 test images and evaluate on the 73,257 training ones)."""
    train, test = (source / SVHN_FILES[split] for split in ('train', 'test'))
    sizes = [_images(train), _images(test)]
    if None not in sizes:
        check_not_swapped(train, test, tuple(sizes), 'images', _RELEASED)


def _written_by_us(folder: Path) -> bool:
    """Only digit folders of our PNGs below ``folder``: what an earlier ``prepare_svhn`` left, safe to replace."""
    return only_numbered_pngs(folder, _DIGITS, 6)


def _write_split(images: np.ndarray, digits: np.ndarray, folder: Path, desc: str, progress: bool) -> List[int]:
    from PIL import Image
    from tqdm import tqdm
    for d in _DIGITS:
        (folder / d).mkdir(parents=True)
    for i in tqdm(range(len(digits)), desc=desc, unit='img', disable=not progress, leave=False):
        Image.fromarray(np.ascontiguousarray(images[i])).save(folder / str(digits[i]) / f'{i:06d}.png')
    return np.bincount(digits, minlength=10).tolist()


def _check_writable(root: Path) -> None:
    """Create ``root`` (with its parents) and a folder in it, before any image is read.

    Raises:
        PermissionError / OSError: naming ``root`` and why it cannot be written to.
    """
    probe = root / '.prepare-svhn-probe'
    try:
        root.mkdir(parents=True, exist_ok=True)
        probe.mkdir(exist_ok=True)
        probe.rmdir()
    except OSError as e:
        raise type(e)(f'cannot write into {root} ({e.strerror or e}); allowed: a folder you can write to') from None


def prepare_svhn(root: Union[str, Path], source: Optional[Union[str, Path]] = None, extra: bool = False,
                 overwrite: bool = False, progress: bool = True) -> Dict[str, Any]:
    """Write ``root/train`` and ``root/test`` (and ``root/extra`` with ``extra``) as digit folders ``0``..``9`` of PNGs,
    and ``root/svhn.json``.

    Every split is checked and written into a hidden folder of ``root`` first, then renamed into place: an error or
    an interruption leaves the output as it was. The JSON (written last) holds, per finished split, the ``.mat`` file
    it came from (path, size, sha256 of its bytes) and its images per digit: a split finished from the same file is not
    written again, so a second run writes nothing, and one after a split folder was deleted writes only that one.

    Args:
        root: Output folder, created if missing (train.py's ``--data-dir``).
        source: Folder holding the ``.mat`` files (torchvision's SVHN root); default ``root``.
        extra: Also write the 531,131 images of ``extra_32x32.mat`` (the paper trains on ``train`` only).
        overwrite: Replace split folders that already hold images (only ones this function could have written).
        progress: Show a progress bar per split.

    Returns:
        ``counts`` (images per digit folder, per split asked for), ``sources`` (the ``.mat`` file of each) and
        ``written`` (the splits this call wrote; [] when all were there).

    Raises:
        FileNotFoundError: a ``.mat`` file of a requested split is missing from ``source``.
        FileExistsError: an output split folder is not empty (and ``overwrite`` is off, or it holds other files);
            ``svhn.json`` is a folder, or a file this function did not write (and ``overwrite`` is off).
        NotADirectoryError: ``root`` or ``source`` is a file, or ``root`` would be below a file.
        PermissionError / OSError: ``root`` cannot be written to (checked before any image is read).
        ValueError: a ``.mat`` file is malformed (see ``read_svhn_mat``), two splits' files hold the same bytes, or
            the train file holds fewer images than the test file (the two swapped).
        ImportError: scipy is missing.
    """
    root = folder_arg(root, 'root', 'prepare_svhn')
    source = folder_arg(source, 'source', 'prepare_svhn') if source is not None else root
    for name, value in dict(extra=extra, overwrite=overwrite, progress=progress).items():
        flag_arg(value, name, 'prepare_svhn')
    splits: Sequence[str] = ('train', 'test', 'extra') if extra else ('train', 'test')
    for folder, what in ((root, 'the output folder'), (source, 'the folder of the .mat files')):
        if folder.exists() and not folder.is_dir():
            raise NotADirectoryError(f'{folder} is a file; allowed: a folder ({what})')
    check_not_below_a_file(root)
    check_no_other_record(root, root / FASHION_MNIST_INFO, 'fashion-mnist')
    for split in splits:
        mat = source / SVHN_FILES[split]
        if not is_source_file(mat, f"SVHN's {SVHN_FILES[split]}"):
            raise FileNotFoundError(
                f'{mat} not found: the source must be the folder holding '
                f'{", ".join(SVHN_FILES[s] for s in splits)} (torchvision.datasets.SVHN root)')
    check_distinct_sources({split: source / SVHN_FILES[split] for split in splits})
    _check_splits_not_swapped(source)
    sources = {split: file_identity(source / SVHN_FILES[split]) for split in splits}
    info_path = root / INFO_FILE
    info = read_info(info_path)
    old_sources, old_counts = info.get('sources'), info.get('counts')
    # a record of an older version identifies its source files by path, size and time: not what they held
    older = info.get('dataset') == 'svhn' and isinstance(old_sources, dict) and not identifies_contents(old_sources)
    finished = {split: old_sources[split] for split in old_sources if split in old_counts and
                holds_counts(root / split, old_counts[split])
                } if isinstance(old_sources, dict) and isinstance(old_counts, dict) else {}
    # the same bytes wherever they lie (the folder moved with its .mat files, or them copied): the same images
    todo = [split for split in splits if not same_bytes(finished.get(split), sources[split])]
    # a split folder its record names, since swapped with another or emptied in part (not what the record says)
    moved = [split for split in todo if isinstance(old_sources, dict) and same_bytes(old_sources.get(split),
                                                                                     sources[split])]
    counts = {split: old_counts[split] for split in splits if split not in todo}
    if todo:
        check_split_folders(root, moved, _written_by_us, 'digit folders of PNGs',
                            None if overwrite else f'holds other images than {INFO_FILE} records for it (moved, '
                                                   f'swapped with another split or deleted in part since); '
                                                   f'--overwrite writes it again')
        check_split_folders(root, todo, _written_by_us, 'digit folders of PNGs',
                            None if overwrite else f'was written by an older prepare-svhn, whose {INFO_FILE} does not '
                                                   f'say what its source files held (their sha256); --overwrite '
                                                   f'writes it again' if older else
                            'is not empty; refusing to write into it (--overwrite replaces it)')
        check_side_files([(info_path, info.get('dataset') == 'svhn')], overwrite)  # a file of the user's is kept
        _check_writable(root)

        def write(split: str, folder: Path) -> Dict[str, int]:
            # a bad file fails before anything lands; extra (1.6 GB in memory) is read last
            images, digits = read_svhn_mat(source / SVHN_FILES[split])
            absent = [d for d in _DIGITS if not (digits == int(d)).any()]
            if absent:  # its digit folder would be empty: timm skips it, and labels the digits after it one lower
                raise ValueError(f'{source / SVHN_FILES[split]} holds no image of digit {", ".join(absent)} (timm '
                                 f'would skip its empty folder and label the digits after it differently than in the '
                                 f'other splits); allowed: split files with images of every digit')
            return dict(zip(_DIGITS, _write_split(images, digits, folder, f'{split} ({SVHN_FILES[split]})',
                                                  progress)))
        # the splits being replaced are unfinished until the new JSON is written
        counts.update(write_staged(root, todo, 'prepare-svhn', write,
                                   before_rename=lambda: info_path.unlink(missing_ok=True)))
        kept = {split: finished[split] for split in finished if split not in todo}  # e.g. extra/ of an earlier run
        record = json.dumps(dict(
            dataset='svhn', sources={**kept, **{split: sources[split] for split in todo}},
            counts={**{split: old_counts[split] for split in kept}, **{split: counts[split] for split in todo}}),
            indent=1) + '\n'
        # cut short: no record, not half of one
        write_atomically(info_path, lambda file: file.write_text(record, encoding='utf-8'))
    return dict(counts={split: counts[split] for split in splits}, sources=sources, written=list(todo))
