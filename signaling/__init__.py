"""p2pd signaling server: pairs peers by room name and relays sealed WebRTC offers/answers."""
