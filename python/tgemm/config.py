"""Tables and settings of the tgemm library (include/tgemm/config.h)."""

from __future__ import annotations

import os
import shutil
import sysconfig
from typing import Optional

from . import _C


def reload_config() -> None:
    """Re-read the TGEMM_* environment variables and the tables they name, and forget every
    cached dispatch decision. Call it after changing ``os.environ`` (the library reads the
    environment once, at import) or a table file. Not while other threads run tgemm GEMMs."""
    _C.reload_config()


def table_files() -> list[str]:
    """The bf16/fp16 (a16w16) table files in use on the current device, in merge order (later
    files win): TGEMM_CONFIG_GEMM_BF16's list, else the shipped table of the device's card where
    one exists (configs/<card>/), else the shared configs/bf16_tuned_gemm.csv."""
    return list(_C.a16w16_table_files())


def shipped_config_dir() -> str:
    """Directory of the shipped tables: TGEMM_CONFIG_DIR, else the package's ``configs/``."""
    return _C.shipped_config_dir()


def set_shipped_config_dir(path: str) -> None:
    """Use another directory of shipped tables (TGEMM_CONFIG_DIR still wins); reloads."""
    _C.set_shipped_config_dir(str(path))


def release_workspaces() -> None:
    """Free the CUDA workspaces tgemm holds per (device, stream). Only when no GEMM is in flight
    and no captured CUDA graph that uses tgemm will be replayed."""
    _C.release_workspaces()


def cli_path() -> Optional[str]:
    """The `tgemm` command (tune, bench, show, shapes, merge): the one pip installed with this
    package (this interpreter's scripts directory, or the user scheme's), else the first on PATH;
    None if there is none."""
    candidates = []
    for scheme in (None, f"{os.name}_user"):
        try:
            scripts = sysconfig.get_path("scripts", scheme) if scheme else sysconfig.get_path("scripts")
        except KeyError:
            continue
        if scripts:
            candidates.append(os.path.join(scripts, "tgemm"))
    for path in candidates:
        if os.path.isfile(path) and os.access(path, os.X_OK):
            return path
    return shutil.which("tgemm")
