#!/usr/bin/python3
"""Drives a headless Chromium through the DevTools protocol, for Ferry's tests.

Usage: cdp-driver.py PORT STEPS_JSON

PORT is Chromium's --remote-debugging-port (read from DevToolsActivePort); STEPS_JSON a list of
steps run in order on the first page, each an object with one action:

  {"navigate": URL}                                 load a page
  {"wait_for": CSS, "seconds": 15}                  until an element matches
  {"type": CSS, "text": TEXT}                       focus the element and type TEXT
  {"click": CSS}                                    a real mouse click at the element's centre
  {"wait_for_request": PREFIX, "seconds": 15}       until the page requested a URL starting so
  {"text": CSS}                                     the element's innerText (null if none)
  {"eval": JS}                                      the expression's value

Prints one JSON line per step, {"step": N, "result": VALUE}; on a failure one line
{"error": "..."} and exit status 1. Needs python3-websocket (scripts/install-deps).
"""
import json
import sys
import time
import urllib.request

import websocket


class Failure(Exception):
    pass


class Page:
    def __init__(self, port):
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=10) as reply:
            targets = json.load(reply)
        page = next((t for t in targets if t.get("type") == "page"), None)
        if page is None:
            raise Failure(f"Chromium has no page to drive: {targets}")
        self.ws = websocket.create_connection(page["webSocketDebuggerUrl"], timeout=10, suppress_origin=True)
        self.last_id = 0
        self.events = []
        self.call("Page.enable")
        self.call("Network.enable")

    def call(self, method, **params):
        self.last_id += 1
        ident = self.last_id
        self.ws.send(json.dumps({"id": ident, "method": method, "params": params}))
        while True:
            message = json.loads(self.ws.recv())
            if message.get("id") == ident:
                if "error" in message:
                    raise Failure(f"{method}: {message['error']}")
                return message.get("result", {})
            if "method" in message:
                self.events.append(message)

    def pump(self, seconds):
        """Collects the events that arrive within `seconds`."""
        self.ws.settimeout(seconds)
        try:
            self.events.append(json.loads(self.ws.recv()))
        except websocket.WebSocketTimeoutException:
            pass
        finally:
            self.ws.settimeout(10)

    def evaluate(self, expression):
        result = self.call("Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in result:
            raise Failure(f"{expression}: {result['exceptionDetails'].get('text')} {result.get('result', {}).get('description', '')}")
        return result["result"].get("value")

    def until(self, what, seconds, check):
        deadline = time.monotonic() + seconds
        last = None
        while time.monotonic() < deadline:
            try:
                value = check()
                if value:
                    return value
            except Failure as failure:  # a page between two documents has no context to evaluate in
                last = failure
            self.pump(0.1)
        raise Failure(f"timed out after {seconds} s waiting for {what}" + (f" (last: {last})" if last else ""))

    def element(self, css):
        return f"document.querySelector({json.dumps(css)})"

    def step(self, step):
        seconds = step.get("seconds", 15)
        if "navigate" in step:
            result = self.call("Page.navigate", url=step["navigate"])
            if result.get("errorText"):
                raise Failure(f"navigate {step['navigate']}: {result['errorText']}")
            return step["navigate"]
        if "wait_for" in step:
            return self.until(f"an element {step['wait_for']}", seconds, lambda: self.evaluate(f"!!{self.element(step['wait_for'])}"))
        if "type" in step:
            if not self.evaluate(f"(e => e ? (e.focus(), true) : false)({self.element(step['type'])})"):
                raise Failure(f"no element {step['type']} to type into")
            self.call("Input.insertText", text=step["text"])
            return True
        if "click" in step:
            box = self.evaluate(f"""(e => {{ if (!e) return null; e.scrollIntoView({{block: 'center'}});
                const r = e.getBoundingClientRect(); return {{x: r.x + r.width / 2, y: r.y + r.height / 2}}; }})({self.element(step['click'])})""")
            if box is None:
                raise Failure(f"no element {step['click']} to click")
            self.call("Input.dispatchMouseEvent", type="mouseMoved", x=box["x"], y=box["y"])
            for kind in ("mousePressed", "mouseReleased"):
                self.call("Input.dispatchMouseEvent", type=kind, x=box["x"], y=box["y"], button="left", clickCount=1)
            return True
        if "wait_for_request" in step:
            prefix = step["wait_for_request"]

            def requested():
                for event in self.events:
                    if event.get("method") == "Network.requestWillBeSent":
                        url = event["params"]["request"]["url"]
                        if url.startswith(prefix):
                            return url
                return None
            return self.until(f"a request to {prefix}…", seconds, requested)
        if "text" in step:
            return self.evaluate(f"(e => e ? e.innerText : null)({self.element(step['text'])})")
        if "eval" in step:
            return self.evaluate(step["eval"])
        raise Failure(f"unknown step {step}")


def main():
    try:
        page = Page(int(sys.argv[1]))
        for number, step in enumerate(json.loads(sys.argv[2])):
            print(json.dumps({"step": number, "result": page.step(step)}), flush=True)
    except Exception as error:  # every failure is one line the test shows
        print(json.dumps({"error": f"{type(error).__name__}: {error}"}), flush=True)
        sys.exit(1)


if __name__ == "__main__":
    main()
