-- async.lua: fully asynchronous (window and lag unbounded): no rank ever
-- waits for another. Fastest, and the stalest: a slow rank's updates arrive
-- arbitrarily late.
--
-- params: none.
return async()
