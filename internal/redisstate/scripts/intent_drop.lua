-- intent_drop.lua: drop an intent whose change was not made.
--
-- KEYS[1]  {C}:intents   hash: intent id -> the intent (JSON)
-- ARGV[1]  the intent's id
-- ARGV[2]  the intent, as it was recorded
--
-- Guarantee: the intent goes only if it is still the one recorded (an
-- intent finished meanwhile, with its event, is gone already). Replies 1
-- when it dropped it, 0 otherwise.
if redis.call('HGET', KEYS[1], ARGV[1]) == ARGV[2] then
  return redis.call('HDEL', KEYS[1], ARGV[1])
end
return 0
