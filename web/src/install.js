// Installable and loading offline (issue 18): the page's service worker (sw.js) is registered, then what the
// page loads later (the reader's modules, the worker's) is fetched once through it so that it is kept; one online
// visit is enough. <body data-offline-ready> says when that is done.

/** Register the service worker, then fetch through it what the page loads later. */
export async function keepOffline(window) {
  const { navigator, performance } = window;
  if (!('serviceWorker' in navigator)) return;
  try {
    await navigator.serviceWorker.register('sw.js');
    await navigator.serviceWorker.ready;
    if (!navigator.serviceWorker.controller) {
      await new Promise((resolve) => navigator.serviceWorker.addEventListener('controllerchange', resolve, { once: true }));
    }
    await new Promise((resolve) => setTimeout(resolve, 500)); // after the page's own work
    await Promise.all([import('./reader.js'), import('./codecard.js')]);
    // what loaded before the worker took over is fetched again through it, so it is kept too
    const worker = ['src/worker.js', 'src/pieces.js', 'src/blob.js', 'vendor/lz4js.js']
      .map((path) => new URL(path, window.location).pathname); // the worker's modules
    const urls = new Set([window.location.pathname, ...worker, ...performance.getEntriesByType('resource').map((e) => e.name)
      .filter((url) => new URL(url).origin === window.location.origin)]);
    for (const url of urls) await fetch(url).catch(() => null); // one at a time: never a burst on the page's thread
    window.document.body.dataset.offlineReady = 'true';
  } catch {
    // no service worker (a private window, or refused): the page works online as before
  }
}

