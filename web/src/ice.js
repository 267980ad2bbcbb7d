// The ICE servers the signaling server hands out after `joined` (signaling/PROTOCOL.md, "ICE servers"): kept
// when they look like RTCIceServer entries with stun:/stuns:/turn:/turns: URLs, dropped otherwise. Browsers try
// every TURN server they are given, so no probing is needed here (the Python client probes: aiortc does not).
const SCHEME = /^(stun|stuns|turn|turns):/;

export function iceServersFrom(message) {
  if (!message || !Array.isArray(message.ice_servers)) return [];
  const out = [];
  for (const entry of message.ice_servers) {
    if (!entry || typeof entry !== 'object') continue;
    const urls = (Array.isArray(entry.urls) ? entry.urls : [entry.urls])
      .filter((u) => typeof u === 'string' && SCHEME.test(u));
    if (!urls.length) continue;
    const server = { urls };
    if (typeof entry.username === 'string') server.username = entry.username;
    if (typeof entry.credential === 'string') server.credential = entry.credential;
    out.push(server);
  }
  return out;
}
