-- wrk script for the backup benchmark: every request is a new person (a
-- new idempotency key and phone number) in run RUN (0..499), so that the
-- runs of one benchmark, on one growing store, never share one. Usage:
--   wrk -t2 -c500 -d20s -s bench/backup/submit.lua URL -- RUN
dofile("bench/wrk/tally.lua")

function init(args)
  counter = 0
  run = tonumber(args[1] or "0")
end

function request()
  counter = counter + 1
  local n = (run * 2 + thread_id) * 2000000 + counter
  local key = string.format("bk-%d-%d-%d", run, thread_id, counter)
  -- 130–139 then 180–189: 2 billion distinct mobile numbers.
  local p = math.floor(n / 100000000) % 20
  local prefix = p < 10 and 130 + p or 170 + p
  local body = string.format('{"name":"Person %d","phone":"+86 %d %04d %04d","tickets":1}', counter, prefix, math.floor(n / 10000) % 10000, n % 10000)
  return wrk.format("POST", nil, {["Content-Type"] = "application/json", ["Idempotency-Key"] = key}, body)
end
