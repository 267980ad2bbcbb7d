import { test } from 'node:test';
import assert from 'node:assert/strict';
import { iceServersFrom } from '../src/ice.js';

test('keeps RTCIceServer-shaped entries with STUN/TURN URLs only', () => {
  const message = {
    type: 'ice_servers', expires_in: 3600, ice_servers: [
      { urls: ['stun:203.0.113.1:3478'] },
      { urls: ['turn:203.0.113.1:3478?transport=udp'], username: '1:p2pd', credential: 'c' },
      { urls: 'turns:example.org:443', username: '1:p2pd', credential: 'c' },
      { urls: ['http://example.org/'] }, null, 'junk', { urls: [5] },
    ],
  };
  assert.deepEqual(iceServersFrom(message), [
    { urls: ['stun:203.0.113.1:3478'] },
    { urls: ['turn:203.0.113.1:3478?transport=udp'], username: '1:p2pd', credential: 'c' },
    { urls: ['turns:example.org:443'], username: '1:p2pd', credential: 'c' },
  ]);
  assert.deepEqual(iceServersFrom({ type: 'ice_servers' }), []);
});
