"""Pairing two peers by a short code: code parsing, the CPace PAKE, sealed signaling, the rendezvous client.

Spec: PAIRING.md beside this file.
"""

from p2pd.pairing.codes import Code, InvalidCodeError, generate_code, parse_code, read_code
from p2pd.pairing.rendezvous import Pairing, Rendezvous
from p2pd.pairing.seal import TamperedError, verification_string

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
