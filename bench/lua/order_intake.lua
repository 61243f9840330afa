-- Orders, O1: POST /api/order, one host order of 5 lines per request, each with a
-- hostOrderRef no other request used (the run's tag, the wrk thread and a counter).
--
-- Settings (environment, besides common.lua's BENCH_AUTH):
--   BENCH_BODY_FILE  an intake body whose "hostOrderRef" is "@REF@" (bench/orders.sh makes it)
--   BENCH_TAG        a word that makes the references unique across runs on one database
package.path = (os.getenv("BENCH_LUA_DIR") or "bench/lua") .. "/?.lua;" .. package.path
local bench = require("common")

local template = bench.read_file(os.getenv("BENCH_BODY_FILE"))
if not string.find(template, "@REF@", 1, true) then
  error("the body in BENCH_BODY_FILE has no @REF@")
end
local tag = os.getenv("BENCH_TAG") or "0"

wrk.method = "POST"
local headers = bench.headers({ ["Content-Type"] = "application/json" })

local n = 0
function request()
  n = n + 1
  local ref = string.format("OB%s-%d-%d", tag, tid, n)
  local body = string.gsub(template, "@REF@", ref, 1)
  return wrk.format("POST", "/api/order", headers, body)
end
