"""Pairing two peers by a short code over the signaling server. Spec: PAIRING.md beside this file.

| file | role |
|---|---|
| ``codes.py`` (+ ``wordlist.txt``) | codes ``<nameplate>-<word>-<word>``: generate, parse, read from argv/stdin/env |
| ``cpace.py`` | the CPace PAKE (CPACE-X25519-SHA512), pure |
| ``seal.py`` | keys derived from the PAKE: key confirmation, sealed (AEAD) messages, verification string |
| ``machine.py`` | the sans-I/O pairing: ``Pairing`` (peer messages) and ``Session`` (server events) → ``Step`` |
| ``client.py`` | ``Rendezvous``: the thin asyncio/websockets adapter that runs ``Session`` against ``p2pd-signal`` |

Importing this package (or ``p2pd.pairing.codes``) does not import websockets: ``Rendezvous`` is loaded from
``client.py`` on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from p2pd.pairing.codes import Code, InvalidCodeError, generate_code, parse_code, read_code
from p2pd.pairing.machine import Pairing
from p2pd.pairing.seal import TamperedError, verification_string

if TYPE_CHECKING:
    from p2pd.pairing.client import Rendezvous

__all__ = [
    "Code",
    "InvalidCodeError",
    "Pairing",
    "Rendezvous",
    "TamperedError",
    "generate_code",
    "parse_code",
    "read_code",
    "verification_string",
]


def __getattr__(name: str) -> Any:
    if name == "Rendezvous":
        from p2pd.pairing.client import Rendezvous

        return Rendezvous
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
