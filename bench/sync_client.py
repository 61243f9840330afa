#!/usr/bin/env python3
"""A sync client of bench/offers.sh: follows `changedSince` from 0 over one keep-alive HTTPS
connection, as a host's sync loop does (docs/API.md, "Sync by cursor"), and times it:

    sync_client.py BASE USER KEY QUERY
        Reads `GET /api/offer?QUERY&pageSize=1000&changedSince=…` from 0 until `more` is
        false. Prints "SYNC offers=N pages=P seconds=S rate=R server_ms=T cursor=C": R offers
        a second, T the sum of the answers' `Server-Timing` totals (the server's own time), C
        the last answer's cursor.
"""

import base64
import http.client
import json
import re
import ssl
import sys
import time
import urllib.parse

TOTAL = re.compile(r"total;dur=([0-9.]+)")


def main():
    base, user, key, query = sys.argv[1:5]
    url = urllib.parse.urlsplit(base)
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    connection = http.client.HTTPSConnection(url.hostname, url.port or 443, context=context)
    token = base64.b64encode(f"{user}:{key}".encode()).decode()
    headers = {"Authorization": f"Basic {token}", "Accept": "application/json"}
    cursor, offers, pages, server_ms = "0", 0, 0, 0.0
    started = time.monotonic()
    while True:
        path = f"/api/offer?{query}&pageSize=1000&changedSince={cursor}"
        connection.request("GET", path, headers=headers)
        answer = connection.getresponse()
        body = answer.read()
        if answer.status != 200:
            sys.exit(f"{path}: {answer.status} {body[:300]!r}")
        timing = TOTAL.search(answer.getheader("Server-Timing") or "")
        server_ms += float(timing.group(1)) if timing else 0.0
        page = json.loads(body)["response"]
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
