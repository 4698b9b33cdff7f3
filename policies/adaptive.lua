-- adaptive.lua: sets the SSP window W so that stragglers do not make the
-- other ranks wait, with no more staleness than that takes. SYNC while no
-- rank straggles. docs/policies.md "adaptive.lua" explains it with examples.
--
-- params (all optional):
--   max_w      64    largest window it sets
--   slow       1.3   a rank straggles when its step takes > slow x the median step
--   margin     1.25  W = ceil(need x margin)
--   wait       0.1   ranks "wait" when one of them spent more than this
--                    fraction of the last period at the barrier
--   hold       10    seconds after a change before W may shrink
--   half_life  60    seconds for a remembered need to halve
--   jump       0     when stalls that come now and then (no persistent
--                    straggler) first make ranks wait, grow straight to at
--                    least this window instead of 3, 6, 12, ... one period
--                    at a time (0 = off; experiments/paper.toml uses 32)
--
-- Every call (one per telemetry period):
--
--   step     the median work_time of the live ranks: a typical step, waiting
--            excluded (the median ignores one straggler).
--   need     the longest stall a rank shows, in steps:
--              max over live ranks of ceil((s - step) / step) for s > slow x step,
--              s = max(work_time, last_work_time, silent if not waiting)
--            (silent catches a stall still under way). A stall of S seconds
--            lets the others go on without waiting iff W >= S / step.
--   waiting  the others are held by the window: some rank spent more than
--            `wait` of the period at the barrier (wait_total grew) and the lag
--            went past W in one of the last 8 snapshots, or a rank has been
--            waiting longer than a step while the slowest rank lags by more
--            than W now (a wait with smaller lags is jitter, not the window).
--   memory   max(need, memory x 0.5^(dt / half_life)): recent needs, decaying;
--            a growth also remembers the window it set (W / margin).
--   persistent  some live rank's step EWMA (work_time) is > slow x step: a
--            slower machine, not stalls now and then.
--
--   grow     waiting and ceil(need x margin) > W:  W = ceil(need x margin), at once.
--            waiting, no persistent straggler, and a stall in sight (need > 0)
--            or no shrink in the last `hold` s (the wait right after a
--            shrink is the catch-up it causes):  W = max(2W, 1). Stalls that come now and then
--            on every rank (slow_worker) add up: the lag between ranks is a
--            random walk that one stall's need underestimates, so a window
--            that still binds is doubled until it no longer does.
--   shrink   nobody waiting and `hold` s since the last change:
--              target = ceil(memory x margin) (0 once memory < 0.5);
--              no straggler now and target 0:  sync()
--              target < W:                      W = max(target, W - ceil(W / 4))
--   jump     W grew, no persistent straggler, W < jump:  W = jump (clamped).
--
-- Why it does not flap: it grows only when waiting has a straggler to explain
-- it (the wait that follows a shrink, while the others let a lagging rank
-- catch up, has none); it shrinks only after `hold` seconds without waiting,
-- by a quarter at a time, and toward a need it remembers for minutes. It
-- returns a rule only when it differs from the one in force, and nothing
-- while a change is pending (the switch takes one at a time). A rank that is
-- slower at every step (not a stall) holds W at its need: no window can hide
-- a slower machine, so W does not grow past what covers one of its steps
-- (the doubling is for stalls only).

local max_w = params.max_w or 64
local slow = params.slow or 1.3
local margin = params.margin or 1.25
local wait_fraction = params.wait or 0.1
local hold = params.hold or 10
local half_life = params.half_life or 60
local jump = params.jump or 0

-- State between calls.
local prev_now = nil      -- t.now of the last call
local prev_wait = {}      -- wait_total by rank at the last call
local memory = 0          -- decaying max of the needs seen, in steps
local last_change = nil   -- t.now when this policy last changed the rule
local last_shrink = nil   -- t.now when it last made the window smaller
local lags = {}           -- max lag of the last few snapshots, oldest first
local lag_snapshots = 8

-- ceil that ignores float noise: (1.0 - 0.1) / 0.1 is 9.000000000000002.
local function ceil(x) return math.ceil(x - 1e-9) end

local function clamp(w) return math.max(0, math.min(max_w, w)) end

local function median(xs)
  table.sort(xs)
  local n = #xs
  if n % 2 == 1 then return xs[(n + 1) // 2] end
  return (xs[n // 2] + xs[n // 2 + 1]) / 2
end

local function window(w)
  if w == 0 then return sync() end
  return ssp(w)
end

function on_telemetry(t)
  -- Waiting since the last call; the baseline is kept even when we decide
  -- nothing, so the next period measures only itself.
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
  if t.finished or t.swap_pending then return nil end

  -- The typical step.
  local works = {}
  for _, r in ipairs(live) do
    if r.work_time > 0 then works[#works + 1] = r.work_time end
  end
  if #works == 0 then return nil end  -- no step measured yet
  local step = median(works)

  -- The longest stall, in steps; and whether a rank is slow at every step.
  local need, straggler, persistent = 0, nil, false
  for _, r in ipairs(live) do
    if r.work_time > slow * step then persistent = true end
    if r.work_time > 0 then
      local s = math.max(r.work_time, r.last_work_time)
      if not r.waiting and r.silent > s then s = r.silent end
      if s > slow * step then
        local n = ceil((s - step) / step)
        if n > need then need, straggler = n, r.rank end
      end
    end
  end

  local w = math.min(t.rule.window, max_w)
  -- The ranks spread across the whole window recently: the largest lag of
  -- the last few snapshots. A wait over the period is the window's doing
  -- only if the lag reached past W (a wait with smaller lags is jitter: the
  -- round trip of a CLOCK on a busy host, everyone at SYNC's every clock).
  lags[#lags + 1] = max_lag
  if #lags > lag_snapshots then table.remove(lags, 1) end
  local peak_lag = math.max(table.unpack(lags))
  local waiting = (dt > 0 and waited > wait_fraction * dt and peak_lag > w)
      or (wait_now > step and max_lag > w)
  memory = math.max(need, memory * 0.5 ^ (dt / half_life))

  local recent_shrink = last_shrink ~= nil and t.now - last_shrink < hold
  local new_w = w
  if waiting and ceil(need * margin) > w then
    new_w = clamp(ceil(need * margin))
  elseif waiting and not persistent and (need > 0 or not recent_shrink) then
    new_w = clamp(math.max(2 * w, 1))
  elseif not waiting and (last_change == nil or t.now - last_change >= hold) then
    local target = memory < 0.5 and 0 or clamp(ceil(memory * margin))
    if target == 0 and need == 0 then
      new_w = 0
    elseif target < w then
      new_w = math.max(target, w - ceil(w / 4))
    end
  end
  -- Stalls now and then on any rank: every period spent at a window that
  -- still binds costs waiting, and a larger window costs nothing the barrier
  -- would otherwise prevent, so skip the doublings (docs/policies.md).
  if new_w > w and not persistent and new_w < jump then new_w = clamp(jump) end

  local want = window(new_w)
  if want == t.rule then return nil end
  if new_w > w then memory = math.max(memory, new_w / margin) end
  if new_w < w then last_shrink = t.now end
  last_change = t.now
  log(string.format("%s -> %s: step %.3f s, need %d steps (rank %s), waited %.2f s " ..
                    "(%.2f s now), max lag %d, memory %.1f", t.rule.text, want.text, step,
                    need, straggler or "-", waited, wait_now, max_lag, memory))
  return want
end
