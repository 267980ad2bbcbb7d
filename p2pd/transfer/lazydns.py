"""dnspython on demand: aioice needs it only to resolve mDNS names.

aioice's ``mdns`` module — it resolves a browser's ``….local`` host candidates — imports nine dnspython modules at
import time: ~20 ms (measured with ``python -X importtime``) in every p2pd process that connects, on the sender's
way to pairing, although two p2pd peers never hand each other an mDNS name and a browser only does on a LAN.

Importing this module before aiortc defers those dnspython modules: each is made at once (its spec, its file) and
executed when a name is first asked of it — when aioice first resolves or answers an mDNS name. ``dns.rdataclass``
is not deferred: aioice's ``mdns`` computes a constant from it at import time. Nothing is done when
dnspython is imported already, or when ``P2PD_EAGER_DNS=1``.
"""

from __future__ import annotations

import importlib.util
import os
import sys
import types
from typing import Any

# The dnspython modules aioice.mdns imports and only uses inside functions (aioice 0.10-0.13).
LAZY = ("dns.exception", "dns.flags", "dns.message", "dns.name", "dns.rdata", "dns.rdataset", "dns.rdatatype",
        "dns.zone")

_installed = False


class _Deferred(types.ModuleType):
    """A module made but not executed: its code runs on the first name asked of it that it does not have yet.
    (Not :class:`importlib.util.LazyLoader`: its modules execute on any attribute access, and every later
    ``import`` statement of the module reads its ``__spec__`` — so aioice's own imports would load them all.)"""

    def __getattr__(self, name: str) -> Any:
        loader = self.__dict__.pop("_p2pd_loader", None)
        if loader is None:
            raise AttributeError(f"module {self.__name__!r} has no attribute {name!r}")
        self.__class__ = types.ModuleType  # type: ignore[assignment]  # executed: a plain module from now on
        loader.exec_module(self)
        return getattr(self, name)


def install() -> bool:
    """Defer :data:`LAZY` from now on (idempotent); False when dnspython was loaded already (or
    ``P2PD_EAGER_DNS=1``)."""
    global _installed
    if _installed:
        return True
    if os.environ.get("P2PD_EAGER_DNS") == "1" or any(name in sys.modules for name in LAZY):
        return False
    import dns  # the package itself is small

    specs = [importlib.util.find_spec(name) for name in LAZY]
    if any(spec is None or spec.loader is None for spec in specs):  # (all of them or none)
        return False
    for name, spec in zip(LAZY, specs, strict=True):
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        module.__class__ = _Deferred
        module.__dict__["_p2pd_loader"] = spec.loader
        sys.modules[name] = module
        setattr(dns, name.rpartition(".")[2], module)  # (what `import dns.x` binds when it loads dns.x itself)
    _installed = True
    return True


def pending() -> list[str]:
    """The deferred dnspython modules not executed yet (all of them until an mDNS name is handled)."""
    return [name for name in LAZY if isinstance(sys.modules.get(name), _Deferred)]


install()
