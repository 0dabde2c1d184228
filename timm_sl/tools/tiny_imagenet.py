"""Sort Tiny-ImageNet's validation images into per-class folders, so timm reads ``val`` as an ImageFolder.

The official archive ships ``val/images/*.JPEG`` with the labels in ``val/val_annotations.txt`` (tab separated:
file name, wordnet id, box); ``train`` is already ``train/<wnid>/images/*.JPEG``, which timm's folder reader handles.
"""
import shutil
from pathlib import Path
from typing import Dict, Union

__all__ = ['prepare_tiny_imagenet_val']


def prepare_tiny_imagenet_val(root: Union[str, Path], copy: bool = False) -> Dict[str, int]:
    """Move (or copy) ``root/val/images/<file>`` to ``root/val/<wnid>/<file>``; safe to run twice.

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
            (shutil.copy2 if copy else shutil.move)(str(source), str(target))
        counts[wnid] = counts.get(wnid, 0) + 1
    images = val / 'images'
    if not copy and images.is_dir() and not any(images.iterdir()):
        images.rmdir()
    return counts
