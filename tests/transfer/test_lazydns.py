"""p2pd/transfer/lazydns.py: aioice's dnspython is loaded only when an mDNS name is handled, and then works.

Two aioice mDNS protocols talk through an in-process stand-in for the LAN's multicast group (this machine has no
mDNS peers): one resolves a browser-style ``….local`` name the other has published."""

from __future__ import annotations

from tests.probe import probe as run_probe

PROBE = """
import asyncio, json, sys
import p2pd.transfer.peer  # what a p2pd process that connects imports
from p2pd.transfer import lazydns
import aioice.mdns as mdns

before = lazydns.pending()

class Group:
    # the multicast group: what one member sends, every other member receives
    def __init__(self):
        self.members = []
    def join(self, protocol):
        group = self
        class Socket:
            def setsockopt(self, *args):
                pass
        class Transport:
            def get_extra_info(self, name):
                return Socket()
            def is_closing(self):
                return False
            def sendto(self, data, addr):
                for other in group.members:
                    if other is not protocol:
                        asyncio.get_running_loop().call_soon(other.datagram_received, data, ("192.0.2.1", 5353))
        protocol.connection_made(Transport())
        self.members.append(protocol)

async def main():
    group = Group()
    browser, p2pd = mdns.MDnsProtocol(), mdns.MDnsProtocol()
    group.join(browser)
    group.join(p2pd)
    await browser.publish("0b6c2e4a-3f1d-4c5e-9a7b-1d2e3f4a5b6c.local", "10.1.2.3")
    return await p2pd.resolve("0b6c2e4a-3f1d-4c5e-9a7b-1d2e3f4a5b6c.local", timeout=5)

print(json.dumps({"before": before, "resolved": asyncio.run(main()), "after": lazydns.pending(),
                  "loaded": "dns.zone" in sys.modules and type(sys.modules["dns.zone"]).__name__}))
"""


def probe(**env: str) -> dict[str, object]:
    return run_probe(PROBE, **env)


def test_dnspython_waits_for_an_mdns_name_and_then_resolves_it() -> None:
    got = probe()
    assert {"dns.message", "dns.zone", "dns.name", "dns.rdata"} <= set(got["before"]), got  # type: ignore[arg-type]
    assert got["resolved"] == "10.1.2.3", got
    assert got["after"] == [] and got["loaded"] == "module", got


def test_p2pd_eager_dns_loads_it_at_import() -> None:
    got = probe(P2PD_EAGER_DNS="1")
    assert got["before"] == [] and got["resolved"] == "10.1.2.3", got
