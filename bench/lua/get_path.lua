-- A GET of the path in BENCH_PATH (with its query), as the current user: a page of offers or
-- of stock in bench/offers.sh.
package.path = (os.getenv("BENCH_LUA_DIR") or "bench/lua") .. "/?.lua;" .. package.path
local bench = require("common")

wrk.method = "GET"
wrk.path = os.getenv("BENCH_PATH") or error("BENCH_PATH is not set")
for k, v in pairs(bench.headers()) do
  wrk.headers[k] = v
end
