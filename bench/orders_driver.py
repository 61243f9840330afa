#!/usr/bin/env python3
"""The order traffic of bench/orders.sh that wrk cannot make, over keep-alive HTTPS
connections with the key's Basic auth (the client of bench/background_writer.py):

    orders_driver.py lag    BASE USER KEY BODY COUNT RATE OUT
        Starts a webhook receiver on 127.0.0.1 (the server runs with
        --webhook-allow-insecure-localhost), subscribes USER to order.created, pushes COUNT
        orders (BODY with "@REF@" replaced) at RATE a second, and measures for each the time
        from the intake's answer (its commit) to the receiver getting the event; then sets the
        webhook inactive. Writes "LAG key=value ..." to OUT.
    orders_driver.py accept BASE USER KEY IDS WORKERS OUT
        Acknowledges (PATCH status accepted) every order id in the file IDS with WORKERS
        connections. Writes "ACCEPT key=value ..." to OUT.
    orders_driver.py flow   BASE USER KEY BODY RATE WORKERS SECONDS OUT
        Pushes orders at RATE a second for SECONDS (or until SIGTERM). Writes "FLOW key=value
        ..." to OUT.
"""

import http.server
import json
import os
import signal
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from background_writer import Client, percentile  # noqa: E402


def body_with(template, ref):
    return json.loads(template.replace("@REF@", ref))


def lag(base, user, key, body_file, count, rate, out):
    template = open(body_file).read()
    arrived = {}
    lock = threading.Lock()

    class Receiver(http.server.BaseHTTPRequestHandler):
        def do_POST(self):
            data = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            now = time.monotonic()
            try:
                event = json.loads(data)
                with lock:
                    arrived.setdefault(event["data"]["id"], now)
            except (ValueError, KeyError):
                pass
            self.send_response(200)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Receiver)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = "http://127.0.0.1:%d/hook" % server.server_address[1]
    client = Client(base, user, key)
    status, answer, _, _ = client.call("POST", "/api/webhook", {"url": url, "events": ["order.created"]})
    if status != 201:
        raise SystemExit("subscribing answered %s: %s" % (status, answer))
    hook = answer["response"]["webhook"][0]["id"]
    answered = {}
    errors = 0
    tag = time.strftime("%H%M%S")
    start = time.monotonic()
    for n in range(count):
        slot = start + n / rate
        pause = slot - time.monotonic()
        if pause > 0:
            time.sleep(pause)
        status, answer, _, _ = client.call("POST", "/api/order", body_with(template, "OL%s-%d" % (tag, n)))
        if status != 201:
            errors += 1
            continue
        answered[answer["response"]["order"][0]["id"]] = time.monotonic()
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        with lock:
            if all(i in arrived for i in answered):
                break
        time.sleep(0.05)
    with lock:
        lags = [(arrived[i] - t) * 1000 for i, t in answered.items() if i in arrived]
    missing = len(answered) - len(lags)
    client.call("PATCH", "/api/webhook/" + hook, {"active": False})  # quiet for later phases
    server.shutdown()
    with open(out, "w") as f:
        f.write("LAG orders=%d errors=%d delivered=%d missing=%d p50_ms=%.1f p99_ms=%.1f max_ms=%.1f\n" % (
            count, errors, len(lags), missing, percentile(lags, 50), percentile(lags, 99),
            max(lags) if lags else 0.0))


def accept(base, user, key, ids_file, workers, out):
    ids = [line.split()[0] for line in open(ids_file) if line.strip()]
    results = {"ok": 0, "errors": 0, "first": ""}
    lock = threading.Lock()

    def work(share):
        client = Client(base, user, key)
        for order in share:
            status, answer, _, _ = client.call("PATCH", "/api/order/" + order, {"status": "accepted"})
            with lock:
                if status == 200:
                    results["ok"] += 1
                else:
                    results["errors"] += 1
                    results["first"] = results["first"] or "%s %s" % (status, str(answer)[:200])

    threads = [threading.Thread(target=work, args=(ids[w::workers],)) for w in range(workers)]
    started = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    seconds = time.monotonic() - started
    with open(out, "w") as f:
        f.write("ACCEPT orders=%d accepted=%d errors=%d seconds=%.1f\n" % (len(ids), results["ok"], results["errors"], seconds))
        if results["first"]:
            f.write("first error: %s\n" % results["first"])


def flow(base, user, key, body_file, rate, workers, seconds, out):
    template = open(body_file).read()
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    lock = threading.Lock()
    times, errors = [], [0]
    tag = time.strftime("%H%M%S")
    start = time.monotonic()

    def work(worker):
        client = Client(base, user, key)
        n = worker
        while not stop.is_set() and time.monotonic() - start < seconds:
            slot = start + n / rate
            pause = slot - time.monotonic()
            if pause > 0:
                time.sleep(min(pause, 0.5))
                continue
            status, _, ms, _ = client.call("POST", "/api/order", body_with(template, "OF%s-%d" % (tag, n)))
            with lock:
                if status == 201:
                    times.append(ms)
                else:
                    errors[0] += 1
            n += workers

    threads = [threading.Thread(target=work, args=(w,), daemon=True) for w in range(workers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.monotonic() - start
    with open(out, "w") as f:
        f.write("FLOW orders=%d errors=%d rate=%.1f p50_ms=%.1f p99_ms=%.1f\n" % (
            len(times), errors[0], len(times) / elapsed if elapsed else 0, percentile(times, 50), percentile(times, 99)))


def main():
    mode, args = sys.argv[1], sys.argv[2:]
    if mode == "lag":
        base, user, key, body, count, rate, out = args
        lag(base, user, key, body, int(count), float(rate), out)
    elif mode == "accept":
        base, user, key, ids, workers, out = args
        accept(base, user, key, ids, int(workers), out)
    elif mode == "flow":
        base, user, key, body, rate, workers, seconds, out = args
        flow(base, user, key, body, float(rate), int(workers), float(seconds), out)
    else:
        raise SystemExit(__doc__)


if __name__ == "__main__":
    main()
