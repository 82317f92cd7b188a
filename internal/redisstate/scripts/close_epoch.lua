-- close_epoch.lua: close the catalog's epoch, so that the next call of
-- any process recovers the catalog's state from storage (`admin recover`
-- without --if-needed: a rebuild although Redis seems whole).
--
-- KEYS[1]  {C}:epoch
--
-- Guarantee: nothing but the epoch changes; every script that checks it
-- answers NOEPOCH (having written nothing) until a recovery opens a new
-- one (open_epoch.lua), as after a Redis that lost its state. Replies
-- {"OK"} whether or not an epoch was open.
redis.call('DEL', KEYS[1])
return {'OK'}
