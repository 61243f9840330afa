-- W2: GET /api/variant?barcode=<6 digits>@ (prefix search), cycling through 501000..501099.
package.path = (os.getenv("BENCH_LUA_DIR") or "bench/lua") .. "/?.lua;" .. package.path
local bench = require("common")

wrk.method = "GET"
for k, v in pairs(bench.headers()) do
  wrk.headers[k] = v
end

function request()
  return wrk.format(nil, "/api/variant?barcode=" .. bench.next_prefix() .. "@")
end
