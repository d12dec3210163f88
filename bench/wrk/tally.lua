-- The part every formd wrk script shares: each thread knows its number
-- (thread_id, for keys no other thread makes) and counts the answers by
-- status; at the end the counts and the latency percentiles are printed
-- in the lines run.sh and bench/peak read ("statuses: 200=… 429=…",
-- "p50_ms: …", "p90_ms: …", "p99_ms: …"). A script loads it with
-- dofile("bench/wrk/tally.lua") (wrk runs from the repository's root)
-- and defines init(args) and request().
thread_id = 0
statuses = {}
local threads = {}

function setup(thread)
  thread:set("thread_id", #threads)
  table.insert(threads, thread)
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
