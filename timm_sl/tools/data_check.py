"""The data check of ``timm-sl reproduce``: what is wrong with a data folder for train.py, one line per problem,
found before any run starts.

timm labels an image by the folder it is in (its folder reader) or by the class folder above it (torchvision's
ImageFolder, ``-- --dataset torch/folder``): a layout one level too deep, an empty or hidden class folder, images beside
the class folders, a class map naming no folder, an image PIL cannot open or two splits of other classes would train
every run on wrong labels, or stop each at the same image. :func:`check_data` finds them as train.py would meet them.
"""
import os
import re
from pathlib import Path
from typing import Any, BinaryIO, Dict, List, Optional, Sequence, Set, Tuple

from .errors import shown
from .files import ANALYSED_IMAGE_SUFFIXES, IMAGE_SUFFIXES
from .manifest import sha256
from .runs import IMAGE_FOLDER_READERS, TORCHVISION_FOLDER, dataset_reader, prepared_dataset, read_class_map, walk

__all__ = ['check_data', 'check_output_outside_data', 'class_map_file', 'class_map_identity', 'dataset_name',
           'fewer_images', 'reader_suffixes', 'split_folder', 'torch_dataset_names', 'SPLIT_SYNONYMS', 'TORCH_FOLDERS',
           'TORCHVISION_IMAGE_SUFFIXES', 'TORCHVISION_READER']

# timm's folder datasets look for a split's folder under its synonyms too (timm.data.dataset_factory)
SPLIT_SYNONYMS = (('train', 'training'), ('val', 'valid', 'validation', 'eval', 'evaluation'))
# the folder torchvision keeps each recipe's torch/ dataset in, under --data-dir
TORCH_FOLDERS = {'torch/cifar10': 'cifar-10-batches-py', 'torch/cifar100': 'cifar-100-python'}
_TORCH_CLASSES = {'torch/cifar10': 10, 'torch/cifar100': 100}


def fewer_images(data: Dict[str, Any], dataset: str) -> str:
    """What to train on fewer images with instead of a part of a split, for the recipe ``dataset`` ('fashion-mnist' or
    its file's stem) and the reader of ``data`` (``train_data``): only prepare-fashion-mnist takes a --limit
    (prepare-svhn writes every image); a torchvision dataset is read whole, so fewer images need an image folder."""
    splits = ' and '.join(f'{str(data[k]).split("[")[0]}/' for k in ('train_split', 'val_split'))
    folder = dataset_reader(dataset_name(data.get('dataset'))) in IMAGE_FOLDER_READERS
    if dataset.replace('-', '_') == 'fashion_mnist':
        return ('a data folder of fewer images (timm-sl prepare-fashion-mnist DATA --limit N, as --data-dir DATA' +
                ('' if folder else ", read as an image folder: -- --dataset ''") + ')')
    if not folder:
        return (f"a data folder of a few images per class, read as an image folder (-- --dataset '', its {splits} "
                f"holding class folders)")
    return f"a data folder of fewer images (a copy of {data['data_dir']} with a few images per class in {splits})"


# the torch/ names timm's create_dataset takes besides its table of basic torchvision datasets (by torchvision class)
_TORCH_OTHER_NAMES = {'inaturalist': 'INaturalist', 'inat': 'INaturalist', 'places365': 'Places365',
                      'qmnist': 'QMNIST', 'imagenet': 'ImageNet', 'image_folder': 'ImageFolder',
                      'folder': 'ImageFolder'}


def torch_dataset_names() -> List[str]:
    """What may follow ``torch/`` in train.py's ``--dataset`` (lower case): the basic datasets of the installed
    timm's create_dataset, and its other names whose torchvision class this torchvision has."""
    import torchvision.datasets
    from timm.data import dataset_factory
    basic = list(getattr(dataset_factory, '_TORCH_BASIC_DS', {}))
    return basic + [n for n, cls in _TORCH_OTHER_NAMES.items() if hasattr(torchvision.datasets, cls)]


def dataset_name(dataset: Any) -> str:
    """train.py's ``--dataset`` as timm's create_dataset tells datasets apart: in lower case, a torchvision dataset by
    what follows its second '/' (``torch/x/cifar10`` is ``torch/cifar10``), torchvision's ImageFolder by one name."""
    text = str(dataset or '').lower()
    reader = dataset_reader(text)
    if reader == TORCHVISION_FOLDER:
        return TORCHVISION_FOLDER
    return f"torch/{text.split('/', 2)[-1]}" if reader == 'torch' else text


def split_folder(root: Path, split: str) -> Optional[Path]:
    """The folder timm's folder dataset reads for ``split`` (the name, else a synonym), or None where it would fall
    back to reading all of ``root``."""
    name = split.split('[')[0]
    names = next((group for group in SPLIT_SYNONYMS if name in group), ())
    return next((root / n for n in (name, *names) if (root / n).is_dir()), None)


TORCHVISION_READER = "torchvision's ImageFolder"  # --dataset torch/folder, as the data check's lines name it
# the files torchvision's ImageFolder takes for images (a test holds them equal to its own)
TORCHVISION_IMAGE_SUFFIXES = ('.jpg', '.jpeg', '.png', '.ppm', '.bmp', '.pgm', '.tif', '.tiff', '.webp')
_PNG_HEAD, _PNG_END = b'\x89PNG\r\n\x1a\n', b'\x00\x00\x00\x00IEND\xaeB`\x82'  # signature; the IEND chunk
_JPEG_HEAD, _JPEG_END = b'\xff\xd8\xff', b'\xff\xd9'  # start of image; end of image
_JPEG_PADDING = b'\x00\xff'  # bytes some encoders write after a JPEG's end marker
_APPLE_DOUBLE = b'\x00\x05\x16\x07'  # macOS metadata beside a file copied to exFAT / SMB: ._name.png
_APPLE_DOUBLE_NAME = re.compile(r'\._.')
_PNG_GREY_16 = b'\x10\x00'  # a PNG header's bit depth and colour type: 16-bit grey


def _apple_double(path: Path) -> bool:
    """Whether ``path`` is macOS metadata (``._name`` holding an AppleDouble header), not an image."""
    if not _APPLE_DOUBLE_NAME.match(path.name):
        return False
    try:
        with open(path, 'rb') as f:
            return f.read(len(_APPLE_DOUBLE)) == _APPLE_DOUBLE
    except OSError:
        return False


def _jpeg_size(f: BinaryIO) -> Tuple[int, int]:
    """The width and height the frame header (SOF marker) of the JPEG open as ``f`` gives, read by hopping from
    marker to marker without decoding; (0, 0) where none is found before its scan (a damaged file: decoded later)."""
    f.seek(2)
    for _ in range(256):
        mark = f.read(2)
        while mark[:1] == b'\xff' and mark[1:] == b'\xff':  # fill bytes before a marker
            mark = mark[1:] + f.read(1)
        if len(mark) < 2 or mark[0] != 0xff or mark[1] in (0xd9, 0xda):  # no frame header before the scan
            return 0, 0
        if mark[1] == 0x01 or 0xd0 <= mark[1] <= 0xd7:  # markers without a length
            continue
        segment = f.read(7)
        if len(segment) < 7 or int.from_bytes(segment[:2], 'big') < 2:
            return 0, 0
        if 0xc0 <= mark[1] <= 0xcf and mark[1] not in (0xc4, 0xc8, 0xcc):  # SOF0-SOF15: the frame header
            return int.from_bytes(segment[5:7], 'big'), int.from_bytes(segment[3:5], 'big')
        f.seek(int.from_bytes(segment[:2], 'big') - 7, os.SEEK_CUR)
    return 0, 0


def _pixels_past_limit(path: str) -> str:
    """The size of an image PIL refuses to open as a decompression bomb, its header read with that guard off."""
    from PIL import Image
    limit, Image.MAX_IMAGE_PIXELS = Image.MAX_IMAGE_PIXELS, None
    try:
        with Image.open(path) as image:
            return f'{image.width}x{image.height}'
    finally:
        Image.MAX_IMAGE_PIXELS = limit


def _image_fault(path: str, size: int, clipped: Optional[List[Tuple[Path, int]]] = None,
                 huge: Optional[List[Tuple[Path, str]]] = None) -> Optional[str]:
    """Why timm's folder reader would skip the image at ``path`` of ``size`` > 0 bytes, or None where it reads it: a
    PNG that ends with its IEND chunk, or a JPEG with its end marker (after it only padding), is taken as whole from
    its first and last bytes; any other file (cut off, trailing bytes, macOS AppleDouble metadata, another format
    behind the suffix) is decoded with PIL, as the reader does. ``clipped``: filled with each 16-bit grey PNG whose
    values pass 255 and its highest value (PIL reads it as mode I;16, and its conversion to 'RGB' or 'L', timm's
    reading, clips every value above 255 to white; a TIFF or PGM too, decoded); ``huge``: with each image of more
    pixels than PIL opens (a PNG's or JPEG's header read, another format decoded: PIL's guard against decompression
    bombs, an error that is no OSError: timm's reader does not skip it, train.py stops)."""
    try:
        with open(path, 'rb') as f:
            head = f.read(26)
            f.seek(max(size - 64, 0))
            tail = f.read()
            jpeg = _jpeg_size(f) if huge is not None and head.startswith(_JPEG_HEAD) else (0, 0)
    except OSError as e:
        return f'cannot be read ({e.strerror or e})'
    if huge is not None and (head.startswith(_PNG_HEAD) and head[12:16] == b'IHDR' or head.startswith(_JPEG_HEAD)):
        from PIL import Image
        width, height = ((int.from_bytes(head[16:20], 'big'), int.from_bytes(head[20:24], 'big'))
                         if head.startswith(_PNG_HEAD) else jpeg)
        if width * height > 2 * Image.MAX_IMAGE_PIXELS:
            huge.append((Path(path), f'{width}x{height}'))
            return None
    if clipped is not None and head.startswith(_PNG_HEAD) and head[12:16] == b'IHDR' and head[24:26] == _PNG_GREY_16:
        from PIL import Image
        try:
            with Image.open(path) as image:
                peak = image.getextrema()[1]
        except Exception:  # not decoded: said below
            pass
        else:
            if peak > 255:
                clipped.append((Path(path), peak))
            return None
    if head.startswith(_PNG_HEAD) and tail.endswith(_PNG_END):
        return None
    if head.startswith(_JPEG_HEAD) and tail.rstrip(_JPEG_PADDING).endswith(_JPEG_END):
        return None
    from PIL import Image  # a rare file: decoded as timm's reader decodes it
    try:
        with Image.open(path) as image:
            image.load()
            if clipped is not None and (image.mode in ('I', 'F') or image.mode.startswith('I;')):  # TIFF, PGM
                peak = image.getextrema()[1]
                if peak > 255 or image.mode == 'F' and 0 < peak <= 1:  # white; a float TIFF of fractions: black
                    clipped.append((Path(path), peak))
        return None
    except Image.DecompressionBombError:  # a TIFF, WebP ... of more pixels than PIL opens
        if huge is not None:
            huge.append((Path(path), _pixels_past_limit(path)))
            return None
    except Exception:
        pass
    if head.startswith(_APPLE_DOUBLE):
        return 'is macOS metadata (an AppleDouble ._ file, written when copying to exFAT or SMB), not an image'
    if head.startswith(_PNG_HEAD):
        return 'is cut off (it does not end as a PNG ends, with its IEND chunk)'
    if head.startswith(_JPEG_HEAD):
        return 'is cut off (it does not end as a JPEG ends, with its FF D9 marker)'
    return 'is no image PIL reads (neither a whole PNG nor a whole JPEG)'


def _image_folders(folder: Path, empty: Optional[List[Path]] = None, broken: Optional[List[Tuple[Path, str]]] = None,
                   clipped: Optional[List[Tuple[Path, int]]] = None, unread: Optional[List[Path]] = None,
                   huge: Optional[List[Tuple[Path, str]]] = None, suffixes: Sequence[str] = IMAGE_SUFFIXES,
                   reader: str = "timm's folder reader") -> List[Path]:
    """The folders at or below ``folder`` that directly hold an image: the classes of timm's folder reader
    (``find_images_and_targets``: a class is the name of a folder an image sits in, dot-folders and linked folders
    included; a folder without an image is no class). ``empty``: filled with the images of 0 bytes found;
    ``broken``: with the other images timm's reader would skip, and why (:func:`_image_fault`); ``clipped``: with the
    16-bit grey images it would read clipped, and their highest value; ``unread``: with the images of a format it
    does not read (an image suffix not in ``suffixes``), which it leaves out; ``huge``: with the PNGs
    too large for PIL to open, and their size. ``suffixes``: the files the reader takes for images (timm's by
    default; :data:`TORCHVISION_IMAGE_SUFFIXES` for torchvision's ImageFolder), ``reader`` its name.

    Raises:
        ValueError: a link back to a folder it is in (:func:`~timm_sl.tools.runs.walk`), naming it.
    """
    found = []
    for path, _, files in walk(folder, every_path=True, reader=reader):
        images = [f for f in files if os.path.splitext(f)[1].lower() in suffixes]
        if images:
            found.append(Path(path))
        if unread is not None:  # a format the reader passes by (torchvision reads .webp, .bmp, .tif: not those)
            unread.extend(Path(path, f) for f in files if os.path.splitext(f)[1].lower() in ANALYSED_IMAGE_SUFFIXES
                          and os.path.splitext(f)[1].lower() not in suffixes)
        if empty is None and broken is None:
            continue
        for name in images:
            file = os.path.join(path, name)
            size = os.path.getsize(file) if os.path.isfile(file) else -1
            if size == 0 and empty is not None:
                empty.append(Path(file))
            elif size > 0 and broken is not None:
                fault = _image_fault(file, size, clipped, huge)
                if fault is not None:
                    broken.append((Path(file), fault))
            elif broken is not None and os.path.islink(file) and not os.path.exists(file):  # its image moved away
                broken.append((Path(file), f'is a link to {shown(os.readlink(file))}, which does not exist'))
            elif broken is not None and size < 0 and not os.access(path, os.X_OK):  # listed, not entered (r, no x)
                broken.append((Path(file), f'cannot be read (its folder {shown(path)} may be listed but not entered '
                                           f'by this user: permission denied)'))
    return sorted(found)


def _holds_class_folders(folder: Path, most: int = 3) -> bool:
    """Whether one of the first ``most`` subfolders of ``folder`` holds an image directly (a split folder's layout),
    looked at without walking a whole dataset."""
    for sub in sorted(p for p in folder.iterdir() if p.is_dir() and not p.name.startswith('.'))[:most]:
        with os.scandir(sub) as entries:
            if any(e.is_file() and os.path.splitext(e.name)[1].lower() in IMAGE_SUFFIXES for e in entries):
                return True
    return False


def _unordered_classes(names: Sequence[str]) -> Optional[Tuple[str, str]]:
    """Two class names timm's folder reader sorts as equal ('C' and 'c', '1' and '01': its natural sort ignores case
    and leading zeros), or None: it then labels them in the order of a set of strings, which changes from one Python
    process to the next (hash randomization)."""
    seen: Dict[str, str] = {}
    for name in sorted(names):  # timm's sort key: lower case, each run of digits as its number
        key = repr([int(part) if i % 2 else part for i, part in enumerate(re.split(r'(\d+)', name.lower()))])
        first = seen.setdefault(key, name)
        if first != name:
            return first, name
    return None


def _look_alike(first: Sequence[str], second: Sequence[str]) -> str:
    """What tells apart the first class name of ``first`` that looks like one of ``second`` ('c ' and 'c'; 'café' as
    macOS writes it and as Linux does): a clause for an error, empty where none does."""
    import unicodedata

    def seen(name: str) -> str:
        return unicodedata.normalize('NFC', name).strip().casefold()
    pair = next(((a, b) for a in first for b in second if seen(a) == seen(b)), None)
    if pair is None:
        return ''
    a, b = pair
    if unicodedata.normalize('NFC', a) == unicodedata.normalize('NFC', b):
        return (f' ({ascii(a)} and {ascii(b)} are one name with its accents written in two Unicode forms, NFC and NFD '
                f'(as macOS writes names): timm reads them as two classes; allowed: one spelling in both splits)')
    how = ('spaces at an end' if a.strip() == b.strip() else 'case' if a.casefold() == b.casefold() else
           'case and spaces at an end')
    return (f' ({a!r} and {b!r} differ only in {how}: timm reads them as two classes; allowed: one spelling in both '
            f'splits)')


def _listed(names: Sequence[str], most: int = 3) -> str:
    return ', '.join(list(names)[:most]) + (', ...' if len(names) > most else '')


def class_map_file(class_map: str, folder: Path) -> Optional[Path]:
    """The path timm's reader of the split ``folder`` opens as its class map: ``class_map`` as given where it exists
    (a folder too), else in ``folder``; None when neither exists."""
    return next((p for p in (Path(class_map), folder / class_map) if p.exists()), None)


def class_map_identity(data: Dict[str, Any]) -> Optional[List[Optional[str]]]:
    """The sha256 of the class map each split reads (train, val; None where none is found), or None without one: a map
    edited between sessions would resume a run with other labels."""
    if not data.get('class_map'):
        return None
    root = Path(data['data_dir'])
    found = [class_map_file(str(data['class_map']), split_folder(root, str(data[k])) or root / str(data[k]))
             for k in ('train_split', 'val_split')]
    return [sha256(p) if p is not None and p.is_file() else None for p in found]


def _unreadable_images(folder: Path, empty: List[Path], broken: List[Tuple[Path, str]],
                       clipped: List[Tuple[Path, int]], huge: List[Tuple[Path, str]],
                       torchvision: bool = False) -> Optional[str]:
    """The line for the first kind of image found (:func:`_image_folders`) that the split's reader would not read as
    it is, or None: timm's folder reader skips an unreadable image and reads the next one in its place;
    torchvision's ImageFolder (``torch/folder``, ``torchvision``) skips none, so train.py stops at it mid-epoch."""
    reader = "torchvision's ImageFolder" if torchvision else "timm's folder reader"
    who = 'torchvision' if torchvision else 'timm'
    skips = (f"{reader} skips no image: train.py would stop at it in every run, part way through an epoch"
             if torchvision else
             f"{reader} would skip it with a warning in the log and read the next image in its place, so the split "
             f"would not be the images it holds")
    if empty:
        more = f' ({len(empty) - 1} more alike)' if len(empty) > 1 else ''
        return (f"{min(empty)} is empty (0 bytes){more}: {skips}; allowed: images of their bytes (copy or extract them "
                f"again, or remove them)")
    if broken:
        (first, why), more = min(broken), len(broken) - 1
        apple = any(_APPLE_DOUBLE_NAME.match(p.name) for p, _ in broken)
        return (f"{first} {why}" + (f' ({more} more image{"s" if more > 1 else ""} {who} cannot read)'
                                    if more else '') +
                f": {skips}; allowed: whole {'' if torchvision else 'PNG or JPEG '}images (copy or extract them "
                f"again, or remove them" +
                (f"; remove the ._ files: find {folder} -name '._*' -delete)" if apple else ')'))
    if huge:  # PIL's DecompressionBombError, which neither reader catches
        from PIL import Image
        (first, pixels), more = min(huge), len(huge) - 1
        return (f"{first} is an image of {pixels} pixels" + (f' ({more} more alike)' if more else '') +
                f", more than PIL opens ({2 * Image.MAX_IMAGE_PIXELS:,}, its guard against decompression bombs): "
                f"train.py would stop at it in every run; allowed: images downscaled below that")
    if clipped:  # as the analyses refuse such an image
        (first, peak), more = min(clipped), len(clipped) - 1
        depth = '16-bit' if isinstance(peak, int) else 'floating-point'  # a PNG, PGM or TIFF; a TIFF of floats
        reads = ('clipping every value above 255 to white, so the run would train on white images' if peak > 255 else
                 'reading each of its fractions of 1 as 0 or 1 of 255, so the run would train on black images')
        return (f"{first} is a {depth} grey image whose values reach {peak:g}" +
                (f' ({more} more alike)' if more else '') +
                f": {reader} reads it as 8-bit, {reads}; allowed: 8-bit images (scale them to 0-255 first)")
    return None


def _shared_folder(folder: Path, holders: Sequence[Path], read_by: Dict[str, Path]) -> Optional[str]:
    """The line for an image folder of the split ``folder`` (``holders``) that is one of another split's, by a link
    (``read_by``: the real path of each image folder read so far, and the first path that reads it), or None: its
    images would be trained on and measured on."""
    for holder in holders:
        other = read_by.setdefault(os.path.realpath(holder), holder)
        if other != holder and folder not in (other, *other.parents):
            return (f'{other} and {holder} are one folder (a link): its images would be in both splits, so top-1 '
                    f'would be measured partly on images the run trains on; allowed: splits that share no folder')
        classes = [path.relative_to(folder).parts[:1] for path in (other, holder)]
        if other != holder and all(classes) and classes[0] != classes[1]:  # in one split, two classes: each image twice
            return (f'{other} and {holder} are one folder (a link): each of its images would be read as class '
                    f'{classes[0][0]!r} and again as class {classes[1][0]!r}; allowed: class folders that share no '
                    f'folder')
    return None


def _unread_line(folder: Path, unread: List[Path], suffixes: Sequence[str], torchvision: bool = False) -> str:
    """The line for the images in ``folder`` of a format its reader (which reads ``suffixes``: timm's, its
    ``--input-key``'s, or torchvision's) passes by as it passes by a text file: the split would be fewer images than it
    holds."""
    first, more = min(unread), len(unread) - 1
    reader = "torchvision's ImageFolder" if torchvision else "timm's folder reader"
    to = ('PNG, JPEG, WebP, BMP or TIFF' if torchvision else 'PNG or JPEG' if tuple(suffixes) == IMAGE_SUFFIXES else
          f'{" / ".join(suffixes)} (-- --input-key)')
    return (f"{first} is an image {reader} does not read (it reads {', '.join(suffixes)} only)" +
            (f' ({more} more alike)' if more else '') +
            f": the split would leave it out without a word; allowed: convert it to {to}, or move it out of {folder}")


def reader_suffixes(data: Dict[str, Any]) -> Tuple[str, ...]:
    """The file suffixes the image folder reader of ``data`` (``train_data``) takes for images: torchvision's
    ImageFolder its own, timm's folder reader those of ``--input-key`` (';' between, as timm splits it), else timm's."""
    if dataset_reader(dataset_name(data.get('dataset'))) == TORCHVISION_FOLDER:
        return TORCHVISION_IMAGE_SUFFIXES
    return tuple(str(data['input_key']).split(';')) if data.get('input_key') else IMAGE_SUFFIXES


def _input_key_problem(input_key: str, suffixes: Sequence[str]) -> Optional[str]:
    """The line for an ``--input-key`` whose suffixes timm's folder reader would not match as meant, or None: it
    compares each with a file's suffix in lower case, its dot included, so an empty one (a ';' at an end) matches
    every file without a suffix, and one in upper case, with a space or without its dot matches no file."""
    if '' in suffixes:
        return (f"--input-key {input_key} after -- names an empty suffix (a ';' at an end, or two together), which "
                f"matches every file without one (LICENSE, .DS_Store): timm's folder reader would read those as "
                f"images; allowed: suffixes such as .png;.webp")
    odd = [t for t in suffixes if not re.fullmatch(r'\.[^.A-Z\s]+', t)]
    if not odd:
        return None
    return (f"--input-key {input_key} after -- names {odd[0]!r}, which matches no file: timm's folder reader takes it "
            f"for image suffixes and compares each with a file's suffix in lower case, its dot included, so "
            + ('every run would find no image in it' if len(odd) == len(suffixes) else
               'the images it means would be left out without a word')
            + '; allowed: suffixes such as .png;.webp (lower case, no spaces)')


def check_data(data: Dict[str, Any], dataset: str) -> List[str]:
    """What is wrong with the data folder for the runs, one line per problem (empty: nothing found wrong).

    ``data``: ``train_data``; ``dataset``: the recipe's name, for the messages. An image folder (a dataset name
    without a reader prefix, :func:`~timm_sl.tools.runs.dataset_reader`)
    needs a folder per split with one folder of images per class, as many as ``num_classes``, and the same classes in
    both splits; timm labels an image by the folder it sits in (:func:`_image_folders`), so a layout one level too
    deep (Tiny-ImageNet's ``train/<wnid>/images/``), an unsorted Tiny-ImageNet ``val/``, an empty class folder, a
    dot-folder holding images or images beside the class folders would train silently on wrong labels. A torch/
    dataset (CIFAR) is downloaded by train.py when missing: its folder must then be writable. torchvision's
    ImageFolder (``torch/folder``) is checked as a folder whose every subfolder is a class (its images at any depth
    below it), which reads no class map. Other readers (hfds/,
    tfds/, wds/) are left to train.py. A folder a ``timm-sl prepare-*`` command wrote for another dataset (its
    record, :func:`~timm_sl.tools.runs.prepared_dataset`) is refused: the recipe and the paper's numbers would be
    another dataset's.
    """
    root = Path(data['data_dir'])
    if not root.is_dir():
        return [f'--data-dir {root} is not a folder']
    if str(data['val_split']) == '':  # train.py then builds no validation loader: no top-1 in any epoch
        return [f"--val-split '' after -- leaves train.py without a validation split: no run would measure a top-1 "
                f"(what the report and Table 2 compare), and each would read as diverged; allowed: a split to measure "
                f"on (the {dataset} recipe's, without --val-split)"]
    if str(data['train_split']) == '':  # timm's folder reader: all of --data-dir; CIFAR: the test set
        return [f"--train-split '' after -- names no split: train.py would train on all of {root} (CIFAR: on its "
                f"test set); allowed: a split to train on (the {dataset} recipe's, without --train-split)"]
    prepared = prepared_dataset(root)
    if prepared and prepared[1] != dataset:
        return [f'{prepared[0]}: this folder holds {prepared[1]}, not {dataset}; allowed: --dataset {prepared[1]}']
    name = dataset_name(data['dataset'])
    sliced = next((k for k in ('train_split', 'val_split') if '[' in str(data[k])), None)
    # timm's folder reader drops '[...]' (_search_split); torchvision's datasets read a whole train or test set
    reader = dataset_reader(name)
    if reader == 'torch' and name.split('/', 1)[1] not in torch_dataset_names():  # timm: an assertion in every run
        return [f"--dataset {data['dataset']} is not a torchvision dataset timm's train.py reads: every run would "
                f"fail with 'Unknown torchvision dataset {name.split('/', 1)[1]}'; allowed: torch/ with "
                f"{', '.join(torch_dataset_names())}, or an image folder of class folders (--dataset '', as the "
                f"svhn and tiny-imagenet recipes read theirs)"]
    if sliced and reader in (*IMAGE_FOLDER_READERS, 'torch'):
        split, flag = str(data[sliced]), '--' + sliced.replace('_', '-')
        whole = split.split('[')[0]
        reads = ("an image folder's split as its folder" if reader in IMAGE_FOLDER_READERS
                 else f"{data['dataset']}'s split as its whole training or test set")
        return [f"the {sliced.split('_')[0]} split {split!r} would be read as the whole {whole} split: train.py reads "
                f"{reads} and ignores {split[len(whole):]} (only the hfds/, hfids/ and tfds/ readers take part of a "
                f"split); allowed: {flag} {whole}, or {fewer_images(data, dataset)}"]
    if reader in ('torch', TORCHVISION_FOLDER) and data['class_map']:  # timm's torch/ passes no map on
        return [f"--class-map {data['class_map']} would be ignored: train.py gives a class map to timm's own readers, "
                f"not to torchvision's (--dataset {data['dataset']}), which label the classes their own way; allowed: "
                f"no --class-map, or timm's folder reader for a folder of class folders (--dataset '')"]
    if name in TORCH_FOLDERS:
        return _torch_dataset_problem(data, name, root)
    torchvision = dataset_reader(name) == TORCHVISION_FOLDER  # every subfolder is a class, no class map
    if dataset_reader(name) not in IMAGE_FOLDER_READERS:
        return []
    errors, classes = [], {}
    suffixes = reader_suffixes(data)
    if data.get('input_key') and not torchvision:
        problem = _input_key_problem(str(data['input_key']), suffixes)
        if problem:
            return [problem]
    read_by: Dict[str, Path] = {}  # the real folder of each image folder: the first path that reads it
    train, val = (split_folder(root, data[k]) for k in ('train_split', 'val_split'))
    known = {p.name for f in (train, val) if f is not None for p in f.iterdir() if p.is_dir()}  # class folder names
    if train is not None and val is not None and train.resolve() == val.resolve():
        return [f'the train split {data["train_split"]!r} and the val split {data["val_split"]!r} are both read from '
                f'{train}: every top-1 would be measured on the images the run trains on; allowed: splits in '
                f'different folders (-- --train-split / --val-split)']
    for split in (data['train_split'], data['val_split']):  # timm reads a split of that exact name, file or folder
        file = root / str(split).split('[')[0]
        if file.is_file():
            return [f"{file} is a file, not a folder: train.py would read the {split} split from it (a .tar: its "
                    f"images by timm's tar reader), which the data check cannot look into (classes, unreadable images, "
                    f"images of both splits); allowed: the split as a folder of class folders, "
                    f"{root / file.name.split('.')[0]}/<class>/<image> (extract it there)"]
    if train is None and val is None:  # one line: a split folder given for --data-dir, or no dataset at all
        return [f'{root} holds neither {data["train_split"]}/ nor {data["val_split"]}/, the folders the {dataset} '
                f'recipe reads its splits from ({root}/{data["train_split"]}/<class>/<image>)' +
                (f'; it holds class folders of images itself, as a split folder does: pass the folder that holds the '
                 f'splits, --data-dir {root.parent}' if _holds_class_folders(root) else '')]
    for split in (data['train_split'], data['val_split']):
        folder = split_folder(root, split)
        if folder is None:
            errors.append(f'{root / split} not found: the {dataset} recipe reads the {split} split from an image '
                          f'folder, {root / split}/<class>/<image>')
            continue
        subdirs = sorted(p for p in folder.iterdir() if p.is_dir())
        class_dirs = [p for p in subdirs if torchvision or not p.name.startswith('.')]
        leftover = folder / 'images'  # Tiny-ImageNet's val/images/, emptied of its images (a .DS_Store kept it)
        if (folder / 'val_annotations.txt').is_file() and leftover.is_dir() and not torchvision and \
                class_dirs != [leftover] and not _image_folders(leftover, suffixes=suffixes):
            subdirs, class_dirs = ([d for d in dirs if d != leftover] for dirs in (subdirs, class_dirs))
        elif (folder / 'val_annotations.txt').is_file() and leftover.is_dir():  # Tiny-ImageNet's val
            errors.append(f'{folder} is not sorted into class folders ({folder.name}/images/, val_annotations.txt): '
                          f'run timm-sl prepare-tiny-imagenet {root}' if class_dirs == [folder / 'images'] else
                          f'{folder / "images"} would be read as one more class: remove it (the images are sorted '
                          f'into class folders)')
            continue
        if not class_dirs:
            errors.append(f'{folder} holds no class folders: expected {folder}/<class>/<image>')
            continue
        if data['class_map']:  # timm's reader opens it as given, else in the split folder; .txt or .pkl
            problem = _class_map_problem(data, folder, class_dirs, known, prepared, suffixes)
            if problem:
                errors.append(problem)
                continue
        found, names = (_torchvision_split_problems(folder, class_dirs, data, read_by) if torchvision else
                        _timm_split_problems(folder, subdirs, class_dirs, data, suffixes, read_by, root, dataset))
        errors += found
        if names is not None:
            classes[folder] = names
    if len(classes) == 2 and data['class_map']:
        errors += _class_maps_differ(data, list(classes))
    if len(classes) == 2 and not data['class_map']:
        (train, train_names), (val, val_names) = classes.items()
        if train_names != val_names:
            errors.append(f'{train} and {val} hold different classes: only in {train}: '
                          f'{_listed(sorted(train_names - val_names))}; only in {val}: '
                          f'{_listed(sorted(val_names - train_names))}' +
                          _look_alike(sorted(train_names - val_names), sorted(val_names - train_names)))
    return list(dict.fromkeys(map(_one_line, errors)))  # a map given by its path: the same line for each split


def _one_line(problem: str) -> str:
    """``problem`` with the control characters of the paths it names escaped (a class folder named ``a\\nb``): each
    problem is one line of the command's error, which a newline would break in two, naming neither half."""
    return ''.join(c if c.isprintable() or 0xd800 <= ord(c) < 0xe000 else c.encode('unicode_escape').decode('ascii')
                   for c in problem)


def _torch_dataset_problem(data: Dict[str, Any], name: str, root: Path) -> List[str]:
    """What is wrong with the splits of a torchvision dataset train.py downloads (CIFAR, ``name``) in ``root``."""
    classes = _TORCH_CLASSES[name]
    train_split, val_split = (str(data[k]) for k in ('train_split', 'val_split'))
    if train_split not in SPLIT_SYNONYMS[0]:  # torchvision's train=False: the test set
        return [f'the train split {train_split!r} is the test set of {name} (train.py reads it as the training '
                f'set only for the split names {" / ".join(SPLIT_SYNONYMS[0])}, as written): every run would '
                f'train on the images its top-1 is measured on; allowed: --train-split train (the recipe\'s)']
    if val_split in SPLIT_SYNONYMS[0]:
        return [f'the val split {val_split!r} is the training set of {name}, which train.py reads for the split '
                f'names {" / ".join(SPLIT_SYNONYMS[0])}: every top-1 would be measured on the images the run '
                f'trains on; allowed: --val-split test (the recipe\'s, or any other name: the test set)']
    if data['num_classes'] is not None and data['num_classes'] < classes:  # labels beyond the head: a crash
        return [f'{name} has {classes} classes, but the run trains {data["num_classes"]} (num_classes): every run '
                f'would fail on its first label >= {data["num_classes"]}; allowed: --num-classes {classes} (the '
                f'recipe of --dataset {name.split("/")[1]})']
    if not (root / TORCH_FOLDERS[name]).is_dir() and not os.access(root, os.W_OK):
        return [f'{root / TORCH_FOLDERS[name]} not found, and train.py cannot download {name} into {root} '
                f'(not writable)']
    return []


def _sharing_a_label(names: Sequence[str], mapping: Dict[Any, Any]) -> Optional[Tuple[str, str]]:
    """The first two of ``names`` that ``mapping`` gives one label, in one pass (ImageNet-21k has 21,841 classes)."""
    first: Dict[Any, str] = {}
    unhashable: List[str] = []  # a list for a label: compared one by one (no label timm trains with; a .pkl edit)
    for name in names:
        label = mapping[name]
        try:
            hash(label)
        except TypeError:
            other = next((n for n in unhashable if mapping[n] == label), None)
            if other is not None:
                return other, name
            unhashable.append(name)
            continue
        if label in first:
            return first[label], name
        first[label] = name
    return None


def _class_map_problem(data: Dict[str, Any], folder: Path, class_dirs: Sequence[Path], known: Set[str],
                       prepared: Optional[Tuple[Path, str]], suffixes: Sequence[str]) -> Optional[str]:
    """What is wrong with ``-- --class-map`` for the split ``folder`` (its ``class_dirs``; ``known``: the class folder
    names of both splits; ``prepared``: the folder's ``timm-sl prepare-*`` record), or None."""
    where = class_map_file(data['class_map'], folder)
    if where is None or not where.is_file() or where.suffix.lower() not in ('.txt', '.pkl'):
        return (f'--class-map {data["class_map"]} ' + (
            f'is not found (as given, nor in {folder}), where train.py reads it' if where is None else
            f'is a folder ({where}), which train.py would open as the map' if where.is_dir() else
            f'is no regular file ({where}: a FIFO, socket or device), which train.py would wait on or read '
            f'without end' if not where.is_file() else
            'is neither .txt nor .pkl, which train.py reads') + '; allowed: a .txt file of class folder names, '
            'one a line, or a .pkl of {name: index}')
    try:
        mapping = read_class_map(where)
    except ValueError as e:
        return (f'--class-map {data["class_map"]} {e}; allowed: a .txt file of class folder names, one '
                f'a line, or a .pkl of {{name: index}}')
    names = sorted(c.name for c in class_dirs)
    # a prepared folder's label names follow timm's order of its class folders: a map must keep that order
    moved = next((n for i, n in enumerate(names) if prepared and n in mapping and mapping[n] != i), None)
    if moved is not None:
        return (f'--class-map {data["class_map"]} labels class {moved!r} {mapping[moved]!r}, not '
                f'{names.index(moved)}, but {prepared[0]} (timm-sl prepare-{prepared[1]}) labels the '
                f'class folders in sorted order, as its label names do: every per-class name would be '
                f'wrong; allowed: no --class-map, or one of the class folders in sorted order')
    if not any(n in mapping for n in names):  # timm would find no image
        return (f'--class-map {data["class_map"]} names none of the class folders of {folder} '
                f'({_listed(names)}); allowed: a map of those class folder names')
    # timm labels the images beside the class folders '' (a .txt map's blank line): none there, it is unused
    beside = any(p.suffix.lower() in suffixes and not p.is_dir() for p in folder.iterdir())
    if '' in mapping and beside:
        return (f'--class-map {data["class_map"]} names \'\' (a blank line), which timm gives the images '
                f'beside the class folders of {folder}: they would be read as class {mapping[""]!r}, '
                f'of no class folder; allowed: move them into {folder}/<class>/, or remove the blank '
                f'line')
    # '\ufeff0' of a byte-order mark, a typo
    stray = next((k for k in mapping if k not in known and k != ''), None)
    if stray is not None:
        return (f'--class-map {data["class_map"]} names {stray!r}, a class folder of neither split: '
                f'timm gives its label to no image (and leaves out the folder it meant); allowed: '
                f'names of the class folders ({_listed(names)})')
    shared = _sharing_a_label([n for n in names if n in mapping], mapping)
    if shared is not None:  # a .pkl map only: each line of a .txt map is another index
        return (f'--class-map {data["class_map"]} gives class folders {shared[0]!r} and {shared[1]!r} of {folder} the '
                f'same label {mapping[shared[0]]!r}: timm would train and measure them as one class; allowed: one '
                f'label per class folder (to train them as one class, move their images into one class folder)')
    heads = data['num_classes']
    beyond = next((n for n in names if heads and n in mapping and not (
        type(mapping[n]) is int and 0 <= mapping[n] < heads)), None)
    if beyond is not None:  # a label the head has no output for: every run fails on its first such image
        return (f'--class-map {data["class_map"]} labels class {beyond!r} {mapping[beyond]!r}, which is '
                f'no class index of the {heads} the run trains (num_classes): every run would fail on '
                f'its first image of it; allowed: labels 0 to {heads - 1}, or -- --num-classes')
    return None


def _class_maps_differ(data: Dict[str, Any], folders: Sequence[Path]) -> List[str]:
    """The line for a ``--class-map`` that each split's reader finds as another file (``map.txt`` in each split
    folder) labelling a class folder of either split otherwise, or none: timm's reader of each split reads its own,
    so top-1 would be measured against other labels than the run trained with. ``folders``: train, val."""
    found = [class_map_file(str(data['class_map']), folder) for folder in folders]
    if None in found or os.path.realpath(found[0]) == os.path.realpath(found[1]):
        return []
    try:
        maps = [read_class_map(path) for path in found]
    except ValueError:  # said for its split
        return []
    names = sorted({p.name for folder in folders for p in folder.iterdir() if p.is_dir()})
    moved = next((n for n in names if maps[0].get(n) != maps[1].get(n)), None)
    if moved is None:
        return []
    label = [f'label {m[moved]!r}' if moved in m else 'no label' for m in maps]
    return [f'--class-map {data["class_map"]} is read as {found[0]} for the train split and as {found[1]} for the '
            f'val split, which give class {moved!r} {label[0]} and {label[1]}: top-1 would be measured against other '
            f'labels than the run trains with; allowed: one map for both splits (the same file in each, or its path)']


def _torchvision_split_problems(folder: Path, class_dirs: Sequence[Path], data: Dict[str, Any],
                                read_by: Dict[str, Path]) -> Tuple[List[str], Optional[Set[str]]]:
    """What is wrong with a split ``folder`` as torchvision's ImageFolder reads it (``-- --dataset torch/folder``:
    every subfolder a class, its images at any depth below it, none beside them), and its class names where nothing
    stops the split (None where something does). ``read_by``: :func:`_shared_folder`'s record, updated."""
    empty_dirs = [c for c in class_dirs if not any(
        f.lower().endswith(TORCHVISION_IMAGE_SUFFIXES)
        for _, _, files in walk(c, every_path=True, reader=TORCHVISION_READER) for f in files)]
    if empty_dirs:  # an empty class folder fails the run
        more = len(empty_dirs) - 1
        return [f"{empty_dirs[0]} holds no image torchvision's ImageFolder reads "
                f"({', '.join(TORCHVISION_IMAGE_SUFFIXES)})" +
                (f' ({more} more folder{"s" if more > 1 else ""} alike)' if more else '') +
                f": every run would stop at its start ('Found no valid file for the classes "
                f"{empty_dirs[0].name}'); allowed: add its images or remove it"], None
    if data['num_classes'] and len(class_dirs) != data['num_classes']:
        return [f'{folder} has {len(class_dirs)} class folders (torchvision counts every folder); the run trains '
                f'{data["num_classes"]} classes (num_classes)'], None
    empty, broken, clipped, huge, unread, holders = [], [], [], [], [], []
    try:
        for c in class_dirs:
            holders += _image_folders(c, empty, broken, clipped, unread, huge, suffixes=TORCHVISION_IMAGE_SUFFIXES,
                                      reader=TORCHVISION_READER)
    except ValueError as e:  # a link loop, which torchvision's walk follows as timm's does
        return [str(e)], None
    errors = [line for line in [_shared_folder(folder, holders, read_by)] if line]
    unreadable = _unreadable_images(folder, empty, broken, clipped, huge, torchvision=True)
    loose = sorted(p for p in folder.iterdir() if p.suffix.lower() in ANALYSED_IMAGE_SUFFIXES + (
        TORCHVISION_IMAGE_SUFFIXES) and not p.is_dir() and not _apple_double(p))  # metadata ImageFolder never reads
    if unreadable:
        return errors + [unreadable], None
    if loose:  # torchvision's classes are the subfolders: an image beside them is in none
        return errors + [f"{folder} holds images outside its class folders ({_listed([p.name for p in loose])}): "
                         f"torchvision's ImageFolder leaves them out without a word; allowed: move them into "
                         f"{folder}/<class>/, or out of {folder}"], None
    if unread:
        return errors + [_unread_line(folder, unread, TORCHVISION_IMAGE_SUFFIXES, torchvision=True)], None
    return errors, {c.name for c in class_dirs}


def _timm_split_problems(folder: Path, subdirs: Sequence[Path], class_dirs: Sequence[Path], data: Dict[str, Any],
                         suffixes: Sequence[str], read_by: Dict[str, Path], root: Path, dataset: str
                         ) -> Tuple[List[str], Optional[Set[str]]]:
    """What is wrong with a split ``folder`` as timm's folder reader reads it (each image labelled by the folder it
    is in: :func:`_image_folders`), and its class names where nothing stops the split (None where something does).
    ``subdirs``: its folders, ``class_dirs``: those that are classes; ``read_by``: :func:`_shared_folder`'s record,
    updated; ``root`` and ``dataset`` for the messages."""
    empty: List[Path] = []
    broken: List[Tuple[Path, str]] = []
    clipped: List[Tuple[Path, int]] = []
    unread: List[Path] = []
    huge: List[Tuple[Path, str]] = []
    try:
        holders = _image_folders(folder, empty, broken, clipped, unread, huge, suffixes=suffixes)
    except ValueError as e:
        return [str(e)], None
    unreadable = _unreadable_images(folder, empty, broken, clipped, huge)
    if unreadable:
        return [unreadable], None
    errors = [line for line in [_shared_folder(folder, holders, read_by)] if line]
    below: Dict[Path, List[Path]] = {d: [] for d in subdirs}  # the image folders at or below each subfolder
    for holder in holders:
        if holder != folder:
            below.setdefault(folder / holder.relative_to(folder).parts[0], []).append(holder)
    dotted = [d for d in subdirs if d.name.startswith('.') and below[d]]
    imageless = [d for d in class_dirs if not below[d]]
    nested = [next(h for h in below[c] if h != c) for c in class_dirs if any(h != c for h in below[c])]
    loose = [] if folder not in holders else [folder]
    if data['class_map']:  # timm labels by the map, leaving out the folders it does not name
        dotted = imageless = loose = []
    if dotted or imageless:
        wrong, more = (dotted or imageless)[0], len(dotted or imageless) - 1
        return errors + [f'{wrong} ' + ("holds images: timm's folder reader counts it as a class (dot-folders too)"
                                        if dotted else f"holds no image ({', '.join(suffixes)}): timm's folder "
                                                       f"reader skips it") +
                         (f' ({more} more folder{"s" if more > 1 else ""} alike)' if more else '') +
                         ', shifting the labels of the classes sorted after it; ' +
                         ('remove it' if dotted else 'add its images or remove it')], None
    if loose:
        return errors + [f"{folder} holds images outside its class folders: timm's folder reader counts them as one "
                         f"more class; move them into {folder}/<class>/"], None
    if nested:
        sub, more = nested[0], len(nested) - 1
        fix = (f'run timm-sl prepare-tiny-imagenet {root}' if dataset == 'tiny-imagenet' else
               f'move them up to {folder}/<class>/')
        return errors + [f'{sub} holds images one folder too deep' +
                         (f' ({more} more class folder{"s" if more > 1 else ""} alike)' if more else '') +
                         f": timm labels an image by the folder it is in, so the images in it would be class "
                         f"'{sub.name}'; {fix}"], None
    if unread:
        return errors + [_unread_line(folder, unread, suffixes)], None
    if data['num_classes'] and not data['class_map'] and len(class_dirs) != data['num_classes']:
        return errors + [f'{folder} has {len(class_dirs)} class folders; the run trains {data["num_classes"]} '
                         f'classes (num_classes)'], None
    tie = None if data['class_map'] else _unordered_classes([c.name for c in class_dirs])
    if tie is not None:
        return errors + [f"{folder} holds class folders {tie[0]!r} and {tie[1]!r}, which timm's folder reader "
                         f"cannot order (it sorts class names ignoring case, numbers by value): their labels would "
                         f"change from one start of train.py or validate.py to the next, and between the splits; "
                         f"allowed: rename one of them, or -- --class-map naming each folder's label"], None
    return errors, {c.name for c in class_dirs}


def check_output_outside_data(output: Path, data: Dict[str, Any]) -> None:
    """Refuse an ``output`` at or below a split folder of an image-folder dataset (``data``: ``train_data``;
    timm's reader or torchvision's): the report's PNGs written there would be images of one more class.

    Raises:
        ValueError: naming the split folder, one line.
    """
    name = str(data['dataset'] or '').lower()
    if dataset_reader(name) not in IMAGE_FOLDER_READERS:
        return
    where = Path(output).resolve()
    for split in (data['train_split'], data['val_split']):
        folder = split_folder(Path(data['data_dir']), str(split))
        if folder is not None and (where == folder.resolve() or folder.resolve() in where.parents):
            raise ValueError(f'--out {shown(output)} is inside {shown(folder)}, which train.py reads as the {split} '
                             f'split: the report\'s PNGs there would be images of one more class; allowed: an --out '
                             f'outside the split folders of --data-dir')
