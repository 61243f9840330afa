#!/usr/bin/env python3
"""A sync client of bench/offers.sh: follows `changedSince` from 0 over one keep-alive HTTPS
connection (background_writer.Client), as a host's sync loop does (docs/API.md, "Sync by cursor"), and times it:

    sync_client.py BASE USER KEY QUERY
        Reads `GET /api/offer?QUERY&pageSize=1000&changedSince=…` from 0 until `more` is
        false. Prints "SYNC offers=N pages=P seconds=S rate=R server_ms=T cursor=C": R offers
        a second, T the sum of the answers' `Server-Timing` totals (the server's own time), C
        the last answer's cursor.
"""

import os
import re
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from background_writer import Client  # noqa: E402

TOTAL = re.compile(r"total;dur=([0-9.]+)")


def main():
    base, user, key, query = sys.argv[1:5]
    client = Client(base, user, key)
    cursor, offers, pages, server_ms = "0", 0, 0, 0.0
    started = time.monotonic()
    while True:
        path = f"/api/offer?{query}&pageSize=1000&changedSince={cursor}"
        status, answer, _, raw = client.call("GET", path)
        if status != 200 or answer is None:
            sys.exit(f"{path}: {status} {raw[:300]!r}")
        timing = TOTAL.search(client.last_headers.get("Server-Timing") or "")
        server_ms += float(timing.group(1)) if timing else 0.0
        page = answer["response"]
        offers += len(page["offer"])
        pages += 1
        cursor = page["cursor"]
        if not page["more"]:
            break
    seconds = time.monotonic() - started
    print(
        f"SYNC offers={offers} pages={pages} seconds={seconds:.3f} "
        f"rate={offers / seconds:.0f} server_ms={server_ms:.1f} cursor={cursor}"
    )


if __name__ == "__main__":
    main()
