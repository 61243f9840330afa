-- Orders, O1: POST /api/order, one host order of 5 lines per request, each with a
-- hostOrderRef no other request used (the run's tag, the wrk thread and a counter).
--
-- Settings (environment, besides common.lua's BENCH_AUTH):
--   BENCH_BODY_FILE      an intake body whose "hostOrderRef" is "@REF@" (bench/orders.sh makes
--                        it); its lines' variants may be "@V1@" … "@V5@"
--   BENCH_VARIANTS_FILE  variant ids, one a line, that "@V1@" … "@V5@" are drawn from: each
--                        request takes the next 5 of them (each thread starts elsewhere), so
--                        orders spread over a catalogue as a shop's do
--   BENCH_TAG            a word that makes the references unique across runs on one database
package.path = (os.getenv("BENCH_LUA_DIR") or "bench/lua") .. "/?.lua;" .. package.path
local bench = require("common")

local template = bench.read_file(os.getenv("BENCH_BODY_FILE"))
if not string.find(template, "@REF@", 1, true) then
  error("the body in BENCH_BODY_FILE has no @REF@")
end
local tag = os.getenv("BENCH_TAG") or "0"

local variants = {}
local variants_file = os.getenv("BENCH_VARIANTS_FILE")
if variants_file and variants_file ~= "" then
  for id in string.gmatch(bench.read_file(variants_file), "[^%s]+") do
    variants[#variants + 1] = id
  end
  if #variants < 5 then
    error("BENCH_VARIANTS_FILE holds fewer than 5 variant ids")
  end
elseif string.find(template, "@V1@", 1, true) then
  error("the body names @V1@ but BENCH_VARIANTS_FILE is not set")
end

wrk.method = "POST"
local headers = bench.headers({ ["Content-Type"] = "application/json" })

local n = 0
function request()
  n = n + 1
  local ref = string.format("OB%s-%d-%d", tag, tid, n)
  local body = string.gsub(template, "@REF@", ref, 1)
  if #variants > 0 then
    -- Five consecutive ids from a place that moves on by 5 each request; threads start a
    -- third of the list apart.
    local start = (tid * math.floor(#variants / 3) + (n - 1) * 5) % #variants
    for k = 1, 5 do
      body = string.gsub(body, "@V" .. k .. "@", variants[(start + k - 1) % #variants + 1], 1)
    end
  end
  return wrk.format("POST", "/api/order", headers, body)
end
