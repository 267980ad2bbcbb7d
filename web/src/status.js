// Words and figures for the page's status: sizes, progress (percent, rate and time left, all counted in the
// same bytes: the compressed payload on the wire), the import command for a download, and whether this page
// can work here at all (WebCrypto exists only in secure contexts: https, or http on localhost).

/** 1234567 → "1.2 MB" (decimal units, as the CLI prints them). */
export function human(n) {
  const units = ['B', 'KB', 'MB', 'GB'];
  let i = 0;
  let v = Number(n);
  while (Math.abs(v) >= 1000 && i < units.length - 1) {
    v /= 1000;
    i++;
  }
  return i === 0 ? `${Math.round(v)} B` : `${v.toFixed(1)} ${units[i]}`;
}

function duration(seconds) {
  if (seconds < 1) return 'under a second';
  if (seconds < 90) return `${Math.round(seconds)} s`;
  return `${Math.round(seconds / 60)} min`;
}

/**
 * "42 % · 1.2 MB of 3.1 MB received (compressed, on the wire) · 5.3 MB/s · about 3 s left". `done`/`total` are
 * payload bytes; the rate counts the bytes since the first report (`since`) over `seconds` since it.
 */
export function formatProgress({ done, total, seconds, since = 0, verb = 'received' }) {
  const percent = total > 0 ? Math.floor((done / total) * 100) : 0;
  const parts = [`${percent} %`, `${human(done)} of ${human(total)} ${verb} (compressed, on the wire)`];
  const rate = seconds >= 0.2 ? (done - since) / seconds : 0;
  if (rate > 0) {
    parts.push(`${human(rate)}/s`);
    parts.push(done >= total ? 'done' : `about ${duration((total - done) / rate)} left`);
  } else {
    parts.push('measuring the rate…');
  }
  return parts.join(' · ');
}

/** The exact command that imports a downloaded file, quoted for a POSIX shell when the name needs it. */
export function importCommand(fileName) {
  const name = String(fileName).startsWith('-') ? `./${fileName}` : String(fileName); // not an option
  const safe = /^[A-Za-z0-9._/][A-Za-z0-9._/-]*$/.test(name);
  return `p2pd import ${safe ? name : `'${name.replace(/'/g, `'\\''`)}'`}`;
}

/** Why the page cannot pair here (plain http off localhost: no WebCrypto), or null when it can. */
export function secureContextProblem(win) {
  if (win.isSecureContext && win.crypto && win.crypto.subtle) return null;
  return 'This page needs https (or http://localhost): the browser gives WebCrypto only to secure contexts.';
}
