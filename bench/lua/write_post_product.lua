-- Writes, P1: POST /api/product, one new product per request, each with a code no other
-- request used (the run's tag, the wrk thread and a counter), for the brand BENCH_BRAND.
--
-- Settings (environment, besides common.lua's BENCH_AUTH):
--   BENCH_BRAND  the id of a brand the acting user may write products of
--   BENCH_TAG    a word that makes the codes unique across runs on one database
package.path = (os.getenv("BENCH_LUA_DIR") or "bench/lua") .. "/?.lua;" .. package.path
local bench = require("common")

local brand = os.getenv("BENCH_BRAND") or ""
if brand == "" then
  error("BENCH_BRAND is not set")
end
local tag = os.getenv("BENCH_TAG") or "0"

wrk.method = "POST"
wrk.path = "/api/product"
local headers = bench.headers({ ["Content-Type"] = "application/json" })

local n = 0
function request()
  n = n + 1
  local code = string.format("WB%s-%d-%d", tag, tid, n)
  local body = string.format(
    '{"fk_brand":"%s","code":"%s","title":"Benchmark product %s","category":"bench"}',
    brand, code, code)
  return wrk.format("POST", "/api/product", headers, body)
end
