"""Write Fashion-MNIST's idx files as an ImageFolder of 32 px RGB PNGs, the layout timm's train.py reads with
``--data-dir``: a real image data set that needs no download where Debian's ``dataset-fashion-mnist`` is installed.

The source is the four files of the original release (``train-images-idx3-ubyte.gz``, ``train-labels-idx1-ubyte.gz``,
``t10k-images-idx3-ubyte.gz``, ``t10k-labels-idx1-ubyte.gz``; the same names without ``.gz`` are read too), as Debian
installs them in ``/usr/share/datasets/fashion-mnist`` and torchvision keeps them in ``FashionMNIST/raw``. An idx
file is a big-endian header (two zero bytes, the type byte 0x08 for unsigned bytes, the number of dimensions, one
uint32 per dimension) followed by the data.

Why a folder and not train.py's ``--dataset torch/fashion_mnist``: torchvision's reader yields 28 px single-channel
images that timm's torch/ route passes on unconverted (its ``input_img_mode`` applies to folders and the other readers
only), so the paper's 3-channel 32 px models and the recipes' 3-channel mean / std do not take them. The folder holds
each image upscaled once to 32 px (bicubic) and written as RGB, the size class of CIFAR, so every recipe setting (the
crop scale of a 4-px shift at 32 px, AutoAugment, random erasing) means what it means for CIFAR, and the data loader
does no per-sample resize. Class folders are ``<label>_<name>`` (``0_t-shirt_top`` ... ``9_ankle_boot``): timm sorts
class folders to number them, and the prefix keeps Fashion-MNIST's own label numbers.
"""
import gzip
import json
import math
import os
import struct
from pathlib import Path
from typing import Any, Dict, Optional, Tuple, Union

import numpy as np

from ._splits import (
    FASHION_MNIST_INFO, SVHN_INFO, check_distinct_sources, check_no_other_record, check_not_swapped, check_side_files,
    check_split_folders, file_identity, holds_counts, identifies_contents, is_source_file, only_numbered_pngs,
    read_info, same_bytes, write_staged)
from .errors import check_not_below_a_file, write_atomically
from .files import flag_arg, folder_arg

__all__ = ['DEFAULT_SOURCE', 'FASHION_MNIST_FILES', 'LABEL_NAMES', 'CLASS_FOLDERS', 'INFO_FILE',
           'read_idx', 'read_fashion_mnist', 'prepare_fashion_mnist']

DEFAULT_SOURCE = '/usr/share/datasets/fashion-mnist'  # Debian's dataset-fashion-mnist
FASHION_MNIST_FILES = {
    'train': ('train-images-idx3-ubyte', 'train-labels-idx1-ubyte'),
    'test': ('t10k-images-idx3-ubyte', 't10k-labels-idx1-ubyte'),
}
LABEL_NAMES = ('T-shirt/top', 'Trouser', 'Pullover', 'Dress', 'Coat', 'Sandal', 'Shirt', 'Sneaker', 'Bag',
               'Ankle boot')
LABEL_NAMES_TEXT = '\n'.join(LABEL_NAMES) + '\n'  # DIR/label_names.txt, as this command writes it
CLASS_FOLDERS = tuple(f'{i}_' + name.lower().replace('/', '_').replace(' ', '_') for i, name in enumerate(LABEL_NAMES))
INFO_FILE = FASHION_MNIST_INFO  # written last: its presence says the folder is complete
SIZE = 32


def _find(source: Path, stem: str) -> Path:
    for name in (stem + '.gz', stem):
        if is_source_file(source / name, 'a Fashion-MNIST idx file'):
            return source / name
    raise FileNotFoundError(
        f'{source / (stem + ".gz")} not found: --source must be the folder holding the four Fashion-MNIST idx files '
        f'({", ".join(s + ".gz" for pair in FASHION_MNIST_FILES.values() for s in pair)}; on Debian: '
        f'apt install dataset-fashion-mnist, in {DEFAULT_SOURCE})')


def read_idx(path: Union[str, Path], ndim: int) -> np.ndarray:
    """The uint8 array of an idx file (gzip-compressed when its name ends in ``.gz``) of ``ndim`` dimensions.

    Raises:
        ValueError: not gzip data, not an idx file of unsigned bytes with ``ndim`` dimensions, or cut short; the
            message names the file.
    """
    path = Path(path)
    try:
        raw = gzip.decompress(path.read_bytes()) if path.suffix == '.gz' else path.read_bytes()
    except (OSError, EOFError, gzip.BadGzipFile) as e:
        raise ValueError(f'{path} is not readable gzip data ({e}); expected a Fashion-MNIST idx file') from None
    expected = f'an idx file of unsigned bytes with {ndim} dimension{"s" if ndim > 1 else ""}'
    if len(raw) < 4 + 4 * ndim or raw[:3] != b'\x00\x00\x08' or raw[3] != ndim:
        raise ValueError(f'{path} starts with {raw[:4].hex() or "nothing"}; expected {expected} '
                         f'(header 0000080{ndim})')
    shape = struct.unpack(f'>{ndim}I', raw[4:4 + 4 * ndim])
    data = np.frombuffer(raw, np.uint8, offset=4 + 4 * ndim)
    if data.size != int(np.prod(shape)):
        raise ValueError(f'{path} holds {data.size} bytes of data for shape {shape}: the file is cut short or has '
                         f'trailing bytes; expected {expected}')
    return data.reshape(shape)


_FULL_SPLITS = {'train': 60000, 'test': 10000}  # images per split of the release, as many of each of the 10 classes


def _read_labels(source: Path, split: str) -> np.ndarray:
    """The labels of a split; a release-sized file must hold as many of each class (MNIST's digits do not)."""
    label_file = _find(source, FASHION_MNIST_FILES[split][1])
    labels = read_idx(label_file, 1)
    per_class = _FULL_SPLITS[split] // 10
    counts = np.bincount(labels, minlength=10)
    if len(labels) == _FULL_SPLITS[split] and counts.size == 10 and (counts != per_class).any():  # MNIST's digits
        raise ValueError(f'{label_file} holds {int(counts.min()):,} to {int(counts.max()):,} images per class, not '
                         f"Fashion-MNIST's {per_class:,} of each (MNIST's files have the same names); expected "
                         f"Fashion-MNIST's idx files")
    return labels


def _check_splits_not_swapped(source: Path) -> None:
    """Refuse a training split smaller than the test split: the release's train and t10k files under each other's
    names (train.py would train on the 10,000 test images and evaluate on the 60,000 training ones)."""
    train, test = (_find(source, FASHION_MNIST_FILES[split][1]) for split in ('train', 'test'))
    sizes = tuple(len(_read_labels(source, split)) for split in ('train', 'test'))  # MNIST's digits refused first
    check_not_swapped(train, test, sizes, 'labels', _FULL_SPLITS, test_name='t10k')


def read_fashion_mnist(source: Union[str, Path], split: str) -> Tuple[np.ndarray, np.ndarray]:
    """Images (N, 28, 28) and labels (N,) in 0..9 of one split (``train`` or ``test``), checked against each other.

    Raises:
        FileNotFoundError: a file of the split is missing.
        ValueError: a file is malformed (see :func:`read_idx`), or images and labels disagree.
    """
    source = folder_arg(source, 'source', 'read_fashion_mnist')
    if not isinstance(split, str) or split not in FASHION_MNIST_FILES:
        raise ValueError(f'read_fashion_mnist: split={split!r} is invalid; allowed: '
                         f'{", ".join(map(repr, FASHION_MNIST_FILES))}')
    image_file, label_file = (_find(source, stem) for stem in FASHION_MNIST_FILES[split])
    labels = _read_labels(source, split)
    images = read_idx(image_file, 3)
    if images.shape[1:] != (28, 28):
        raise ValueError(f'{image_file} holds images of {images.shape[1]}x{images.shape[2]} px; expected 28x28')
    if len(images) != len(labels):
        raise ValueError(f'{image_file} holds {len(images)} images but {label_file} {len(labels)} labels')
    if labels.size and labels.max() > 9:
        raise ValueError(f'{label_file} holds label {int(labels.max())}; expected 0..9')
    return images, labels


def _upscale(images: np.ndarray) -> np.ndarray:
    """(N, 28, 28) -> (N, 32, 32) uint8, bicubic (PIL)."""
    from PIL import Image
    return np.stack([np.asarray(Image.fromarray(im).resize((SIZE, SIZE), Image.BICUBIC)) for im in images]) \
        if len(images) else np.zeros((0, SIZE, SIZE), np.uint8)


def _mean_std(images: np.ndarray) -> Tuple[float, float]:
    """Mean and (population) std of the pixels in [0, 1], exact sums in chunks (no float copy of the split)."""
    total = squares = 0
    for chunk in np.array_split(images.reshape(len(images), -1), max(1, len(images) // 4096)):
        chunk = chunk.astype(np.int64)
        total, squares = total + int(chunk.sum()), squares + int((chunk * chunk).sum())
    n = max(images.size, 1)
    mean = total / n
    return mean / 255, max(squares / n - mean * mean, 0.) ** 0.5 / 255


def _write_split(images: np.ndarray, labels: np.ndarray, folder: Path, desc: str, progress: bool) -> Dict[str, int]:
    from PIL import Image
    from tqdm import tqdm
    for name in CLASS_FOLDERS:
        (folder / name).mkdir(parents=True)
    for i in tqdm(range(len(labels)), desc=desc, unit='img', disable=not progress, leave=False):
        Image.fromarray(images[i]).convert('RGB').save(folder / CLASS_FOLDERS[labels[i]] / f'{i:05d}.png')
    return dict(zip(CLASS_FOLDERS, np.bincount(labels, minlength=10).tolist()))


def _ours(folder: Path) -> bool:
    """Only our class folders of our PNGs below ``folder``: what an earlier run left, safe to replace."""
    return only_numbered_pngs(folder, CLASS_FOLDERS, 5)


def _check_target(root: Path) -> None:
    if root.exists() and not root.is_dir():
        raise NotADirectoryError(f'{root} is a file; the output must be a folder (new, or written by an earlier '
                                 f'prepare-fashion-mnist)')
    check_not_below_a_file(root)
    existing = next(p for p in (root, *root.parents) if p.exists())
    if not os.access(existing, os.W_OK | os.X_OK):
        raise PermissionError(f'{existing} is not writable; choose an output folder you can write to')


def _check_limit_keeps_every_class(data: Dict[str, Any], limit: Optional[int], source: Path) -> None:
    """Refuse a ``limit`` (None: the whole files of ``source``) that leaves a class without images in a split: timm
    makes classes only of folders that hold images and numbers them in order, so the splits would give the classes
    after it different labels."""
    first = {}  # split -> class -> index of its first image
    for split, (_, labels) in data.items():
        first[split] = {}
        for i, label in enumerate(labels.tolist()):
            first[split].setdefault(int(label), i)
    for split, by_class in first.items():
        absent = [CLASS_FOLDERS[c] for c in range(len(CLASS_FOLDERS)) if c not in by_class]
        if absent:  # the file itself lacks a class (a subset of the release): no --limit helps
            raise ValueError(f'{_find(source, FASHION_MNIST_FILES[split][1])} holds no image of {", ".join(absent)} '
                             f'(timm would label the classes after it differently in train and test); allowed: idx '
                             f'files with images of every class in both splits')
    if limit is None:
        return
    needed = max(max(by_class.values()) + 1 for by_class in first.values())
    for split, by_class in first.items():
        missing = [CLASS_FOLDERS[c] for c in range(len(CLASS_FOLDERS)) if by_class[c] >= limit]
        if missing:
            raise ValueError(f'--limit {limit} leaves {", ".join(missing)} without a {split} image (timm would label '
                             f'the classes after it differently in train and test); allowed: --limit >= {needed} '
                             f'or none')


def _stats(value: Any) -> bool:
    """Whether ``value`` is a recorded mean or std: three finite numbers, as this command writes them."""
    return isinstance(value, list) and len(value) == 3 and all(
        isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) for v in value)


def _other_settings(info: Dict[str, Any], source: Path, limit: Optional[int], files: Dict[str, Dict[str, Any]]
                    ) -> str:
    """Why split folders an earlier run wrote (``info``: its record) are not what these settings write, and what is
    allowed: the rest of one line after the folder's name."""
    if not info:
        return (f'holds images but no {INFO_FILE} says what they were written from (an earlier run not finished, or '
                f'the record deleted or damaged); allowed: --overwrite, which writes it again')
    changed, allowed = [], []
    if info.get('limit') != limit:
        old = info.get('limit')
        changed.append(f'--limit {"none" if old is None else old} -> {"none" if limit is None else limit}')
        allowed.append('no --limit' if old is None else f'--limit {old}')
    recorded = info.get('files') if isinstance(info.get('files'), dict) else {}
    other = [Path(files[stem]['file']).name for stem in files if not same_bytes(recorded.get(stem), files[stem])]
    if other:
        names = ', '.join(other[:2]) + (f' and {len(other) - 2} more' if len(other) > 2 else '')
        old_source, new_source = info.get('source'), str(source.resolve())
        if old_source != new_source:
            changed.append(f'--source {old_source} -> {new_source}, whose {names} hold other bytes')
            allowed.append(f'--source {old_source}')
        else:
            changed.append(f'{names} in {new_source}: other bytes since')
    if not changed:  # the settings agree, the record lacks what a finished run writes
        return (f'has a {INFO_FILE} without its images per class, class folders or mean / std (edited or '
                f'damaged); allowed: '
                f'--overwrite, which writes it again')
    back = f'the settings it was written with ({", ".join(allowed)}), or ' if allowed else ''
    return (f'was written with other settings ({"; ".join(changed)}); allowed: {back}--overwrite, which replaces it '
            f'with these')


def prepare_fashion_mnist(root: Union[str, Path], source: Optional[Union[str, Path]] = None,
                          limit: Optional[int] = None, overwrite: bool = False,
                          progress: bool = True) -> Dict[str, Any]:
    """Write ``root/train`` and ``root/test`` as class folders of 32 px RGB PNGs, and ``root/fashion_mnist.json``.

    The JSON (written last) holds the class folders, label names, images per class and the training images' mean /
    std per channel (of the 32 px images written, as train.py's ``--mean`` / ``--std`` take them). Every split is
    checked and written into a hidden folder of ``root`` first, then renamed into place: an error or an interruption
    leaves the output as it was. Run again with the same source and limit, it writes nothing and returns the JSON (after
    a split folder was deleted: writes that split only; after ``label_names.txt`` was: writes that file). The same
    source is the same bytes (each file's size and sha256, as recorded), wherever they lie: the files copied to another
    folder write the same images, while the same images compressed otherwise (``.gz`` or not) are other files.

    Args:
        root: Output folder, created if missing (train.py's ``--data-dir``).
        source: Folder of the idx files; default Debian's ``/usr/share/datasets/fashion-mnist``.
        limit: At most this many images per split (the first ones of each file), for quick runs.
        overwrite: Replace split folders that an earlier run wrote with other settings.
        progress: Show a progress bar per split.

    Raises:
        FileNotFoundError: an idx file is missing from ``source``.
        ValueError: an idx file is malformed, or ``limit`` < 1.
        FileExistsError: an output split folder holds other files, or was written with other settings and
            ``overwrite`` is off; ``label_names.txt`` or the JSON is there (a folder, or ``overwrite`` is off).
        NotADirectoryError, PermissionError: ``root`` cannot be written.
    """
    root = folder_arg(root, 'root', 'prepare_fashion_mnist')
    source = folder_arg(source if source is not None else DEFAULT_SOURCE, 'source', 'prepare_fashion_mnist')
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 1):  # '3': no compare
        raise ValueError(f'--limit {limit!r} is not allowed; expected an integer >= 1')
    for name, value in dict(overwrite=overwrite, progress=progress).items():
        flag_arg(value, name, 'prepare_fashion_mnist')
    for split in FASHION_MNIST_FILES:  # every file present before anything is read or written
        for stem in FASHION_MNIST_FILES[split]:
            _find(source, stem)
    check_distinct_sources({split: _find(source, stems[0]) for split, stems in FASHION_MNIST_FILES.items()})
    _check_splits_not_swapped(source)
    _check_target(root)
    check_no_other_record(root, root / SVHN_INFO, 'svhn')
    files = {stem: file_identity(_find(source, stem)) for stems in FASHION_MNIST_FILES.values() for stem in stems}
    settings = dict(source=str(source.resolve()), limit=limit, files=files)
    info_path = root / INFO_FILE
    info = read_info(info_path)
    # a file replaced in the source folder since (its bytes, however its size and time) is other settings; the same
    # bytes read from another folder (a copy, torchvision's raw/) are not: the images written would be the same
    recorded = info.get('files') if isinstance(info.get('files'), dict) else {}
    same = info.get('limit') == limit and set(recorded) == set(files) and all(
        same_bytes(recorded[stem], files[stem]) for stem in files) and isinstance(
        info.get('counts'), dict) and all(_stats(info.get(k)) for k in ('mean', 'std')) and info.get(
        'classes') == list(CLASS_FOLDERS) and info.get('label_names') == list(LABEL_NAMES)  # returned, printed
    # a record of an older version identifies its source files by path, size and time at most: not what they held
    older = info.get('dataset') == 'fashion-mnist' and not identifies_contents(info.get('files'))
    # a split finished with these settings is kept: a second run writes nothing, one after a split folder was
    # deleted writes that one only
    todo = [split for split in FASHION_MNIST_FILES
            if not (same and split in info['counts'] and holds_counts(root / split, info['counts'][split]))]
    # a split folder its record names, since swapped with another or emptied in part (not what the record says)
    moved = [split for split in todo if same and split in info['counts']]
    names_path = root / 'label_names.txt'
    if not todo:
        if not names_path.exists() and not names_path.is_symlink():  # deleted since: the command names it, so back
            names_path.write_text(LABEL_NAMES_TEXT, encoding='utf-8')
        return {**info, 'written': []}
    check_split_folders(root, moved, _ours, 'Fashion-MNIST class folders of PNGs',
                        None if overwrite else f'holds other images than {INFO_FILE} records for it (moved, swapped '
                                               f'with another split or deleted in part since); --overwrite writes it '
                                               f'again')
    check_split_folders(root, todo, _ours, 'Fashion-MNIST class folders of PNGs',
                        None if overwrite else f'was written by an older prepare-fashion-mnist, whose {INFO_FILE} '
                                               f'does not say what its source files held (their sha256); '
                                               f'--overwrite writes it again' if older else
                        _other_settings(info, source, limit, files))
    check_side_files([(names_path, names_path.is_file() and names_path.read_bytes() == LABEL_NAMES_TEXT.encode()),
                      (info_path, info.get('dataset') == 'fashion-mnist')], overwrite)
    data = {split: read_fashion_mnist(source, split) for split in todo}  # all checked first
    _check_limit_keeps_every_class(data, limit, source)
    root.mkdir(parents=True, exist_ok=True)
    stats = {}

    def write(split: str, folder: Path) -> Dict[str, int]:
        images, labels = data[split]
        images, labels = _upscale(images[:limit]), labels[:limit]
        if split == 'train':
            mean, std = _mean_std(images)
            stats.update(mean=[round(mean, 4)] * 3, std=[round(std, 4)] * 3)
        return _write_split(images, labels, folder, f'{split} ({len(labels)} images)', progress)
    # the folder is incomplete until the new JSON is written
    written = write_staged(root, todo, 'prepare-fashion-mnist', write,
                           before_rename=lambda: info_path.unlink(missing_ok=True))
    counts = {split: written[split] if split in written else info['counts'][split] for split in FASHION_MNIST_FILES}
    info = dict(dataset='fashion-mnist', **settings, image_size=SIZE, classes=list(CLASS_FOLDERS),
                label_names=list(LABEL_NAMES), counts=counts, mean=stats.get('mean', info.get('mean')),
                std=stats.get('std', info.get('std')))
    if names_path.is_symlink():
        names_path.unlink()  # a link there is replaced, not the file it links to
    # a mode given it (chmod) stays
    write_atomically(names_path, lambda file: file.write_text(LABEL_NAMES_TEXT, encoding='utf-8'))
    record = json.dumps(info, indent=1) + '\n'
    # cut short: no record, not half of one
    write_atomically(info_path, lambda file: file.write_text(record, encoding='utf-8'))
    return {**info, 'written': todo}
