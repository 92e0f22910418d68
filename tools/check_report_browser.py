"""Open a monoidlab HTML report in real headless Chromium: screenshot, console errors, images.

The report holds no script of its own; a copy gets two tiny scripts: one first in ``<head>``
that records console errors and warnings, uncaught exceptions and resources that failed to
load, and one appended that records, after load, how many ``<img>`` elements decoded
(naturalWidth > 0) and what the first saw. Chromium runs with
``--dump-dom`` (the probe's verdict) and ``--screenshot`` (a PNG to look at), console messages
go to stderr through ``--enable-logging=stderr``.

Usage::

    python tools/check_report_browser.py reports/dyck-4.html [--screenshot out.png]

Exit status 0 when every image rendered and the console shows no error. Needs Debian's
``chromium`` (``apt-get install chromium``).
"""

from __future__ import annotations

import argparse
import html as html_lib
import json
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

# First in <head>, before anything of the page runs: record console.error / console.warn calls,
# uncaught exceptions, rejected promises and resources that failed to load (Chromium's own
# log prints every console message at the same level, so the level is taken here).
WATCH = """<script>
window.__monoidlab_errors = [];
(function () {
  const seen = window.__monoidlab_errors;
  for (const level of ['error', 'warn']) {
    const orig = console[level].bind(console);
    console[level] = (...args) => { seen.push(level + ': ' + args.join(' ')); orig(...args); };
  }
  window.addEventListener('error', e => {
    const t = e.target;
    seen.push(t && t !== window ? 'failed to load: <' + t.tagName.toLowerCase() + '>'
                                : 'uncaught: ' + e.message);
  }, true);
  window.addEventListener('unhandledrejection', e => seen.push('unhandled rejection: ' + e.reason));
})();
</script>"""

# Last in <body>: after load, how many images decoded, and what WATCH saw.
PROBE = """<script>
window.addEventListener('load', () => {
  const imgs = Array.from(document.images);
  const ok = imgs.filter(i => i.complete && i.naturalWidth > 0).length;
  const out = document.createElement('pre');
  out.id = 'monoidlab-probe';
  const rect = e => { const r = e.getBoundingClientRect();
                      return {top: r.top, bottom: r.bottom, left: r.left, right: r.right}; };
  const boxes = {};
  for (const e of document.querySelectorAll('[id]')) boxes[e.id] = rect(e);
  out.textContent = JSON.stringify({images: imgs.length, rendered: ok,
                                    height: document.body.scrollHeight,
                                    viewport: [window.innerWidth, window.innerHeight,
                                               document.documentElement.clientWidth],
                                    boxes: boxes,
                                    figures: imgs.map(i => Object.assign(rect(i),
                                      {natural: i.naturalWidth, width: i.width})),
                                    errors: window.__monoidlab_errors});
  document.body.appendChild(out);
});
</script>"""

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--hide-scrollbars", "--enable-logging=stderr", "--v=0",
         "--virtual-time-budget=10000"]


def find_chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser") or \
        shutil.which("google-chrome")


def check(report: Path, screenshot: Path | None = None, timeout: int = 120,
          window: tuple[int, int] = (1200, 2400)) -> dict:
    """Open ``report`` at ``window`` (width, height in CSS pixels): images, console errors,
    and where each element with an id and each figure sits (``boxes``, ``figures``: page
    coordinates from the top of the page, so ``boxes["verdict"]["bottom"] <= window[1]`` means
    the verdict is on the first screen)."""
    browser = find_chromium()
    if not browser:
        raise FileNotFoundError("no chromium on PATH (Debian: apt-get install chromium)")
    html = report.read_text(encoding="utf-8")
    with tempfile.TemporaryDirectory() as tmp:
        probe_page = Path(tmp) / "page.html"
        head = html.find("<head>")
        at = head + len("<head>") if head >= 0 else 0
        page = html[:at] + WATCH + html[at:]
        probe_page.write_text(page.replace("</body>", PROBE + "</body>"), encoding="utf-8")
        base = [browser, *FLAGS, f"--user-data-dir={tmp}/profile"]
        size = f"--window-size={window[0]},{window[1]}"
        dom = subprocess.run([*base, size, "--dump-dom", probe_page.as_uri()],
                             capture_output=True, text=True, timeout=timeout)
        shot = None
        if screenshot:
            shot = subprocess.run([*base, f"--screenshot={screenshot.resolve()}",
                                   size, report.resolve().as_uri()],
                                  capture_output=True, text=True, timeout=timeout)
    m = re.search(r'<pre id="monoidlab-probe">(.*?)</pre>', dom.stdout, re.S)
    verdict = json.loads(html_lib.unescape(m.group(1))) if m else {}
    logs = dom.stderr + (shot.stderr if shot else "")
    console = [ln for ln in logs.splitlines() if "CONSOLE" in ln]
    errors = list(verdict.get("errors", []))  # console.error/warn, exceptions, failed loads
    errors += [ln for ln in console if re.search(r"error|uncaught", ln, re.I)
               and not any(e.split(": ", 1)[-1] in ln for e in errors)]
    return {"report": str(report), "images": verdict.get("images"),
            "rendered": verdict.get("rendered"), "page_height": verdict.get("height"),
            "viewport": verdict.get("viewport"), "boxes": verdict.get("boxes", {}),
            "figures": verdict.get("figures", []),
            "console_messages": len(console), "console_errors": errors,
            "screenshot": str(screenshot) if screenshot and screenshot.is_file() else None,
            "ok": bool(verdict) and verdict["images"] == verdict["rendered"] and not errors}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("report", type=Path)
    ap.add_argument("--screenshot", type=Path, default=None)
    args = ap.parse_args(argv)
    res = check(args.report, args.screenshot)
    print(json.dumps(res, indent=2))
    return 0 if res["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
