"""What the browser tests and the page benchmark (tests/bench/page.py) measure in the page, as JavaScript to
evaluate: the DOM's node count, and a requestAnimationFrame loop recording the longest gap between frames with
the long tasks Chromium reports (and, where Chromium gives precise figures, the JS heap's peak)."""

from __future__ import annotations

from typing import Any

NODES = "() => { const w = document.createTreeWalker(document, NodeFilter.SHOW_ALL); let n = 0; " \
        "while (w.nextNode()) n++; return n; }"
# window.__gaps: max (ms), frames ([time, gap] of gaps over 20 ms), longTasks (durations), heap (peak bytes of the
# main thread's JS heap, sampled each frame; precise with --enable-precise-memory-info), nodes (peak DOM nodes,
# sampled every 10th frame).
WATCH_FRAMES = """() => {
  const count = () => { const w = document.createTreeWalker(document, NodeFilter.SHOW_ALL); let n = 0;
    while (w.nextNode()) n++; return n; };
  window.__gaps = { max: 0, last: performance.now(), longTasks: [], frames: [], heap: 0, nodes: 0, ticks: 0 };
  const tick = (t) => { const g = window.__gaps; const gap = t - g.last; g.max = Math.max(g.max, gap);
    if (gap > 20) g.frames.push([t, gap]);
    g.heap = Math.max(g.heap, performance.memory ? performance.memory.usedJSHeapSize : 0);
    if (g.ticks++ % 10 === 0) g.nodes = Math.max(g.nodes, count());
    g.last = t; requestAnimationFrame(tick); };
  requestAnimationFrame(tick);
  new PerformanceObserver((list) => { for (const e of list.getEntries()) window.__gaps.longTasks.push(e.duration); })
    .observe({ type: 'longtask' });
}"""


def longest_gap(gaps: dict[str, Any]) -> float:
    """The longest frame gap or long task recorded by WATCH_FRAMES, in ms."""
    return float(max([gaps["max"], *gaps["longTasks"]]))
