-- quorum.lua: QUORUM(k, l), backup workers: clock c+1 may start once k live
-- ranks completed c; the others (the slowest N - k) go on in the background
-- but may fall at most l clocks behind the fastest.
--
-- params:
--   k  ranks each clock waits for, 1..N (required; "all" = every live rank)
--   l  how far the excluded ranks may fall behind, in clocks (default 10;
--      "inf" = no bound)
local k = params.k
if k == nil then
  error("quorum.lua needs params.k, the ranks each clock waits for (e.g. --param k=3)", 0)
end
return quorum(k, params.l or 10)
