-- Shared by the workload scripts (loaded with require from bench/run.sh's wrk runs).
--
-- Reads its settings from the environment that bench/run.sh exports:
--   BENCH_AUTH   the value of the Authorization header ("Basic ...")
--   BENCH_BRAND  a brand id (W4)
--   BENCH_BODY_FILE  a file holding the JSON body of W5
--
-- Every thread sums the Server-Timing "db" and "total" durations of the answers it gets and
-- counts the answers that are not 2xx; done() adds up the threads and prints one line
--   BENCH key=value ...
-- that bench/run.sh reads, after a human-readable summary.

local M = {}

M.auth = os.getenv("BENCH_AUTH") or ""
if M.auth == "" then
  error("BENCH_AUTH is not set")
end

-- The barcode prefixes of the demo data set: "501000" .. "501099".
M.first_prefix = 501000
M.prefix_count = 100

function M.headers(extra)
  local h = { ["Authorization"] = M.auth, ["Accept"] = "application/json" }
  if extra then
    for k, v in pairs(extra) do
      h[k] = v
    end
  end
  return h
end

function M.read_file(path)
  local f = assert(io.open(path, "rb"), "cannot open " .. tostring(path))
  local text = f:read("*a")
  f:close()
  return text
end

-- Per-thread state (each wrk thread runs its own copy of this script). `tid` is set by setup().
tid = tid or 0
answers = 0
non2xx = 0
timed = 0
untimed = 0
db_ms = 0.0
total_ms = 0.0
statements = 0
first_error = ""

-- The next of the 100 barcode prefixes; threads start at different points of the cycle.
local cursor = nil
function M.next_prefix()
  if cursor == nil then
    cursor = (tid * 50) % M.prefix_count
  end
  local prefix = M.first_prefix + cursor
  cursor = (cursor + 1) % M.prefix_count
  return tostring(prefix)
end

-- Runs in the main Lua state, once per thread, before the threads start.
local threads = {}
function setup(thread)
  thread:set("tid", #threads)
  table.insert(threads, thread)
end

function response(status, headers, body)
  answers = answers + 1
  if status < 200 or status > 299 then
    non2xx = non2xx + 1
    if first_error == "" then
      first_error = tostring(status) .. " " .. string.sub(body or "", 1, 300)
    end
  end
  local timing = headers["server-timing"] or headers["Server-Timing"]
  if timing then
    local db = tonumber(string.match(timing, "db;dur=([%d%.]+)"))
    local total = tonumber(string.match(timing, "total;dur=([%d%.]+)"))
    local n = tonumber(string.match(timing, "desc=\"(%d+) statements?\""))
    if db and total then
      timed = timed + 1
      db_ms = db_ms + db
      total_ms = total_ms + total
      statements = statements + (n or 0)
    else
      untimed = untimed + 1
    end
  else
    untimed = untimed + 1
  end
end

function done(summary, latency, requests)
  local sums = { answers = 0, non2xx = 0, timed = 0, untimed = 0, db_ms = 0, total_ms = 0, statements = 0 }
  local first = ""
  for _, thread in ipairs(threads) do
    for key, _ in pairs(sums) do
      sums[key] = sums[key] + (tonumber(thread:get(key)) or 0)
    end
    local e = thread:get("first_error")
    if first == "" and e and e ~= "" then
      first = e
    end
  end
  local seconds = summary.duration / 1e6
  local rps = seconds > 0 and summary.requests / seconds or 0
  local share = sums.total_ms > 0 and sums.db_ms / sums.total_ms or 0
  local socket = summary.errors.connect + summary.errors.read + summary.errors.write
    + summary.errors.timeout
  local function avg(x)
    return sums.timed > 0 and x / sums.timed or 0
  end
  io.write(string.format(
    "Server-Timing over %d answers: db %.3f ms, total %.3f ms, %.1f statements per request"
      .. " (averages); database share %.1f %%\n",
    sums.timed, avg(sums.db_ms), avg(sums.total_ms), avg(sums.statements), share * 100))
  io.write(string.format("non-2xx answers: %d; socket errors: %d (connect %d, read %d, write %d,"
      .. " timeout %d); answers without Server-Timing: %d\n",
    sums.non2xx, socket, summary.errors.connect, summary.errors.read, summary.errors.write,
    summary.errors.timeout, sums.untimed))
  if first ~= "" then
    io.write("first non-2xx answer: " .. string.gsub(first, "[\r\n]", " ") .. "\n")
  end
  io.write(string.format(
    "BENCH requests=%d rps=%.1f p50_ms=%.3f p90_ms=%.3f p99_ms=%.3f max_ms=%.3f"
      .. " db_share=%.4f server_total_ms=%.3f server_db_ms=%.3f statements=%.2f"
      .. " non2xx=%d socket_errors=%d untimed=%d\n",
    summary.requests, rps,
    latency:percentile(50) / 1000, latency:percentile(90) / 1000,
    latency:percentile(99) / 1000, latency.max / 1000,
    share, avg(sums.total_ms), avg(sums.db_ms), avg(sums.statements),
    sums.non2xx, socket, sums.untimed))
end

return M
