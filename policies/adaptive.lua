-- adaptive.lua: exact while nobody waits, and the loosest barrier the job
-- needs as soon as somebody does. A rank that is persistently slower is left
-- out of the barrier (a quorum of the others); stalls that come and go get a
-- window; a rank that stopped gets async(). docs/policies.md "adaptive.lua"
-- explains it with examples and measurements.
--
-- params (all optional):
--   start  0     the window at load: 0 = sync(); SSP(start) from clock 1
--                otherwise (clock 0, the seeding clock, is always
--                synchronous); above max_w = async()
--   max_w  64    the largest window; a window that would grow past it is
--                async() instead
--   slow   1.3   a rank is persistently slow when its step EWMA (work_time)
--                is > slow x the median step; it is one until its EWMA has
--                been back under 1 + (slow - 1) / 2 (1.15) on 4 calls in a row
--   wait   0.2   the barrier "binds" when a rank spent more than this
--                fraction of the last `horizon` iterations at it while the
--                lag between the ranks reached past W (under sync(): any
--                such wait)
--   horizon 32   the iterations (at least a period) over which waiting is
--                judged: a short stall of one rank every few dozen steps
--                (rank 0's evaluation) costs its share of them, not of the
--                period it fell in
--   hold   30    seconds without a binding wait and without a persistent
--                straggler before the window may shrink
--
-- Why start exact. Staleness costs nothing with plain SGD on a small model,
-- but with momentum or large steps it costs iterations, most of all early in
-- training when the model moves fastest (docs/results.md, momentum and
-- slowdown): a few hundred stale steps at the start can double the time to
-- the target. SYNC costs only while someone waits, and the policy loosens
-- the barrier within one period of a wait. Not to async() at once: a rank
-- that has just become slower does not look persistent yet, and async()
-- would never bind again to show it; a window of 32 binds behind it.
--
-- Why loose once somebody waits. In this switch a read under SSP/ASYNC sees
-- the live table, so how stale an update is depends on how long its rank's
-- step took, not on how many clocks the rank lags: a rank 100 clocks behind
-- still computes on the current model. What a window prevents is ranks
-- running ahead of one that is slow; once it binds it costs certain waiting
-- and buys little.
--
-- Why a quorum for a slower machine. Every finite window binds again behind
-- it, and async() lets every rank read the others' updates half-applied.
-- quorum(N - s, inf) (backup workers, Chen et al. 2016) keeps the N - s
-- faster ranks in lockstep with exact reads among them, and the s slower
-- ones add their updates when they arrive without holding anybody back.
--
-- Every call (one per telemetry period):
--   binds      some live rank waited more than `wait` of the horizon (the
--              last `horizon` median iterations, at least a period; until
--              the calls span one, the waits since the start (`warmup`), counted
--              against the time they span, at least a quarter of a horizon,
--              under sync() or a quorum, and against a whole horizon under
--              a window; under sync() or a quorum less the
--              longest time a rank reported pausing in it, `paused`:
--              serene-train reports rank 0's evaluations), and the largest
--              lag of the last 8
--              snapshots is > W, or a rank is waiting longer than `wait` of
--              the horizon right now with lag > W;
--              under sync() the lag is not asked for (every wait is the
--              barrier's, and a snapshot mostly finds the ranks level)
--   persistent some live rank's work_time > slow x the median work_time,
--              its last step too above 1.15 x (a rank's first steps are slow
--              while libtorch warms up, and stay in its EWMA for dozens of
--              steps: its latest step says whether it is still slow), on 3
--              calls in a row (stalls that come and go put some rank of
--              many over the threshold at almost every call)
--   stalled    some live rank, not waiting, has sent nothing for 4 typical
--              steps and for a whole period: a stop (a failure, a long
--              pause) under way; a slow_worker stall (at most 2 steps' sleep
--              and its own step) is shorter
--   suspect    silent for 4 steps but not yet a period: a stop that has just
--              begun, or a rank the host's scheduler held back; no change
--              is made this call (one made now, while a rank may be
--              stopped, would stay pending until the switch evicts it)
--   decide, the first that applies:
--   1. binds and stalled: async() (no window covers a stop until the switch
--      evicts the rank)
--   2. binds and persistent: the persistent ranks become "slower"; while
--      any rank is slower: quorum(live - slower, no lag bound); a slower
--      rank stops being one after 4 calls in a row under 1.15 x the median
--      once its lag x the step is at most a period (the others' wait for
--      it to catch up); further behind it stays out
--   3. under a quorum with no slower rank left: the rule at load (sync() by
--      default): the rank is back, and exact steps are what a window or
--      async() would cost
--   4. binds: W = 2W (at least 32), or async() if 2W > max_w
--   5. no binding wait and no persistent rank for `hold` seconds: W =
--      max(4 x the largest lag of that time, W / 2), sync() when the ranks
--      kept in step (lag <= 1) throughout; from async() the same, starting
--      at max_w
-- It returns a rule only when it differs from the one in force, and nothing
-- while a change is pending (the switch takes one at a time), nor while the
-- job starts (until every live rank has completed 2 clocks, and the call
-- after: see `warmup`).

-- A parameter this script does not know is refused, not ignored: a typo
-- (or one an earlier version had) would otherwise run the defaults unseen.
for name in pairs(params) do
  if not ({start = 1, max_w = 1, slow = 1, wait = 1, hold = 1, horizon = 1})[name] then
    error("unknown parameter '" .. tostring(name) ..
          "' (known: start, max_w, slow, wait, hold, horizon)", 0)
  end
end
local start = params.start or 0
local max_w = params.max_w or 64
local slow = params.slow or 1.3
local wait_fraction = params.wait or 0.2
local hold = params.hold or 30
local horizon_iterations = params.horizon or 32
local recovered = 1 + (slow - 1) / 2  -- hysteresis: a slower rank is one until below this
-- A rank silent this many steps, and a whole period, is stalled (failed?),
-- not slow. Until it is one or the other it is suspect and nothing changes:
-- a change made while the rank is stopped stays pending (and no other can be
-- made) until the switch evicts it; and on a busy host 4 steps of a few ms
-- are one time slice of the scheduler, not a stop.
local stall_steps = 4
-- A slower rank rejoins the barrier only after its EWMA stayed under
-- `recovered` this many calls in a row: on a busy host the step times of
-- every rank jump with the scheduler, and one low reading is not a recovery.
local recover_calls = 4
-- A rank is persistently slow only once it was so on this many calls in a
-- row. With many ranks and stalls that come and go (slow_worker at 64
-- ranks), some rank's EWMA is above `slow` after two stalls in a row at
-- almost every call; left out of a quorum for it, the policy flapped
-- between quorums of 58..63 and sync(). A slower machine stays slow.
local persist_calls = 3
-- The job's first clocks are not judged: what the ranks wait for there is
-- the start (processes starting, the evaluation at step 0, libtorch's slow
-- first steps), not a straggler. Until every live rank has completed
-- `warmup` clocks a call only takes its baselines, and so does the first
-- call after such a call (its baseline holds part of the start). A first
-- call made after the start is judged as usual.
local warmup = 2
local cold = false        -- the last call was made before the start ended

local prev_now = nil      -- t.now of the last call
-- {now, wait = {rank -> wait_total}} of the calls of the last horizon, oldest
-- first (the first being at least a horizon old once the job is that old).
-- Why a horizon, not the period: under sync() every rank waits for rank 0's
-- evaluation of the test set (25-40 ms every 25 steps in real runs); judged
-- per period, that wait bound and the policy left SYNC at once for ssp(32),
-- whose stale steps cost momentum hundreds of iterations. Over 32 iterations
-- it weighs about its share (one or two evaluations, under `wait`); a rank
-- twice as slow makes the others wait half the time. A longer horizon
-- averages the evaluations better but reacts later: at 64 iterations the
-- demo's slow_worker waits bind a period later (docs/policies.md).
local history = {}
local lags = {}           -- max lag of the last few snapshots, oldest first
local lag_snapshots = 8
local calm_since = nil    -- t.now since when nothing bound and nobody was persistent
local calm_lag = 0        -- the largest lag seen since calm_since
local slower = {}         -- rank -> calls in a row under `recovered`: a persistently slower machine, left out of the quorum
local over = {}           -- rank -> calls in a row above `slow` (and its last step above `recovered`)
local held = 0            -- calls in a row the rule was kept for a rank not yet persistent

local function median(xs)
  table.sort(xs)
  local n = #xs
  if n % 2 == 1 then return xs[(n + 1) // 2] end
  return (xs[n // 2] + xs[n // 2 + 1]) / 2
end

-- The median of field over the ranks of rs that measured it (> 0); 0 if none did.
local function median_of(rs, field)
  local xs = {}
  for _, r in ipairs(rs) do
    if r[field] > 0 then xs[#xs + 1] = r[field] end
  end
  return #xs > 0 and median(xs) or 0
end

local function window(w)
  if w == math.huge or w > max_w then return async() end
  if w <= 0 then return sync() end
  return ssp(w)
end

function on_telemetry(t)
  local dt = prev_now and t.now - prev_now or 0  -- the period; 0 on the first call
  local wait_now, max_lag = 0, 0
  local live = {}
  local snapshot = {now = t.now, wait = {}, paused = {}}
  for _, r in ipairs(t.ranks) do
    if r.live then
      live[#live + 1] = r
      if r.waiting then wait_now = math.max(wait_now, r.wait_now) end
      max_lag = math.max(max_lag, r.lag)
    end
    snapshot.wait[r.rank] = r.wait_total
    snapshot.paused[r.rank] = r.paused
  end
  local iteration = median_of(live, "iter_time")
  local step = median_of(live, "work_time")
  history[#history + 1] = snapshot
  if prev_now == nil and iteration > 0 and t.high > 0 then
    -- The job began its clocks x the median iteration ago, nobody waiting yet.
    local age = t.high * iteration
    table.insert(history, 1, {now = t.now - age, wait = {}, paused = {}})
  end
  prev_now = t.now
  -- The waits of the horizon: since the newest call at least a horizon old.
  local horizon = math.max(dt, horizon_iterations * (iteration > 0 and iteration or step))
  if horizon > 0 then
    while #history > 2 and t.now - history[2].now >= horizon do table.remove(history, 1) end
  end
  lags[#lags + 1] = max_lag
  if #lags > lag_snapshots then table.remove(lags, 1) end
  if t.low < warmup then
    cold = true
    history = {snapshot}
    return nil
  elseif cold then
    cold = false
    history = {snapshot}
    return nil
  end
  if t.finished or t.swap_pending then return nil end

  if step == 0 then return nil end  -- no step measured yet
  local persistent = {}  -- the live ranks persistently slow now
  local candidate = false  -- a live rank slow on this call, not yet on 3 in a row
  local stalled, suspect = false, false
  local live_rank = {}
  for _, r in ipairs(live) do
    live_rank[r.rank] = true
    local ratio = r.work_time / step
    if ratio > slow and r.last_work_time > recovered * step then
      over[r.rank] = (over[r.rank] or 0) + 1
    else
      over[r.rank] = nil
    end
    if (over[r.rank] or 0) >= persist_calls then
      persistent[#persistent + 1] = r.rank
    elseif over[r.rank] then
      candidate = true
    end
    if slower[r.rank] then
      if ratio < recovered then slower[r.rank] = slower[r.rank] + 1 else slower[r.rank] = 0 end
      -- Recovered, it rejoins only when catching up (its lag, in steps)
      -- holds the others a period at most; further behind it stays out and
      -- adds its updates without holding anybody (at the same speed it never
      -- catches up by itself).
      if slower[r.rank] >= recover_calls and r.lag * step <= math.max(dt, step) then
        slower[r.rank] = nil
      end
    end
    if not r.waiting and r.silent > stall_steps * step then
      if r.silent > dt and dt > 0 then stalled = true else suspect = true end
    end
  end
  for rank in pairs(slower) do  -- a rank that left (evicted) is no longer one
    if not live_rank[rank] then slower[rank] = nil end
  end

  local w = t.rule.window  -- math.huge under async(), 0 under quorum
  local peak_lag = math.max(table.unpack(lags))
  local base = history[1]
  -- Until the calls span a horizon, the waits are judged against the time
  -- they span. Under sync() (and a quorum) at least a quarter of a horizon
  -- (8 iterations): every wait there is the barrier's, and a job whose ranks
  -- wait a fifth of their first 8 iterations leaves SYNC then, where waiting
  -- for a whole horizon's worth cost the CNN's job 0.5-0.85 s of it (docs/
  -- policies.md); fewer iterations would take a single hiccup of a busy host
  -- for a straggler. Under a window, a whole horizon: only a wait that would
  -- bind over it binds.
  local span = math.max(t.now - base.now, w == 0 and horizon / 4 or horizon)
  local waited, paused = 0, 0
  for _, r in ipairs(live) do
    waited = math.max(waited, r.wait_total - (base.wait[r.rank] or 0))
    paused = math.max(paused, r.paused - (base.paused[r.rank] or 0))
  end
  -- A pause a rank reported (rank 0's evaluation of the test set) does not
  -- make the policy leave exact steps: it is known, bounded and periodic, and
  -- loosening the barrier for it buys back its share of the time (10-20 %)
  -- with stale steps, then lets a later straggler's stale updates in
  -- unchecked. Under a window the waits are the window's, paused or not:
  -- a wider one costs little more staleness than it has.
  if w == 0 then waited = math.max(0, waited - paused) end
  -- Under sync() every wait is the barrier's doing, and a snapshot mostly
  -- finds the ranks released together (lag 0): the lag is not asked for.
  local binds = w < math.huge and
      ((waited > wait_fraction * span and (w == 0 or peak_lag > w)) or
       (wait_now > wait_fraction * horizon and (w == 0 or max_lag > w)))
  if suspect and not stalled then return nil end  -- a stop or a time slice: see next call

  if binds and not stalled then
    for _, rank in ipairs(persistent) do slower[rank] = 0 end
  end
  local n_slower = 0
  for _ in pairs(slower) do n_slower = n_slower + 1 end

  if not binds then held = 0 end
  local want
  if stalled and binds then
    calm_since = nil
    want = async()
  elseif n_slower > 0 and n_slower < #live then
    calm_since = nil
    want = quorum(#live - n_slower, math.huge)
  elseif t.rule.kind == "quorum" then
    calm_since = nil
    want = window(start)
  else
    local new_w = w
    if binds and candidate and held < persist_calls - 1 then
      -- A rank is slow but not yet persistent: keep the rule for up to two
      -- calls, until it is one (then a quorum) or not (then a window).
      -- Staleness before the quorum costs more than two periods of waiting
      -- where it costs at all (with momentum, 1.7 x the time to the target).
      held = held + 1
      return nil
    elseif binds then
      calm_since = nil
      new_w = math.max(2 * w, 32)
    elseif #persistent > 0 then
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
    want = window(new_w)
  end

  if want == t.rule then return nil end
  log(string.format("%s -> %s: step %.3f s, waited %.2f s (%.2f s now), max lag %d " ..
                    "(peak %d)%s%s%s", t.rule.text, want.text, step, waited, wait_now, max_lag,
                    peak_lag, #persistent > 0 and ", a rank persistently slow" or "",
                    stalled and ", a rank stalled" or "",
                    n_slower > 0 and string.format(", %d rank(s) slower", n_slower) or ""))
  return want
end

return window(start)
