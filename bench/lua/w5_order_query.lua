-- W5: POST /api/order/query with a JSON query (dispatched or part-dispatched orders without a
-- carrier, in 100 brand stores): a page of 100 orders with their items.
package.path = (os.getenv("BENCH_LUA_DIR") or "bench/lua") .. "/?.lua;" .. package.path
local bench = require("common")

wrk.method = "POST"
wrk.path = "/api/order/query"
wrk.body = bench.read_file(os.getenv("BENCH_BODY_FILE"))
for k, v in pairs(bench.headers({ ["Content-Type"] = "application/json" })) do
  wrk.headers[k] = v
end
