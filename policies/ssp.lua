-- ssp.lua: stale-synchronous parallel, SSP(w): a rank may run up to w clocks
-- ahead of the slowest live rank, so a straggler's short stall does not stop
-- the others; reads may miss up to w clocks of the slower ranks' updates.
--
-- params:
--   w  window in clocks (default 10); "inf" = no bound (that is async()).
return ssp(params.w or 10)
