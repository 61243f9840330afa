#!/usr/bin/env python3
"""The background writer of bench/writes.sh: writes at a steady rate while the read workloads
run, and checks after every write that the server answers with what was just written.

Each write alternates between a stock record (PATCH /api/stock/<id> setting inStock) and a
variant (PATCH /api/variant/<id> setting colour), cycling through the ids in two files. After
each write it reads the record again by id (the same URL every time the id comes round, so a
cached page of it would be served if the write did not invalidate it), and every
LIST_EVERY-th write also through a list query with a filter that matches the record (stock by
its variant's barcode, a variant by its barcode). An answer that does not show the value just
written counts as stale. WORKERS threads share the schedule, each with its own keep-alive
HTTPS connection and its own share of the records (so a record is written by one worker only,
and nothing else changes it between the write and its checks); the key's Basic auth.

    background_writer.py BASE USER KEY STOCK_IDS_FILE VARIANT_IDS_FILE RATE WORKERS SECONDS OUT

STOCK_IDS_FILE lines: "<stock id> <barcode of its variant>"; VARIANT_IDS_FILE lines:
"<variant id> <barcode>". Runs SECONDS (or until SIGTERM, or until the script that started
it is gone), then writes one line "WRITER key=value ..." and the first problems seen to OUT.
A write more than a second behind its slot counts as late.
"""

import base64
import http.client
import json
import os
import signal
import ssl
import sys
import threading
import time
import urllib.parse

LIST_EVERY = 5


def percentile(values, p):
    if not values:
        return 0.0
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, int(round(p / 100.0 * len(ordered) + 0.5)) - 1))
    return ordered[index]


class Client:
    def __init__(self, base, user, key):
        url = urllib.parse.urlsplit(base)
        self.host = url.hostname
        self.port = url.port or 443
        self.context = ssl.create_default_context()
        self.context.check_hostname = False
        self.context.verify_mode = ssl.CERT_NONE
        token = base64.b64encode(f"{user}:{key}".encode()).decode()
        self.headers = {"Authorization": f"Basic {token}", "Accept": "application/json"}
        self.connection = None
        # The headers of the last answer (Server-Timing, for drivers that report it).
        self.last_headers = None

    def call(self, method, path, body=None, raw_body=None, content_type=None):
        """Returns (status, parsed JSON or None, milliseconds, raw answer). `body` is sent as
        JSON; `raw_body` (bytes) as it is, with `content_type`."""
        headers = dict(self.headers)
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
        elif raw_body is not None:
            data = raw_body
            headers["Content-Type"] = content_type
        for attempt in (1, 2):
            if self.connection is None:
                self.connection = http.client.HTTPSConnection(
                    self.host, self.port, context=self.context, timeout=60
                )
            started = time.monotonic()
            try:
                self.connection.request(method, path, body=data, headers=headers)
                response = self.connection.getresponse()
                raw = response.read()
            except (http.client.HTTPException, OSError):
                self.connection.close()
                self.connection = None
                if attempt == 2:
                    raise
                continue
            ms = (time.monotonic() - started) * 1000.0
            self.last_headers = response.headers
            try:
                parsed = json.loads(raw) if raw else None
            except ValueError:
                parsed = None
            return response.status, parsed, ms, raw
        raise RuntimeError("unreachable")


def records(answer, resource):
    try:
        return answer["response"][resource]
    except (KeyError, TypeError):
        return []


def main():
    if len(sys.argv) != 10:
        sys.exit(__doc__)
    base, user, key, stock_file, variant_file, rate, workers, seconds, out = sys.argv[1:]
    rate = float(rate)
    workers = int(workers)
    seconds = float(seconds)

    def load(path):
        rows = []
        with open(path) as f:
            for line in f:
                parts = line.split()
                if len(parts) >= 2:
                    rows.append((parts[0], parts[1]))
        if len(rows) < workers:
            sys.exit(f"background writer: fewer than {workers} ids in {path}")
        return rows

    targets = {"stock": load(stock_file), "variant": load(variant_file)}
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    lock = threading.Lock()
    write_ms = []
    tally = {
        "writes": 0, "write_errors": 0, "by_id_reads": 0, "list_reads": 0, "read_errors": 0,
        "stale_by_id": 0, "stale_list": 0, "stale_write_answer": 0, "late": 0,
    }
    problems = []
    run_tag = time.strftime("%H%M%S")
    parent = os.getppid()
    started = time.monotonic()

    def count(key, text=None):
        with lock:
            tally[key] += 1
            if text is not None and len(problems) < 5:
                problems.append(text)

    def work(worker):
        """Slots worker, worker + workers, ...; records whose index % workers == worker, so no
        other worker writes them between a write and its checks."""
        client = Client(base, user, key)
        cursor = {"stock": 0, "variant": 0}
        mine = {name: rows[worker::workers] for name, rows in targets.items()}
        slot = worker
        while not stop.is_set():
            due = started + slot / rate
            now = time.monotonic()
            if now - started >= seconds:
                break
            if due > now:
                stop.wait(due - now)
                continue
            if now - due > 1.0:
                count("late")
            resource = "stock" if (slot // workers) % 2 == 0 else "variant"
            slot += workers
            rows = mine[resource]
            record_id, barcode = rows[cursor[resource] % len(rows)]
            cursor[resource] += 1
            if resource == "stock":
                field, value = "inStock", 100000 + slot
                list_path = (f"/api/stock?stock_variant.barcode={urllib.parse.quote(barcode)}"
                             "&fields=id,inStock")
            else:
                field, value = "colour", f"bench-{run_tag}-{slot}"
                list_path = f"/api/variant?barcode={urllib.parse.quote(barcode)}&fields=id,colour"

            def shows(answer):
                for record in records(answer, resource):
                    if str(record.get("id", "")).upper() == record_id.upper():
                        return record.get(field) == value
                return False

            try:
                status, answer, ms, raw = client.call(
                    "PATCH", f"/api/{resource}/{record_id}", {field: value})
            except Exception as error:  # noqa: BLE001 - any failure is counted and reported
                count("write_errors", f"PATCH {resource}/{record_id}: {error}")
                continue
            if status != 200:
                count("write_errors", f"PATCH {resource}/{record_id} answered {status}: {raw[:300]!r}")
                continue
            with lock:
                tally["writes"] += 1
                write_ms.append(ms)
                written = tally["writes"]
            if not shows(answer):
                count("stale_write_answer",
                      f"PATCH {resource}/{record_id} answer lacks {field}={value!r}: {raw[:300]!r}")
            checks = [("by_id", f"/api/{resource}/{record_id}?fields=id,{field}")]
            if written % LIST_EVERY == 0:
                checks.append(("list", list_path))
            for kind, path in checks:
                try:
                    status, answer, _, raw = client.call("GET", path)
                except Exception as error:  # noqa: BLE001
                    count("read_errors", f"GET {path}: {error}")
                    continue
                count(f"{kind}_reads")
                if status != 200:
                    count("read_errors", f"GET {path} answered {status}: {raw[:300]!r}")
                elif not shows(answer):
                    count(f"stale_{kind}",
                          f"GET {path} after setting {field}={value!r}: {raw[:300]!r}")

    threads = [threading.Thread(target=work, args=(w,), daemon=True) for w in range(workers)]
    for thread in threads:
        thread.start()
    while any(t.is_alive() for t in threads):
        if os.getppid() != parent:
            stop.set()
        stop.wait(0.2)
        if stop.is_set():
            break
    stop.set()
    for thread in threads:
        thread.join(timeout=120)

    elapsed = time.monotonic() - started
    tally["seconds"] = round(elapsed, 1)
    tally["rate"] = round(tally["writes"] / elapsed, 1) if elapsed > 0 else 0
    tally["write_p50_ms"] = round(percentile(write_ms, 50), 2)
    tally["write_p99_ms"] = round(percentile(write_ms, 99), 2)
    tally["stale"] = tally["stale_by_id"] + tally["stale_list"] + tally["stale_write_answer"]
    with open(out, "w") as f:
        f.write("WRITER " + " ".join(f"{k}={v}" for k, v in tally.items()) + "\n")
        for text in problems:
            f.write("problem: " + text.replace("\n", " ") + "\n")


if __name__ == "__main__":
    main()
