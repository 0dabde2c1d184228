"""What a command wrote into a folder it shares with its user: ``OUT/<manifest>.json`` holds the sha256 of each file
it wrote, so that a later run replaces its own files, unchanged, and refuses anything else (nothing a user made is
lost). Used by ``timm-sl release`` and ``timm-sl reproduce``."""
import hashlib
import json
from pathlib import Path
from typing import Callable, Dict, Sequence

from .errors import first_line, write_atomically
from .files import check_regular_file, read_text

__all__ = ['sha256', 'read_manifest', 'record_written', 'recorder', 'folder_recorder']


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open('rb') as f:
        for block in iter(lambda: f.read(1 << 20), b''):
            digest.update(block)
    return digest.hexdigest()


def read_manifest(out: Path, overwrite: bool, name: str, tool: str) -> Dict[str, str]:
    """``OUT/<name>``: relative path -> sha256 of each file an earlier run of ``tool`` wrote ({} for none). A file the
    manifest was saved to replace, and that a kill left unreplaced (its ``replacing`` entry), counts by the hash it has.

    Raises:
        ValueError: a file of that name that ``tool`` did not write (unless ``overwrite``), or a FIFO, socket or device
            there (even with ``overwrite``: it would be written forever).
    """
    path = out / name
    if not path.exists():
        return {}
    check_regular_file(path, f'the manifest {tool} writes; allowed: move it away')
    try:
        saved = json.loads(read_text(path, f'the manifest {tool} writes'))
        hashes, replacing = saved.get('sha256'), saved.get('replacing', {})
        if not all(isinstance(m, dict) and all(isinstance(v, str) for v in m.values()) for m in (hashes, replacing)):
            raise ValueError('its "sha256" / "replacing" are not mappings of hashes')
        for rel, old in replacing.items():  # files still ours as they were: the move after the save never came
            if hashes.get(rel) != old and (out / rel).is_file() and sha256(out / rel) == old:
                hashes[rel] = old
        return hashes
    except (ValueError, AttributeError) as e:
        if overwrite:
            return {}
        raise ValueError(f'{path} is not the manifest {tool} writes ({first_line(e)}); allowed: move it '
                         f'away, or --overwrite to replace it') from None


def record_written(out: Path, manifest: Dict[str, str], rels: Sequence[str], name: str) -> None:
    """Add the files just written to ``out``'s manifest (``name``) and save it (after each step: an interrupted
    command leaves a manifest of what it wrote)."""
    _save_with(out, manifest, {rel: sha256(out / rel) for rel in rels}, name)


def _save_with(out: Path, manifest: Dict[str, str], new: Dict[str, str], name: str) -> None:
    """``out``'s manifest (``name``) saved with the hashes ``new`` added; ``manifest`` holds them once it is. The
    hashes they replace are kept as ``replacing`` until the next save: saved before its files are moved into place, a
    kill in between leaves the earlier files, which are still ours."""
    replacing = {rel: manifest[rel] for rel in sorted(new) if rel in manifest and manifest[rel] != new[rel]}
    text = json.dumps({'sha256': dict(sorted({**manifest, **new}.items())), 'replacing': replacing}, indent=1)
    # cut short: the earlier manifest stays whole
    write_atomically(out / name, lambda path: path.write_text(text, encoding='utf-8'))
    manifest.update(new)


def recorder(out: Path, manifest: Dict[str, str], rel: str, name: str) -> Callable[[Path], None]:
    """A ``before_replace`` for :func:`~timm_sl.tools.errors.write_atomically` of ``out / rel``: the new file's sha256
    saved in ``out``'s manifest (``name``) before the file is moved into place. Recorded after it instead, a disk
    that filled or a kill in between left a file of ours the manifest does not hold, which every later call refused
    as not ours; a manifest that cannot be saved now leaves the earlier file in place."""
    def record(new_file: Path) -> None:
        _save_with(out, manifest, {rel: sha256(new_file)}, name)
    return record


def folder_recorder(out: Path, manifest: Dict[str, str], rel: str, name: str) -> Callable[[Path], None]:
    """:func:`recorder` for a folder ``out / rel`` whose files are written whole into a staging folder, then each
    moved over its earlier one: the staged files' sha256 saved under ``rel/`` before the first is moved."""
    def record(staging: Path) -> None:
        _save_with(out, manifest, {f'{rel}/{f.name}': sha256(f) for f in sorted(staging.iterdir())}, name)
    return record
