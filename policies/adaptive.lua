-- adaptive.lua: the loosest barrier the job needs, at once. Nobody waits for
-- a straggler for longer than it takes to notice; the window is never smaller
-- than the lag the ranks have shown. docs/policies.md "adaptive.lua" explains
-- it with examples and measurements.
--
-- params (all optional):
--   start  16    the window at load: SSP(start) from clock 1 (clock 0, the
--                seeding clock, is always synchronous)
--   max_w  64    the largest window; a window that would grow past it is
--                async() instead
--   slow   1.3   a rank is persistently slow when its step EWMA (work_time)
--                is > slow x the median step
--   wait   0.1   the window "binds" when a rank spent more than this
--                fraction of the last period at the barrier while the lag
--                between the ranks reached past W
--   hold   30    seconds without a binding wait and without a persistent
--                straggler before the window may shrink
--
-- Why loose. In this switch a read under SSP/ASYNC sees the live table, so
-- how stale an update is depends on how long its rank's step took (the
-- updates the others applied meanwhile), not on how many clocks the rank
-- lags: a rank 100 clocks behind still computes on the current model. What a
-- window prevents is waiting's opposite: ranks running ahead of one that is
-- slow. So a window that binds costs certain waiting and buys little; the
-- policy removes it as soon as it shows.
--
-- Every call (one per telemetry period):
--   binds      some live rank waited more than `wait` of the period and the
--              largest lag of the last 8 snapshots is > W, or a rank is
--              waiting longer than a typical step right now with lag > W
--   persistent some live rank's work_time > slow x the median work_time (a
--              slower machine: every finite window binds again)
--   stalled    some live rank, not waiting, has sent nothing for 8 typical
--              steps: a stop (a failure, a long pause) under way
--   grow       binds: W = 2W (at least 32), or async() if a rank is
--              persistent or stalled, or 2W > max_w
--   shrink     no binding wait and no persistent rank for `hold` seconds:
--              W = max(4 x the largest lag of that time, W / 2), sync() when
--              the ranks kept in step (lag <= 1) throughout; from async()
--              the same, starting at max_w
-- It returns a rule only when it differs from the one in force, and nothing
-- while a change is pending (the switch takes one at a time).

local start = params.start or 16
local max_w = params.max_w or 64
local slow = params.slow or 1.3
local wait_fraction = params.wait or 0.1
local hold = params.hold or 30
local stall_steps = 8     -- a rank silent this many steps is stalled (failed?), not slow

local prev_now = nil      -- t.now of the last call
local prev_wait = {}      -- wait_total by rank at the last call
local lags = {}           -- max lag of the last few snapshots, oldest first
local lag_snapshots = 8
local calm_since = nil    -- t.now since when nothing bound and nobody was persistent
local calm_lag = 0        -- the largest lag seen since calm_since

local function median(xs)
  table.sort(xs)
  local n = #xs
  if n % 2 == 1 then return xs[(n + 1) // 2] end
  return (xs[n // 2] + xs[n // 2 + 1]) / 2
end

local function window(w)
  if w == math.huge or w > max_w then return async() end
  if w <= 0 then return sync() end
  return ssp(w)
end

function on_telemetry(t)
  local dt = prev_now and t.now - prev_now or 0
  local waited, wait_now, max_lag = 0, 0, 0
  local live = {}
  for _, r in ipairs(t.ranks) do
    if r.live then
      live[#live + 1] = r
      local before = prev_wait[r.rank]
      if before and r.wait_total > before then
        waited = math.max(waited, r.wait_total - before)
      end
      if r.waiting then wait_now = math.max(wait_now, r.wait_now) end
      max_lag = math.max(max_lag, r.lag)
    end
    prev_wait[r.rank] = r.wait_total
  end
  prev_now = t.now
  lags[#lags + 1] = max_lag
  if #lags > lag_snapshots then table.remove(lags, 1) end
  if t.finished or t.swap_pending then return nil end

  local works = {}
  for _, r in ipairs(live) do
    if r.work_time > 0 then works[#works + 1] = r.work_time end
  end
  if #works == 0 then return nil end  -- no step measured yet
  local step = median(works)
  local persistent, stalled = false, false
  for _, r in ipairs(live) do
    if r.work_time > slow * step then persistent = true end
    if not r.waiting and r.silent > stall_steps * step then stalled = true end
  end

  local w = t.rule.window  -- math.huge under async()
  local peak_lag = math.max(table.unpack(lags))
  local binds = w < math.huge and
      ((dt > 0 and waited > wait_fraction * dt and peak_lag > w) or
       (wait_now > step and max_lag > w))

  local new_w = w
  if binds then
    calm_since = nil
    if persistent or stalled then new_w = math.huge else new_w = math.max(2 * w, 32) end
  elseif persistent then
    calm_since = nil
  else
    if calm_since == nil then calm_since, calm_lag = t.now, max_lag end
    calm_lag = math.max(calm_lag, max_lag)
    if t.now - calm_since >= hold then
      local from = w == math.huge and 2 * max_w or w
      if calm_lag <= 1 then new_w = 0 else new_w = math.max(4 * calm_lag, from // 2) end
      if new_w >= w then new_w = w end
      calm_since, calm_lag = t.now, max_lag
    end
  end

  local want = window(new_w)
  if want == t.rule then return nil end
  log(string.format("%s -> %s: step %.3f s, waited %.2f s (%.2f s now), max lag %d " ..
                    "(peak %d)%s%s", t.rule.text, want.text, step, waited, wait_now, max_lag,
                    peak_lag, persistent and ", a rank persistently slow" or "",
                    stalled and ", a rank stalled" or ""))
  return want
end

return window(start)
