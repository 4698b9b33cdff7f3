-- sync.lua: bulk-synchronous training (SYNC, window 0): no rank starts clock
-- c+1 before every live rank completed c, so reads are exact and a run is
-- reproducible bit for bit. The baseline every other policy is measured
-- against.
--
-- params: none.
return sync()
