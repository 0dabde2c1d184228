"""Lay Tiny-ImageNet out as timm's folder reader needs it: ``train/<wnid>/*.JPEG`` and ``val/<wnid>/*.JPEG``.

timm labels an image by the name of the folder it sits in. The official archive ships ``val/images/*.JPEG`` with the
labels in ``val/val_annotations.txt`` (tab separated: file name, wordnet id, box), read as one class 'images'; and
``train/<wnid>/images/*.JPEG``, which would also be one class 'images'.

Every function here checks every move it will make (annotations, class ids, files in the way, files left over) before
it moves the first file: a refused folder is left as it was.
"""
import contextlib
import filecmp
import os
import shutil
from pathlib import Path
from typing import Dict, List, Optional, Set, Tuple, Union

from ._splits import _held, unwritable
from .errors import shown
from .files import check_regular_file, folder_arg, kind_of

__all__ = ['prepare_tiny_imagenet', 'prepare_tiny_imagenet_train', 'prepare_tiny_imagenet_val']

# (source, target) of a file; (folder, None) for an ``images/`` folder to remove once the moves before emptied it
_Moves = List[Tuple[Path, Optional[Path]]]


def _check_move(source: Path, target: Path) -> bool:
    """Whether ``source`` must move to ``target``: False when ``target`` already holds the same bytes (the archive
    extracted again over a prepared folder makes ``source`` a duplicate, to be removed).

    Raises:
        ValueError: ``source`` is a folder (moved into a class folder, timm would read its images as one more class),
            a different file (or a folder) of that name is already at ``target``, or its folder is a file.
    """
    if source.is_dir():
        raise ValueError(f'{source} is a folder among the images: moved into {target.parent}, timm would read the '
                         f'images in it as one more class {source.name!r}; allowed: image files only (move it away)')
    if target.parent.exists() and not target.parent.is_dir():
        raise ValueError(f'{target.parent} is a file; the class folder of {source} goes there: move it away by hand')
    if not target.exists():
        return True
    if target.is_symlink() and os.path.samefile(source, target):  # a link to it (a script's layout): the file replaces
        return True                                                # the link; removing the file would leave it to none
    if target.is_file() and source.is_file() and filecmp.cmp(source, target, shallow=False):
        return False
    raise ValueError(f'{source} would overwrite {target}, which differs; move one of them away by hand')


def _check_writable(moves: _Moves) -> None:
    """Refuse, before the first move, a folder a move takes a file out of or puts one into that the system will not
    let this user change (a read-only class folder): found midway, it left the folder half prepared.

    Raises:
        OSError: of the system's kind, naming the folder, why and what is allowed.
    """
    folders = {source.parent for source, _ in moves}
    folders.update(target.parent if target.parent.exists() else target.parent.parent for _, target in moves if target)
    for folder in sorted(folders):
        e = unwritable(folder)
        if e is not None:
            why = (e.strerror or str(e)).lower()
            raise type(e)(f'{folder}: cannot write into this folder ({why}), where images are moved out of or '
                          f'into; allowed: folders this user may write (nothing was moved)') from None


def _apply(moves: _Moves) -> None:
    """Make the checked moves, in order, once every folder they change is found writable."""
    _check_writable(moves)
    for source, target in moves:
        if target is None:
            source.rmdir()
        elif _check_move(source, target):
            target.parent.mkdir(exist_ok=True)
            shutil.move(str(source), str(target))
        else:
            source.unlink()


def _refuse_left_over(images: Path, listed: Set[str], why: str) -> None:
    """Refuse files in ``images`` that no move takes away (timm would read them as a class 'images').

    Raises:
        ValueError: naming ``images`` and the first files left.
    """
    from .files import IMAGE_SUFFIXES
    left = sorted(p.name for p in images.iterdir() if p.name not in listed) if images.is_dir() else []
    if left:
        shown = ', '.join(left[:3]) + (', ...' if len(left) > 3 else '')
        read = any(os.path.splitext(name)[1].lower() in IMAGE_SUFFIXES for name in left)
        below = next(filter(None, (_image_below(images / name) for name in left if (images / name).is_dir())), None)
        raise ValueError(f'{images} still holds {len(left)} file(s) ({shown}) {why}; ' + (
            "timm would read them as one more class 'images'" if read else
            f'timm would read the images below them as more classes (such as {below.parent.name!r}, of {below})'
            if below else
            'no images (a file manager\'s, say), but they keep it from being removed once its images are moved'
        ) + ': move them away and run again')


def _image_below(folder: Path) -> Optional[Path]:
    """An image timm's folder reader reads at or below ``folder`` (every depth, through links; its class is the
    folder it is in), or None."""
    from .files import IMAGE_SUFFIXES
    from .files import walk
    return next((Path(root, name) for root, _, names in walk(folder, skipped=[]) for name in sorted(names)
                 if os.path.splitext(name)[1].lower() in IMAGE_SUFFIXES), None)


def _refuse_link(images: Path) -> None:
    """Refuse an ``images/`` folder that is a link: its files would be moved out of the folder it links to (emptying a
    folder outside ``root``), and the link could not be removed as a folder.

    Raises:
        ValueError: naming the link and where it points.
    """
    if images.is_symlink():
        raise ValueError(f'{images} is a link (to {os.readlink(images)}); the images are moved out of it into class '
                         f'folders, which would empty the folder it links to; allowed: a real folder (copy the '
                         f'images in, or prepare the folder the link points into)')


def _read_text(path: Path) -> str:
    """``path`` as UTF-8 text (the archive's text files are ASCII), without a byte-order mark an editor may add.

    Raises:
        ValueError: naming ``path`` when it is not UTF-8, or no regular file (a FIFO: reading it would wait for ever).
    """
    check_regular_file(path, 'the text file of the Tiny-ImageNet archive')
    try:
        return path.read_text(encoding='utf-8-sig')
    except UnicodeDecodeError as e:
        raise ValueError(f'{path} is not UTF-8 text (byte 0x{e.object[e.start]:02x} at offset {e.start}); expected '
                         f'the text file of the Tiny-ImageNet archive') from None


def _lines(path: Path) -> List[str]:
    """The lines of the text file ``path`` as an editor numbers them (ended by LF, CRLF or CR: read as text, all are
    LF), where ``str.splitlines`` also breaks at a form feed, '\x1c' or U+2028 inside a line: the line numbers said
    would be wrong, and one line would read as two.

    Raises:
        ValueError: naming ``path`` and the line that holds another line break.
    """
    lines = _read_text(path).split('\n')
    odd = next((i for i, line in enumerate(lines, start=1) if line and line.splitlines() != [line]), None)
    if odd is not None:
        raise ValueError(f'{shown(path)}:{odd}: the line {lines[odd - 1]!r} holds a line break inside it; allowed: '
                         f'lines ended by LF, CRLF or CR only')
    return lines


def _known_classes(root: Path) -> List[Tuple[Path, Set[str]]]:
    """What says which classes there are: ``root/wnids.txt`` (one id a line) and the class folders of ``root/train``,
    each where present."""
    known = []
    wnids = root / 'wnids.txt'
    if wnids.exists() and not wnids.is_dir():  # a FIFO there is refused by name, not taken for no list
        known.append((wnids, {line.strip() for line in _lines(wnids) if line.strip()}))
    train = root / 'train'
    folders = {p.name for p in train.iterdir() if p.is_dir()} if train.is_dir() else set()
    if folders:
        known.append((train, folders))
    return known


def _plain_name(text: str) -> bool:
    return bool(text) and text not in ('.', '..') and '/' not in text and '\\' not in text


def _refuse_stale(val: Path, annotations: Path, classes_of: Dict[str, str]) -> None:
    """Refuse an image an earlier preparation put in a class folder of ``val`` that ``annotations`` puts elsewhere or
    does not list: the archive of another class set extracted over a prepared folder. Left there, timm would read it
    under a wrong label, or beside its new copy under two labels.

    Raises:
        ValueError: naming the first such image, its folder and what the annotations say of it.
    """
    from timm.data.readers.img_extensions import get_img_extensions
    folders = sorted(p for p in val.iterdir() if p.is_dir() and p.name != 'images')
    for folder in folders:
        for image in sorted(p for p in folder.iterdir() if p.suffix.lower() in get_img_extensions()):
            wnid = classes_of.get(image.name)
            if wnid == folder.name:
                continue
            if wnid is None:  # added by hand, or left by another archive: which, the folder cannot tell
                raise ValueError(f'{image} sits in class folder {folder.name!r}, but {annotations} does not list it: '
                                 f'timm would read it as a val image of that class, which no annotation says; '
                                 f'allowed: the val images of these annotations only (move it out of {val})')
            raise ValueError(f'{image} sits in class folder {folder.name!r}, but {annotations} puts it in class '
                             f'{wnid!r}: the folder was prepared from other annotations, and timm would read it under '
                             f'a wrong label; allowed: class folders of these annotations only (move the class folders '
                             f'of {val} away and extract the archive again)')


def _refuse_unlisted_classes(root: Path) -> None:
    """Refuse class folders of ``root/train`` that ``root/wnids.txt`` does not list (left by an archive of another
    class set): timm would number them among the listed classes, shifting every label after them.

    Raises:
        ValueError: naming the first such folder and the list.
    """
    wnids = root / 'wnids.txt'
    known = dict(_known_classes(root))
    if wnids not in known or (root / 'train') not in known:
        return
    extra = sorted(known[root / 'train'] - known[wnids])
    if extra:
        raise ValueError(f'{root / "train" / extra[0]} is a class folder that {wnids} does not list '
                         f'({len(extra)} such folder(s)); timm would read it as one more class, shifting every label '
                         f'after it; allowed: the classes of wnids.txt only (move it away)')


def _refuse_missing_classes(root: Path, annotations: Path, counts: Dict[str, int]) -> None:
    """Refuse annotations that give no val image to a class folder of ``root/train`` (``counts``: val images per
    class): timm numbers each split's own class folders, so val would label every class sorted after the missing one
    as the class before it in train.

    Raises:
        ValueError: naming ``annotations``, the first class without an image and the train folder.
    """
    _refuse_unlisted_classes(root)  # a class folder of another class set: said as such
    train = root / 'train'
    missing = sorted({p.name for p in train.iterdir() if p.is_dir()} - set(counts)) if train.is_dir() else []
    if missing:
        raise ValueError(f'{shown(annotations)} gives no image to class {missing[0]!r} of {shown(train)} '
                         f'({len(missing)} such class(es)): timm would number the val classes without it, so a class '
                         f'sorted after it has another label in val than in train, and top-1 has no image of it; '
                         f'allowed: val images of every class of train (the annotations and val/images of the same '
                         f'archive)')


def _check_root(root: Path) -> None:
    """Refuse a ``root`` that is not there (a typo), or is there but is no folder (a file given for the dataset
    folder), either of which would read as a folder without ``val/val_annotations.txt``.

    Raises:
        FileNotFoundError / NotADirectoryError: naming ``root``, what it is and what is allowed.
    """
    if not root.exists():  # a mistyped root: said so, not as a missing val/val_annotations.txt below it
        raise FileNotFoundError(f'{shown(root)} does not exist; expected the folder that holds train/ and val/ of '
                                f'Tiny-ImageNet (extracted from its archive)')
    if not root.is_dir():
        raise NotADirectoryError(f'{shown(root)} is {kind_of(root)}, not a folder; allowed: the folder that holds '
                                 f'train/ and val/ of Tiny-ImageNet')


def _no_annotations(root: Path, annotations: Path) -> str:
    """Why ``annotations`` is missing, as far as ``root/val`` tells: no val/ (not a Tiny-ImageNet root), images left
    to sort (val/images/, val/<wnid>/images/), val already sorted into class folders, or none of these."""
    val = root / 'val'
    if not val.is_dir():
        return f'{annotations} not found: pass the folder that holds train/ and val/ of Tiny-ImageNet'
    again = f'allowed: val_annotations.txt back in {val} (extract it from the archive again)'
    unsorted = [d for d in (val / 'images', *(p / 'images' for p in sorted(val.iterdir()) if p.is_dir()))
                if d.is_dir()]
    if unsorted:
        return (f'{annotations} not found: it holds the classes of the images in {unsorted[0]}'
                f'{f" and {len(unsorted) - 1} more folder(s)" if len(unsorted) > 1 else ""}, which are sorted and '
                f'checked by it; {again}')
    classes = [p for p in val.iterdir() if p.is_dir()]
    if not classes:
        return f'{annotations} not found, and {val} holds neither images/ nor class folders; {again}'
    train = root / 'train'
    left = [p for p in sorted(train.iterdir()) if (p / 'images').is_dir()] if train.is_dir() else []
    return (f'{annotations} not found, but {val} is already sorted into {len(classes)} class folder(s): nothing is '
            f'left to sort in val, and its classes cannot be checked without it; {again}'
            + (f' (train/ is not prepared either: {left[0] / "images"}'
               f'{f" and {len(left) - 1} more" if len(left) > 1 else ""} to move up)' if left else
               ', or the folder as it is (train/ is prepared too)'))


def _plan_val(root: Path) -> Tuple[_Moves, Dict[str, int]]:
    """The moves of :func:`prepare_tiny_imagenet_val`, every one checked, and the images per class."""
    _check_root(root)
    val = root / 'val'
    annotations = val / 'val_annotations.txt'
    if annotations.is_dir():
        raise IsADirectoryError(f'{annotations} is a folder; allowed: the text file of Tiny-ImageNet\'s val '
                                'annotations (image, class id, box per line)')
    if not annotations.exists():
        raise FileNotFoundError(_no_annotations(root, annotations))
    _refuse_link(val / 'images')
    # val/<wnid>/images/, the layout of train/ some scripts sort val into: moved up as train's are
    nested = [d / 'images' for d in sorted(val.iterdir()) if d.is_dir() and d.name != 'images' and
              (d / 'images').is_dir()]
    for folder in nested:
        _refuse_link(folder)
    known = _known_classes(root)
    moves: _Moves = []
    counts: Dict[str, int] = {}
    first_line: Dict[str, int] = {}
    classes_of: Dict[str, str] = {}
    for line_no, line in enumerate(_lines(annotations), start=1):
        if not line.strip():
            continue
        where = f'{annotations}:{line_no}'
        fields = line.split('\t')
        if len(fields) < 2 or not _plain_name(fields[0]) or not _plain_name(fields[1]) or fields[1] == 'images':
            raise ValueError(f'{where}: expected "file<TAB>wnid<TAB>..." (a file name and a class id), got {line!r}')
        name, wnid = fields[0], fields[1]
        for source_of_classes, classes in known:
            if wnid not in classes:
                what = 'the ids listed in' if source_of_classes.is_file() else 'the class folders of'
                raise ValueError(f'{where}: class {wnid!r} of {name} is not among {what} {source_of_classes} '
                                 f'({len(classes)} classes; a class more would shift every label after it); allowed: '
                                 f'one of those classes')
        if name in first_line:
            raise ValueError(f'{where}: image {name} is listed again (first on line {first_line[name]}); allowed: '
                             f'each image once')
        first_line[name] = line_no
        classes_of[name] = wnid
        source, target = val / 'images' / name, val / wnid / name
        # the image in val/images/ and in val/<wnid>/images/ (the archive extracted again over such a folder): the
        # first is moved, the second then a duplicate of it, removed
        sources = [path for path in (source, val / wnid / 'images' / name) if path.exists()]
        for path in sources:
            _check_move(path, target)
        if len(sources) == 2 and not (sources[1].is_file() and filecmp.cmp(*sources, shallow=False)):
            raise ValueError(f'{sources[0]} and {sources[1]} differ, and both would be {target}; move one of them '
                             f'away by hand')
        moves.extend((path, target) for path in sources)
        if not sources and not target.exists():
            raise ValueError(f'{where}: image {name} is neither in {source.parent} nor in {target.parent}')
        counts[wnid] = counts.get(wnid, 0) + 1
    _refuse_left_over(val / 'images', set(first_line), f'not listed in {annotations.name}')
    for folder in nested:
        _refuse_left_over(folder, {n for n, w in classes_of.items() if w == folder.parent.name},
                          f'not listed for class {folder.parent.name} in {annotations.name}')
    _refuse_stale(val, annotations, classes_of)
    _refuse_missing_classes(root, annotations, counts)
    moves.extend((folder, None) for folder in [val / 'images', *nested] if folder.is_dir())
    return moves, counts


def _plan_train(root: Path) -> Tuple[_Moves, Dict[str, int]]:
    """The moves of :func:`prepare_tiny_imagenet_train`, every one checked, and the files per class afterwards."""
    _check_root(root)
    _refuse_unlisted_classes(root)
    train = root / 'train'
    moves: _Moves = []
    counts: Dict[str, int] = {}
    for wnid in sorted(p for p in train.iterdir() if p.is_dir()) if train.is_dir() else []:
        images = wnid / 'images'
        _refuse_link(images)
        sources = sorted(images.iterdir()) if images.is_dir() else []
        staying = {p.name for p in wnid.iterdir() if p.is_file()}
        for source in sources:
            _check_move(source, wnid / source.name)
            moves.append((source, wnid / source.name))
        if images.is_dir():
            moves.append((images, None))
        counts[wnid.name] = len(staying | {p.name for p in sources})
    return moves, counts


def prepare_tiny_imagenet_train(root: Union[str, Path]) -> Dict[str, int]:
    """Move ``root/train/<wnid>/images/<file>`` up to ``root/train/<wnid>/<file>``; safe to run twice.

    Always moves (a copy would leave ``images/`` behind, which timm would read as one more class); the box files
    ``<wnid>_boxes.txt`` stay where they are (not images). A root without ``train/`` is left as it is.

    Returns:
        Number of files per class folder now in place (images and the box file).

    Raises:
        ValueError: a file would overwrite a different one of the same name already in the class folder (the same
            bytes, as after extracting the archive again over a prepared folder, are a duplicate and removed); a
            class folder is not in ``root/wnids.txt`` (another class set's); checked before the first moves.
    """
    root = folder_arg(root, 'root', 'prepare_tiny_imagenet_train')
    with _held(root) if root.is_dir() else contextlib.nullcontext():  # planned and moved by one command at a time
        moves, counts = _plan_train(root)
        _apply(moves)
    return counts


def prepare_tiny_imagenet_val(root: Union[str, Path]) -> Dict[str, int]:
    """Move ``root/val/images/<file>`` to ``root/val/<wnid>/<file>`` (also from ``root/val/<wnid>/images/``, where a
    script sorted val as the archive lays out train); safe to run twice.

    Always moves, as for train: copies would leave ``val/images/``, which timm would read as a 201st class
    ('images', sorted first, so every other label would shift by one). Every annotation is checked before the first
    file moves, its class against ``root/wnids.txt`` and the class folders of ``root/train`` where present.

    Returns:
        Number of images per class now in place.

    Over a prepared folder the archive was extracted into again, the second copy of each image is removed (the same
    bytes) and ``val/images/`` goes, as it must.

    Raises:
        FileNotFoundError: ``root/val/val_annotations.txt`` is missing (said with what ``val/`` holds instead).
        ValueError: an annotation line is malformed (a cut last line too), names a class that ``wnids.txt`` or
            ``train/`` lacks, names an image twice or one that is nowhere to be found, or would overwrite a different
            file; ``val/images/`` holds files the annotations do not list; a class folder of ``val`` holds an image
            the annotations put in another class or do not list (prepared from another archive); a class folder of
            ``root/train`` gets no val image; a text file is not UTF-8.
    """
    root = folder_arg(root, 'root', 'prepare_tiny_imagenet_val')
    with _held(root) if root.is_dir() else contextlib.nullcontext():  # planned and moved by one command at a time
        moves, counts = _plan_val(root)
        _apply(moves)
    return counts


def prepare_tiny_imagenet(root: Union[str, Path]) -> Tuple[Dict[str, int], Dict[str, int]]:
    """:func:`prepare_tiny_imagenet_val` and :func:`prepare_tiny_imagenet_train`, both checked before either moves
    a file. Returns their counts, ``(val, train)``."""
    root = folder_arg(root, 'root', 'prepare_tiny_imagenet')
    with _held(root) if root.is_dir() else contextlib.nullcontext():  # a second command at once: refused, one line
        (val_moves, val), (train_moves, train) = _plan_val(root), _plan_train(root)
        _apply(val_moves + train_moves)
    return val, train
