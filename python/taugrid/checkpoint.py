"""Writing a checkpoint so that TauGrid sees it whole or not at all.

docs/checkpoints.md: a checkpoint is a direct child of
``TAU_CHECKPOINT_DIR``, complete once it has been renamed into place;
names ending in ``.tmp`` are never complete. ``save_checkpoint_atomically``
hands out the staging name ``NAME.tmp``, and renames it to ``NAME`` only
when the ``with`` block ends without an exception; on an exception the
staging is removed. A killed attempt leaves at most a ``NAME.tmp``, which
TauGrid ignores (and the next ``save_checkpoint_atomically(NAME)`` removes).

Write a file or a folder at the staging path::

    with taugrid.save_checkpoint_atomically("step-000050.pt") as path:
        torch.save(state, path)

    with taugrid.save_checkpoint_atomically("step-000050") as path:
        path.mkdir()
        model.save_pretrained(path)

The name must match the job's ``checkpoint.include`` globs to count (by
default for the plain layout ``step*``, ``ckpt*``, ``checkpoint*``,
``epoch*``, ``iter*``, ``[0-9]*``, ``*.pt``, ``*.pth``, ``*.ckpt``,
``*.safetensors``, ...).
"""

from __future__ import annotations

import os
import shutil
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from .env import checkpoint_dir

_NEVER_COMPLETE_SUFFIXES = (".tmp", ".partial")


def check_checkpoint_name(name: str) -> None:
    """``ValueError`` unless ``name`` can be a complete checkpoint: one path
    component, not hidden, none of the staging names TauGrid never counts."""
    if not name or name in (".", "..") or "/" in name or os.sep in name or "\0" in name:
        raise ValueError(f"checkpoint name {name!r} must be one file or folder name (no '/')")
    if name.startswith(".") or name.startswith("tmp-checkpoint-") or ".orbax-checkpoint-tmp-" in name:
        raise ValueError(f"checkpoint name {name!r} is a staging name TauGrid never counts as complete")
    if name.endswith(_NEVER_COMPLETE_SUFFIXES):
        raise ValueError(f"checkpoint name {name!r} ends like a staging name (.tmp, .partial)")


def remove_path(path: Path) -> None:
    """Removes a file, link or folder tree at ``path``; nothing when absent."""
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    elif os.path.lexists(path):
        path.unlink()


def _fsync_path(path: Path, directory: bool) -> None:
    fd = os.open(path, os.O_RDONLY | (os.O_DIRECTORY if directory else 0))
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _sync_tree(path: Path) -> None:
    """fsyncs every regular file and folder under ``path`` (links are skipped)."""
    if path.is_symlink():
        return
    if not path.is_dir():
        _fsync_path(path, directory=False)
        return
    for root, dirs, files in os.walk(path):
        for f in files:
            p = Path(root) / f
            if p.is_file() and not p.is_symlink():
                _fsync_path(p, directory=False)
        _fsync_path(Path(root), directory=True)


def _move_into_place(staging: Path, final: Path) -> None:
    """Renames ``staging`` to ``final``. An existing ``final`` is replaced:
    a file atomically (``os.replace``); a folder (which ``rename`` cannot
    replace) is first renamed aside to ``NAME.old.tmp`` (never complete), then
    removed once the new one is in place."""
    if not os.path.lexists(final) or not (final.is_dir() or staging.is_dir()):
        os.replace(staging, final)
        return
    aside = final.with_name(final.name + ".old.tmp")
    remove_path(aside)
    os.rename(final, aside)
    os.rename(staging, final)
    remove_path(aside)


@contextmanager
def save_checkpoint_atomically(name: str, *, fsync: bool = True) -> Iterator[Path]:
    """Yields ``checkpoint_dir() / (name + ".tmp")`` to write a file or folder
    at; on a normal exit renames it to ``checkpoint_dir() / name`` (complete
    from then on), on an exception removes it and re-raises.

    With ``fsync`` (the default) what was written, and the folder after the
    rename, are flushed to disk first, so a machine that loses power never
    keeps a renamed checkpoint with missing data. ``FileNotFoundError`` when
    the block wrote nothing at the staging path.
    """
    check_checkpoint_name(name)
    folder = checkpoint_dir()
    final = folder / name
    staging = folder / (name + ".tmp")
    remove_path(staging)  # left by an attempt that was killed while writing it
    try:
        yield staging
    except BaseException:
        remove_path(staging)
        raise
    if not os.path.lexists(staging):
        raise FileNotFoundError(f"nothing was written to {staging}: no checkpoint {name!r} saved")
    if fsync:
        _sync_tree(staging)
    _move_into_place(staging, final)
    if fsync:
        _fsync_path(folder, directory=True)
