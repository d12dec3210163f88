-- wrk script for the realistic-peak benchmark (bench/peak): the intake
-- benchmark's load (bench/wrk/submit.lua), each person with an e-mail
-- address too, for the confirmation the full configuration sends. The
-- optional argument is a slot (0 or 1) so that a warm-up and a measured
-- run on the same data never share a phone number. Usage:
--   wrk -t2 -c500 -d20s -s bench/peak/peak.lua http://127.0.0.1:8080/v1/forms/bench/submissions -- 1
dofile("bench/wrk/submit.lua")

function person(counter, n)
  return string.format('{"name":"Person %d","phone":"+86 139 %04d %04d","tickets":1,"email":"p%d@example.org"}', counter, math.floor(n / 10000) % 10000, n % 10000, n)
end
