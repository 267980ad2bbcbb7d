"""aiortc without PyAV: p2pd moves data, never audio or video.

aiortc imports PyAV (``av``, FFmpeg's libraries) at import time for its media codecs and tracks, although a data
channel never touches them. Measured here: ``import aiortc`` takes 0.141 s and leaves the process at 60 MiB with
PyAV, 0.112 s and 44 MiB without — on the sender's way to pairing, and in every p2pd process that connects (the
CLI's sender and receiver, the daemon).

Importing this module, before aiortc, puts a finder first on ``sys.meta_path`` that answers ``av`` and its
submodules with placeholder modules: any name aiortc takes from them at import time is a placeholder class
that refuses to be instantiated (:class:`MediaUnavailable`), so media code fails loudly instead of doing anything.
Nothing is replaced when PyAV is already imported (the real one stays), and ``P2PD_REAL_AV=1`` turns this off.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import os
import sys
import types
from typing import Any


class MediaUnavailable(RuntimeError):
    """Media code ran in a p2pd process, where PyAV is not loaded."""


class _Placeholder:
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        raise MediaUnavailable(f"{type(self).__name__}: p2pd does not load PyAV (media is not used)")


class _Module(types.ModuleType):
    """``av`` or one of its submodules: each name asked for becomes a placeholder class."""

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        placeholder = type(name, (_Placeholder,), {"__module__": self.__name__})
        setattr(self, name, placeholder)
        return placeholder


class _Finder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> importlib.machinery.ModuleSpec | None:
        if fullname == "av" or fullname.startswith("av."):
            return importlib.machinery.ModuleSpec(fullname, self, is_package=True)
        return None

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
        module = _Module(spec.name)
        module.__path__ = []
        return module

    def exec_module(self, module: types.ModuleType) -> None:
        return None


def install() -> bool:
    """Answer ``av`` with placeholders from now on (idempotent); False when the real PyAV stays."""
    if "av" in sys.modules or os.environ.get("P2PD_REAL_AV") == "1":
        return isinstance(sys.modules.get("av"), _Module)
    if not any(isinstance(f, _Finder) for f in sys.meta_path):
        sys.meta_path.insert(0, _Finder())
    return True


def active() -> bool:
    """Whether this process's ``av`` is the placeholder (aiortc was imported without PyAV)."""
    return isinstance(sys.modules.get("av"), _Module)


install()
