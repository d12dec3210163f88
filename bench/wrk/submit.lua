-- wrk script for formd's intake benchmark: every request is a new person
-- (a new idempotency key and a new phone number), so every answer is a
-- durable, decided registration. The optional argument is a slot (0 or 1)
-- so that a warm-up and a measured run on the same data never share a
-- phone number. Usage:
--   wrk -t2 -c500 -d20s -s bench/wrk/submit.lua http://127.0.0.1:8080/v1/forms/bench/submissions -- 1
dofile("bench/wrk/tally.lua")

function init(args)
  counter = 0
  slot = tonumber(args[1] or "0") % 2
end

-- person is the body of the counter-th request, n its number across
-- slots and threads (bench/peak adds an e-mail address to it).
function person(counter, n)
  return string.format('{"name":"Person %d","phone":"+86 139 %04d %04d","tickets":1}', counter, math.floor(n / 10000) % 10000, n % 10000)
end

function request()
  counter = counter + 1
  local n = (slot * 2 + thread_id) * 20000000 + counter
  local key = string.format("wrk-%d-%d", slot * 2 + thread_id, counter)
  return wrk.format("POST", nil, {["Content-Type"] = "application/json", ["Idempotency-Key"] = key}, person(counter, n))
end
