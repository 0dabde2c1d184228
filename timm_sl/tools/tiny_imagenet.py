"""Lay Tiny-ImageNet out as timm's folder reader needs it: ``train/<wnid>/*.JPEG`` and ``val/<wnid>/*.JPEG``.

timm labels an image by the name of the folder it sits in. The official archive ships ``val/images/*.JPEG`` with the
labels in ``val/val_annotations.txt`` (tab separated: file name, wordnet id, box), read as one class 'images'; and
``train/<wnid>/images/*.JPEG``, which would also be one class 'images'.
"""
import filecmp
import shutil
from pathlib import Path
from typing import Dict, Union

__all__ = ['prepare_tiny_imagenet_train', 'prepare_tiny_imagenet_val']


def _move(source: Path, target: Path) -> None:
    """Move ``source`` to ``target``; a ``target`` already there with the same bytes (the archive extracted again over
    a prepared folder) makes ``source`` a duplicate, removed.

    Raises:
        ValueError: a different file of that name is already at ``target``.
    """
    if target.exists():
        if target.is_file() and filecmp.cmp(source, target, shallow=False):
            source.unlink()
            return
        raise ValueError(f'{source} would overwrite {target}, which differs; move one of them away by hand')
    shutil.move(str(source), str(target))


def _remove_if_empty(images: Path, why: str) -> None:
    """Remove an emptied ``images/`` folder; one that still holds files is refused (timm would read a class 'images').

    Raises:
        ValueError: files are left in ``images``.
    """
    if not images.is_dir():
        return
    left = sorted(p.name for p in images.iterdir())
    if left:
        raise ValueError(f'{images} still holds {len(left)} file(s) ({", ".join(left[:3])}{", ..." if len(left) > 3 else ""}) '
                         f'{why}; timm would read them as one more class \'images\': move them away and run again')
    images.rmdir()


def prepare_tiny_imagenet_train(root: Union[str, Path]) -> Dict[str, int]:
    """Move ``root/train/<wnid>/images/<file>`` up to ``root/train/<wnid>/<file>``; safe to run twice.

    Always moves (a copy would leave ``images/`` behind, which timm would read as one more class); the box files
    ``<wnid>_boxes.txt`` stay where they are (not images). A root without ``train/`` is left as it is.

    Returns:
        Number of files per class folder now in place (images and the box file).

    Raises:
        ValueError: a file would overwrite a different one of the same name already in the class folder (the same
            bytes, as after extracting the archive again over a prepared folder, are a duplicate and removed).
    """
    train = Path(root) / 'train'
    counts: Dict[str, int] = {}
    for wnid in sorted(p for p in train.iterdir() if p.is_dir()) if train.is_dir() else []:
        images = wnid / 'images'
        if images.is_dir():
            for source in sorted(images.iterdir()):
                _move(source, wnid / source.name)
            _remove_if_empty(images, 'after the move')
        counts[wnid.name] = sum(1 for p in wnid.iterdir() if p.is_file())
    return counts


def prepare_tiny_imagenet_val(root: Union[str, Path]) -> Dict[str, int]:
    """Move ``root/val/images/<file>`` to ``root/val/<wnid>/<file>``; safe to run twice.

    Always moves, as for train: copies would leave ``val/images/``, which timm would read as a 201st class
    ('images', sorted first, so every other label would shift by one).

    Returns:
        Number of images per class now in place.

    Over a prepared folder the archive was extracted into again, the second copy of each image is removed (the same
    bytes) and ``val/images/`` goes, as it must.

    Raises:
        FileNotFoundError: ``root/val/val_annotations.txt`` is missing (not a Tiny-ImageNet root).
        ValueError: an annotation line is malformed, names an image that is nowhere to be found, or would overwrite a
            different file; ``val/images/`` still holds files the annotations do not list.
    """
    val = Path(root) / 'val'
    annotations = val / 'val_annotations.txt'
    if not annotations.is_file():
        raise FileNotFoundError(f'{annotations} not found: pass the folder that holds train/ and val/ of Tiny-ImageNet')
    counts: Dict[str, int] = {}
    for line_no, line in enumerate(annotations.read_text().splitlines(), start=1):
        if not line.strip():
            continue
        fields = line.split('\t')
        if len(fields) < 2:
            raise ValueError(f'{annotations}:{line_no}: expected "file<TAB>wnid<TAB>...", got {line!r}')
        name, wnid = fields[0], fields[1]
        target = val / wnid / name
        source = val / 'images' / name
        if source.exists():
            target.parent.mkdir(exist_ok=True)
            _move(source, target)
        elif not target.exists():
            raise ValueError(
                f'{annotations}:{line_no}: image {name} is neither in {source.parent} nor in {target.parent}')
        counts[wnid] = counts.get(wnid, 0) + 1
    _remove_if_empty(val / 'images', f'not listed in {annotations.name}')
    return counts
