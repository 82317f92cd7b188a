-- ceiling.lua: the Redis work of one successful single-table claim
-- (claim.lua's write path) without its checks, for redis-benchmark:
-- read the head and the version slot, then write head, record, index,
-- sequence and log entry.
--
-- KEYS[1] heads  KEYS[2] seq  KEYS[3] log  KEYS[4] versions  KEYS[5] index
-- ARGV[1] table
local head = tonumber(redis.call('HGET', KEYS[1], ARGV[1]) or '0')
local ver = string.format('%d', head + 1)
redis.call('HGET', KEYS[4], ver)
local seq = string.format('%d', redis.call('INCR', KEYS[2]))
local rec = cjson.encode({st = 'staged', sp = 't/_versions/18446744073709551614.manifest-0f8b8e1e',
  fp = 't/_versions/18446744073709551614.manifest', sz = '1024', et = '', tx = '', ts = '0', seq = seq})
redis.call('HSET', KEYS[1], ARGV[1], ver)
redis.call('HSET', KEYS[4], ver, rec)
redis.call('ZADD', KEYS[5], head + 1, ver)
redis.call('XADD', KEYS[3], 'MAXLEN', '~', '100000', seq .. '-0', 'k', 'version', 't', ARGV[1], 'v', ver, 'r', rec)
return seq
