#!/usr/bin/env python3
"""The traffic of bench/soak.sh: mixed reads, JSON writes and file uploads against two `serve`
processes on one database for SECONDS, over keep-alive HTTPS connections with the key's Basic
auth (the client of bench/background_writer.py), with figures per minute:

    soak_driver.py --base A --base B --pid A --pid B --user USER --key KEY --seconds N
                   --read-workers N --read-rate R --write-rate R --upload-every S
                   --upload-rows N --warmup-minutes M --out OUT --table TABLE

Setup (as USER, through server A): the brands and brand stores the user sees (W4, W5), the
number of stock records (W1's pages), a warehouse and a brand of one company with UPLOAD_ROWS
of the brand's barcodes (the stock file), and up to 1000 stock ids but those of the stock file's
rows (the writes, so that the uploads' read-back checks see only what the files wrote).

Then, at once:
  readers   READ_WORKERS threads, worker i on server i % 2, each with its own connection,
            each request one of W1–W5 at random with random parameters:
              W1  GET /api/stock?page=&pageSize=[&order_by=]
              W2  GET /api/variant?barcode=<501000..501099>@
              W3  GET /api/stock?stock_variant.barcode=<501000..501099>@&order_by=lastUpdate<
              W4  GET /api/stock/count?stock_variant.variant_product.fk_brand=<a brand>
              W5  POST /api/order/query: two statuses, a carrier condition, 10–100 brand stores
            as fast as they are answered, or READ_RATE a second in all when it is above 0;
            anything but 200 is an error
  uploader  every UPLOAD_EVERY seconds a stock file (CSV, UPLOAD_ROWS rows, new quantities)
            through POST /api/file?wait=30 (multipart, part "stock,<brand>,<warehouse>"), the
            servers in turn; waits until it is processed (polls GET /api/file/<id> past the
            wait) and times upload to processed; an error unless it is `processed` with every
            row applied, none skipped and no warning; then reads one of its rows back through
            the other server (an error unless it shows the quantity just uploaded)
  writer    WRITE_RATE a second PATCH /api/stock/<id> {inStock} on the stock ids, the servers
            in turn; anything but 200 is an error
  sampler   VmRSS of both server processes at the start and at the end of every minute

Requests count in the minute they started (uploads too: "upload" is upload to processed). Runs
SECONDS (or until SIGTERM, or until the script that started it is gone), then writes
OUT:   "SETUP ...", "MINUTE ...", "RSS ...", "TOTAL ..." and one "SOAK key=value ..." line, and
       "error: ..." lines (the first problems seen)
TABLE: the tables of figures per minute, for people
and prints one progress line per minute.
"""

import argparse
import json
import os
import random
import signal
import sys
import threading
import time
import urllib.request
import urllib.parse
import uuid

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from background_writer import Client, percentile, records  # noqa: E402

READS = ["W1", "W2", "W3", "W4", "W5"]
WORKLOADS = READS + ["upload", "write"]
SERVERS = "AB"
FIRST_PREFIX, PREFIXES = 501000, 100
W1_PAGE_SIZES = [10, 25, 50, 100]
W1_ORDERS = ["", "id", "lastUpdate%3C", "updatedDate%3C", "available%3C"]
STATUSES = ["new", "accepted", "dispatched", "partDispatched", "delivered", "returned", "cancelled"]
CARRIERS = ["Royal Mail", "DHL Express", "DPD", "UPS", "PostNord", "Colissimo"]
UPLOAD_WAIT = 30          # seconds of ?wait= on an upload
PROCESS_LIMIT = 120       # seconds from upload to a final status before it counts as an error
KEEP_ERRORS = 10


def key_of(value):
    return value["__KEY"] if isinstance(value, dict) else value


def send_raw(client, method, path, data, content_type):
    """Client.call for a body that is not JSON (an upload)."""
    return client.call(method, path, raw_body=data, content_type=content_type)


def page_cache_mb(url):
    """The page cache's size of a server, from its metrics (brandhub_page_cache_bytes)."""
    if not url:
        return None
    try:
        with urllib.request.urlopen(url, timeout=10) as answer:
            for line in answer.read().decode().splitlines():
                if line.startswith("brandhub_page_cache_bytes "):
                    return float(line.split()[1]) / (1024.0 * 1024.0)
    except (OSError, ValueError):
        pass
    return None


def rss_mb(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024.0
    except OSError:
        pass
    return None


class Tally:
    """Timings and errors by (minute, workload), minute 1 being the first."""

    def __init__(self, started):
        self.started = started
        self.lock = threading.Lock()
        self.ms = {}
        self.errors = {}
        self.problems = []
        self.notes = {"write_late": 0, "upload_late": 0, "readbacks": 0}

    def minute(self, at):
        return int((at - self.started) // 60) + 1

    def ok(self, workload, at, ms):
        with self.lock:
            self.ms.setdefault((self.minute(at), workload), []).append(ms)

    def error(self, workload, at, server, text):
        with self.lock:
            minute = self.minute(at)
            self.errors[(minute, workload)] = self.errors.get((minute, workload), 0) + 1
            if len(self.problems) < KEEP_ERRORS:
                self.problems.append(f"{workload} minute {minute} server {server}: {text}"
                                     .replace("\n", " ")[:600])

    def note(self, key):
        with self.lock:
            self.notes[key] += 1


def setup(client, upload_rows):
    """What the workloads need, as the user; returns a dict and description lines."""
    def get(path):
        status, answer, _, raw = client.call("GET", path)
        if status != 200:
            raise SystemExit(f"setup: GET {path} answered {status}: {raw[:300]!r}")
        return answer

    brands = [r["id"] for r in records(get("/api/brand?fields=id&pageSize=1000&order_by=id"), "brand")]
    stores = [r["id"] for r in records(get("/api/brandStore?fields=id&pageSize=1000&order_by=id"), "brandStore")]
    stock_found = get("/api/stock?fields=id&pageSize=1")["response"]["recordsFound"]
    if not brands or not stores or not stock_found:
        raise SystemExit(f"setup: the user sees {len(brands)} brands, {len(stores)} brand stores, "
                         f"{stock_found} stock records: W1, W4 and W5 need some of each")
    # The stock file's target: a warehouse and a brand of one company, and the brand's barcodes.
    target = None
    for house in records(get("/api/warehouse?fields=id,fk_company&pageSize=100&order_by=id"), "warehouse"):
        company = key_of(house.get("fk_company"))
        if not company:
            continue
        for brand in records(get(f"/api/brand?fk_company={company}&fields=id&pageSize=10&order_by=id"), "brand"):
            variants = records(get(f"/api/variant?variant_product.fk_brand={brand['id']}"
                                   f"&fields=id,barcode&pageSize={upload_rows}&order_by=id"), "variant")
            barcodes = list(dict.fromkeys(v["barcode"] for v in variants if v.get("barcode")))
            if len(barcodes) >= min(upload_rows, 10):
                target = (house["id"], brand["id"], barcodes)
                break
        if target:
            break
    if not target:
        raise SystemExit("setup: no warehouse and brand of one company with variants to upload stock for")
    warehouse, brand, barcodes = target
    # The writes' stock: up to 1000 stock records from a random one of the first five pages of
    # 1000 on, none that the stock files write (their warehouse and barcodes).
    pages = max(1, (stock_found + 999) // 1000)
    first = random.randint(1, min(5, pages))
    touched = set(barcodes)
    stock_ids = []
    for page in list(range(first, pages + 1)) + list(range(1, first)):
        rows = records(get(f"/api/stock?fields=id,fk_warehouse,stock_variant.barcode&pageSize=1000"
                           f"&page={page}&order_by=id"), "stock")
        for r in rows:
            barcode = (r.get("stock_variant") or {}).get("barcode")
            if str(key_of(r.get("fk_warehouse"))).upper() == warehouse.upper() and barcode in touched:
                continue
            stock_ids.append(r["id"])
        if len(stock_ids) >= 1000:
            break
    stock_ids = stock_ids[:1000]
    if not stock_ids:
        raise SystemExit("setup: no stock records but the stock files' to write")
    lines = [
        f"W4 brands: {len(brands)}; W5 brand stores: {len(stores)}; stock records: {stock_found}",
        f"uploads: stock files of {len(barcodes)} rows for brand {brand} in warehouse {warehouse}",
        f"writes: PATCH inStock on {len(stock_ids)} stock records (from page {first} of the stock by id "
        f"in pages of 1000), none of those the stock files write",
    ]
    return {"brands": brands, "stores": stores, "stock_found": stock_found, "warehouse": warehouse,
            "brand": brand, "barcodes": barcodes, "stock_ids": stock_ids}, lines


def read_request(rng, ctx):
    """A read of W1–W5 at random: (workload, method, path, body)."""
    workload = rng.choice(READS)
    prefix = FIRST_PREFIX + rng.randrange(PREFIXES)
    if workload == "W1":
        size = rng.choice(W1_PAGE_SIZES)
        pages = max(1, min(50, (ctx["stock_found"] + size - 1) // size))
        path = f"/api/stock?page={rng.randint(1, pages)}&pageSize={size}"
        order = rng.choice(W1_ORDERS)
        if order:
            path += "&order_by=" + order
        return workload, "GET", path, None
    if workload == "W2":
        return workload, "GET", f"/api/variant?barcode={prefix}@", None
    if workload == "W3":
        return workload, "GET", f"/api/stock?stock_variant.barcode={prefix}@&order_by=lastUpdate%3C", None
    if workload == "W4":
        brand = rng.choice(ctx["brands"])
        return workload, "GET", f"/api/stock/count?stock_variant.variant_product.fk_brand={brand}", None
    first, second = rng.sample(STATUSES, 2)
    query = [{"field": "status", "operator": "=", "value": first},
             {"field": "status", "operator": "=", "value": second, "conjunction": "|"}]
    carrier = rng.randrange(3)
    if carrier == 0:    # with a carrier (except those without one), as bench/run.sh's W5
        query.append({"field": "carrier", "operator": "=", "value": "", "conjunction": "#"})
    elif carrier == 1:  # without one
        query.append({"field": "carrier", "operator": "=", "value": "", "conjunction": "&"})
    else:               # one carrier
        query.append({"field": "carrier", "operator": "=", "value": rng.choice(CARRIERS), "conjunction": "&"})
    stores = ctx["stores"]
    chosen = rng.sample(stores, min(len(stores), rng.randint(10, 100)))
    body = {"query": query, "queryselectionwitharray": {"field": "fk_brandStore", "values": chosen}}
    return workload, "POST", "/api/order/query", body


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--base", action="append", required=True)
    parser.add_argument("--pid", action="append", required=True, type=int)
    parser.add_argument("--user", required=True)
    parser.add_argument("--key", required=True)
    parser.add_argument("--seconds", type=float, required=True)
    parser.add_argument("--read-workers", type=int, default=6)
    parser.add_argument("--read-rate", type=float, default=0)
    parser.add_argument("--write-rate", type=float, default=5)
    parser.add_argument("--upload-every", type=float, default=10)
    parser.add_argument("--upload-rows", type=int, default=100)
    parser.add_argument("--warmup-minutes", type=int, default=2)
    parser.add_argument("--metrics", action="append", default=[],
                        help="each server's metrics URL, in --base order (page cache size)")
    parser.add_argument("--out", required=True)
    parser.add_argument("--table", required=True)
    args = parser.parse_args()
    if len(args.base) != 2 or len(args.pid) != 2:
        sys.exit("soak driver: two --base and two --pid are needed")

    ctx, setup_lines = setup(Client(args.base[0], args.user, args.key), args.upload_rows)
    for line in setup_lines:
        print("setup: " + line, flush=True)

    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    parent = os.getppid()
    started = time.monotonic()
    tally = Tally(started)
    metrics = (args.metrics + [None, None])[:2]
    rss = {0: [rss_mb(p) for p in args.pid]}   # minute -> [A, B] at its end (0: the start)
    cache = {0: [page_cache_mb(u) for u in metrics]}   # the page cache's MB, sampled with rss

    def running():
        return not stop.is_set() and time.monotonic() - started < args.seconds

    def call(client, workload, server, method, path, body=None):
        """One request; returns (status, answer, raw) or None after an error it counted."""
        at = time.monotonic()
        try:
            status, answer, ms, raw = client.call(method, path, body)
        except Exception as error:  # noqa: BLE001 - any failure is counted and reported
            tally.error(workload, at, server, f"{method} {path}: {error!r}")
            return None
        if status != 200:
            tally.error(workload, at, server, f"{method} {path} answered {status}: {raw[:300]!r}")
            return None
        tally.ok(workload, at, ms)
        return status, answer, raw

    def reader(worker):
        server = worker % 2
        client = Client(args.base[server], args.user, args.key)
        rng = random.Random(f"{worker}-{time.time()}")
        slot = worker
        while running():
            if args.read_rate > 0:
                due = started + slot / args.read_rate
                slot += args.read_workers
                pause = due - time.monotonic()
                if pause > 0 and stop.wait(pause):
                    break
                if not running():
                    break
            workload, method, path, body = read_request(rng, ctx)
            call(client, workload, SERVERS[server], method, path, body)

    def paced(interval, late, act):
        """Calls act(server, n) every `interval` seconds from the start, the servers in turn;
        a call more than a second behind its slot is noted as `late`."""
        n = 0
        while running():
            pause = started + n * interval - time.monotonic()
            if pause > 0:
                stop.wait(pause)
                continue
            if -pause > 1.0:
                tally.note(late)
            n += 1
            act((n - 1) % 2, n)

    def writer():
        clients = [Client(b, args.user, args.key) for b in args.base]
        rng = random.Random(f"writer-{time.time()}")

        def write(server, _n):
            record = rng.choice(ctx["stock_ids"])
            call(clients[server], "write", SERVERS[server], "PATCH", f"/api/stock/{record}",
                 {"inStock": rng.randrange(100000)})
        paced(1.0 / args.write_rate, "write_late", write)

    def uploader():
        clients = [Client(b, args.user, args.key) for b in args.base]
        rng = random.Random(f"uploader-{time.time()}")
        part = f"stock,{ctx['brand']},{ctx['warehouse']}"
        paced(args.upload_every, "upload_late",
              lambda server, n: upload_one(clients, server, rng, part, ctx["barcodes"], n))

    def upload_one(clients, server, rng, part, barcodes, n):
        name = SERVERS[server]
        client = clients[server]
        quantities = [rng.randrange(1000) for _ in barcodes]
        csv = "Barcode,In Stock\r\n" + "".join(f"{b},{q}\r\n" for b, q in zip(barcodes, quantities))
        boundary = "soak" + uuid.uuid4().hex
        data = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"{part}\"; "
                f"filename=\"soak-{n}.csv\"\r\nContent-Type: text/csv\r\n\r\n").encode() + csv.encode() + \
            f"\r\n--{boundary}--\r\n".encode()
        at = time.monotonic()
        path = f"/api/file?wait={UPLOAD_WAIT}"
        try:
            status, answer, _, raw = send_raw(client, "POST", path, data,
                                              f"multipart/form-data; boundary={boundary}")
        except Exception as error:  # noqa: BLE001
            tally.error("upload", at, name, f"POST {path}: {error!r}")
            return
        if status != 201:
            tally.error("upload", at, name, f"POST {path} answered {status}: {raw[:300]!r}")
            return
        files = records(answer, "file")
        if not files:
            tally.error("upload", at, name, f"POST {path} answered 201 without a file: {raw[:300]!r}")
            return
        record = files[0]
        file_id = record["id"]
        while record.get("status") not in ("processed", "failed"):
            if time.monotonic() - at > PROCESS_LIMIT:
                tally.error("upload", at, name, f"file {file_id} not processed after {PROCESS_LIMIT} s: {record}")
                return
            time.sleep(0.2)
            try:
                status, answer, _, raw = client.call("GET", f"/api/file/{file_id}?fields=status,detail")
            except Exception as error:  # noqa: BLE001
                tally.error("upload", at, name, f"GET /api/file/{file_id}: {error!r}")
                return
            if status != 200 or not records(answer, "file"):
                tally.error("upload", at, name, f"GET /api/file/{file_id} answered {status}: {raw[:300]!r}")
                return
            record = records(answer, "file")[0]
        done = time.monotonic()
        detail = record.get("detail") or {}
        if (record.get("status") != "processed" or detail.get("rowsApplied") != len(barcodes)
                or detail.get("rowsSkipped") != 0 or detail.get("error")):
            tally.error("upload", at, name, f"file {file_id} ({len(barcodes)} rows) ended {record.get('status')}: "
                        f"{json.dumps(detail)[:400]}")
            return
        # One of its rows through the other server: the quantity just uploaded.
        other = 1 - server
        i = rng.randrange(len(barcodes))
        check = (f"/api/stock?fk_warehouse={ctx['warehouse']}&stock_variant.barcode="
                 f"{urllib.parse.quote(barcodes[i])}&fields=id,inStock")
        try:
            status, answer, _, raw = clients[other].call("GET", check)
        except Exception as error:  # noqa: BLE001
            tally.error("upload", at, SERVERS[other], f"GET {check}: {error!r}")
            return
        shown = [r.get("inStock") for r in records(answer, "stock")]
        tally.note("readbacks")
        if status != 200 or shown != [quantities[i]]:
            tally.error("upload", at, SERVERS[other], f"after file {file_id} set {barcodes[i]} to {quantities[i]}, "
                        f"GET {check} answered {status}: {raw[:300]!r}")
            return
        tally.ok("upload", at, (done - at) * 1000.0)

    threads = [threading.Thread(target=reader, args=(w,), daemon=True) for w in range(args.read_workers)]
    if args.write_rate > 0:
        threads.append(threading.Thread(target=writer, daemon=True))
    if args.upload_every > 0:
        threads.append(threading.Thread(target=uploader, daemon=True))
    for thread in threads:
        thread.start()

    def progress(minute, seconds):
        with tally.lock:
            cells = []
            for w in WORKLOADS:
                times = tally.ms.get((minute, w), [])
                errors = tally.errors.get((minute, w), 0)
                cells.append(f"{w} {len(times)}x p50 {percentile(times, 50):.1f} ms"
                             + (f" ERR {errors}" if errors else ""))
        a, b = (("%.1f" % v) if v is not None else "gone" for v in rss[minute])
        print(f"minute {minute} ({seconds:.0f} s): " + ", ".join(cells) + f"; RSS A {a} MB, B {b} MB", flush=True)

    # The sampler: RSS at the end of every minute.
    minute = 1
    while not stop.is_set():
        now = time.monotonic()
        if os.getppid() != parent:
            stop.set()
            break
        end = min(started + 60 * minute, started + args.seconds)
        if now >= end:
            rss[minute] = [rss_mb(p) for p in args.pid]
            cache[minute] = [page_cache_mb(u) for u in metrics]
            progress(minute, end - started - 60 * (minute - 1))
            if end >= started + args.seconds:
                break
            minute += 1
            continue
        stop.wait(min(0.2, end - now))
    stop.set()
    for thread in threads:
        thread.join(timeout=PROCESS_LIMIT + 30)
    elapsed = time.monotonic() - started
    if minute not in rss:   # stopped early: the minute so far
        rss[minute] = [rss_mb(p) for p in args.pid]
        cache[minute] = [page_cache_mb(u) for u in metrics]
    minutes = sorted(m for m in rss if m > 0)
    full = min(elapsed, args.seconds)

    def seconds_of(m):
        return max(0.0, min(60.0, full - 60 * (m - 1)))

    # RSS flat after the warm-up: the largest RSS of the minutes after it against the RSS at its
    # end; judged when at least one full minute followed it. The page cache may grow to its
    # bound: with the servers' metrics, what is judged is the RSS outside it (RSS minus the
    # page cache's bytes); `raw` is the RSS itself.
    warm = args.warmup_minutes
    judged = warm in rss and full >= 60 * (warm + 1) - 0.5

    def outside(m, i):
        if rss[m][i] is None or cache.get(m, [None, None])[i] is None:
            return None
        return rss[m][i] - cache[m][i]

    def growth_of(value):
        result = []
        for i in range(2):
            if not judged or value(warm, i) is None:
                result.append(None)
                continue
            later = [value(m, i) for m in minutes if m > warm]
            result.append(None if None in later else max(later) - value(warm, i))
        return result

    raw_growth = growth_of(lambda m, i: rss[m][i])
    by_cache = all(v is not None for m in [warm] + minutes if m in cache for v in cache[m]) and warm in cache
    growth = growth_of(outside) if by_cache else raw_growth

    def fmt(v, spec="%.1f"):
        return "-" if v is None else spec % v

    total_errors = sum(tally.errors.values())
    requests = sum(len(v) for v in tally.ms.values()) + total_errors
    with open(args.out, "w") as out:
        for line in setup_lines:
            out.write("SETUP " + line + "\n")
        for m in minutes:
            for w in WORKLOADS:
                times = tally.ms.get((m, w), [])
                out.write(f"MINUTE minute={m} seconds={seconds_of(m):.0f} workload={w} count={len(times)} "
                          f"p50_ms={percentile(times, 50):.2f} p99_ms={percentile(times, 99):.2f} "
                          f"errors={tally.errors.get((m, w), 0)}\n")
        for m in [0] + minutes:
            pages = cache.get(m, [None, None])
            out.write(f"RSS minute={m} a_mb={fmt(rss[m][0])} b_mb={fmt(rss[m][1])} "
                      f"cache_a_mb={fmt(pages[0])} cache_b_mb={fmt(pages[1])}\n")
        for w in WORKLOADS:
            times = [t for (m, k), v in tally.ms.items() if k == w for t in v]
            errors = sum(v for (m, k), v in tally.errors.items() if k == w)
            out.write(f"TOTAL workload={w} count={len(times)} p50_ms={percentile(times, 50):.2f} "
                      f"p99_ms={percentile(times, 99):.2f} errors={errors}\n")
        out.write(f"SOAK seconds={elapsed:.0f} minutes={len(minutes)} requests={requests} errors={total_errors} "
                  f"write_late={tally.notes['write_late']} upload_late={tally.notes['upload_late']} "
                  f"readbacks={tally.notes['readbacks']} rss_judged={'yes' if judged else 'no'} "
                  f"warmup_minutes={warm} "
                  f"rss_base_a={fmt(rss[warm][0] if warm in rss else None)} "
                  f"rss_base_b={fmt(rss[warm][1] if warm in rss else None)} "
                  f"rss_growth_a={fmt(growth[0])} rss_growth_b={fmt(growth[1])} "
                  f"rss_raw_growth_a={fmt(raw_growth[0])} rss_raw_growth_b={fmt(raw_growth[1])} "
                  f"rss_judged_by={'outside-page-cache' if by_cache else 'rss'}\n")
        for text in tally.problems:
            out.write("error: " + text + "\n")

    def cell(m, w):
        if m is None:
            times = [t for (_, k), v in tally.ms.items() if k == w for t in v]
            errors = sum(v for (_, k), v in tally.errors.items() if k == w)
        else:
            times = tally.ms.get((m, w), [])
            errors = tally.errors.get((m, w), 0)
        return "%6d %7.1f %7.1f %3d" % (len(times), percentile(times, 50), percentile(times, 99), errors)

    def label(m):
        if m is None:
            return "all"
        return str(m) if seconds_of(m) >= 59.5 else "%d (%.0fs)" % (m, seconds_of(m))

    group = "%6s %7s %7s %3s" % ("n", "p50", "p99", "err")
    with open(args.table, "w") as table:
        table.write("reads (n: requests that started in the minute; p50, p99: ms; err: errors)\n")
        table.write("%-8s" % "minute" + "".join("  %-25s" % f"{w} {'-' * (24 - len(w))}" for w in READS) + "\n")
        table.write("%-8s" % "" + "".join("  " + group for _ in READS) + "\n")
        for m in minutes + [None]:
            table.write("%-8s" % label(m) + "".join("  " + cell(m, w) for w in READS) + "\n")
        table.write("\nuploads (upload to processed, ms) and writes (PATCH, ms); RSS and page cache of server "
                    "A and B (MB, at the end of the minute)\n")
        table.write("%-8s" % "minute" + "".join("  %-25s" % f"{w} {'-' * (24 - len(w))}" for w in ("upload", "write"))
                    + "  %6s %9s %9s %9s %9s\n" % ("errors", "RSS A", "RSS B", "cache A", "cache B"))
        table.write("%-8s" % "" + "".join("  " + group for _ in range(2))
                    + "  %6s %9s %9s %9s %9s\n" % ("all", "MB", "MB", "MB", "MB"))
        table.write("%-8s" % "start" + " " * 54 + "  %6s %9s %9s %9s %9s\n"
                    % ("", fmt(rss[0][0]), fmt(rss[0][1]), fmt(cache[0][0]), fmt(cache[0][1])))
        for m in minutes + [None]:
            errors = sum(v for (k, _), v in tally.errors.items() if m is None or k == m)
            if m is None:
                a = b = ca = cb = ""
            else:
                a, b = fmt(rss[m][0]), fmt(rss[m][1])
                ca, cb = (fmt(v) for v in cache.get(m, [None, None]))
            table.write(("%-8s" % label(m) + "".join("  " + cell(m, w) for w in ("upload", "write"))
                         + "  %6d %9s %9s %9s %9s" % (errors, a, b, ca, cb)).rstrip() + "\n")


if __name__ == "__main__":
    main()
