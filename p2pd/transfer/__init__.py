"""Conversation blobs over a WebRTC data channel: chunked, flow-controlled, SHA-256 verified, resumable,
cancellable (protocol: ``SPEC.md``)."""
