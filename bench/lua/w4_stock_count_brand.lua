-- W4: GET /api/stock/count?stock_variant.variant_product.fk_brand=<brand id> (a count through
-- two relations).
package.path = (os.getenv("BENCH_LUA_DIR") or "bench/lua") .. "/?.lua;" .. package.path
local bench = require("common")

local brand = os.getenv("BENCH_BRAND") or ""
if brand == "" then
  error("BENCH_BRAND is not set")
end

wrk.method = "GET"
wrk.path = "/api/stock/count?stock_variant.variant_product.fk_brand=" .. brand
for k, v in pairs(bench.headers()) do
  wrk.headers[k] = v
end
