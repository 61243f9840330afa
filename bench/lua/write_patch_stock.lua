-- Writes, P2: PATCH /api/stock/<id> setting inStock, cycling through the stock ids in the file
-- BENCH_IDS_FILE (one a line); each wrk thread starts at its own point of the list, and every
-- request sets another number.
--
-- Settings (environment, besides common.lua's BENCH_AUTH):
--   BENCH_IDS_FILE  the stock ids the acting user may write
package.path = (os.getenv("BENCH_LUA_DIR") or "bench/lua") .. "/?.lua;" .. package.path
local bench = require("common")

local ids = {}
for line in string.gmatch(bench.read_file(os.getenv("BENCH_IDS_FILE")), "[^\r\n]+") do
  table.insert(ids, line)
end
if #ids == 0 then
  error("no ids in BENCH_IDS_FILE")
end

wrk.method = "PATCH"
local headers = bench.headers({ ["Content-Type"] = "application/json" })

local cursor = nil
local n = 0
function request()
  if cursor == nil then
    cursor = (tid * 7919) % #ids
  end
  local id = ids[cursor + 1]
  cursor = (cursor + 1) % #ids
  n = n + 1
  local body = string.format('{"inStock":%d}', (tid * 100003 + n * 7) % 1000)
  return wrk.format("PATCH", "/api/stock/" .. id, headers, body)
end
