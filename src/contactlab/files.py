"""Files written atomically: every file the library writes goes through :func:`atomic_write`, so a
reader sees the old file or the new one, never half of one (the team rule "files written
atomically"). A ground module: it imports nothing of contactlab, and any layer may use it."""
from __future__ import annotations

import os
import tempfile
from pathlib import Path


def _umask_mode() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return 0o666 & ~mask


_FILE_MODE = _umask_mode()


def atomic_write(path: str | os.PathLike, write) -> Path:
    """Call ``write(tmp_path)`` on a temporary file beside ``path``, then rename it into place."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=path.suffix, dir=path.parent)
    os.close(fd)
    try:
        write(tmp)
        os.chmod(tmp, _FILE_MODE)  # mkstemp creates 0600; a written file gets the usual 0666 & ~umask
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return path
