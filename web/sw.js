// The page's service worker: it makes the page installable and lets it load offline (the transfer itself still
// needs the network). Same-origin GETs go to the network first, so a running server always serves its current
// files, and every good answer is kept; offline, the kept copy answers. The page shell is kept at install; the
// rest (modules, vendored packages) as the page loads them — ui.js also loads the reader's modules once idle,
// so one online visit is enough. WebSocket signaling never passes through here.

const CACHE = 'p2pd-page-v1';
const SHELL = ['./', 'index.html', 'style.css', 'favicon.svg', 'manifest.json', 'src/ui.js', 'src/codes.js',
  'src/errors.js', 'src/status.js', 'src/text.js', 'src/codeinput.js', 'src/typos.js', 'src/wordlist.js',
  'src/install.js'];

self.addEventListener('install', (event) => {
  event.waitUntil(caches.open(CACHE).then((cache) => cache.addAll(SHELL)).then(() => self.skipWaiting()));
});

self.addEventListener('activate', (event) => {
  event.waitUntil(caches.keys()
    .then((names) => Promise.all(names.filter((n) => n !== CACHE).map((n) => caches.delete(n))))
    .then(() => self.clients.claim()));
});

self.addEventListener('fetch', (event) => {
  const request = event.request;
  if (request.method !== 'GET' || new URL(request.url).origin !== self.location.origin) return;
  event.respondWith((async () => {
    const cache = await caches.open(CACHE);
    try {
      const response = await fetch(request);
      if (response.ok) await cache.put(request, response.clone());
      return response;
    } catch (error) {
      const kept = await cache.match(request, { ignoreSearch: true }) ??
        (request.mode === 'navigate' ? await cache.match('index.html') : undefined);
      if (kept) return kept;
      throw error;
    }
  })());
});
