"""Lay Tiny-ImageNet out as timm's folder reader needs it: ``train/<wnid>/*.JPEG`` and ``val/<wnid>/*.JPEG``.

timm labels an image by the name of the folder it sits in. The official archive ships ``val/images/*.JPEG`` with the
labels in ``val/val_annotations.txt`` (tab separated: file name, wordnet id, box), read as one class 'images'; and
``train/<wnid>/images/*.JPEG``, which would also be one class 'images'.
"""
import shutil
from pathlib import Path
from typing import Dict, Union

__all__ = ['prepare_tiny_imagenet_train', 'prepare_tiny_imagenet_val']


def prepare_tiny_imagenet_train(root: Union[str, Path]) -> Dict[str, int]:
    """Move ``root/train/<wnid>/images/<file>`` up to ``root/train/<wnid>/<file>``; safe to run twice.

    Always moves (a copy would leave ``images/`` behind, which timm would read as one more class); the box files
    ``<wnid>_boxes.txt`` stay where they are (not images). A root without ``train/`` is left as it is.

    Returns:
        Number of files per class folder now in place (images and the box file).

    Raises:
        ValueError: a file would overwrite one of the same name already in the class folder.
    """
    train = Path(root) / 'train'
    counts: Dict[str, int] = {}
    for wnid in sorted(p for p in train.iterdir() if p.is_dir()) if train.is_dir() else []:
        images = wnid / 'images'
        if images.is_dir():
            for source in sorted(images.iterdir()):
                if (wnid / source.name).exists():
                    raise ValueError(f'{source} would overwrite {wnid / source.name}; move it by hand')
                shutil.move(str(source), str(wnid / source.name))
            images.rmdir()
        counts[wnid.name] = sum(1 for p in wnid.iterdir() if p.is_file())
    return counts


def prepare_tiny_imagenet_val(root: Union[str, Path]) -> Dict[str, int]:
    """Move ``root/val/images/<file>`` to ``root/val/<wnid>/<file>``; safe to run twice.

    Always moves, as for train: copies would leave ``val/images/``, which timm would read as a 201st class
    ('images', sorted first, so every other label would shift by one).

    Returns:
        Number of images per class now in place.

    Raises:
        FileNotFoundError: ``root/val/val_annotations.txt`` is missing (not a Tiny-ImageNet root).
        ValueError: an annotation line is malformed, or names an image that is nowhere to be found.
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
        if not target.exists():
            if not source.exists():
                raise ValueError(
                    f'{annotations}:{line_no}: image {name} is neither in {source.parent} nor in {target.parent}')
            target.parent.mkdir(exist_ok=True)
            shutil.move(str(source), str(target))
        counts[wnid] = counts.get(wnid, 0) + 1
    images = val / 'images'
    if images.is_dir() and not any(images.iterdir()):
        images.rmdir()
    return counts
