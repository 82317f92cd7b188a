-- The prelude of every catalog script (redisstate builds each script with it):
-- the two steps of the catalog's Redis state machine that many scripts
-- take, written once.
--
-- catalog_epoch(key): the catalog's epoch (KEYS[1] of every script that
-- checks it), or false when Redis lost the catalog's state: the script
-- then replies NOEPOCH, having written nothing, and the caller recovers
-- (redisclaim.WithEpoch).
local function catalog_epoch(key) return redis.call('GET', key) end
local NOEPOCH = {'NOEPOCH'}

-- next_seq(key): the next catalog sequence, as a decimal string.
local function next_seq(key) return string.format('%d', redis.call('INCR', key)) end

-- append_log(log, maxlen, seq, i, field, value, ...): entry i of
-- sequence seq, its id seq-i; the log is trimmed to about maxlen
-- entries (commitlog.MaxLen unless configured).
local function append_log(log, maxlen, seq, i, ...)
  return redis.call('XADD', log, 'MAXLEN', '~', maxlen, seq .. '-' .. i, ...)
end

