"""Looks at the documentation site in a real browser (``make docs-check``).

    python scripts/docs_check.py [--out docs/assets/screenshots] [--port 8765]

Builds the site with warnings as errors into a temporary directory, serves it on
127.0.0.1, and drives headless Chromium (Debian's ``chromium`` package) through its
DevTools protocol: a screenshot of the home page, of an algorithm page (DQN) and of a
search for "rainbow" typed into the site's search box (``?q=rainbow``), waiting until the
search (Material's lunr index, in a web worker) has shown its results; the search must
list the Rainbow page. CI does not install a browser, so ``make test`` does not run this.

Exit code 0: built, served, rendered, and the search found the page; 1: a check failed
(the message says which); 2: no chromium on this machine.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import contextlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BROWSERS = ("chromium", "chromium-browser", "google-chrome")
WIDTH = 1280

# (name, path, page height, JavaScript that is true once the page is ready)
PAGES = [
    ("home", "", 900, "document.querySelector('.md-content h1') !== null"),
    ("algorithm-dqn", "algorithms/dqn/", 1800, "document.querySelector('#results') !== null"),
    (
        "search-rainbow",
        "?q=rainbow",
        900,
        "document.querySelectorAll('.md-search-result__link').length > 0",
    ),
]


def wait_for(url: str, seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while True:
        try:
            urllib.request.urlopen(url, timeout=2).read()
            return
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)


def stop(process: subprocess.Popen) -> None:
    """Ends a process this script started, and waits for it."""
    process.terminate()
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def devtools_port(profile: Path, seconds: float) -> int:
    """The port Chromium's DevTools listen on, from its profile's ``DevToolsActivePort``."""
    deadline = time.monotonic() + seconds
    while not (profile / "DevToolsActivePort").exists():
        if time.monotonic() > deadline:
            raise TimeoutError("chromium did not open its DevTools port")
        time.sleep(0.1)
    time.sleep(0.2)
    return int((profile / "DevToolsActivePort").read_text().split()[0])


class DevTools:
    """The smallest client of Chromium's DevTools protocol: one page, commands in order."""

    def __init__(self, ws):
        self.ws, self.next_id = ws, 0

    @classmethod
    async def open(cls, port: int) -> DevTools:
        from tornado.websocket import websocket_connect

        request = urllib.request.Request(f"http://127.0.0.1:{port}/json/new", method="PUT")
        target = json.loads(urllib.request.urlopen(request, timeout=10).read())
        ws = await websocket_connect(target["webSocketDebuggerUrl"], max_message_size=1 << 28)
        return cls(ws)

    async def call(self, method: str, **params) -> dict:
        self.next_id += 1
        await self.ws.write_message(
            json.dumps({"id": self.next_id, "method": method, "params": params})
        )
        while True:
            message = json.loads(await self.ws.read_message())
            if message.get("id") == self.next_id:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                return message.get("result", {})

    async def evaluate(self, expression: str):
        result = await self.call("Runtime.evaluate", expression=expression, returnByValue=True)
        return result.get("result", {}).get("value")

    async def shot(self, url: str, height: int, ready: str, path: Path, seconds: float) -> bool:
        """Loads ``url`` at ``WIDTH`` x ``height``, waits until ``ready`` is true (at most
        ``seconds``), saves a screenshot at ``path``; returns whether it became ready."""
        await self.call(
            "Emulation.setDeviceMetricsOverride",
            width=WIDTH,
            height=height,
            deviceScaleFactor=1,
            mobile=False,
        )
        await self.call("Page.navigate", url=url)
        deadline, ok = time.monotonic() + seconds, False
        while time.monotonic() < deadline:
            await asyncio.sleep(0.25)
            if await self.evaluate(f"document.readyState === 'complete' && ({ready})"):
                ok = True
                break
        await asyncio.sleep(0.5)  # fonts and the last layout
        data = await self.call("Page.captureScreenshot", format="png")
        path.write_bytes(base64.b64decode(data["data"]))
        return ok


async def look(base: str, port: int, out: Path, seconds: float) -> list[str]:
    """Screenshots of ``PAGES`` into ``out``; the failures, as lines."""
    tools = await DevTools.open(port)
    failures = []
    for name, path, height, ready in PAGES:
        target = out / f"{name}.png"
        ok = await tools.shot(f"{base}/{path}", height, ready, target, seconds)
        print(f"docs-check: {target.relative_to(ROOT)} ({base}/{path})")
        if not ok:
            failures.append(f"{base}/{path}: not ready after {seconds:.0f} s ({ready})")
    found = await tools.evaluate(
        "Array.from(document.querySelectorAll('.md-search-result__link'))"
        ".map(a => a.getAttribute('href'))"
    )
    if not any("algorithms/rainbow/" in (href or "") for href in found or []):
        failures.append(f"the search for 'rainbow' did not list algorithms/rainbow/: {found}")
    else:
        print(
            f"docs-check: the search for 'rainbow' lists {len(found)} results, Rainbow's among them"
        )
    tools.ws.close()
    return failures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "docs/assets/screenshots")
    parser.add_argument("--port", type=int, default=8765, help="the site's port")
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds per page")
    parser.add_argument("--site", type=Path, help="serve this built site; do not build")
    args = parser.parse_args(argv)
    browser = next((b for b in map(shutil.which, BROWSERS) if b), None)
    if browser is None:
        print("docs-check: no chromium on PATH (Debian: apt-get install chromium)", file=sys.stderr)
        return 2
    args.out.mkdir(parents=True, exist_ok=True)
    with contextlib.ExitStack() as stack:
        profile = stack.enter_context(tempfile.TemporaryDirectory(ignore_cleanup_errors=True))
        site = args.site
        if site is None:
            site = Path(stack.enter_context(tempfile.TemporaryDirectory()))
            env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
            build = [sys.executable, "-m", "mkdocs", "build", "--strict", "-q", "-d", str(site)]
            subprocess.run(build, cwd=ROOT, env=env, check=True)
        server = subprocess.Popen(
            [sys.executable, "-m", "http.server", str(args.port), "--bind", "127.0.0.1"],
            cwd=site,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        stack.callback(stop, server)
        chromium = subprocess.Popen(
            [
                browser,
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--hide-scrollbars",
                f"--user-data-dir={profile}",
                "--remote-debugging-port=0",  # a free port, written to DevToolsActivePort
                "about:blank",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        stack.callback(stop, chromium)
        base = f"http://127.0.0.1:{args.port}"
        wait_for(base + "/", 10)
        devtools = devtools_port(Path(profile), 30)
        failures = asyncio.run(look(base, devtools, args.out, args.timeout))
    for failure in failures:
        print(f"docs-check: {failure}", file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
