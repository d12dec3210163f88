-- wrk script for the realistic-peak benchmark (bench/peak): the intake
-- benchmark's load (bench/wrk/submit.lua), each person with an e-mail
-- address too, for the confirmation the full configuration sends. The optional argument is a slot (0 or 1)
-- so that a warm-up and a measured run on the same data never share a
-- phone number. Usage:
--   wrk -t2 -c500 -d20s -s bench/peak/peak.lua http://127.0.0.1:8080/v1/forms/bench/submissions -- 1
thread_id = 0
local threads = {}

function setup(thread)
  thread:set("thread_id", #threads)
  table.insert(threads, thread)
end

function init(args)
  counter = 0
  statuses = {}
  slot = tonumber(args[1] or "0") % 2
end

function request()
  counter = counter + 1
  local n = (slot * 2 + thread_id) * 20000000 + counter
  local key = string.format("wrk-%d-%d", slot * 2 + thread_id, counter)
  local body = string.format('{"name":"Person %d","phone":"+86 139 %04d %04d","tickets":1,"email":"p%d@example.org"}', counter, math.floor(n / 10000) % 10000, n % 10000, n)
  return wrk.format("POST", nil, {["Content-Type"] = "application/json", ["Idempotency-Key"] = key}, body)
end

function response(status, headers, body)
  statuses[status] = (statuses[status] or 0) + 1
end

function done(summary, latency, requests)
  local total = {}
  for _, t in ipairs(threads) do
    local s = t:get("statuses")
    for code, n in pairs(s) do total[code] = (total[code] or 0) + n end
  end
  local parts = {}
  for code, n in pairs(total) do table.insert(parts, string.format("%d=%d", code, n)) end
  table.sort(parts)
  io.write(string.format("statuses: %s\n", table.concat(parts, " ")))
  io.write(string.format("p50_ms: %.2f\np90_ms: %.2f\np99_ms: %.2f\n",
    latency:percentile(50) / 1000, latency:percentile(90) / 1000, latency:percentile(99) / 1000))
end
