-- W3: GET /api/stock?stock_variant.barcode=<6 digits>@&order_by=lastUpdate< (a prefix search
-- through the variant relation, newest first), cycling through 501000..501099.
-- "<" is sent percent-encoded (%3C): it is not a legal character in a request target.
package.path = (os.getenv("BENCH_LUA_DIR") or "bench/lua") .. "/?.lua;" .. package.path
local bench = require("common")

wrk.method = "GET"
for k, v in pairs(bench.headers()) do
  wrk.headers[k] = v
end

function request()
  return wrk.format(nil, "/api/stock?stock_variant.barcode=" .. bench.next_prefix()
    .. "@&order_by=lastUpdate%3C")
end
