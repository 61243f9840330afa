-- W1: GET /api/stock with the default template (a page of 100 stock records).
package.path = (os.getenv("BENCH_LUA_DIR") or "bench/lua") .. "/?.lua;" .. package.path
local bench = require("common")

wrk.method = "GET"
wrk.path = "/api/stock"
for k, v in pairs(bench.headers()) do
  wrk.headers[k] = v
end
