-- scheduled.lua: SYNC for the first sync_clocks clocks (an exact warm-up,
-- when the model moves fastest), then SSP(w) for the rest of the run.
--
-- params:
--   sync_clocks  clocks judged by SYNC: 0 .. sync_clocks-1 (default 100)
--   w            the SSP window afterwards (default 10)
--
-- The change is installed ahead of time with rule:at(sync_clocks): the switch
-- judges every clock before it by SYNC and every clock from it on by SSP,
-- however long the controller's period. If the job is already past that
-- clock (the controller started late), the change takes effect at once.
for name in pairs(params) do
  if name ~= "sync_clocks" and name ~= "w" then
    error("unknown parameter '" .. tostring(name) .. "' (known: sync_clocks, w)", 0)
  end
end
local sync_clocks = params.sync_clocks or 100
local later = ssp(params.w or 10)

function on_telemetry(t)
  -- One change at a time; and nothing to do once SSP is in force.
  if t.swap_pending or t.rule == later then return nil end
  if t.max_released < sync_clocks then
    -- Still in the warm-up: make sure it is SYNC, then schedule the switch.
    if t.rule ~= sync() then return sync() end
    return later:at(sync_clocks)
  end
  return later
end

return sync()
